package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"sort"
)

// Entry is one object to put in an archive.
type Entry struct {
	// Path inside the archive, e.g. "configmaps/app.json".
	Path string
	// Object is marshalled to JSON.
	Object any
}

// BuildArchive returns a gzipped tar of the entries as JSON files. The output
// depends only on the entries (sorted by path, no timestamps), so the same
// objects always give the same checksum.
func BuildArchive(entries []Entry) ([]byte, error) {
	sorted := append([]Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range sorted {
		data, err := json.MarshalIndent(e.Object, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("marshal %q: %w", e.Path, err)
		}
		hdr := &tar.Header{Name: e.Path, Mode: 0o600, Size: int64(len(data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("write header of %q: %w", e.Path, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("write %q: %w", e.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("close gzip: %w", err)
	}
	return buf.Bytes(), nil
}
