package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/internal/stack"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
)

// handoverBudget is how long a graceful restart of the leader may leave the
// operator without a leader.
const handoverBudget = 5 * time.Second

// leaderMissingAlert is the default rule that watches for a controller
// without a leader.
const leaderMissingAlert = "LoopwatchLeaderMissing"

// TestGracefulRestartHandsOverWithinSeconds runs two replicas of the operator
// binary (production lease settings) and restarts the leader gracefully three
// times, as a rolling update does. Each time the leader must release the
// Lease on SIGTERM and the standby take it within handoverBudget; a Backup
// created at the SIGTERM must be Ready soon after. A real Prometheus scrapes
// both replicas throughout, and the expression of the default
// LoopwatchLeaderMissing rule must be true for far less than the rule's
// `for:`, so the alert stays silent. Standbys must log no finalizer-age
// errors.
func TestGracefulRestartHandsOverWithinSeconds(t *testing.T) {
	needCluster(t)
	if testing.Short() {
		t.Skip("runs the operator binary and Prometheus; skipped with -short")
	}
	ctx := context.Background()
	ns := newNamespace(t, "handover")
	createAppObjects(t, ns, "shop")
	alert := loadAlertRule(t, filepath.Join("..", "..", "rules", "loopwatch.rules.yaml"), leaderMissingAlert)

	const leaseName = "backup-operator-handover"
	kubeconfig := testKubeconfigFile(t)
	storeDir := t.TempDir()
	addrs := []string{freeAddr(t), freeAddr(t)}
	start := func(slot int) *operatorProcess {
		return startOperatorProcess(t, fmt.Sprintf("backup-operator-%d", slot), addrs[slot],
			"--kubeconfig="+kubeconfig, "--leader-election-namespace="+ns, "--leader-election-id="+leaseName,
			"--namespace="+ns, "--store-dir="+storeDir)
	}
	var targets []stack.ScrapeTarget
	for i, a := range addrs {
		targets = append(targets, stack.ScrapeTarget{Job: "backup-operator", Addresses: []string{a},
			Labels: map[string]string{"namespace": ns, "pod": fmt.Sprintf("backup-operator-%d", i)}})
	}
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{Targets: targets})

	procs := []*operatorProcess{start(0), start(1)}
	leases := watchLease(ctx, t, ns, leaseName)
	leader := waitForLeader(t, procs, leaseName)
	if err := testClient.Create(ctx, newBackup(ns, "before", "shop")); err != nil {
		t.Fatal(err)
	}
	waitForReady(ctx, t, newBackup(ns, "before", "shop"), backupv1.ReasonSnapshotCompleted)

	var handovers []time.Duration
	for round := 1; round <= 3; round++ {
		standby := 1 - leader
		waitForStandbySynced(t, procs[standby])
		held := leases.last()
		sigterm := time.Now()
		if err := procs[leader].terminate(t); err != nil {
			t.Errorf("round %d: leader exited with %v", round, err)
		}
		stopped := time.Since(sigterm)
		b := newBackup(ns, fmt.Sprintf("after-%d", round), "shop")
		if err := testClient.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		next := leases.waitForHolder(t, held.holder, 30*time.Second)
		handover := next.seen.Sub(sigterm)
		waitForReady(ctx, t, b, backupv1.ReasonSnapshotCompleted)
		ready := time.Since(sigterm)
		released := leases.releasedBetween(held.holder, sigterm, next.seen)
		t.Logf("round %d: leader stopped %s after SIGTERM; lease released: %v; standby took it after %s; a Backup created at the SIGTERM was Ready after %s",
			round, stopped.Round(time.Millisecond), released, handover.Round(time.Millisecond), ready.Round(time.Millisecond))
		if !released {
			t.Errorf("round %d: the leader did not release the lease on shutdown", round)
		}
		if handover > handoverBudget {
			t.Errorf("round %d: handover took %s, want under %s", round, handover.Round(time.Millisecond), handoverBudget)
		}
		handovers = append(handovers, handover)

		// The pod comes back, as a standby.
		procs[leader] = start(leader)
		leader = standby
		if got := waitForLeader(t, procs, leaseName); got != leader {
			t.Fatalf("round %d: replica %d leads, want %d", round, got, leader)
		}
		// Let Prometheus see the new leader before the window closes.
		time.Sleep(3 * time.Second)
		window := time.Since(sigterm).Round(time.Second) + time.Second
		v, err := prom.Query(ctx, fmt.Sprintf("count_over_time((%s)[%ds:1s])", alert.Expr, int(window.Seconds())))
		if err != nil {
			t.Fatal(err)
		}
		trueFor := time.Duration(0)
		for _, s := range v {
			trueFor = max(trueFor, time.Duration(s.Value)*time.Second)
		}
		t.Logf("round %d: %s's expression was true for %s of the %s around the handover (for: %s)", round, leaderMissingAlert, trueFor, window, alert.For)
		if trueFor >= alert.For {
			t.Errorf("round %d: %s's expression was true for %s, as long as its for: %s", round, leaderMissingAlert, trueFor, alert.For)
		}
	}
	slices.Sort(handovers)
	t.Logf("handovers: %v (budget %s)", handovers, handoverBudget)

	for _, p := range procs {
		if strings.Contains(p.logs.String(), "Measuring finalizer age failed") {
			t.Errorf("%s logged finalizer-age failures:\n%s", p.name, p.logs.tail(20))
		}
	}
	v, err := prom.Query(ctx, fmt.Sprintf(`ALERTS{alertname=%q}`, leaderMissingAlert))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Errorf("%s is pending or firing: %v", leaderMissingAlert, v)
	}
}

