package controller

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/store"
)

// OrphanCollector removes archives whose Snapshot or Backup no longer exists:
// what a finalizer could not delete because the store was down. It is a
// manager Runnable that runs on the leader only.
type OrphanCollector struct {
	// Reader reads Backups and Snapshots, normally from the cache.
	Reader client.Reader
	// Stores are the stores to sweep.
	Stores Stores
	// Interval between sweeps. Defaults to 5 minutes.
	Interval time.Duration
	// Timeout bounds one sweep of one store. Defaults to 1 minute.
	Timeout time.Duration
}

// NeedLeaderElection reports true: only the leader deletes.
func (o *OrphanCollector) NeedLeaderElection() bool { return true }

// Start sweeps every Interval, the first time one Interval after it becomes
// leader, until ctx is done.
func (o *OrphanCollector) Start(ctx context.Context) error {
	interval := o.Interval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	logger := log.FromContext(ctx).WithName("orphan-collector")
	every(ctx, interval, func(ctx context.Context) {
		n, err := o.Sweep(ctx)
		if err != nil {
			logger.Error(err, "Orphan sweep failed; will retry")
		}
		if n > 0 {
			logger.Info("Deleted orphaned archives", "count", n)
		}
	})
	return nil
}

// Sweep deletes the orphaned archives of every store once and returns how many it deleted.
func (o *OrphanCollector) Sweep(ctx context.Context) (int, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deleted := 0
	var firstErr error
	for _, name := range o.Stores.Names() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		n, err := o.sweepStore(cctx, o.Stores[name])
		cancel()
		deleted += n
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("sweep store %q: %w", name, err)
		}
	}
	return deleted, firstErr
}

func (o *OrphanCollector) sweepStore(ctx context.Context, st store.Store) (int, error) {
	keys, err := st.List(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, k := range keys {
		orphan, err := o.orphaned(ctx, k)
		if err != nil {
			return deleted, err
		}
		if !orphan {
			continue
		}
		if err := st.Delete(ctx, k); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}

// orphaned: the Snapshot is gone or deleting, or its Backup is gone or deleting.
func (o *OrphanCollector) orphaned(ctx context.Context, k store.Key) (bool, error) {
	b := &backupv1.Backup{}
	if gone, err := goneOrDeleting(ctx, o.Reader, client.ObjectKey{Namespace: k.Namespace, Name: k.Backup}, b); gone || err != nil {
		return gone, err
	}
	s := &backupv1.Snapshot{}
	return goneOrDeleting(ctx, o.Reader, client.ObjectKey{Namespace: k.Namespace, Name: k.Snapshot}, s)
}

func goneOrDeleting(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object) (bool, error) {
	if err := r.Get(ctx, key, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return true, nil
		}
		return false, fmt.Errorf("get %s: %w", key, err)
	}
	return !obj.GetDeletionTimestamp().IsZero(), nil
}
