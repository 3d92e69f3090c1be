// Package controller holds the backup operator's reconcilers: Backup (takes
// Snapshots on schedule, applies retention, reports status) and Snapshot
// (writes the archive), plus the orphan-archive collector.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// BackupControllerName is the Backup controller's name (metric label).
const BackupControllerName = "backup"

// expectationWait is how long a reconcile waits for the cache to show its own
// writes before looking again.
const expectationWait = 2 * time.Second

// BackupReconciler takes a Backup's Snapshots on schedule, deletes those past
// retention and reports status. It reads only from the cache, through the
// SnapshotBackupIndex, and writes only what changed.
type BackupReconciler struct {
	// Client reads from the cache and writes to the API server; instrument it.
	Client client.Client
	// Stores resolves a Backup's storeRef.
	Stores Stores
	// Clock is the time source.
	Clock clock.PassiveClock
	// DeleteTimeout bounds the store clean-up of the finalizer.
	DeleteTimeout time.Duration

	expectations *expectations
}

// NewBackupReconciler fills in the defaults (real clock, 10 s delete timeout)
// and the expectations a BackupReconciler literal lacks; use it rather than
// the literal.
func NewBackupReconciler(r BackupReconciler) *BackupReconciler {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.DeleteTimeout <= 0 {
		r.DeleteTimeout = 10 * time.Second
	}
	r.expectations = newExpectations(r.Clock, time.Minute)
	return &r
}

// Reconcile follows the shape get → finalize → ensure finalizer → phases →
// one status patch when it changed.
func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	b := &backupv1.Backup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get backup %q: %w", req, err)
	}

	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, b)
	}

	if !controllerutil.ContainsFinalizer(b, backupv1.BackupFinalizer) {
		orig := b.DeepCopy()
		controllerutil.AddFinalizer(b, backupv1.BackupFinalizer)
		if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to %q: %w", req, err)
		}
	}

	now := r.Clock.Now()
	snaps, err := r.snapshots(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	set := classifySnapshots(snaps)

	// Phases, in order: wait for the cache to show our own writes, prune, take
	// the next snapshot. Status is computed from what was seen.
	result := ctrl.Result{}
	if !r.expectations.satisfied(req.String(), seenSnapshots(snaps)) {
		logger.V(1).Info("Waiting for the cache to show recent snapshot writes", "backup", req.String())
		result.RequeueAfter = expectationWait
	} else {
		if err := r.prune(ctx, b, set); err != nil {
			return ctrl.Result{}, err
		}
		due, wait := nextSnapshotDue(b, set, now)
		if due {
			if err := r.createSnapshot(ctx, b, now); err != nil {
				return ctrl.Result{}, err
			}
		} else if wait > 0 {
			result.RequeueAfter = wait
		}
	}

	desired := desiredBackupStatus(b, set, now)
	if !equality.Semantic.DeepEqual(b.Status, desired) {
		orig := b.DeepCopy()
		b.Status = desired
		if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patch status of %q: %w", req, err)
		}
	}
	return result, nil
}

// snapshots reads the Backup's Snapshots from the cache through the index,
// never by listing every Snapshot or going to the API server.
func (r *BackupReconciler) snapshots(ctx context.Context, b *backupv1.Backup) ([]backupv1.Snapshot, error) {
	list := &backupv1.SnapshotList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingFields{SnapshotBackupIndex: b.Name}); err != nil {
		return nil, fmt.Errorf("list snapshots of %s/%s: %w", b.Namespace, b.Name, err)
	}
	return list.Items, nil
}

func seenSnapshots(snaps []backupv1.Snapshot) map[string]bool {
	seen := make(map[string]bool, len(snaps))
	for i := range snaps {
		seen[snaps[i].Name] = snaps[i].DeletionTimestamp != nil
	}
	return seen
}

// prune deletes the completed Snapshots past retention. Their own finalizer
// removes the archives.
func (r *BackupReconciler) prune(ctx context.Context, b *backupv1.Backup, set snapshotSet) error {
	key := client.ObjectKeyFromObject(b).String()
	expired := set.expired(b.Spec.Retention)
	for i := range expired {
		s := &expired[i]
		if err := r.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete expired snapshot %s/%s: %w", s.Namespace, s.Name, err)
		}
		r.expectations.expectDelete(key, s.Name)
		log.FromContext(ctx).Info("Deleted expired snapshot", "snapshot", s.Namespace+"/"+s.Name)
	}
	return nil
}

func (r *BackupReconciler) createSnapshot(ctx context.Context, b *backupv1.Backup, now time.Time) error {
	s := &backupv1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:  b.Namespace,
			Name:       snapshotName(b.Name, now),
			Labels:     map[string]string{SnapshotBackupLabel: b.Name},
			Finalizers: []string{backupv1.SnapshotFinalizer},
		},
		Spec: backupv1.SnapshotSpec{BackupName: b.Name},
	}
	if err := controllerutil.SetControllerReference(b, s, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own snapshot: %w", err)
	}
	err := r.Client.Create(ctx, s)
	switch {
	case apierrors.IsAlreadyExists(err):
		// Another writer took this slot; the watch will bring it.
	case err != nil:
		return fmt.Errorf("create snapshot %s/%s: %w", s.Namespace, s.Name, err)
	default:
		log.FromContext(ctx).Info("Created snapshot", "snapshot", s.Namespace+"/"+s.Name)
	}
	r.expectations.expectCreate(client.ObjectKeyFromObject(b).String(), s.Name)
	return nil
}

// finalize removes the Backup's archives from its store, bounded by
// DeleteTimeout: when the store is down the finalizer is removed anyway, so a
// deletion completes within its 30 s SLA, and the orphan collector cleans up
// later.
func (r *BackupReconciler) finalize(ctx context.Context, b *backupv1.Backup) error {
	if !controllerutil.ContainsFinalizer(b, backupv1.BackupFinalizer) {
		return nil
	}
	logger := log.FromContext(ctx).WithValues("backup", b.Namespace+"/"+b.Name)
	if st, err := r.Stores.Get(b.StoreName()); err != nil {
		logger.Error(err, "Store unknown; archives left for the orphan collector")
	} else {
		cctx, cancel := context.WithTimeout(ctx, r.DeleteTimeout)
		err := st.DeleteBackup(cctx, b.Namespace, b.Name)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("delete archives of %s/%s: %w", b.Namespace, b.Name, err)
			}
			logger.Error(err, "Store clean-up failed; removing the finalizer anyway, the orphan collector will retry",
				"timedOut", errors.Is(err, context.DeadlineExceeded))
		}
	}
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, backupv1.BackupFinalizer)
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer from %s/%s: %w", b.Namespace, b.Name, err)
	}
	r.expectations.forget(client.ObjectKeyFromObject(b).String())
	return nil
}
