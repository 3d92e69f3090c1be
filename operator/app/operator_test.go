package app

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/converge"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/faults"
)

func TestHappyPathWritesAnArchiveAndReportsReady(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "happy")
	createAppObjects(t, ns, "shop")
	startOperator(t, testCfg, testOptions(t))

	b := newBackup(ns, "shop", "shop")
	if err := testClient.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Backup to be Ready", func() (bool, error) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(b), b)
		return err == nil && backupReady(b), err
	})
	if b.Status.LastSnapshot == nil || b.Status.Snapshots != 1 || b.Status.CompletedSnapshots != 1 {
		t.Fatalf("status = %+v, want one completed snapshot", b.Status)
	}
	for _, c := range b.Status.Conditions {
		if c.ObservedGeneration != b.Generation {
			t.Errorf("condition %s observedGeneration %d, generation %d", c.Type, c.ObservedGeneration, b.Generation)
		}
	}

	s := &backupv1.Snapshot{}
	if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Status.LastSnapshot.Name}, s); err != nil {
		t.Fatal(err)
	}
	if s.Status.Phase != backupv1.SnapshotCompleted || s.Status.ObjectCount != 2 {
		t.Fatalf("snapshot status = %+v, want Completed with 2 objects", s.Status)
	}
	owner := metav1OwnerName(s)
	if owner != b.Name {
		t.Errorf("snapshot controller owner = %q, want %q", owner, b.Name)
	}
	data, err := os.ReadFile(s.Status.Location)
	if err != nil {
		t.Fatalf("read archive: %v", err)
	}
	sum := sha256.Sum256(data)
	if want := "sha256:" + hex.EncodeToString(sum[:]); s.Status.Checksum != want || s.Status.SizeBytes != int64(len(data)) {
		t.Errorf("checksum/size = %s/%d, file has %s/%d", s.Status.Checksum, s.Status.SizeBytes, want, len(data))
	}
	names := archiveNames(t, data)
	if strings.Join(names, ",") != "configmaps/shop-config.json,secrets/shop-secret.json" {
		t.Errorf("archive holds %v, want the labelled ConfigMap and Secret only", names)
	}
}

func metav1OwnerName(s *backupv1.Snapshot) string {
	for _, o := range s.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Backup" {
			return o.Name
		}
	}
	return ""
}

func archiveNames(t *testing.T, data []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	sort.Strings(names)
	return names
}

// convergeTargets drives fresh Backup and Snapshot reconcilers over every
// object of ns, reading through c (a started operator's cached client).
func convergeTargets(ns string, c client.Client, stores controller.Stores, modes faults.Modes) []converge.Target {
	list := func(l client.ObjectList) func(ctx context.Context) ([]reconcile.Request, error) {
		return func(ctx context.Context) ([]reconcile.Request, error) {
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			var reqs []reconcile.Request
			switch l := l.(type) {
			case *backupv1.BackupList:
				for i := range l.Items {
					reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
				}
			case *backupv1.SnapshotList:
				for i := range l.Items {
					reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
				}
			}
			return reqs, nil
		}
	}
	return []converge.Target{
		{
			Name: "backup",
			New: func(cl client.Client) reconcile.Reconciler {
				r := controller.NewBackupReconciler(controller.BackupReconciler{Client: cl, Stores: stores})
				return faults.BackupDecorator{Modes: modes, APIReader: cl}.Wrap(cl, r)
			},
			Requests: list(&backupv1.BackupList{}),
			MaxCalls: 3,
		},
		{
			Name: "snapshot",
			New: func(cl client.Client) reconcile.Reconciler {
				return controller.NewSnapshotReconciler(controller.SnapshotReconciler{Client: cl, Stores: stores})
			},
			Requests: list(&backupv1.SnapshotList{}),
			MaxCalls: 2,
		},
	}
}

func TestReconcileOfAnUpToDateBackupMakesNoWrites(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "converge")
	createAppObjects(t, ns, "shop")
	op, _ := startOperator(t, testCfg, testOptions(t))
	for _, name := range []string{"a", "b", "c"} {
		if err := testClient.Create(ctx, newBackup(ns, name, "shop")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "three Ready Backups", func() (bool, error) {
		n, _, err := countReady(ctx, ns)
		return n == 3, err
	})
	stores := controller.Stores{controller.DefaultStoreName: op.Store}
	rep := converge.Assert(ctx, t, converge.Config{Client: op.Manager.GetClient(), Targets: convergeTargets(ns, op.Manager.GetClient(), stores, faults.Modes{})})
	if rep.Reconciles != 6 || len(rep.Writes) != 0 {
		t.Errorf("final pass: %d reconciles, %d writes; want 6 reconciles, 0 writes", rep.Reconciles, len(rep.Writes))
	}
	t.Logf("converged after %d passes; final pass %d calls, at most %d per reconcile", rep.Passes, rep.FinalCalls, rep.MaxCallsSeen)
}

