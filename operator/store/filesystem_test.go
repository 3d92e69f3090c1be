package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

func TestFilesystemPutWritesArchiveAndChecksum(t *testing.T) {
	fs, err := NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("archive bytes")
	obj, err := fs.Put(context.Background(), Key{Namespace: "ns", Backup: "b", Snapshot: "b-1"}, data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(obj.Location)
	if err != nil {
		t.Fatalf("read archive: %v", err)
	}
	if string(got) != string(data) || obj.Size != int64(len(data)) {
		t.Errorf("archive = %q (%d bytes), want %q", got, obj.Size, data)
	}
	sum := sha256.Sum256(data)
	if want := "sha256:" + hex.EncodeToString(sum[:]); obj.Checksum != want {
		t.Errorf("checksum = %q, want %q", obj.Checksum, want)
	}
	line, err := os.ReadFile(obj.Location + ".sha256")
	if err != nil {
		t.Fatalf("read checksum file: %v", err)
	}
	if !strings.HasPrefix(string(line), hex.EncodeToString(sum[:])+"  b-1.tar.gz") {
		t.Errorf("checksum file = %q", line)
	}
}

func TestFilesystemListAndDelete(t *testing.T) {
	ctx := context.Background()
	fs, err := NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := []Key{{"ns", "a", "a-1"}, {"ns", "a", "a-2"}, {"ns", "b", "b-1"}}
	for _, k := range keys {
		if _, err := fs.Put(ctx, k, []byte(k.String())); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func() error
		want int
	}{
		{name: "lists every archive", do: func() error { return nil }, want: 3},
		{name: "deleting one archive removes it", do: func() error { return fs.Delete(ctx, keys[0]) }, want: 2},
		{name: "deleting a missing archive is not an error", do: func() error { return fs.Delete(ctx, keys[0]) }, want: 2},
		{name: "deleting a backup removes all its archives", do: func() error { return fs.DeleteBackup(ctx, "ns", "a") }, want: 1},
		{name: "deleting the last archive leaves no empty directory", do: func() error { return fs.Delete(ctx, keys[2]) }, want: 0},
		{name: "a put after that makes the directories again", do: func() error { _, err := fs.Put(ctx, keys[2], []byte("x")); return err }, want: 1},
		{name: "deleting the backup of the last archive leaves no empty directory", do: func() error { return fs.DeleteBackup(ctx, "ns", "b") }, want: 0},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := fs.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != s.want {
			t.Fatalf("%s: %d archives %v, want %d", s.name, len(got), got, s.want)
		}
	}
	if entries, err := os.ReadDir(fs.root); err != nil || len(entries) > 0 {
		t.Errorf("the store's root still holds %v (%v)", entries, err)
	}
}

func TestKeyValidateRefusesEscapes(t *testing.T) {
	cases := []struct {
		name string
		key  Key
		ok   bool
	}{
		{name: "accepts plain names", key: Key{"ns", "b", "b-1"}, ok: true},
		{name: "refuses a parent directory", key: Key{"ns", "..", "x"}},
		{name: "refuses a slash", key: Key{"ns", "b", "a/b"}},
		{name: "refuses an empty part", key: Key{"", "b", "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.key.Validate(); (err == nil) != c.ok {
				t.Errorf("Validate(%v) = %v, want ok=%v", c.key, err, c.ok)
			}
		})
	}
}
