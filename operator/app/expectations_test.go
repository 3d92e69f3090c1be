package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/loopwatch/loopwatch/instrument"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/store"
)

// steppingClock moves a second forward on every reading, so each reconcile
// would name a new Snapshot (names carry the second) if it decided to create
// one, while staying well inside the expectations' one-minute TTL.
type steppingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// frozenSnapshots is a cache that never shows a Snapshot created after its
// first list: an informer lagging behind the controller's own creates, made
// deterministic.
type frozenSnapshots struct {
	client.Client
	mu     sync.Mutex
	frozen *backupv1.SnapshotList
}

func (f *frozenSnapshots) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	sl, ok := list.(*backupv1.SnapshotList)
	if !ok {
		return f.Client.List(ctx, list, opts...)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen == nil {
		f.frozen = &backupv1.SnapshotList{}
		if err := f.Client.List(ctx, f.frozen, opts...); err != nil {
			f.frozen = nil
			return err
		}
	}
	f.frozen.DeepCopyInto(sl)
	return nil
}

// TestExpectationsPreventDuplicatesFromAStaleCache reconciles one Backup ten
// times through a cache that does not show the Snapshot the first reconcile
// created, with a clock that makes every reconcile think the next snapshot is
// due. Only the expectations stop a second create.
func TestExpectationsPreventDuplicatesFromAStaleCache(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t, "expect")
	b := newBackup(ns, "shop", "shop")
	b.Spec.IntervalSeconds = 10
	if err := testClient.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(testCfg, func(o *cluster.Options) { o.Scheme = scheme })
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.AddIndexes(ctx, cl.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cl.Start(ctx) }()
	if !cl.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	// Warm the Snapshot informer before the first reconcile.
	if _, err := snapshotsOf(ctx, ns, b.Name); err != nil {
		t.Fatal(err)
	}
	fs, err := store.NewFilesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := controller.NewBackupReconciler(controller.BackupReconciler{
		Client: instrument.NewClient("test", &frozenSnapshots{Client: cl.GetClient()}, nil),
		Stores: controller.Stores{controller.DefaultStoreName: fs},
		Clock:  &steppingClock{now: time.Now(), step: time.Second},
	})
	creates := 0
	for i := 0; i < 10; i++ {
		rctx, tally := instrument.WithTally(ctx)
		if _, err := r.Reconcile(rctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tally.Writes() {
			if w.Verb == instrument.VerbCreate {
				creates++
			}
		}
	}
	snaps, err := snapshotsOf(ctx, ns, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	if creates != 1 || len(snaps) != 1 {
		t.Errorf("%d creates and %d Snapshots after ten quick reconciles, want 1 and 1", creates, len(snaps))
	}
}