func TestConvergeCatchesTheHotLoopFault(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "hotloop")
	createAppObjects(t, ns, "shop")
	op, _ := startOperator(t, testCfg, testOptions(t))
	if err := testClient.Create(ctx, newBackup(ns, "shop", "shop")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Backup to be Ready", func() (bool, error) {
		n, _, err := countReady(ctx, ns)
		return n == 1, err
	})
	stores := controller.Stores{controller.DefaultStoreName: op.Store}
	rep, err := converge.Run(ctx, converge.Config{
		Client:    op.Manager.GetClient(),
		Targets:   convergeTargets(ns, op.Manager.GetClient(), stores, faults.Modes{HotLoop: true}),
		MaxPasses: 3, Settle: 100 * time.Millisecond,
	})
	if err == nil {
		t.Fatal("converge passed a reconciler that patches a timestamp on every reconcile")
	}
	if !strings.Contains(err.Error(), faults.HotLoopAnnotation) || len(rep.Writes) == 0 {
		t.Errorf("the failure does not name the offending write: %v", err)
	}
	t.Logf("converge reported: %v", err)
}

func TestDeletionCompletesWithinTheSLADuringAStoreOutage(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "outage")
	createAppObjects(t, ns, "shop")
	o := testOptions(t)
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	op, _ := startOperator(t, testCfg, o)
	b := newBackup(ns, "shop", "shop")
	if err := testClient.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Backup to be Ready", func() (bool, error) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(b), b)
		return err == nil && backupReady(b), err
	})
	snaps, err := snapshotsOf(ctx, ns, b.Name)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots = %d (%v), want 1", len(snaps), err)
	}
	archive := snaps[0].Status.Location

	op.Store.SetDeleteOutage(true)
	start := time.Now()
	for _, obj := range []client.Object{&snaps[0], b} {
		if err := testClient.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	const sla = 30 * time.Second
	oldest := 0.0
	eventually(t, sla, "the Snapshot and the Backup to be gone", func() (bool, error) {
		oldest = max(oldest, gaugeValue(t, reg, catalogue.ControllerFinalizerOldestPendingSeconds.Name, controller.BackupControllerName))
		for _, obj := range []client.Object{&backupv1.Snapshot{}, &backupv1.Backup{}} {
			key := client.ObjectKey{Namespace: ns, Name: snaps[0].Name}
			if _, ok := obj.(*backupv1.Backup); ok {
				key.Name = b.Name
			}
			if err := testClient.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	took := time.Since(start)
	t.Logf("deleted in %s with the store down (delete timeout %s, SLA %s)", took.Round(time.Millisecond), o.DeleteTimeout, sla)
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("the archive should still be there after the outage: %v", err)
	}
	if oldest < 1 {
		t.Errorf("%s peaked at %v while the Backup waited on its finalizer, want >= 1s", catalogue.ControllerFinalizerOldestPendingSeconds.Name, oldest)
	}
	eventually(t, 5*time.Second, "the finalizer age to fall back to 0", func() (bool, error) {
		return gaugeValue(t, reg, catalogue.ControllerFinalizerOldestPendingSeconds.Name, controller.BackupControllerName) == 0, nil
	})

	op.Store.SetDeleteOutage(false)
	n, err := op.Orphans.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Usually one archive is orphaned; on a loaded machine the Backup may have taken a second
	// snapshot before its deletion. What matters: the orphans are gone, none is left behind.
	if _, err := os.Stat(archive); !os.IsNotExist(err) || n < 1 {
		t.Errorf("orphan collector deleted %d archives and left %s (%v)", n, archive, err)
	}
	left, err := filepath.Glob(filepath.Join(filepath.Dir(archive), "*.tar.gz"))
	if err != nil || len(left) > 0 {
		t.Errorf("archives left after the orphan sweep: %v (%v)", left, err)
	}
}

// gaugeValue reads a gauge family for one controller.
func gaugeValue(t *testing.T, g prometheus.Gatherer, name, ctrlName string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, catalogue.LabelController) == ctrlName {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
