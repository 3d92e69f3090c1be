package controller

import (
	"fmt"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/loopwatch/loopwatch/instrument"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// ControllerOptions are the knobs both controllers share.
type ControllerOptions struct {
	// MaxConcurrentReconciles per controller. Defaults to 4.
	MaxConcurrentReconciles int
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// Metrics receives the per-controller API call counters; may be nil.
	Metrics *instrument.Metrics
	// MassUpdates, when set, feeds the Backup controller the mass updater's events.
	MassUpdates <-chan event.GenericEvent
}

func (o ControllerOptions) controller() controller.Options {
	n := o.MaxConcurrentReconciles
	if n <= 0 {
		n = 4
	}
	return controller.Options{
		MaxConcurrentReconciles: n,
		// The priority queue is the default since controller-runtime v0.23;
		// say so, because it is what makes edge-triggered work overtake the
		// low-priority items of a startup or resync (seed 003).
		UsePriorityQueue:   ptr.To(true),
		SkipNameValidation: ptr.To(o.SkipNameValidation),
	}
}

// deletionStarted passes the update that sets a deletionTimestamp, so the
// finalizer runs whether or not the API server bumped the generation. Finalizer
// changes alone do not pass: the controller's own finalizer patch must not
// wake it again.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// snapshotProgressed passes Snapshot updates the Backup controller cares
// about: a phase change or a deletion, not its own metadata churn.
var snapshotProgressed = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*backupv1.Snapshot)
		n, ok2 := e.ObjectNew.(*backupv1.Snapshot)
		if !ok1 || !ok2 {
			return true
		}
		return o.Status.Phase != n.Status.Phase || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
	},
}

// RBAC of the operator, least privilege: it patches (never updates) its own
// kinds, reads ConfigMaps and Secrets, and sets owner references with
// blockOwnerDeletion (hence backups/finalizers).
//
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=backups/status,verbs=get;patch
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=backups/finalizers,verbs=update
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=snapshots,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=snapshots/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch

// SetupWithManager registers the Backup controller. Backups wake it only when
// their spec (generation), deletion or finalizers change; Snapshots wake their
// owner only when their phase changes or they go away.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager, o ControllerOptions) error {
	forPredicates := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted)
	switch {
	case r.Faults.HotLoop:
		// The seed 002 bug: no predicate, so the reconciler's own annotation write wakes it.
		forPredicates = predicate.Funcs{}
	case r.Faults.Fight:
		forPredicates = predicate.Or[client.Object](forPredicates, predicate.AnnotationChangedPredicate{})
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(BackupControllerName).
		For(&backupv1.Backup{}, builder.WithPredicates(forPredicates)).
		Owns(&backupv1.Snapshot{}, builder.WithPredicates(snapshotProgressed)).
		WithOptions(o.controller())
	if o.MassUpdates != nil {
		b = b.WatchesRawSource(source.Channel(o.MassUpdates, &handler.EnqueueRequestForObject{}))
	}
	inner := r
	rec := instrument.Reconciler(BackupControllerName, mgr.GetClient(), o.Metrics, func(c client.Client) reconcile.Reconciler {
		inner.Client = c
		if inner.APIReader == nil {
			inner.APIReader = mgr.GetAPIReader()
		}
		inner.APIReader = instrument.NewReader(BackupControllerName, inner.APIReader, mgr.GetScheme(), o.Metrics)
		return inner
	})
	if err := b.Complete(rec); err != nil {
		return fmt.Errorf("set up backup controller: %w", err)
	}
	return nil
}

// SetupWithManager registers the Snapshot controller.
func (r *SnapshotReconciler) SetupWithManager(mgr ctrl.Manager, o ControllerOptions) error {
	rec := instrument.Reconciler(SnapshotControllerName, mgr.GetClient(), o.Metrics, func(c client.Client) reconcile.Reconciler {
		r.Client = c
		return r
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named(SnapshotControllerName).
		For(&backupv1.Snapshot{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted))).
		WithOptions(o.controller()).
		Complete(rec)
	if err != nil {
		return fmt.Errorf("set up snapshot controller: %w", err)
	}
	return nil
}
