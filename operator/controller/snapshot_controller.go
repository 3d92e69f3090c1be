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
	"github.com/loopwatch/loopwatch/operator/store"
)

// SnapshotControllerName is the Snapshot controller's name (metric label).
const SnapshotControllerName = "snapshot"

// SnapshotReconciler writes a Snapshot's archive once and reports where it is;
// a completed or failed Snapshot is never touched again. Its finalizer removes
// the archive in the background, for at most DeleteTimeout.
type SnapshotReconciler struct {
	// Client reads from the cache and writes to the API server; instrument it.
	Client client.Client
	// Stores resolves the Backup's storeRef.
	Stores Stores
	// Clock is the time source.
	Clock clock.PassiveClock
	// PutTimeout bounds writing one archive.
	PutTimeout time.Duration
	// DeleteTimeout is how long after a Snapshot's deletion starts its
	// finalizer waits for the store clean-up (see BackupReconciler).
	DeleteTimeout time.Duration
	// Events receives a Warning when a clean-up is left to the orphan
	// collector; nil drops them.
	Events events.EventRecorder

	cleanups *cleanups
}

// NewSnapshotReconciler fills in the defaults: real clock, 1 min put timeout,
// 10 s delete timeout.
func NewSnapshotReconciler(r SnapshotReconciler) *SnapshotReconciler {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.PutTimeout <= 0 {
		r.PutTimeout = time.Minute
	}
	if r.DeleteTimeout <= 0 {
		r.DeleteTimeout = 10 * time.Second
	}
	if r.Events == nil {
		r.Events = noEvents{}
	}
	r.cleanups = newCleanups(r.Clock)
	return &r
}

// Reconcile follows the shape get → finalize → ensure finalizer → write the
// archive → one status patch when it changed.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &backupv1.Snapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			r.cleanups.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get snapshot %q: %w", req, err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(s, backupv1.SnapshotFinalizer) {
		orig := s.DeepCopy()
		controllerutil.AddFinalizer(s, backupv1.SnapshotFinalizer)
		if err := r.Client.Patch(ctx, s, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to %q: %w", req, err)
		}
	}
	if s.Status.Phase == backupv1.SnapshotCompleted || s.Status.Phase == backupv1.SnapshotFailed {
		return ctrl.Result{}, nil
	}

	desired := s.Status.DeepCopy()
	runErr := r.write(ctx, s, desired)
	if !equality.Semantic.DeepEqual(&s.Status, desired) {
		orig := s.DeepCopy()
		s.Status = *desired
		if err := r.Client.Status().Patch(ctx, s, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, fmt.Errorf("patch status of %q: %w", req, err)
		}
	}
	return ctrl.Result{}, runErr
}

// write builds and stores the archive, recording the outcome in st. The error
// it returns makes controller-runtime retry with backoff.
func (r *SnapshotReconciler) write(ctx context.Context, s *backupv1.Snapshot, st *backupv1.SnapshotStatus) error {
	now := r.Clock.Now()
	b := &backupv1.Backup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.BackupName}, b); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get backup of snapshot %s/%s: %w", s.Namespace, s.Name, err)
		}
		st.Phase = backupv1.SnapshotFailed
		setSnapshotConditions(st, s.Generation, now, metav1.ConditionFalse, backupv1.ReasonBackupNotFound,
			fmt.Sprintf("Backup %q does not exist", s.Spec.BackupName))
		return nil
	}
	// A spec the Backup controller refuses to act on cannot be retried into
	// working: fail the Snapshot, so it does not block the next one once the
	// spec is fixed.
	if problem := validateBackupSpec(b, r.Stores); problem != nil {
		st.Phase = backupv1.SnapshotFailed
		setSnapshotConditions(st, s.Generation, now, metav1.ConditionFalse, problem.reason,
			fmt.Sprintf("Backup %q: %s", b.Name, problem.message))
		return nil
	}
	entries, err := r.collect(ctx, b)
	if err != nil {
		return err
	}
	archive, err := store.BuildArchive(entries)
	if err != nil {
		return fmt.Errorf("build archive of %s/%s: %w", s.Namespace, s.Name, err)
	}
	st.Phase = backupv1.SnapshotPending
	stor, err := r.Stores.Get(b.StoreName())
	if err != nil {
		return err // checked above
	}
	cctx, cancel := context.WithTimeout(ctx, r.PutTimeout)
	obj, err := stor.Put(cctx, store.Key{Namespace: s.Namespace, Backup: b.Name, Snapshot: s.Name}, archive)
	cancel()
	if err != nil {
		setSnapshotConditions(st, s.Generation, now, metav1.ConditionFalse, backupv1.ReasonStoreError, err.Error())
		return fmt.Errorf("store archive of %s/%s: %w", s.Namespace, s.Name, err)
	}
	st.Phase = backupv1.SnapshotCompleted
	st.Location, st.SizeBytes, st.Checksum = obj.Location, obj.Size, obj.Checksum
	st.ObjectCount = int32(len(entries))
	done := r.Clock.Now()
	t := metav1.NewTime(done)
	st.CompletionTime = &t
	setSnapshotConditions(st, s.Generation, done, metav1.ConditionTrue, backupv1.ReasonArchiveWritten,
		fmt.Sprintf("%d objects, %d bytes", len(entries), obj.Size))
	return nil
}

