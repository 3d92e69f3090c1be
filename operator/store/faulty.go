package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrInjected is returned by a Faulty store that is told to fail.
var ErrInjected = errors.New("injected store failure")

// Faulty wraps a Store to break it on purpose: a slow store (45 s calls), an
// outage during deletion (deletes hang until their context ends, as an
// unreachable S3 endpoint does) and a failing store (every write errors at
// once, an error storm). The zero value of each fault is off.
type Faulty struct {
	inner   Store
	latency time.Duration
	outage  atomic.Bool
	failing atomic.Bool
}

// NewFaulty wraps inner; latency is added to every Put and Delete.
func NewFaulty(inner Store, latency time.Duration) *Faulty {
	return &Faulty{inner: inner, latency: latency}
}

// SetDeleteOutage switches the deletion outage on or off; safe while the
// operator runs, so a test can start and end an outage.
func (f *Faulty) SetDeleteOutage(on bool) { f.outage.Store(on) }

// SetFailing switches the failing writes on or off; safe while the operator runs.
func (f *Faulty) SetFailing(on bool) { f.failing.Store(on) }

func (f *Faulty) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Put writes through after the injected latency, or fails when told to.
func (f *Faulty) Put(ctx context.Context, key Key, archive []byte) (Object, error) {
	if f.failing.Load() {
		return Object{}, fmt.Errorf("put archive %q: %w", key, ErrInjected)
	}
	if err := f.wait(ctx, f.latency); err != nil {
		return Object{}, fmt.Errorf("put archive %q: %w", key, err)
	}
	return f.inner.Put(ctx, key, archive)
}

// Delete hangs until ctx ends during an outage.
func (f *Faulty) Delete(ctx context.Context, key Key) error {
	if err := f.deleteFaults(ctx); err != nil {
		return fmt.Errorf("delete archive %q: %w", key, err)
	}
	return f.inner.Delete(ctx, key)
}

// DeleteBackup hangs until ctx ends during an outage.
func (f *Faulty) DeleteBackup(ctx context.Context, namespace, backup string) error {
	if err := f.deleteFaults(ctx); err != nil {
		return fmt.Errorf("delete archives of %s/%s: %w", namespace, backup, err)
	}
	return f.inner.DeleteBackup(ctx, namespace, backup)
}

func (f *Faulty) deleteFaults(ctx context.Context) error {
	if f.outage.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.failing.Load() {
		return ErrInjected
	}
	return f.wait(ctx, f.latency)
}

// List fails during an outage, so the orphan collector retries later.
func (f *Faulty) List(ctx context.Context) ([]Key, error) {
	if f.outage.Load() || f.failing.Load() {
		return nil, fmt.Errorf("list archives: %w", ErrInjected)
	}
	return f.inner.List(ctx)
}
