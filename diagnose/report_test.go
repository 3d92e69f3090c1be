package diagnose

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixture fills a planned diagnosis with fixed query results, as Prometheus would have
// answered them.
type fixture struct {
	t testing.TB
	d *diagnosis
}

func newFixture(t testing.TB) *fixture {
	d := planned(t, gen.Default(), nil)
	d.inv = &inventory{cfg: d.opts.Config, byJob: map[jobKey][]controllerKey{}, coverage: map[string]map[string]float64{}, reporting: map[controllerKey]bool{}}
	return &fixture{t: t, d: d}
}

func (fx *fixture) run(a *gen.Alert) *checkRun {
	for _, r := range fx.d.runs {
		if r.check.alert == a {
			return r
		}
	}
	fx.t.Fatalf("no run of %s", a.FullName())
	return nil
}

// constant is a series holding v at every step from `from` to `to` before the window's end.
func (fx *fixture) constant(labels map[string]string, from, to time.Duration, v float64) series {
	s := series{labels: labels}
	for ts := fx.d.end.Add(-from); !ts.After(fx.d.end.Add(-to)); ts = ts.Add(fx.d.step) {
		s.points = append(s.points, point{ts, v})
	}
	return s
}

// controller declares a controller with every family the checks need, but those in without.
func (fx *fixture) controller(namespace, job, name string, without ...catalogue.Metric) map[string]string {
	k := controllerKey{"", namespace, job, name}
	fx.d.inv.controllers = append(fx.d.inv.controllers, k)
	fx.d.inv.byJob[k.jobKey()] = append(fx.d.inv.byJob[k.jobKey()], k)
	fx.d.inv.reporting[k] = true
	l := map[string]string{"namespace": namespace, "job": job, "controller": name}
	for _, m := range neededFamilies() {
		skip := false
		for _, w := range without {
			skip = skip || w.Name == m.Name
		}
		if skip || m.Source == catalogue.SourceExporter || m.Source == catalogue.SourceInstrument || m.Name == catalogue.LeaderElectionMasterStatus.Name {
			continue
		}
		if fx.d.inv.coverage[m.Name] == nil {
			fx.d.inv.coverage[m.Name] = map[string]float64{}
		}
		fx.d.inv.coverage[m.Name][fx.d.inv.levelKey(m, l)] = 60
	}
	return l
}

// exporter declares that the audit exporter's metrics exist.
func (fx *fixture) exporter() {
	fx.d.inv.coverage[catalogue.AuditBatchesTotal.Name] = map[string]float64{"": 60}
}

// holds makes alert a's condition hold for an instance with labels from `from` to `to` before
// the end, at value v.
func (fx *fixture) holds(a *gen.Alert, labels map[string]string, from, to time.Duration, v float64) {
	r := fx.run(a)
	r.alert = append(r.alert, fx.constant(labels, from, to, v))
}

// signal sets the value of one of alert a's signals (by name; the first of that name) for a
// series with labels, over the whole window.
func (fx *fixture) signal(a *gen.Alert, name string, labels map[string]string, v float64) {
	r := fx.run(a)
	for _, list := range [][]signalData{r.signals, r.extras} {
		for i := range list {
			if list[i].spec.name == name {
				list[i].series = append(list[i].series, fx.constant(labels, fx.d.end.Sub(fx.d.start), 0, v))
				return
			}
		}
	}
	fx.t.Fatalf("%s has no signal %q", a.FullName(), name)
}