// collect reads the selected objects from the cache.
func (r *SnapshotReconciler) collect(ctx context.Context, b *backupv1.Backup) ([]store.Entry, error) {
	sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	kinds := b.Spec.Kinds
	if len(kinds) == 0 {
		kinds = []backupv1.BackupKind{backupv1.KindConfigMap, backupv1.KindSecret}
	}
	opts := []client.ListOption{client.InNamespace(b.Namespace), client.MatchingLabelsSelector{Selector: sel}}
	var entries []store.Entry
	for _, k := range kinds {
		switch k {
		case backupv1.KindConfigMap:
			list := &corev1.ConfigMapList{}
			if err := r.Client.List(ctx, list, opts...); err != nil {
				return nil, fmt.Errorf("list configmaps of backup %s/%s: %w", b.Namespace, b.Name, err)
			}
			for i := range list.Items {
				o := list.Items[i].DeepCopy()
				o.ManagedFields, o.ResourceVersion = nil, ""
				o.APIVersion, o.Kind = "v1", "ConfigMap"
				entries = append(entries, store.Entry{Path: "configmaps/" + o.Name + ".json", Object: o})
			}
		case backupv1.KindSecret:
			list := &corev1.SecretList{}
			if err := r.Client.List(ctx, list, opts...); err != nil {
				return nil, fmt.Errorf("list secrets of backup %s/%s: %w", b.Namespace, b.Name, err)
			}
			for i := range list.Items {
				o := list.Items[i].DeepCopy()
				o.ManagedFields, o.ResourceVersion = nil, ""
				o.APIVersion, o.Kind = "v1", "Secret"
				entries = append(entries, store.Entry{Path: "secrets/" + o.Name + ".json", Object: o})
			}
		}
	}
	return entries, nil
}

func setSnapshotConditions(st *backupv1.SnapshotStatus, gen int64, now time.Time, status metav1.ConditionStatus, reason, msg string) {
	for _, t := range []string{backupv1.ConditionStored, backupv1.ConditionReady} {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now),
		})
	}
}

// finalize removes the archive in the background, as the Backup's finalizer
// does: the finalizer goes when the store confirmed or DeleteTimeout after
// the deletion started, and the orphan collector deletes what is left.
func (r *SnapshotReconciler) finalize(ctx context.Context, s *backupv1.Snapshot) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s, backupv1.SnapshotFinalizer) {
		return ctrl.Result{}, nil
	}
	key := client.ObjectKeyFromObject(s)
	storeName := DefaultStoreName
	b := &backupv1.Backup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.BackupName}, b); err == nil {
		storeName = b.StoreName()
	}
	deadline := s.DeletionTimestamp.Add(r.DeleteTimeout)
	var step cleanupStep
	if st, err := r.Stores.Get(storeName); err != nil {
		step = cleanupStep{done: true, err: err}
	} else {
		archive := store.Key{Namespace: s.Namespace, Backup: s.Spec.BackupName, Snapshot: s.Name}
		step = r.cleanups.step(ctx, key.String(), &backupv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}}, deadline,
			func(ctx context.Context) error { return st.Delete(ctx, archive) })
	}
	if !step.done {
		return ctrl.Result{RequeueAfter: step.wait}, r.recordPendingCleanup(ctx, s, storeName, step.err, deadline)
	}
	if step.err != nil {
		log.FromContext(ctx).Info("Store clean-up incomplete; removing the finalizer, the orphan collector will finish it",
			"snapshot", key.String(), "error", step.err.Error())
		r.Events.Eventf(s, nil, corev1.EventTypeWarning, backupv1.ReasonCleanupIncomplete, "Delete",
			"Archive left in store %q for the orphan collector: %v", storeName, step.err)
	}
	orig := s.DeepCopy()
	controllerutil.RemoveFinalizer(s, backupv1.SnapshotFinalizer)
	if err := r.Client.Patch(ctx, s, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer from %s: %w", key, err)
	}
	return ctrl.Result{}, nil
}

// recordPendingCleanup says in Ready why a deleting Snapshot is still there,
// once an attempt failed.
func (r *SnapshotReconciler) recordPendingCleanup(ctx context.Context, s *backupv1.Snapshot, storeName string, attemptErr error, deadline time.Time) error {
	if attemptErr == nil {
		return nil
	}
	orig := s.DeepCopy()
	meta.SetStatusCondition(&s.Status.Conditions, pendingCleanupCondition(storeName, attemptErr, deadline, s.Generation, r.Clock.Now()))
	if equality.Semantic.DeepEqual(orig.Status, s.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, s, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patch status of %s: %w", client.ObjectKeyFromObject(s), err)
	}
	return nil
}
