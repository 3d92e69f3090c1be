package instrument

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciler builds a reconciler whose client counts its calls under the
// controller's name, and wraps it so that each reconcile carries a Tally: the
// calls of one reconcile are logged at V(1) with how many were writes, which
// is what one reads first when a controller hot-loops or makes N+1 calls.
//
// build receives the instrumented client and returns the reconciler that uses it.
func Reconciler(controller string, c client.Client, m *Metrics, build func(client.Client) reconcile.Reconciler) reconcile.Reconciler {
	return &tallyingReconciler{controller: controller, inner: build(NewClient(controller, c, m))}
}

type tallyingReconciler struct {
	controller string
	inner      reconcile.Reconciler
}

// Reconcile runs the inner reconciler with a Tally in its context.
func (r *tallyingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if TallyFrom(ctx) != nil {
		// An outer scope (a test helper) is already observing: let it see the calls.
		return r.inner.Reconcile(ctx, req)
	}
	ctx, t := withCountingTally(ctx)
	res, err := r.inner.Reconcile(ctx, req)
	if logger := log.FromContext(ctx).V(1); logger.Enabled() {
		logger.Info("Reconcile API calls", "controller", r.controller, "object", req.String(),
			"calls", len(t.Calls()), "writes", len(t.Writes()))
	}
	return res, err
}