// alertRule is the part of a generated rule the test reads.
type alertRule struct {
	Alert string        `json:"alert"`
	Expr  string        `json:"expr"`
	For   time.Duration `json:"-"`
	Raw   string        `json:"for"`
}

// loadAlertRule reads one alert from a rules file.
func loadAlertRule(t *testing.T, path, name string) alertRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := sigsyaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				if r.For, err = time.ParseDuration(r.Raw); err != nil {
					t.Fatalf("%s: for %q: %v", name, r.Raw, err)
				}
				return r
			}
		}
	}
	t.Fatalf("%s has no alert %s", path, name)
	return alertRule{}
}

// waitForLeader returns the replica that reports holding the lease.
func waitForLeader(t *testing.T, procs []*operatorProcess, lease string) int {
	t.Helper()
	leader := -1
	eventually(t, 60*time.Second, "a leader", func() (bool, error) {
		for i, p := range procs {
			if v, err := p.metric(fmt.Sprintf(`leader_election_master_status{name=%q}`, lease)); err == nil && v == "1" {
				leader = i
				return true, nil
			}
		}
		return false, fmt.Errorf("no replica reports leader_election_master_status 1")
	})
	return leader
}

// waitForStandbySynced waits until a standby serves metrics, that is, its
// manager started and its caches synced.
func waitForStandbySynced(t *testing.T, p *operatorProcess) {
	t.Helper()
	eventually(t, 60*time.Second, p.name+" to run as a standby", func() (bool, error) {
		_, err := p.metric("leader_election_master_status")
		return err == nil, err
	})
}

// leaseObservation is one holder of the Lease, when the watcher first saw it.
type leaseObservation struct {
	holder string
	seen   time.Time
}

type leaseWatch struct {
	mu  sync.Mutex
	obs []leaseObservation
}

// watchLease watches the Lease and records each change of holder, an empty
// holder (released) included. A watch, not polling: a release the standby
// takes over within milliseconds is still seen.
func watchLease(ctx context.Context, t *testing.T, ns, name string) *leaseWatch {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	wi, err := cs.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wi.Stop)
	w := &leaseWatch{}
	go func() {
		for ev := range wi.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			w.mu.Lock()
			if len(w.obs) == 0 || w.obs[len(w.obs)-1].holder != holder {
				w.obs = append(w.obs, leaseObservation{holder: holder, seen: time.Now()})
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *leaseWatch) last() leaseObservation {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.obs) == 0 {
		return leaseObservation{}
	}
	return w.obs[len(w.obs)-1]
}

// waitForHolder waits until someone other than old holds the lease.
func (w *leaseWatch) waitForHolder(t *testing.T, old string, timeout time.Duration) leaseObservation {
	t.Helper()
	var got leaseObservation
	eventually(t, timeout, "a new lease holder", func() (bool, error) {
		got = w.last()
		return got.holder != "" && got.holder != old, fmt.Errorf("holder %q", got.holder)
	})
	return got
}

// releasedBetween reports whether holder gave the lease up (an empty holder)
// between from and to.
func (w *leaseWatch) releasedBetween(holder string, from, to time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, o := range w.obs {
		if o.holder == "" && i > 0 && w.obs[i-1].holder == holder && !o.seen.Before(from) && !o.seen.After(to) {
			return true
		}
	}
	return false
}

// TestLeaderMissingStaysSilentThroughAGracefulHandover runs the promtool
// cases of testdata/leader-handover.test.yaml against the default rules: a
// handover of seconds that falls on an evaluation leaves
// LoopwatchLeaderMissing silent, a standby that never takes over fires it.
func TestLeaderMissingStaysSilentThroughAGracefulHandover(t *testing.T) {
	needCluster(t)
	promtool, err := stack.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", filepath.Join("testdata", "leader-handover.test.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
