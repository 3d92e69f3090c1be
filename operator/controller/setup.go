package controller

import (
	"fmt"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/loopwatch/loopwatch/instrument"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// ControllerOptions are the knobs of one controller's setup.
type ControllerOptions struct {
	// MaxConcurrentReconciles per controller. Defaults to 4.
	MaxConcurrentReconciles int
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// Metrics receives the per-controller API call counters; may be nil.
	Metrics *instrument.Metrics
	// WrapReconciler, when set, decorates the reconciler; it receives the
	// instrumented client the reconciler uses, so the decorator's calls count
	// under the same controller. Tracing, or test-only behaviour injected from
	// outside, hooks in here without editing the reconciler.
	WrapReconciler func(client.Client, reconcile.Reconciler) reconcile.Reconciler
	// ExtraSources wake the controller besides its own watches.
	ExtraSources []source.Source
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
		// low-priority items of a startup or resync.
		UsePriorityQueue:   ptr.To(true),
		SkipNameValidation: ptr.To(o.SkipNameValidation),
	}
}

// complete instruments r, applies WrapReconciler and ExtraSources, and
// registers the controller. setClient hands r the instrumented client.
func (o ControllerOptions) complete(mgr ctrl.Manager, name string, b *builder.Builder, r reconcile.Reconciler, setClient func(client.Client)) error {
	for _, src := range o.ExtraSources {
		b = b.WatchesRawSource(src)
	}
	rec := instrument.Reconciler(name, mgr.GetClient(), o.Metrics, func(c client.Client) reconcile.Reconciler {
		setClient(c)
		if o.WrapReconciler != nil {
			return o.WrapReconciler(c, r)
		}
		return r
	})
	if err := b.Named(name).WithOptions(o.controller()).Complete(rec); err != nil {
		return fmt.Errorf("set up %s controller: %w", name, err)
	}
	return nil
}

// RBAC of the operator, least privilege: it patches (never updates) its own
// kinds, reads ConfigMaps and Secrets, sets owner references with
// blockOwnerDeletion (hence backups/finalizers) and emits Events.
//
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=backups/status,verbs=get;patch
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=backups/finalizers,verbs=update
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=snapshots,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=backup.loopwatch.dev,resources=snapshots/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the Backup controller. Backups wake it only when
// their spec (generation) changes or their deletion starts; Snapshots wake
// their owner only when their phase or Ready reason changes or they go away;
// a finished store clean-up wakes the Backup it was for. Metadata churn,
// including the controller's own writes, wakes nothing.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager, o ControllerOptions) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&backupv1.Backup{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted))).
		Owns(&backupv1.Snapshot{}, builder.WithPredicates(snapshotProgressed)).
		WatchesRawSource(r.cleanups.source())
	return o.complete(mgr, BackupControllerName, b, r, func(c client.Client) { r.Client = c })
}

// SetupWithManager registers the Snapshot controller. Snapshots wake it when
// their spec changes or their deletion starts, never on its own status
// writes; a finished store clean-up wakes the Snapshot it was for.
func (r *SnapshotReconciler) SetupWithManager(mgr ctrl.Manager, o ControllerOptions) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&backupv1.Snapshot{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted))).
		WatchesRawSource(r.cleanups.source())
	return o.complete(mgr, SnapshotControllerName, b, r, func(c client.Client) { r.Client = c })
}
