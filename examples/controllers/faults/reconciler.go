package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ErrDependencyDown is what every reconcile returns in Errors mode.
var ErrDependencyDown = errors.New("the service this controller depends on is unavailable")

// Decorator wraps a reconciler with a fault.
type Decorator func(reconcile.Reconciler) reconcile.Reconciler

// Chain applies decorators so that the first one is the outermost.
func Chain(ds ...Decorator) Decorator {
	return func(r reconcile.Reconciler) reconcile.Reconciler {
		for i := len(ds) - 1; i >= 0; i-- {
			r = ds[i](r)
		}
		return r
	}
}

// Slow waits d before every reconcile, or until the reconcile's context ends.
func Slow(d time.Duration) Decorator {
	return func(inner reconcile.Reconciler) reconcile.Reconciler {
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
}

// Hang blocks every reconcile of the object called name until the reconcile's context ends
// (the process stops), before anything else: a call without a timeout. Other objects reconcile
// as before, on the workers left.
func Hang(name string) Decorator {
	return func(inner reconcile.Reconciler) reconcile.Reconciler {
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			if req.Name == name {
				<-ctx.Done()
				return reconcile.Result{}, ctx.Err()
			}
			return inner.Reconcile(ctx, req)
		})
	}
}

// Failing fails every reconcile with ErrDependencyDown; the controller-runtime queue retries
// each one with its exponential back-off.
func Failing() Decorator {
	return func(reconcile.Reconciler) reconcile.Reconciler {
		return reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, ErrDependencyDown
		})
	}
}

// NPlusOne lists the objects of newList in the request's namespace through reader (the manager's
// uncached API reader) and GETs each of them (at most 50) before every reconcile.
func NPlusOne(reader client.Reader, newList func() client.ObjectList) Decorator {
	return func(inner reconcile.Reconciler) reconcile.Reconciler {
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			list := newList()
			if err := reader.List(ctx, list, client.InNamespace(req.Namespace)); err != nil {
				return reconcile.Result{}, fmt.Errorf("list %T: %w", list, err)
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return reconcile.Result{}, err
			}
			for i, item := range items {
				if i >= nPlusOneFanout {
					break
				}
				obj := item.(client.Object)
				if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); client.IgnoreNotFound(err) != nil {
					return reconcile.Result{}, fmt.Errorf("get %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
				}
			}
			return inner.Reconcile(ctx, req)
		})
	}
}

// TimestampAnnotation patches HotLoopAnnotation with the current time onto the reconciled object
// after every reconcile: a value that differs on every pass, so every pass writes, and a
// controller that watches the object without a predicate is woken by its own write.
func TimestampAnnotation(c client.Client, newObject func() client.Object, clk clock.PassiveClock) Decorator {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return func(inner reconcile.Reconciler) reconcile.Reconciler {
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			res, err := inner.Reconcile(ctx, req)
			obj := newObject()
			if gerr := c.Get(ctx, req.NamespacedName, obj); gerr != nil || !obj.GetDeletionTimestamp().IsZero() {
				return res, err
			}
			patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[HotLoopAnnotation] = clk.Now().UTC().Format(time.RFC3339Nano)
			obj.SetAnnotations(ann)
			if perr := c.Patch(ctx, obj, patch); client.IgnoreNotFound(perr) != nil {
				return res, errors.Join(err, fmt.Errorf("patch %s: %w", req.NamespacedName, perr))
			}
			return res, err
		})
	}
}
