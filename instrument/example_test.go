package instrument_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/instrument"
)

type myReconciler struct{ client client.Client }

func (r *myReconciler) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}

// Wiring a controller: the reconciler gets a client that counts its calls
// under the controller's name; the metrics go into the registry the manager
// serves (controller-runtime's metrics.Registry in a real binary), and a
// FinalizerAge runnable exports the oldest object stuck on the finalizer.
func Example() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	m, err := instrument.NewMetrics(metrics.Registry)
	if err != nil {
		panic(err)
	}
	age, err := instrument.NewFinalizerAge(instrument.FinalizerAgeConfig{
		Controller: "widget", Finalizer: "example.com/cleanup", Reader: mgr.GetCache(), Metrics: m,
		NewList: func() client.ObjectList { return &corev1.ConfigMapList{} },
	})
	if err != nil {
		panic(err)
	}
	if err := mgr.Add(age); err != nil {
		panic(err)
	}
	r := instrument.Reconciler("widget", mgr.GetClient(), m, func(c client.Client) reconcile.Reconciler {
		return &myReconciler{client: c}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("widget").For(&corev1.ConfigMap{}).Complete(r); err != nil {
		panic(err)
	}
}
