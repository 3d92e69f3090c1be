package detect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/model"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopwatch/loopwatch/diagnose"
	"github.com/loopwatch/loopwatch/examples/controllers/conditions"
	"github.com/loopwatch/loopwatch/examples/controllers/scheduler"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// The controllers under test, by the `job` their metrics are scraped as.
const (
	schedulerJob  = scheduler.ControllerName + "-controller"
	conditionsJob = conditions.ControllerName + "-controller"
	operatorJob   = "backup-operator"
)

// healthyWatch is how long the healthy controllers are watched from Prometheus' start. The
// controller alerts read 5-minute rates and the audit alerts the exporter's 1-minute windows;
// with `for` shortened to 20s, an alert whose condition held during any full window of the run
// would be pending within 5m20s. 6 minutes also cover six schedule ticks of the scheduler.
const healthyWatch = 6 * time.Minute

// detectWithin bounds the time from a faulty controller's start to its alert: the `for` plus
// the time its signal needs to cross the threshold in a 5-minute window.
const detectWithin = 4 * time.Minute

// hotLoopClientLimit bounds the client of the hot-loop scenarios (the reference operator's own
// default): unthrottled on loopback, a loop writes several hundred times a second and would take
// the shared machine's two cores. The other scenarios keep controller-runtime's default (no
// client-side limit).
var hotLoopClientLimit = []string{"--kube-api-qps=50", "--kube-api-burst=100"}

// scenario is one controller process in its own namespace, healthy or with one fault.
type scenario struct {
	job   string // schedulerJob, conditionsJob or operatorJob
	fault string // "" for healthy
	flags []string
	// objects is how many CronJobs, AppConfigs or Backups its namespace holds.
	objects int
	// schedules are the CronJobs' schedules, in turn (everyMinute when empty).
	schedules []string
	// expect is the alert the fault must fire (nil: healthy, nothing may fire).
	expect *gen.Alert
	// companions are other alerts that describe the same incident from another signal and may
	// fire with it, each one a symptom `loopwatch diagnose` puts down to expect
	// (TestCompanionsAreSymptoms). Any other alert is a failure.
	companions []*gen.Alert

	namespace, pod, addr string
	proc                 *proc.Process
	started              time.Time
	detected             time.Duration     // 0 = not yet
	seen                 map[string]string // alert name -> worst state seen
}

func (s *scenario) name() string {
	if s.fault == "" {
		return "healthy"
	}
	return s.fault
}

func scenarios() []*scenario {
	// A hot loop that keeps its one worker busy makes the other items wait: on a loaded machine
	// the conditions controller's loop (15 reconciles/s at 65 ms each) took QueueWaitHigh pending.
	hotLoopCompanions := []*gen.Alert{gen.PatchRateHigh, gen.HotObject, gen.QueueWaitHigh}
	errorCompanions := []*gen.Alert{gen.ErrorBudgetBurnFast, gen.ErrorBudgetBurnSlow}
	// Reconciles that make 26 calls take a second or more: on a busy machine items can wait
	// behind them, and the calls can take more than the slow-reconcile bucket (5s) together (a
	// mean of 8 s at a load average of 40): slow reconciles are what N+1 calls cause.
	nPlusOneCompanions := []*gen.Alert{gen.QueueWaitHigh, gen.ReconcileSlow}
	firstObject := map[string]string{schedulerJob: cronJobName(0), conditionsJob: appConfigName(0)}
	var out []*scenario
	for _, job := range []string{schedulerJob, conditionsJob} {
		out = append(out,
			&scenario{job: job, objects: 20},
			&scenario{job: job, fault: "hot-loop", flags: append([]string{"--fault-hot-loop"}, hotLoopClientLimit...), objects: 20,
				expect: gen.HotLoop, companions: hotLoopCompanions},
			// Few objects and four workers: six seconds per reconcile is the incident, not a
			// queue that outgrows the workers (another incident, with its own alerts).
			&scenario{job: job, fault: "slow", flags: []string{"--fault-slow=6s", "--max-concurrent-reconciles=4"}, objects: 3,
				expect: gen.ReconcileSlow},
			// 25 objects, so that listing and getting them is 26 calls per reconcile; four workers
			// and the CronJobs' runs spread over two ticks, so that the queue keeps up with
			// reconciles that make 26 calls each (a saturated queue is another incident).
			&scenario{job: job, fault: "n-plus-one", flags: []string{"--fault-n-plus-one", "--max-concurrent-reconciles=4"}, objects: 25,
				schedules: []string{"*/2 * * * *", "1-59/2 * * * *"}, expect: gen.APICallsPerReconcileHigh, companions: nPlusOneCompanions},
			&scenario{job: job, fault: "errors", flags: []string{"--fault-errors"}, objects: 20,
				expect: gen.ReconcileErrors, companions: errorCompanions},
			// The first object's reconciles never return: the one worker is held for good and
			// nothing else of the controller reconciles.
			&scenario{job: job, fault: "hang", flags: []string{"--fault-hang=" + firstObject[job]}, objects: 20,
				expect: gen.ProcessorStuck},
		)
	}
	out = append(out, &scenario{job: operatorJob, fault: "hot-loop", flags: []string{"--fault-hot-loop"}, objects: 10,
		expect: gen.HotLoop, companions: hotLoopCompanions})
	for _, s := range out {
		s.namespace = strings.TrimSuffix(strings.TrimSuffix(s.job, "-controller"), "-operator") + "-" + s.name()
		s.pod = s.job + "-0"
		s.seen = map[string]string{}
	}
	return out
}

