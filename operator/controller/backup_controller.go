// Package controller holds the backup operator's reconcilers: Backup (takes
// Snapshots on schedule, applies retention, reports status) and Snapshot
// (writes the archive), plus the orphan-archive collector.
package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
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
	// DeleteTimeout is how long after a Backup's deletion starts its finalizer
	// waits for the store clean-up; then the finalizer goes and the orphan
	// collector deletes what is left. Keep it well under the deletion SLA.
	DeleteTimeout time.Duration
	// Events receives a Warning when the spec cannot be acted on or a
	// clean-up is left to the orphan collector; nil drops them.
	Events events.EventRecorder

	expectations *expectations
	cleanups     *cleanups
}

// NewBackupReconciler fills in the defaults (real clock, 10 s delete
// timeout) and the expectations and clean-ups a BackupReconciler literal
// lacks; use it rather than the literal.
func NewBackupReconciler(r BackupReconciler) *BackupReconciler {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.DeleteTimeout <= 0 {
		r.DeleteTimeout = 10 * time.Second
	}
	if r.Events == nil {
		r.Events = noEvents{}
	}
	r.expectations = newExpectations(r.Clock, time.Minute)
	r.cleanups = newCleanups(r.Clock)
	return &r
}

// Reconcile follows the shape get → finalize → ensure finalizer → phases →
// one status patch when it changed.
func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &backupv1.Backup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.forget(req.String())
			r.cleanups.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get backup %q: %w", req, err)
	}

	if !b.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, b)
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

	// A spec the operator cannot act on gets no Snapshot, only a status that
	// says what to fix.
	problem := validateBackupSpec(b, r.Stores)
	result := ctrl.Result{}
	if problem == nil {
		if result, err = r.takeSnapshots(ctx, b, snaps, set, now); err != nil {
			return ctrl.Result{}, err
		}
	}

	desired := desiredBackupStatus(b, set, problem, now)
	if !equality.Semantic.DeepEqual(b.Status, desired) {
		orig := b.DeepCopy()
		b.Status = desired
		if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patch status of %q: %w", req, err)
		}
		r.announce(b, orig.Status.Conditions, desired.Conditions)
	}
	return result, nil
}

// takeSnapshots runs the phases that write, in order: wait for the cache to
// show our own writes, prune past retention, take the next Snapshot when due.
func (r *BackupReconciler) takeSnapshots(ctx context.Context, b *backupv1.Backup, snaps []backupv1.Snapshot, set snapshotSet, now time.Time) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(b).String()
	if !r.expectations.satisfied(key, seenSnapshots(snaps)) {
		log.FromContext(ctx).V(1).Info("Waiting for the cache to show recent snapshot writes", "backup", key)
		return ctrl.Result{RequeueAfter: expectationWait}, nil
	}
	if err := r.prune(ctx, b, set); err != nil {
		return ctrl.Result{}, err
	}
	due, wait := nextSnapshotDue(b, set, now)
	if !due {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return ctrl.Result{}, r.createSnapshot(ctx, b, now)
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
			Labels:     map[string]string{SnapshotBackupLabel: BackupLabelValue(b.Name)},
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

// finalize removes the Backup's archives from its store, in the background:
// the finalizer goes when the store confirmed, or DeleteTimeout after the
// deletion started, whichever comes first, so a deletion meets its SLA with
// the store down however many Backups are deleted at once. Until then the
// Ready condition says what it waits for; what the store still holds at the
// deadline is left to the orphan collector.
func (r *BackupReconciler) finalize(ctx context.Context, b *backupv1.Backup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, backupv1.BackupFinalizer) {
		return ctrl.Result{}, nil
	}
	key := client.ObjectKeyFromObject(b)
	deadline := b.DeletionTimestamp.Add(r.DeleteTimeout)
	var step cleanupStep
	if st, err := r.Stores.Get(b.StoreName()); err != nil {
		step = cleanupStep{done: true, err: err}
	} else {
		step = r.cleanups.step(ctx, key.String(), &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name}}, deadline,
			func(ctx context.Context) error { return st.DeleteBackup(ctx, b.Namespace, b.Name) })
	}
	if !step.done {
		return ctrl.Result{RequeueAfter: step.wait}, r.recordPendingCleanup(ctx, b, step.err, deadline)
	}
	if step.err != nil {
		log.FromContext(ctx).Info("Store clean-up incomplete; removing the finalizer, the orphan collector will finish it",
			"backup", key.String(), "error", step.err.Error())
		r.Events.Eventf(b, nil, corev1.EventTypeWarning, backupv1.ReasonCleanupIncomplete, "Delete",
			"Archives left in store %q for the orphan collector: %v", b.StoreName(), step.err)
	}
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, backupv1.BackupFinalizer)
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer from %s: %w", key, err)
	}
	r.expectations.forget(key.String())
	return ctrl.Result{}, nil
}

// recordPendingCleanup says in Ready why a deleting Backup is still there,
// once an attempt failed (a healthy store needs no status write).
func (r *BackupReconciler) recordPendingCleanup(ctx context.Context, b *backupv1.Backup, attemptErr error, deadline time.Time) error {
	if attemptErr == nil {
		return nil
	}
	orig := b.DeepCopy()
	meta.SetStatusCondition(&b.Status.Conditions, pendingCleanupCondition(b.StoreName(), attemptErr, deadline, b.Generation, r.Clock.Now()))
	if equality.Semantic.DeepEqual(orig.Status, b.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patch status of %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}
