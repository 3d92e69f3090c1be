package forms

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const testdata = "../../testdata/providers"

// TestTestdataIsWhatFormsWrites: the committed provider forms are what this package writes for
// the committed native log, so the two cannot drift apart. Gzip'd layers (S3 export files,
// Firehose records) are compared once inflated: the compressor's bytes are not the format.
func TestTestdataIsWhatFormsWrites(t *testing.T) {
	native, err := os.ReadFile(filepath.Join(testdata, "native", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Files(DefaultCluster, native)
	if err != nil {
		t.Fatal(err)
	}
	var committed []string
	err = filepath.WalkDir(testdata, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(testdata, path)
		rel = filepath.ToSlash(rel)
		if rel != "README.md" && !strings.HasPrefix(rel, "native/") {
			committed = append(committed, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	sort.Strings(committed)
	if strings.Join(names, "\n") != strings.Join(committed, "\n") {
		t.Fatalf("committed files\n%s\nwant\n%s\n(run go test ./exporter -run TestCaptureProviderTestdata -capture-providers)", strings.Join(committed, "\n"), strings.Join(names, "\n"))
	}
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(testdata, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(canonical(t, name, got), canonical(t, name, want[name])) {
			t.Errorf("%s differs from what package forms writes for native/audit.jsonl", name)
		}
	}
}

// canonical undoes the gzip layers of a file, so that two compressors' outputs compare equal.
func canonical(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	switch {
	case strings.HasSuffix(name, ".gz"):
		return gunzip(t, b)
	case strings.HasSuffix(name, "firehose-requests.jsonl"):
		var out bytes.Buffer
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte{'\n'}) {
			var req map[string]any
			if err := json.Unmarshal(line, &req); err != nil {
				t.Fatal(err)
			}
			for _, r := range req["records"].([]any) {
				rec := r.(map[string]any)
				data, err := base64.StdEncoding.DecodeString(rec["data"].(string))
				if err != nil {
					t.Fatal(err)
				}
				rec["data"] = string(gunzip(t, data))
			}
			enc, _ := json.Marshal(req)
			out.Write(append(enc, '\n'))
		}
		return out.Bytes()
	}
	return b
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
