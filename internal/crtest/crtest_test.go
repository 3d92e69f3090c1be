package crtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The controller reconciles every request the feed adds, records its reconciles in
// controller-runtime's registry under its name, and stops cleanly when its context ends.
func TestStartReconcilesWhatTheFeedAdds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A name of its own per run: controller-runtime's registry is the process's.
	name := fmt.Sprint("crtest-probe-", time.Now().UnixNano())
	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[req.Name] = true
		if len(seen) == 3 {
			close(all)
		}
		return reconcile.Result{}, nil
	})
	fed := 0
	wait, err := Start(ctx, name, r, func(_ context.Context, q Queue) {
		fed++
		for i := range 3 {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: fmt.Sprint("object-", i)}})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("reconciled %v, want object-0 to object-2", seen)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	if fed != 1 {
		t.Errorf("feed called %d times, want once", fed)
	}
	for result, want := range map[string]float64{"success": 3, "error": 0, "requeue": 0, "requeue_after": 0} {
		got, err := reconciles(name, result)
		if err != nil || got != want {
			t.Errorf("controller_runtime_reconcile_total{result=%q} = %v (%v), want %v", result, got, err, want)
		}
	}
}

// reconciles reads controller_runtime_reconcile_total of controller name and result from
// controller-runtime's registry.
func reconciles(name, result string) (float64, error) {
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == name && labels["result"] == result {
				return m.GetCounter().GetValue(), nil
			}
		}
	}
	return 0, errors.New("no series")
}