// TestCompanionsAreSymptoms: an alert the detection test lets fire beside a fault's own is one
// that `loopwatch diagnose` lists as that fault's symptom, so that the two agree on what one
// incident looks like.
func TestCompanionsAreSymptoms(t *testing.T) {
	for _, s := range scenarios() {
		for _, c := range s.companions {
			if !slices.Contains(diagnose.Symptoms(s.expect), c) {
				t.Errorf("%s %s: %s may fire beside %s, but diagnose does not list it as a symptom of it", s.job, s.name(), c.FullName(), s.expect.FullName())
			}
		}
	}
}

// TestControllersWrittenAnotherWay runs the example controllers — a kubebuilder-style scheduler
// and a conditions controller, neither instrumented with loopwatch — healthy and with each fault,
// all at once, each in its own namespace with its own service account, on a real kube-apiserver
// whose audit webhook feeds the loopwatch exporter and a real Prometheus evaluating the generated
// rules. The healthy ones must stay silent (nothing pending or firing) for healthyWatch; each
// fault must fire its alert within detectWithin, with nothing else but the alerts that describe
// the same incident. The reference operator's hot loop runs beside them.
func TestControllersWrittenAnotherWay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real components for about 8 minutes")
	}
	ctrl.SetLogger(logr.Discard())
	bins := map[string]string{}
	for _, b := range []string{"example-controller", "backup-operator"} {
		p, err := stack.LookPath(b)
		if err != nil {
			t.Fatalf("%v (make binaries builds it)", err)
		}
		bins[b] = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := logDir(t, "loopwatch-detect-")
	began := time.Now()
	e := startEnv(t, dir)
	t.Logf("control plane and exporter up in %s", time.Since(began).Round(time.Second))

	all := scenarios()
	for _, s := range all {
		if err := e.prepare(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	// The world around the controllers, each as its own service account.
	jobCtl, err := e.identity(ctx, "kube-system", "job-controller", "")
	if err != nil {
		t.Fatal(err)
	}
	syncer, err := e.identity(ctx, "kube-system", "config-sync", "")
	if err != nil {
		t.Fatal(err)
	}
	jobClient, err := client.New(jobCtl, client.Options{Scheme: e.scheme})
	if err != nil {
		t.Fatal(err)
	}
	syncClient, err := client.New(syncer, client.Options{Scheme: e.scheme})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorkload := context.WithCancel(ctx)
	defer stopWorkload()
	var conditionNamespaces []string
	for _, s := range all {
		if s.job == conditionsJob {
			conditionNamespaces = append(conditionNamespaces, s.namespace)
		}
	}
	go runJobs(wctx, jobClient, scheduler.ControllerName+"-", t.Logf)
	go syncConfig(wctx, syncClient, conditionNamespaces, configMapsPerNamespace, 3*time.Second, t.Logf)

	// Controllers first, Prometheus once they serve metrics: a target that is not up yet is
	// the test's doing, not the controller's.
	for _, s := range all {
		if err := e.start(s, bins); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, s := range all {
			s.proc.Stop()
		}
	}()
	var targets []stack.ScrapeTarget
	for _, s := range all {
		if err := e.waitServing(ctx, s, bins); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, stack.ScrapeTarget{Job: s.job, Addresses: []string{s.addr},
			Labels: map[string]string{"namespace": s.namespace, "pod": s.pod}})
	}
	var jobs []string
	for _, s := range all {
		if !slices.Contains(jobs, s.job) {
			jobs = append(jobs, s.job)
		}
	}
	e.startPrometheus(t, rulesConfig(jobs), targets)
	promStart := time.Now()
	t.Logf("%d controllers and Prometheus up %s after the start", len(all), promStart.Sub(began).Round(time.Second))

	stray := e.watch(ctx, t, all, promStart)
	load := loadAverage()
	e.logSignals(ctx, t, all)
	stopWorkload()

	table := detectionTable(all)
	t.Logf("detection on controllers written another way (run %s, load average %s):\n%s",
		time.Since(began).Round(time.Second), load, table)
	for _, s := range all {
		for _, p := range s.problems() {
			t.Errorf("%s %s: %s", s.job, s.name(), p)
		}
		if ended, err := s.proc.Exited(); ended {
			t.Errorf("%s %s exited: %v (log %s)", s.job, s.name(), err, s.proc.Log)
		}
	}
	for _, a := range stray {
		t.Errorf("alert of no scenario: %s", a)
	}
	if err := e.prom.RuleHealth(ctx); err != nil {
		t.Errorf("rules: %v", err)
	}
}

const configMapsPerNamespace = 5

// prepare creates the scenario's namespace, identity, kubeconfig and objects.
func (e *env) prepare(ctx context.Context, s *scenario) error {
	sa := s.job
	cfg, err := e.identity(ctx, s.namespace, sa, s.pod)
	if err != nil {
		return err
	}
	if err := stack.WriteKubeconfig(filepath.Join(e.dir, s.namespace+".kubeconfig"), cfg); err != nil {
		return err
	}
	switch s.job {
	case schedulerJob:
		schedules := s.schedules
		if len(schedules) == 0 {
			schedules = everyMinute
		}
		return cronJobs(ctx, e.kube, s.namespace, s.objects, schedules)
	case conditionsJob:
		return appConfigs(ctx, e.kube, s.namespace, s.objects, configMapsPerNamespace)
	default:
		return backups(ctx, e.kube, s.namespace, s.objects)
	}
}

// start runs the scenario's controller as its pod would: its own kubeconfig (a token bound to
// the pod), metrics on a loopback port, watching its namespace only.
func (e *env) start(s *scenario, bins map[string]string) error {
	var err error
	if s.addr, err = stack.FreeAddr(); err != nil {
		return err
	}
	var bin string
	var args []string
	switch s.job {
	case operatorJob:
		bin = bins["backup-operator"]
		args = []string{"--metrics-insecure", "--leader-elect=false", "--namespace=" + s.namespace,
			"--store-dir=" + filepath.Join(e.dir, s.namespace+"-store")}
	default:
		bin = bins["example-controller"]
		args = []string{"--controller=" + strings.TrimSuffix(s.job, "-controller"), "--metrics-secure=false",
			"--watch-namespace=" + s.namespace}
	}
	args = append(args, "--metrics-bind-address="+s.addr, "--health-probe-bind-address=0")
	args = append(args, s.flags...)
	p, err := proc.Start(e.dir, s.namespace, bin, []string{"KUBECONFIG=" + filepath.Join(e.dir, s.namespace+".kubeconfig")}, args...)
	if err != nil {
		return err
	}
	s.proc, s.started = p, time.Now()
	return nil
}

// waitServing waits for the scenario's controller to serve /metrics. Its port was free a moment
// before it started (controller-runtime binds the port itself), and on a busy machine a client
// connection's ephemeral port can take it in between: the controller then exits at once, and is
// started again on another port, up to twice.
func (e *env) waitServing(ctx context.Context, s *scenario, bins map[string]string) error {
	for attempt := 1; ; attempt++ {
		err := waitMetrics(ctx, s.proc, s.addr)
		if err == nil || attempt == 3 || !portTaken(s.proc) {
			return err
		}
		if err := e.start(s, bins); err != nil {
			return err
		}
	}
}

// portTaken reports whether p exited because its listening address was in use: the last line of
// its log (appended to by every start) says so.
func portTaken(p *proc.Process) bool {
	ended, _ := p.Exited()
	b, err := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return ended && err == nil && strings.Contains(lines[len(lines)-1], "address already in use")
}

var serviceAccount = regexp.MustCompile(`^system:serviceaccount:([^:]+):`)

// owner returns the scenario an alert is about: by its namespace label (controller alerts), or by
// the namespace of the service account an audit alert names.
func owner(m model.Metric, all []*scenario) *scenario {
	find := func(ns string) *scenario {
		for _, s := range all {
			if s.namespace == ns {
				return s
			}
		}
		return nil
	}
	if s := find(string(m["namespace"])); s != nil {
		return s
	}
	for _, l := range []model.LabelName{"actor", "to_actor", "from_actor", "actor_a", "actor_b"} {
		if sm := serviceAccount.FindStringSubmatch(string(m[l])); sm != nil {
			if s := find(sm[1]); s != nil {
				return s
			}
		}
	}
	return nil
}

// watch polls the loopwatch alerts every 2s until the healthy controllers have been watched for
// healthyWatch and every fault was detected or ran out of time. It records every alert by
// scenario and returns the alerts that belong to no scenario.
func (e *env) watch(ctx context.Context, t *testing.T, all []*scenario, promStart time.Time) []string {
	strays := map[string]bool{}
	for {
		v, err := e.prom.Query(ctx, `ALERTS{alertname=~"Loopwatch.*"}`)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for _, a := range v {
			name, state := string(a.Metric["alertname"]), string(a.Metric["alertstate"])
			s := owner(a.Metric, all)
			if s == nil {
				strays[describe(a.Metric)] = true
				continue
			}
			if s.seen[name] != "firing" {
				if s.seen[name] == "" {
					t.Logf("%s %s: %s %s (%s after its start)", s.job, s.name(), name, state, now.Sub(s.started).Round(time.Second))
				}
				s.seen[name] = state
			}
			if s.expect != nil && name == s.expect.FullName() && state == "firing" && s.detected == 0 {
				s.detected = now.Sub(s.started)
			}
		}
		done := now.Sub(promStart) >= healthyWatch
		for _, s := range all {
			if s.expect != nil && s.detected == 0 && now.Sub(s.started) < detectWithin {
				done = false
			}
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	var out []string
	for a := range strays {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func describe(m model.Metric) string {
	var parts []string
	for k, v := range m {
		if k != model.MetricNameLabel && k != "alertname" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	sort.Strings(parts)
	return string(m["alertname"]) + "{" + strings.Join(parts, ", ") + "}"
}

// problems says what the scenario got wrong.
func (s *scenario) problems() []string {
	var out []string
	if s.expect != nil && s.detected == 0 {
		out = append(out, fmt.Sprintf("%s did not fire within %s", s.expect.FullName(), detectWithin))
	}
	for _, name := range s.others() {
		out = append(out, fmt.Sprintf("%s was %s", name, s.seen[name]))
	}
	return out
}

// others are the alerts seen that are neither the expected one nor its companions.
func (s *scenario) others() []string {
	var out []string
	for name := range s.seen {
		ok := s.expect != nil && name == s.expect.FullName()
		for _, c := range s.companions {
			ok = ok || name == c.FullName()
		}
		if !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (s *scenario) companionsSeen() []string {
	var out []string
	for _, c := range s.companions {
		if st := s.seen[c.FullName()]; st != "" {
			out = append(out, strings.TrimPrefix(c.FullName(), "Loopwatch")+" ("+st+")")
		}
	}
	return out
}

// detectionTable is the report: one row per scenario.
func detectionTable(all []*scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| controller | scenario | expected alert | fired | time to detect | same incident, other signal | other alerts pending/firing |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|\n")
	for _, s := range all {
		expect, fired, ttd := "none", "-", "-"
		if s.expect != nil {
			expect = s.expect.FullName()
			fired = "no"
			if s.detected > 0 {
				fired, ttd = "yes", s.detected.Round(time.Second).String()
			}
		}
		others := "none"
		if o := s.others(); len(o) > 0 {
			var parts []string
			for _, n := range o {
				parts = append(parts, n+" ("+s.seen[n]+")")
			}
			others = strings.Join(parts, ", ")
		}
		comp := strings.Join(s.companionsSeen(), ", ")
		if comp == "" {
			comp = "-"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", s.job, s.name(), expect, fired, ttd, comp, others)
	}
	return b.String()
}

// loadAverage is the machine's 1, 5 and 15 minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// signal is one number the report prints per scenario, to show what the rules saw.
type signal struct {
	name, query string // query has %[1]s for the namespace and %[2]s for the service account
}

var signals = []signal{
	{"reconciles/s", `sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"peak reconciles/s (30s)", `max_over_time(sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[30s]))[6m:5s])`},
	{"requeue_after share", `sum(rate(controller_runtime_reconcile_total{namespace="%[1]s",result="requeue_after"}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"error share", `sum(rate(controller_runtime_reconcile_total{namespace="%[1]s",result="error"}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"mean reconcile ms", `1000 * sum(rate(controller_runtime_reconcile_time_seconds_sum{namespace="%[1]s"}[5m])) / sum(rate(controller_runtime_reconcile_time_seconds_count{namespace="%[1]s"}[5m]))`},
	{"client writes/s", `sum(rate(rest_client_requests_total{namespace="%[1]s",method=~"POST|PUT|PATCH|DELETE"}[5m]))`},
	{"client PATCH/s", `sum(rate(rest_client_requests_total{namespace="%[1]s",method="PATCH"}[5m]))`},
	{"client 409/s", `sum(rate(rest_client_requests_total{namespace="%[1]s",code="409"}[5m]))`},
	{"controller writes/s (recorded)", `sum(cluster_namespace_job_controller:controller_writes:rate5m{namespace="%[1]s"})`},
	{"writes/reconcile", `sum(rate(rest_client_requests_total{namespace="%[1]s",method=~"POST|PUT|PATCH|DELETE"}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"calls/reconcile", `sum(rate(rest_client_requests_total{namespace="%[1]s"}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"adds/reconcile", `sum(rate(workqueue_adds_total{namespace="%[1]s",controller!=""}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"retries/reconcile", `sum(rate(workqueue_retries_total{namespace="%[1]s",controller!=""}[5m])) / sum(rate(controller_runtime_reconcile_total{namespace="%[1]s"}[5m]))`},
	{"audit writes/s", `sum(rate(loopwatch_audit_writes_total{actor="%[2]s"}[5m]))`},
	{"audit 409/s", `sum(rate(loopwatch_audit_conflicts_total{actor="%[2]s"}[5m]))`},
	{"hottest object writes/s", `max(loopwatch_audit_hot_object_writes_per_second{actor="%[2]s"})`},
	{"hot objects", `count(loopwatch_audit_hot_object_writes_per_second{actor="%[2]s"})`},
}

// logSignals prints the signals of every scenario.
func (e *env) logSignals(ctx context.Context, t *testing.T, all []*scenario) {
	var b strings.Builder
	fmt.Fprintf(&b, "| signal |")
	for _, s := range all {
		fmt.Fprintf(&b, " %s %s |", strings.TrimSuffix(s.job, "-controller"), s.name())
	}
	fmt.Fprintf(&b, "\n|---|%s\n", strings.Repeat("---|", len(all)))
	for _, sig := range signals {
		fmt.Fprintf(&b, "| %s |", sig.name)
		for _, s := range all {
			q := fmt.Sprintf(sig.query, s.namespace, "system:serviceaccount:"+s.namespace+":"+s.job)
			v, err := e.prom.Query(ctx, q)
			switch {
			case err != nil:
				fmt.Fprintf(&b, " err |")
			case len(v) == 0:
				fmt.Fprintf(&b, " - |")
			default:
				fmt.Fprintf(&b, " %.3g |", float64(v[0].Value))
			}
		}
		b.WriteString("\n")
	}
	t.Logf("signals at the end of the run (5m windows):\n%s", b.String())
}
