package app

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

var benchDeletions = envInt("OPERATOR_BENCH_DELETIONS", 200)

// deletionSLA is how long a deleted Backup may take to disappear, store up or down.
const deletionSLA = 30 * time.Second

// TestConcurrentDeletionsMeetTheSLADuringAStoreOutage deletes many Backups and
// their Snapshots at once (what the garbage collector does after a kubectl
// delete) while every store delete hangs, with the production delete timeout.
// Each object must be gone within the SLA; once the store is back, one orphan
// sweep must leave neither an archive nor an empty directory. The 200-deletion
// run is part of the benchmark (OPERATOR_BENCH=1).
func TestConcurrentDeletionsMeetTheSLADuringAStoreOutage(t *testing.T) {
	needCluster(t)
	sizes := []int{20}
	if *benchEnabled {
		sizes = append(sizes, benchDeletions)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("%d deletions", n), func(t *testing.T) { deleteDuringOutage(t, n) })
	}
}

func deleteDuringOutage(t *testing.T, n int) {
	ctx := context.Background()
	ns := newNamespace(t, "outage")
	createAppObjects(t, ns, "shop")
	o := testOptions(t)
	o.DeleteTimeout = Defaults().DeleteTimeout
	o.Namespaces = []string{ns}
	op, _ := startOperator(t, testCfg, o)
	createBackups(ctx, t, ns, n)
	eventually(t, time.Duration(n)*time.Second+30*time.Second, fmt.Sprintf("%d Ready Backups", n), func() (bool, error) {
		ready, _, err := countReady(ctx, ns)
		return ready == n, err
	})
	objs := deletable(ctx, t, ns)

	op.Store.SetDeleteOutage(true)
	gone := watchDisappear(ctx, t, ns, objs, 3*deletionSLA)
	start := time.Now()
	deleteAll(ctx, t, objs)
	w := <-gone
	lat := w.gone
	t.Logf("%d Backups and %d Snapshots deleted at once with the store down (delete timeout %s): %s",
		n, len(objs)-n, o.DeleteTimeout, lat.summary(start))
	if w.pendingShown == 0 {
		t.Errorf("no deleting Backup showed Ready reason %s while it waited for the store", backupv1.ReasonCleanupPending)
	}
	if got := countEvents(ctx, t, ns, backupv1.ReasonCleanupIncomplete); got < n {
		t.Errorf("%d %s Events, want one per Backup and Snapshot (%d)", got, backupv1.ReasonCleanupIncomplete, len(objs))
	}
	for _, l := range lat {
		if l.took > deletionSLA {
			t.Errorf("%s took %s, over the %s SLA", l.name, l.took.Round(time.Millisecond), deletionSLA)
		}
	}

	op.Store.SetDeleteOutage(false)
	if _, err := op.Orphans.Sweep(ctx); err != nil {
		t.Fatalf("orphan sweep: %v", err)
	}
	if left := storeContents(t, o.StoreDir); len(left) > 0 {
		t.Errorf("after the outage and one orphan sweep the store still holds %d entries: %v", len(left), left[:min(len(left), 10)])
	}
}

