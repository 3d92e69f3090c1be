// Package store holds the archives the backup operator writes: an interface,
// a filesystem implementation (the default) and a fault-injecting wrapper.
package store

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Key identifies one Snapshot's archive.
type Key struct {
	Namespace string
	Backup    string
	Snapshot  string
}

// String renders the key as namespace/backup/snapshot.
func (k Key) String() string { return path.Join(k.Namespace, k.Backup, k.Snapshot) }

// Validate refuses keys that are empty or could escape the store's root.
func (k Key) Validate() error {
	var errs []error
	for _, f := range []struct{ name, value string }{{"namespace", k.Namespace}, {"backup", k.Backup}, {"snapshot", k.Snapshot}} {
		if f.value == "" || f.value == "." || f.value == ".." || strings.ContainsAny(f.value, `/\`) {
			errs = append(errs, fmt.Errorf("invalid %s %q", f.name, f.value))
		}
	}
	return errors.Join(errs...)
}

// Object describes a stored archive.
type Object struct {
	// Location is where the archive is, in the store's terms.
	Location string
	// Size in bytes.
	Size int64
	// Checksum is "sha256:<hex>".
	Checksum string
}

// Store keeps archives. Implementations must honour ctx cancellation, since
// the controller bounds every store call with a timeout.
type Store interface {
	// Put writes the archive for key, replacing any previous one.
	Put(ctx context.Context, key Key, archive []byte) (Object, error)
	// Delete removes key's archive; a missing archive is not an error.
	Delete(ctx context.Context, key Key) error
	// DeleteBackup removes every archive of one Backup.
	DeleteBackup(ctx context.Context, namespace, backup string) error
	// List returns the keys of every stored archive.
	List(ctx context.Context) ([]Key, error)
}
