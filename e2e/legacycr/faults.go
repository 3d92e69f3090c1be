package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The faults break the controller from outside its reconciler, as decorators (the reference
// operator and the example controllers are broken the same way), so that loopwatch's checks can be
// shown to catch each on a controller-runtime v0.18 controller: its reconcile, error, latency and
// client-request series are those of any controller, only its workqueue series differ.

// faults switches the faults on; every field is off by default.
type faults struct {
	// errors makes every reconcile fail once it has read its object, as when the service it
	// then calls is down.
	errors bool
	// slow makes every reconcile wait this long first, as a call to a slow service does.
	slow time.Duration
	// nPlusOne lists the namespace's ConfigMaps from the API server and GETs each, uncached,
	// before every reconcile: API calls per reconcile grow with the ConfigMaps.
	nPlusOne bool
}

// errDependencyDown is what every reconcile returns with faults.errors.
var errDependencyDown = errors.New("the service this controller depends on is unavailable")

// nPlusOneFanout caps the GETs of faults.nPlusOne.
const nPlusOneFanout = 50

// wrap puts the faults that are on around r: the N+1 reads come first, then the slow call, then
// the failing dependency. reader reads from the API server
// (uncached); it is needed by nPlusOne only.
func (f faults) wrap(r reconcile.Reconciler, reader client.Reader, namespace string) (reconcile.Reconciler, error) {
	if f.nPlusOne {
		if reader == nil {
			return nil, errors.New("--fault-n-plus-one needs an API server (--kubeconfig)")
		}
		r = nPlusOne(r, reader, namespace)
	}
	if f.slow > 0 {
		r = slow(r, f.slow)
	}
	if f.errors {
		r = failing(r)
	}
	return r, nil
}

// failing fails every reconcile of inner that did not fail already.
func failing(inner reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if _, err := inner.Reconcile(ctx, req); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, errDependencyDown
	})
}

// slow waits d before every reconcile, or until the reconcile's context ends.
func slow(inner reconcile.Reconciler, d time.Duration) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return reconcile.Result{}, ctx.Err()
		case <-t.C:
		}
		return inner.Reconcile(ctx, req)
	})
}

// nPlusOne lists the namespace's ConfigMaps through reader and GETs each (up to nPlusOneFanout)
// before every reconcile.
func nPlusOne(inner reconcile.Reconciler, reader client.Reader, namespace string) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var list corev1.ConfigMapList
		if err := reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return reconcile.Result{}, fmt.Errorf("list configmaps: %w", err)
		}
		for i := range list.Items {
			if i == nPlusOneFanout {
				break
			}
			var cm corev1.ConfigMap
			if err := reader.Get(ctx, client.ObjectKeyFromObject(&list.Items[i]), &cm); err != nil {
				return reconcile.Result{}, fmt.Errorf("get configmap: %w", err)
			}
		}
		return inner.Reconcile(ctx, req)
	})
}