func with(l map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// fixtureReport is a report over fixed query results covering every kind of finding: a stuck
// worker behind a growing queue, a healthy controller, a write fight behind a high PATCH rate,
// missing workqueue metrics and a fight between actors that are no controller found.
func fixtureReport(t testing.TB) Report {
	fx := newFixture(t)
	fx.exporter()
	backup := fx.controller("backup-system", "backup-operator", "backup")
	snapshot := fx.controller("backup-system", "backup-operator", "snapshot")
	cart := fx.controller("shop", "shop-operator", "cart")
	legacy := fx.controller("legacy", "legacy-operator", "legacy",
		catalogue.WorkqueueDepth, catalogue.WorkqueueAddsTotal, catalogue.WorkqueueWorkDurationSeconds,
		catalogue.WorkqueueQueueDurationSeconds, catalogue.WorkqueueLongestRunningProcessorSeconds)
	pod := func(l map[string]string, name string) map[string]string {
		return map[string]string{"namespace": l["namespace"], "job": l["job"], "pod": name}
	}

	fx.holds(gen.ProcessorStuck, backup, 9*time.Minute, 0, 1260)
	fx.signal(gen.ProcessorStuck, "longest running reconcile", backup, 1260)
	fx.signal(gen.ProcessorStuck, "work in progress not yet finished", backup, 1260)
	fx.signal(gen.ProcessorStuck, "share of workers busy", backup, 1)
	fx.holds(gen.QueueBacklog, backup, 6*time.Minute, 0, 2450)
	fx.signal(gen.QueueBacklog, "queue depth (ready items)", backup, 2450)
	fx.signal(gen.QueueBacklog, "adds", backup, 4.2)
	fx.signal(gen.QueueBacklog, "completions", backup, 0)
	fx.signal(gen.QueueBacklog, "queue depth by priority", with(backup, "priority", "0"), 2400)
	fx.signal(gen.QueueBacklog, "queue depth by priority", with(backup, "priority", "-100"), 50)

	for _, l := range []map[string]string{backup, snapshot, cart, legacy} {
		fx.signal(gen.ReconcileErrors, "share of reconciles returning an error", l, 0)
		fx.signal(gen.HotLoop, "reconciles", l, 0.5)
	}
	fx.signal(gen.QueueBacklog, "queue depth (ready items)", snapshot, 0)
	fx.signal(gen.QueueBacklog, "adds", snapshot, 0.5)
	fx.signal(gen.QueueBacklog, "completions", snapshot, 0.5)
	fx.signal(gen.ReconcileSlow, "share of reconciles slower than the bucket", snapshot, 0)

	fight := map[string]string{"group": "shop.example.com", "resource": "carts", "object_namespace": "shop", "object_name": "cart-7",
		"actor_a": "system:serviceaccount:shop:shop-operator", "actor_b": "alice@example.com"}
	fx.holds(gen.WriteFight, fight, 4*time.Minute, 0, 7)
	fx.signal(gen.WriteFight, "handoffs between the two actors in the fight window", fight, 7)
	fx.signal(gen.WriteFight, "writes by actor", map[string]string{"actor": "system:serviceaccount:shop:shop-operator", "group": "shop.example.com", "resource": "carts"}, 1.9)
	fx.signal(gen.WriteFight, "writes by actor", map[string]string{"actor": "alice@example.com", "group": "shop.example.com", "resource": "carts"}, 1.8)
	cartPod := with(pod(cart, "shop-operator-5d9c-x2k4p"), "method", "PATCH")
	fx.holds(gen.PatchRateHigh, cartPod, 3*time.Minute, 0, 14.5)
	fx.signal(gen.PatchRateHigh, "PATCH requests of the pod", cartPod, 14.5)
	fx.signal(gen.PatchRateHigh, "reconciles of the controller", cart, 3.9)
	fx.d.inv.reconciles = append(fx.d.inv.reconciles, fx.constant(cart, 10*time.Minute, 0, 3.9))

	missing := pod(legacy, "legacy-operator-0")
	fx.holds(gen.WorkqueueMetricsMissing, with(missing, "controller", "legacy"), 10*time.Minute, 0, 4)
	fx.signal(gen.WorkqueueMetricsMissing, "reconcile series of the pod without any workqueue series", with(missing, "controller", "legacy"), 4)

	elsewhere := map[string]string{"group": "", "resource": "serviceaccounts", "object_namespace": "kube-system", "object_name": "default",
		"actor_a": "system:serviceaccount:kube-system:tier-controller", "actor_b": "system:serviceaccount:kube-system:owner-stamper"}
	fx.holds(gen.WriteFight, elsewhere, 10*time.Minute, 2*time.Minute, 12)
	return fx.d.report()
}

func TestReportGolden(t *testing.T) {
	r := fixtureReport(t)
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", js)
	golden(t, "report.txt", text.Bytes())

	verdicts := map[string]Verdict{}
	for _, c := range r.Controllers {
		verdicts[c.Name] = c.Verdict
	}
	// legacy's process serves no workqueue series: healthy from what it has, the queue checks
	// listed as not run, with the gap that keeps them from running.
	want := map[string]Verdict{"backup": Unhealthy, "snapshot": Healthy, "cart": Unhealthy, "legacy": Healthy}
	for name, v := range want {
		if verdicts[name] != v {
			t.Errorf("controller %s: verdict %s, want %s", name, verdicts[name], v)
		}
	}
	legacy, _ := r.Find("legacy", "legacy-operator", "legacy")
	for _, a := range []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck} {
		i := slices.IndexFunc(legacy.Checks, func(c CheckResult) bool { return c.Alert == a.FullName() })
		if i < 0 || legacy.Checks[i].Result != CheckNoData || !strings.Contains(legacy.Checks[i].Detail, gen.WorkqueueMetricsMissing.FullName()) {
			t.Errorf("controller legacy: check %s is %+v, want no-data naming %s", a.FullName(), legacy.Checks, gen.WorkqueueMetricsMissing.FullName())
		}
		if !strings.Contains(legacy.Headline, strings.TrimPrefix(a.FullName(), "Loopwatch")) {
			t.Errorf("controller legacy: headline %q does not name %s, which could not run", legacy.Headline, a.FullName())
		}
	}
	if legacy.FirstCause() != gen.WorkqueueMetricsMissing.FullName() || legacy.Causes[0].Role != RoleGap {
		t.Errorf("controller legacy: causes %+v, want the gap %s first, role gap", legacy.Causes, gen.WorkqueueMetricsMissing.FullName())
	}
	if len(r.Unattributed) != 1 || r.Unattributed[0].Alert != gen.WriteFight.FullName() {
		t.Errorf("unattributed %v, want the fight between kube-system actors", r.Unattributed)
	}
}

