package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/converge"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/faults"
)

func TestLeaderFailoverTakesNoDuplicateSnapshots(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "failover")
	createAppObjects(t, ns, "shop")
	opts := func() Options {
		o := testOptions(t)
		o.LeaderElection = true
		o.LeaderElectionNamespace = ns
		o.LeaderElectionID = "backup-operator-" + ns
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 3*time.Second, 2*time.Second, 250*time.Millisecond
		return o
	}
	shared := opts()
	first, stopFirst := startOperator(t, testCfg, shared)
	select {
	case <-first.Manager.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the first operator was not elected")
	}
	secondOpts := opts()
	secondOpts.StoreDir = shared.StoreDir
	second, _ := startOperator(t, testCfg, secondOpts)

	create := func(names ...string) {
		for _, n := range names {
			if err := testClient.Create(ctx, newBackup(ns, n, "shop")); err != nil {
				t.Fatal(err)
			}
		}
	}
	create("before-1", "before-2", "before-3")
	eventually(t, 30*time.Second, "the first leader to make three Backups Ready", func() (bool, error) {
		n, _, err := countReady(ctx, ns)
		return n == 3, err
	})
	select {
	case <-second.Manager.Elected():
		t.Fatal("the second operator was elected while the first one led")
	default:
	}

	stopFirst()
	select {
	case <-second.Manager.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the second operator did not take over")
	}
	create("after-1", "after-2")
	eventually(t, 30*time.Second, "the new leader to make all five Backups Ready", func() (bool, error) {
		n, _, err := countReady(ctx, ns)
		return n == 5, err
	})
	// Give a racing or confused replica time to do damage before counting.
	time.Sleep(2 * time.Second)
	for _, n := range []string{"before-1", "before-2", "before-3", "after-1", "after-2"} {
		snaps, err := snapshotsOf(ctx, ns, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(snaps) != 1 {
			var names []string
			for _, s := range snaps {
				names = append(names, s.Name)
			}
			t.Errorf("backup %s has %d snapshots %v, want exactly 1", n, len(snaps), names)
		}
	}
}

func TestThousandBackupsConverge(t *testing.T) {
	needCluster(t)
	if testing.Short() {
		t.Skip("1,000 Backups take a while; skipped with -short")
	}
	ctx := context.Background()
	ns := newNamespace(t, "thousand")
	createAppObjects(t, ns, "shop")
	o := testOptions(t)
	o.MaxConcurrentReconciles = 8
	op, _ := startOperator(t, testCfg, o)
	const n = 1000
	start := time.Now()
	createBackups(ctx, t, ns, n)
	eventually(t, 5*time.Minute, fmt.Sprintf("%d Ready Backups", n), func() (bool, error) {
		ready, _, err := countReady(ctx, ns)
		return ready == n, err
	})
	t.Logf("%d Backups Ready %s after the first create", n, time.Since(start).Round(time.Millisecond))
	stores := controller.Stores{controller.DefaultStoreName: op.Store}
	rep := converge.Assert(ctx, t, converge.Config{Client: op.Manager.GetClient(), Targets: convergeTargets(ns, op.Manager.GetClient(), stores, faults.Modes{})})
	if rep.Reconciles != 2*n {
		t.Errorf("final pass reconciled %d objects, want %d", rep.Reconciles, 2*n)
	}
}

// createBackups creates n Backups with a few parallel writers.
func createBackups(ctx context.Context, t *testing.T, ns string, n int) {
	t.Helper()
	const writers = 8
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			for i := w; i < n; i += writers {
				if err := testClient.Create(ctx, newBackup(ns, fmt.Sprintf("b-%05d", i), "shop")); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatalf("create backups: %v", err)
		}
	}
}
