package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func TestBuildArchiveIsDeterministicAndReadable(t *testing.T) {
	a := []Entry{{Path: "secrets/s.json", Object: map[string]string{"k": "v"}}, {Path: "configmaps/c.json", Object: map[string]int{"n": 1}}}
	b := []Entry{a[1], a[0]}
	x, err := BuildArchive(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := BuildArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatal("the same entries in another order gave different archives")
	}
	gz, err := gzip.NewReader(bytes.NewReader(x))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if len(names) != 2 || names[0] != "configmaps/c.json" || names[1] != "secrets/s.json" {
		t.Errorf("entries = %v, want sorted configmaps/c.json, secrets/s.json", names)
	}
}
