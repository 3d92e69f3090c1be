package faults

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type countingReconciler struct{ calls int }

func (c *countingReconciler) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	c.calls++
	return reconcile.Result{}, nil
}

func TestBackupDecoratorWrapsOnlyForReconcilerSideModes(t *testing.T) {
	cases := []struct {
		name        string
		modes       Modes
		wantWrapped bool
		wantSources int
	}{
		{name: "leaves the reference untouched with every mode off", modes: Modes{}},
		{name: "leaves the reconciler to the store for store faults", modes: Modes{SlowStore: 1, StoreOutage: true, FailingStore: true}},
		{name: "leaves the reconciler alone without leader election", modes: Modes{NoLeaderElection: true}},
		{name: "decorates for the hot loop and watches without a predicate", modes: Modes{HotLoop: true}, wantWrapped: true, wantSources: 1},
		{name: "decorates for N+1 reads without another watch", modes: Modes{NPlusOne: true}, wantWrapped: true},
		{name: "decorates for the fight and watches annotation changes", modes: Modes{Fight: true}, wantWrapped: true, wantSources: 1},
		{name: "adds one watch when the hot loop and the fight are both on", modes: Modes{HotLoop: true, Fight: true}, wantWrapped: true, wantSources: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inner := &countingReconciler{}
			got := BackupDecorator{Modes: c.modes}.Wrap(nil, inner)
			if wrapped := got != reconcile.Reconciler(inner); wrapped != c.wantWrapped {
				t.Errorf("wrapped = %v, want %v", wrapped, c.wantWrapped)
			}
			if n := len(c.modes.backupSources(nil)); n != c.wantSources {
				t.Errorf("%d extra sources, want %d", n, c.wantSources)
			}
		})
	}
}