// deletable lists the Backups and Snapshots of ns.
func deletable(ctx context.Context, t *testing.T, ns string) []client.Object {
	t.Helper()
	backups, snaps := &backupv1.BackupList{}, &backupv1.SnapshotList{}
	if err := testClient.List(ctx, backups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := testClient.List(ctx, snaps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for i := range backups.Items {
		objs = append(objs, &backups.Items[i])
	}
	for i := range snaps.Items {
		objs = append(objs, &snaps.Items[i])
	}
	return objs
}

// deleteAll deletes objs with a few parallel writers, as the garbage collector
// and a user's kubectl do.
func deleteAll(ctx context.Context, t *testing.T, objs []client.Object) {
	t.Helper()
	const writers = 16
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(objs); i += writers {
				if err := testClient.Delete(ctx, objs[i]); client.IgnoreNotFound(err) != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("delete: %v", err)
	}
}

type disappearance struct {
	name string
	took time.Duration
}

type disappearances []disappearance

// deletionWatch is what watchDisappear saw.
type deletionWatch struct {
	gone disappearances
	// pendingShown counts the Backups seen with Ready reason CleanupPending.
	pendingShown int
}

// summary gives the spread of latencies and how many Backups went in each
// 10-second window, which shows whether deletions were served in batches.
func (d disappearances) summary(start time.Time) string {
	var backups []time.Duration
	for _, x := range d {
		if strings.HasPrefix(x.name, "Backup/") {
			backups = append(backups, x.took)
		}
	}
	slices.Sort(backups)
	if len(backups) == 0 {
		return "no Backup went away"
	}
	windows := map[int]int{}
	for _, b := range backups {
		windows[int(b/(10*time.Second))]++
	}
	var w []string
	for i := 0; i <= int(backups[len(backups)-1]/(10*time.Second)); i++ {
		w = append(w, fmt.Sprintf("%d-%ds: %d", i*10, i*10+10, windows[i]))
	}
	var snapMax time.Duration
	for _, x := range d {
		if strings.HasPrefix(x.name, "Snapshot/") {
			snapMax = max(snapMax, x.took)
		}
	}
	return fmt.Sprintf("Backups gone after min %s, median %s, max %s (%s); Snapshots max %s",
		backups[0].Round(10*time.Millisecond), backups[len(backups)/2].Round(10*time.Millisecond),
		backups[len(backups)-1].Round(10*time.Millisecond), strings.Join(w, ", "), snapMax.Round(10*time.Millisecond))
}

// watchDisappear lists ns every 100ms from the moment it is called and
// reports, once every object is gone or limit has passed, how long after the
// first report of its absence each one took, counted from when the watch
// started (just before the deletes). Objects still present at the limit
// count as taking the limit.
func watchDisappear(ctx context.Context, t *testing.T, ns string, objs []client.Object, limit time.Duration) <-chan deletionWatch {
	t.Helper()
	pending := map[string]bool{}
	for _, o := range objs {
		pending[kindName(o)] = true
	}
	out := make(chan deletionWatch, 1)
	start := time.Now()
	go func() {
		var got disappearances
		shown := map[string]bool{}
		for len(pending) > 0 && time.Since(start) < limit {
			time.Sleep(100 * time.Millisecond)
			present := map[string]bool{}
			backups, snaps := &backupv1.BackupList{}, &backupv1.SnapshotList{}
			if testClient.List(ctx, backups, client.InNamespace(ns)) != nil || testClient.List(ctx, snaps, client.InNamespace(ns)) != nil {
				continue
			}
			for i := range backups.Items {
				present[kindName(&backups.Items[i])] = true
				if c := meta.FindStatusCondition(backups.Items[i].Status.Conditions, backupv1.ConditionReady); c != nil && c.Reason == backupv1.ReasonCleanupPending {
					shown[backups.Items[i].Name] = true
				}
			}
			for i := range snaps.Items {
				present[kindName(&snaps.Items[i])] = true
			}
			for name := range pending {
				if !present[name] {
					got = append(got, disappearance{name: name, took: time.Since(start)})
					delete(pending, name)
				}
			}
		}
		for name := range pending {
			got = append(got, disappearance{name: name, took: limit})
		}
		out <- deletionWatch{gone: got, pendingShown: len(shown)}
	}()
	return out
}

func kindName(o client.Object) string {
	switch o.(type) {
	case *backupv1.Backup:
		return "Backup/" + o.GetName()
	case *backupv1.Snapshot:
		return "Snapshot/" + o.GetName()
	}
	return fmt.Sprintf("%T/%s", o, o.GetName())
}

// storeContents lists every file and directory under a filesystem store's
// root, the root itself excepted.
func storeContents(t *testing.T, root string) []string {
	t.Helper()
	var left []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			left = append(left, rel)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return left
}

// countEvents counts the Events of ns with reason.
func countEvents(ctx context.Context, t *testing.T, ns, reason string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := testClient.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason == reason {
			n++
		}
	}
	return n
}
