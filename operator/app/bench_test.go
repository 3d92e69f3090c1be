package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/faults"
)

var (
	benchEnabled = flag.Bool("operator.bench", os.Getenv("OPERATOR_BENCH") != "", "run the reference vs N+1 benchmark (also OPERATOR_BENCH=1)")
	benchBackups = flag.Int("operator.bench-backups", envInt("OPERATOR_BENCH_BACKUPS", 2000), "Backups per variant (also OPERATOR_BENCH_BACKUPS)")
	benchCap     = flag.Duration("operator.bench-cap", time.Duration(envInt("OPERATOR_BENCH_CAP_MINUTES", 30))*time.Minute,
		"longest wait for one variant; a variant still running then is reported with what it did so far (also OPERATOR_BENCH_CAP_MINUTES)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchResult is one variant's run.
type benchResult struct {
	variant string
	backups int
	// ready is how many Backups were Ready when the run ended; less than
	// backups when the variant hit the cap, and then its request count is a
	// lower bound.
	ready         int
	wall          time.Duration
	reads, writes int64
	// calls are the reconcilers' calls through the instrumented client,
	// cache reads included.
	calls float64
}

func (r benchResult) perBackup() float64 { return float64(r.reads+r.writes) / float64(r.backups) }

func (r benchResult) String() string {
	done := "all Ready"
	if r.ready < r.backups {
		done = fmt.Sprintf("capped: %d of %d Ready, counts are lower bounds", r.ready, r.backups)
	}
	return fmt.Sprintf("| %s | %d | %s (%s) | %d | %d | %d | %.2f | %.2f |", r.variant, r.backups, r.wall.Round(time.Millisecond), done,
		r.reads+r.writes, r.reads, r.writes, r.perBackup(), r.calls/float64(r.backups))
}

// TestBenchmarkReferenceVsNPlusOne creates N Backups and waits until all are
// Ready, once with the reference operator and once with --fault-n-plus-one,
// counting the HTTP requests each operator sends to the API server; then it
// restarts the reference operator over its Ready Backups and checks it makes
// no write. Enable with -operator.bench (N: -operator.bench-backups).
func TestBenchmarkReferenceVsNPlusOne(t *testing.T) {
	needCluster(t)
	if !*benchEnabled {
		t.Skip("benchmark not requested: set OPERATOR_BENCH=1 or -operator.bench")
	}
	n := *benchBackups
	ref := runVariant(t, "reference", n, faults.Modes{})
	t.Log(ref.benchResult)
	if ref.ready < n {
		t.Fatalf("the reference operator did not make %d Backups Ready within %s", n, *benchCap)
	}
	restartWrites, restartReads := restartOver(t, ref.variantNamespace, n)
	t.Logf("restart over %d Ready Backups: %d writes, %d reads", n, restartWrites, restartReads)
	bad := runVariant(t, "n-plus-one", n, faults.Modes{NPlusOne: true})
	t.Log(bad.benchResult)

	var b strings.Builder
	fmt.Fprintf(&b, "\n| variant | backups | wall time | API requests | reads | writes | requests/Backup | client calls/Backup |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range []benchResult{ref.benchResult, bad.benchResult} {
		fmt.Fprintln(&b, r)
	}
	ratio := bad.perBackup() / ref.perBackup()
	speed := float64(bad.wall) / float64(ref.wall)
	fmt.Fprintf(&b, "\nN+1 / reference: %.1fx the API requests, %.2fx the wall time\n", ratio, speed)
	fmt.Fprintf(&b, "restart of the reference operator over %d Ready Backups: %d writes, %d reads\n", n, restartWrites, restartReads)
	t.Log(b.String())

	if restartWrites != 0 {
		t.Errorf("restart over Ready Backups made %d writes, want 0", restartWrites)
	}
	if ratio < 20 {
		t.Errorf("N+1 makes only %.1fx the requests of the reference, want >= 20x", ratio)
	}
	if bad.ready == n && bad.wall <= ref.wall {
		t.Errorf("reference (%s) is not faster than N+1 (%s)", ref.wall, bad.wall)
	}
}

type variantRun struct {
	benchResult
	variantNamespace string
}

func runVariant(t *testing.T, name string, n int, modes faults.Modes) variantRun {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t, "bench-"+name)
	createAppObjects(t, ns, "shop")
	counter := &requestCounter{}
	o := testOptions(t)
	o.Faults = modes
	o.Namespaces = []string{ns}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	_, stop := startOperator(t, counter.wrap(testCfg), o)
	reads0, writes0 := counter.reads.Load(), counter.writes.Load()

	start := time.Now()
	createBackups(ctx, t, ns, n)
	ready := 0
	for time.Since(start) < *benchCap {
		var err error
		if ready, _, err = countReady(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if ready == n {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	wall := time.Since(start)
	reads, writes := counter.reads.Load()-reads0, counter.writes.Load()-writes0
	stop()
	return variantRun{
		benchResult: benchResult{variant: name, backups: n, ready: ready, wall: wall, reads: reads, writes: writes,
			calls: sumCounter(t, reg, catalogue.ControllerAPIRequestsTotal.Name, "")},
		variantNamespace: ns,
	}
}

// restartOver starts a fresh reference operator over ns, waits until both
// controllers reconciled every object once, and returns its writes and reads.
func restartOver(t *testing.T, ns string, n int) (int64, int64) {
	t.Helper()
	counter := &requestCounter{}
	o := testOptions(t)
	o.Namespaces = []string{ns}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	_, stop := startOperator(t, counter.wrap(testCfg), o)
	defer stop()
	reads0, writes0 := counter.reads.Load(), counter.writes.Load()
	eventually(t, 10*time.Minute, "the restarted operator to reconcile every object", func() (bool, error) {
		backups := sumCounter(t, reg, catalogue.ControllerAPIRequestsTotal.Name, controller.BackupControllerName)
		snaps := sumCounter(t, reg, catalogue.ControllerAPIRequestsTotal.Name, controller.SnapshotControllerName)
		// A Backup reconcile makes two calls (get, list), a Snapshot reconcile one.
		return backups >= float64(2*n) && snaps >= float64(n), nil
	})
	time.Sleep(2 * time.Second)
	return counter.writes.Load() - writes0, counter.reads.Load() - reads0
}

// sumCounter sums a counter family, optionally for one controller.
func sumCounter(t *testing.T, g prometheus.Gatherer, name, ctrlName string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if ctrlName == "" || labelValue(m, catalogue.LabelController) == ctrlName {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