// AllHealthy decides the command's exit status: a fight no controller explains is not healthy,
// even when every controller reported is.
func TestReportAllHealthy(t *testing.T) {
	healthy := []Controller{{Name: "backup", Verdict: Healthy}, {Name: "snapshot", Verdict: Healthy}}
	fight := []Cause{{Alert: gen.WriteFight.FullName()}}
	for _, tc := range []struct {
		name string
		r    Report
		want bool
	}{
		{"every controller healthy, nothing unattributed", Report{Controllers: healthy}, true},
		{"no controller reported, nothing unattributed", Report{}, true},
		{"a controller unhealthy", Report{Controllers: append(slices.Clone(healthy), Controller{Verdict: Unhealthy})}, false},
		{"a controller lacks data", Report{Controllers: append(slices.Clone(healthy), Controller{Verdict: InsufficientData})}, false},
		{"every controller healthy, a fight without a controller", Report{Controllers: healthy, Unattributed: fight}, false},
	} {
		if got := tc.r.AllHealthy(); got != tc.want {
			t.Errorf("%s: AllHealthy() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A controller whose metrics stopped within the window, with data enough for every check before
// that, is not called healthy: nothing can fail in data that is not there.
func TestReportDoesNotCallAStoppedControllerHealthy(t *testing.T) {
	fx := newFixture(t)
	fx.exporter()
	l := fx.controller("backup-system", "backup-operator", "backup")
	fx.signal(gen.ReconcileErrors, "share of reconciles returning an error", l, 0)
	if r := fx.d.report(); r.Controllers[0].Verdict != Healthy {
		t.Fatalf("while reporting: verdict %s (%s), want healthy", r.Controllers[0].Verdict, r.Controllers[0].Headline)
	}
	delete(fx.d.inv.reporting, controllerKey{"", "backup-system", "backup-operator", "backup"})
	r := fx.d.report()
	if c := r.Controllers[0]; c.Verdict != InsufficientData || !strings.Contains(c.Headline, "stopped within the window") {
		t.Fatalf("after it stopped: verdict %s (%s), want insufficient data saying it stopped", c.Verdict, c.Headline)
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./diagnose -run %s -update rewrites it):\n%s", path, t.Name(), firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first differing line.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n- " + a + "\n+ " + b
		}
	}
	return ""
}
