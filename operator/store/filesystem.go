package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// archiveExt is the file name extension of archives.
const archiveExt = ".tar.gz"

// Filesystem stores archives as files under a root directory:
// <root>/<namespace>/<backup>/<snapshot>.tar.gz, with the checksum beside it
// in <snapshot>.tar.gz.sha256 (sha256sum format).
type Filesystem struct {
	root string
}

// NewFilesystem returns a store rooted at dir, creating it if needed.
func NewFilesystem(dir string) (*Filesystem, error) {
	if dir == "" {
		return nil, errors.New("filesystem store: a directory is required")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create store directory %q: %w", dir, err)
	}
	return &Filesystem{root: dir}, nil
}

func (f *Filesystem) path(k Key) string {
	return filepath.Join(f.root, k.Namespace, k.Backup, k.Snapshot+archiveExt)
}

// Put writes the archive atomically (temporary file, then rename) and its checksum file.
func (f *Filesystem) Put(ctx context.Context, key Key, archive []byte) (Object, error) {
	if err := key.Validate(); err != nil {
		return Object{}, fmt.Errorf("put archive: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Object{}, fmt.Errorf("put archive %q: %w", key, err)
	}
	p := f.path(key)
	var err error
	for range 3 {
		if err = os.MkdirAll(filepath.Dir(p), 0o750); err == nil {
			err = writeAtomic(p, archive)
		}
		// A Delete of the directory's last archive removes the directory; if
		// that happened between the two steps, make it again.
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return Object{}, fmt.Errorf("put archive %q: %w", key, err)
	}
	sum := sha256.Sum256(archive)
	digest := hex.EncodeToString(sum[:])
	line := fmt.Sprintf("%s  %s\n", digest, filepath.Base(p))
	if err := writeAtomic(p+".sha256", []byte(line)); err != nil {
		return Object{}, fmt.Errorf("put checksum of %q: %w", key, err)
	}
	return Object{Location: p, Size: int64(len(archive)), Checksum: "sha256:" + digest}, nil
}

func writeAtomic(p string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close() //nolint:errcheck // the write error is the one to report
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Delete removes the archive and its checksum file, then the Backup's and
// the namespace's directories if that left them empty.
func (f *Filesystem) Delete(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
		return fmt.Errorf("delete archive: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete archive %q: %w", key, err)
	}
	p := f.path(key)
	for _, name := range []string{p, p + ".sha256"} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete archive %q: %w", key, err)
		}
	}
	f.removeEmpty(filepath.Join(f.root, key.Namespace, key.Backup), filepath.Join(f.root, key.Namespace))
	return nil
}

// removeEmpty removes each directory that is empty, in order, and stops at
// the first that is not: an archive still there or a Put in progress keeps
// it, and the orphan collector leaves no empty directories behind.
func (f *Filesystem) removeEmpty(dirs ...string) {
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// DeleteBackup removes the Backup's directory, then the namespace's if that
// left it empty.
func (f *Filesystem) DeleteBackup(ctx context.Context, namespace, backup string) error {
	if err := (Key{Namespace: namespace, Backup: backup, Snapshot: "x"}).Validate(); err != nil {
		return fmt.Errorf("delete backup archives: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete archives of %s/%s: %w", namespace, backup, err)
	}
	if err := os.RemoveAll(filepath.Join(f.root, namespace, backup)); err != nil {
		return fmt.Errorf("delete archives of %s/%s: %w", namespace, backup, err)
	}
	f.removeEmpty(filepath.Join(f.root, namespace))
	return nil
}

// List walks the root and returns every archive's key.
func (f *Filesystem) List(ctx context.Context) ([]Key, error) {
	var keys []Key
	err := filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, archiveExt) {
			return nil
		}
		rel, err := filepath.Rel(f.root, p)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil
		}
		keys = append(keys, Key{Namespace: parts[0], Backup: parts[1], Snapshot: strings.TrimSuffix(parts[2], archiveExt)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list archives under %q: %w", f.root, err)
	}
	return keys, nil
}
