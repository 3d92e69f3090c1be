// Package conditions is an AppConfig controller written the way many kubebuilder users write
// one, with plain controller-runtime: it reports what it found in status conditions kept with
// meta.SetStatusCondition (each with lastTransitionTime and observedGeneration) and writes the
// whole status back with Update on every pass. Other actors write AppConfigs too, so under
// contention some of its Updates, made from the copy in its cache, are answered 409 Conflict;
// it asks to be requeued then, as the common idiom goes, rather than failing the reconcile.
//
// It is not instrumented with loopwatch: loopwatch's rules see it through controller-runtime's
// own metrics only. Faults are injected from outside, by package faults.
package conditions

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1 "github.com/loopwatch/loopwatch/examples/controllers/conditions/api/v1"
)

// ControllerName is the controller's name: the `controller` label of its metrics.
const ControllerName = "appconfig"

// configMapKey indexes AppConfigs by the ConfigMap they name.
const configMapKey = ".spec.configMapName"

// AppConfigReconciler reconciles AppConfigs.
type AppConfigReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=config.examples.loopwatch.dev,resources=appconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.examples.loopwatch.dev,resources=appconfigs/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// Reconcile looks up the AppConfig's ConfigMap and writes what it found into the conditions.
func (r *AppConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app configv1.AppConfig
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	var cm corev1.ConfigMap
	err := r.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Spec.ConfigMapName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		setConditions(&app, nil)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get configmap %q: %w", app.Spec.ConfigMapName, err)
	default:
		setConditions(&app, &cm)
	}

	if err := r.Status().Update(ctx, &app); err != nil {
		if apierrors.IsConflict(err) {
			// The cache has not seen another writer's change yet: try again with what it sees
			// next, without counting a failure.
			return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // the idiom this example shows
		}
		return ctrl.Result{}, fmt.Errorf("update status: %w", err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: AppConfigs wake it with no predicate, as
// `kubebuilder create api` scaffolds it, and so does any change of a ConfigMap an AppConfig names.
func (r *AppConfigReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &configv1.AppConfig{}, configMapKey, func(obj client.Object) []string {
		return []string{obj.(*configv1.AppConfig).Spec.ConfigMapName}
	}); err != nil {
		return fmt.Errorf("index appconfigs by configmap: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&configv1.AppConfig{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.appConfigsFor)).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.wrap(r))
}

// appConfigsFor maps a ConfigMap to the AppConfigs that name it.
func (r *AppConfigReconciler) appConfigsFor(ctx context.Context, cm client.Object) []reconcile.Request {
	var apps configv1.AppConfigList
	if err := r.List(ctx, &apps, client.InNamespace(cm.GetNamespace()), client.MatchingFields{configMapKey: cm.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(apps.Items))
	for _, a := range apps.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&a)})
	}
	return reqs
}

// Options are how the controller is registered.
type Options struct {
	// MaxConcurrentReconciles is the number of workers; controller-runtime's default is 1.
	MaxConcurrentReconciles int
	// WrapReconciler, when set, decorates the reconciler the controller runs: tracing, or
	// behaviour injected from outside by tests.
	WrapReconciler func(reconcile.Reconciler) reconcile.Reconciler
}

func (o Options) wrap(r reconcile.Reconciler) reconcile.Reconciler {
	if o.WrapReconciler == nil {
		return r
	}
	return o.WrapReconciler(r)
}
