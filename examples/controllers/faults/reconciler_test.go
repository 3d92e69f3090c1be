package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestChainAppliesTheFirstDecoratorOutermost(t *testing.T) {
	var order []string
	mark := func(name string) Decorator {
		return func(inner reconcile.Reconciler) reconcile.Reconciler {
			return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				order = append(order, name)
				return inner.Reconcile(ctx, req)
			})
		}
	}
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		order = append(order, "inner")
		return reconcile.Result{}, nil
	})
	if _, err := Chain(mark("a"), mark("b"))(inner).Reconcile(context.Background(), reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != "a" || order[1] != "b" || order[2] != "inner" {
		t.Errorf("order %v, want [a b inner]", order)
	}
}

func TestFailingNeverReachesTheReconciler(t *testing.T) {
	called := false
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		called = true
		return reconcile.Result{}, nil
	})
	_, err := Failing()(inner).Reconcile(context.Background(), reconcile.Request{})
	if !errors.Is(err, ErrDependencyDown) || called {
		t.Errorf("err %v, reconciler called %v; want ErrDependencyDown and no call", err, called)
	}
}

func TestSlowWaitsAndGivesUpWithItsContext(t *testing.T) {
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	start := time.Now()
	if _, err := Slow(50*time.Millisecond)(inner).Reconcile(context.Background(), reconcile.Request{}); err != nil || time.Since(start) < 50*time.Millisecond {
		t.Errorf("err %v after %s, want nil after 50ms", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Slow(time.Hour)(inner).Reconcile(ctx, reconcile.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func TestHangHoldsOnlyItsObjectUntilTheContextEnds(t *testing.T) {
	calls := 0
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		calls++
		return reconcile.Result{}, nil
	})
	r := Hang("stuck")(inner)
	other := reconcile.Request{}
	other.Name = "other"
	if _, err := r.Reconcile(context.Background(), other); err != nil || calls != 1 {
		t.Fatalf("another object: err %v, %d calls; want nil and 1", err, calls)
	}
	stuck := reconcile.Request{}
	stuck.Name = "stuck"
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		_, err := r.Reconcile(ctx, stuck)
		returned <- err
	}()
	select {
	case err := <-returned:
		t.Fatalf("the stuck object's reconcile returned %v before its context ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("err %v, %d calls; want context.Canceled and the reconciler not called", err, calls)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still blocked 5s after its context ended")
	}
}
