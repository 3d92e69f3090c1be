package diagnose_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Synthetic scrape targets: tiny HTTP servers exposing controller-runtime-shaped metrics (and the
// audit exporter's) whose counters grow at set rates from the moment the server starts, so that
// Prometheus scrapes a controller in a known state. Names, label names and bucket bounds come
// from the catalogue, as a real manager's registry has them.

// fakeController is one controller of a fake manager, by its rates.
type fakeController struct {
	name string
	// success, errors and requeueAfter are reconciles per second by result.
	success, errors, requeueAfter float64
	// fast and slow are reconcile durations; slowShare of the reconciles take slow.
	fast, slow, slowShare float64
	// noWorkqueue drops every workqueue_* series (the provider race).
	noWorkqueue bool
	// unlabeledQueue labels the workqueue_* series with the queue's name only, as
	// controller-runtime v0.18 and older do: no controller label.
	unlabeledQueue bool
	// adds and completions per second (default: the reconcile rate); depth is the ready depth at
	// start and depthGrowth its growth per second.
	adds, completions, depth, depthGrowth float64
	// wait is how long items wait in the queue.
	wait float64
	// longestRunning is the age of the longest running reconcile at start; it grows with time
	// when stuck.
	longestRunning float64
	stuck          bool
	// workers busy out of maxWorkers (0: controller-runtime's default of 1).
	busy, maxWorkers float64
	// calls are the instrumented API calls per reconcile by verb; nil means not instrumented.
	calls map[string]float64
}

func (c fakeController) reconciles() float64 { return c.success + c.errors + c.requeueAfter }

// fakeManager is one controller process: its controllers and its client-go requests.
type fakeManager struct {
	controllers []fakeController
	// requests are client-go requests per second by method.
	requests map[string]float64
	// leader, when set, is leader_election_master_status.
	leader *float64
}

// fakeExporter is the audit exporter: batches keep arriving, and the top-offender gauges given.
type fakeExporter struct {
	offenders []fakeOffender
}

// fakeOffender is one top-offender gauge.
type fakeOffender struct {
	metric catalogue.Metric
	labels map[string]string
	value  float64
}

// sample is one sample of a scrape.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition collects the samples of one scrape.
type exposition struct{ samples []sample }

func (e *exposition) sample(m catalogue.Metric, suffix string, labels map[string]string, v float64) {
	e.samples = append(e.samples, sample{m.Name + suffix, labels, v})
}

// histogram adds a classic histogram of n observations, a share of them at slow, the others at
// fast.
func (e *exposition) histogram(m catalogue.Metric, labels map[string]string, n, fast, slow, slowShare float64) {
	for _, le := range m.Buckets {
		count := 0.0
		if fast <= le {
			count += n * (1 - slowShare)
		}
		if slow <= le {
			count += n * slowShare
		}
		e.sample(m, "_bucket", with(labels, "le", fmt.Sprint(le)), count)
	}
	e.sample(m, "_bucket", with(labels, "le", "+Inf"), n)
	e.sample(m, "_sum", labels, n*((1-slowShare)*fast+slowShare*slow))
	e.sample(m, "_count", labels, n)
}

// text renders the samples in the text exposition format, without metadata (every family
// untyped is as good for Prometheus' queries).
func (e *exposition) text() string {
	var b strings.Builder
	for _, s := range e.samples {
		fmt.Fprintf(&b, "%s%s %g\n", s.name, labelSet(s.labels, nil), s.value)
	}
	return b.String()
}

// openMetrics renders the samples as OpenMetrics lines at time ts, with the target's labels
// added, for a backfill.
func (e *exposition) openMetrics(b *strings.Builder, target map[string]string, ts time.Time) {
	for _, s := range e.samples {
		fmt.Fprintf(b, "%s%s %g %d\n", s.name, labelSet(s.labels, target), s.value, ts.Unix())
	}
}

func labelSet(l, extra map[string]string) string {
	all := with(l)
	for k, v := range extra {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k, v := range all {
		if v != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, all[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
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

// metrics renders the manager's metrics t seconds after it started.
func (f fakeManager) metrics(t float64) *exposition {
	var e exposition
	for _, c := range f.controllers {
		l := map[string]string{"controller": c.name}
		for result, r := range map[string]float64{"success": c.success, "error": c.errors, "requeue_after": c.requeueAfter, "requeue": 0} {
			e.sample(catalogue.ControllerRuntimeReconcileTotal, "", with(l, "result", result), r*t)
		}
		e.sample(catalogue.ControllerRuntimeReconcileErrorsTotal, "", l, c.errors*t)
		e.histogram(catalogue.ControllerRuntimeReconcileTimeSeconds, l, c.reconciles()*t, c.fast, c.slow, c.slowShare)
		// controller-runtime sets both gauges when the controller starts, whatever else it exports.
		e.sample(catalogue.ControllerRuntimeMaxConcurrentReconciles, "", l, max(c.maxWorkers, 1))
		e.sample(catalogue.ControllerRuntimeActiveWorkers, "", l, c.busy)
		for verb, perReconcile := range c.calls {
			access := "read"
			if verb != "get" && verb != "list" {
				access = "write"
			}
			e.sample(catalogue.ControllerAPIRequestsTotal, "", with(l, "verb", verb, "access", access), perReconcile*c.reconciles()*t)
		}
		if c.noWorkqueue {
			continue
		}
		q := with(l, "name", c.name)
		if c.unlabeledQueue {
			q = map[string]string{"name": c.name}
		}
		adds, completions := c.adds, c.completions
		if adds == 0 {
			adds = c.reconciles()
		}
		if completions == 0 {
			completions = c.reconciles()
		}
		e.sample(catalogue.WorkqueueDepth, "", with(q, "priority", "0"), c.depth+c.depthGrowth*t)
		e.sample(catalogue.WorkqueueAddsTotal, "", q, adds*t)
		e.sample(catalogue.WorkqueueRetriesTotal, "", q, (c.errors+c.requeueAfter)*t)
		e.histogram(catalogue.WorkqueueQueueDurationSeconds, q, adds*t, max(c.wait, 0.001), max(c.wait, 0.001), 0)
		e.histogram(catalogue.WorkqueueWorkDurationSeconds, q, completions*t, c.fast, c.slow, c.slowShare)
		longest := c.longestRunning
		if c.stuck {
			longest += t
		}
		e.sample(catalogue.WorkqueueLongestRunningProcessorSeconds, "", q, longest)
		e.sample(catalogue.WorkqueueUnfinishedWorkSeconds, "", q, longest)
	}
	for method, r := range f.requests {
		e.sample(catalogue.RESTClientRequestsTotal, "", map[string]string{"method": method, "code": "200", "host": "10.96.0.1:443"}, r*t)
	}
	if f.leader != nil {
		e.sample(catalogue.LeaderElectionMasterStatus, "", map[string]string{"name": "lease"}, *f.leader)
	}
	return &e
}

func (f fakeExporter) metrics(t float64) *exposition {
	var e exposition
	e.sample(catalogue.AuditBatchesTotal, "", nil, 10*t)
	for _, o := range f.offenders {
		e.sample(o.metric, "", o.labels, o.value)
	}
	return &e
}

// history is how long the fake targets have been running when the test starts: more than the
// 5-minute windows of the rates, so they read their real values from the first query.
const (
	history         = 6 * time.Minute
	historyInterval = 5 * time.Second
)

// fakeTarget is one synthetic scrape target: render gives its samples t seconds after the target
// (notionally) started, history ago.
type fakeTarget struct {
	render func(t float64) *exposition
	origin time.Time
	srv    *httptest.Server
}

// serveMetrics serves render at /metrics, as if the target had started history ago.
func serveMetrics(render func(t float64) *exposition) *fakeTarget {
	f := &fakeTarget{render: render, origin: time.Now().Add(-history)}
	var mu sync.Mutex
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprint(w, render(time.Since(f.origin).Seconds()).text())
	}))
	return f
}

// backfill writes the target's history, every historyInterval until now, as OpenMetrics lines
// carrying the labels Prometheus gives the target's series.
func (f *fakeTarget) backfill(b *strings.Builder, target map[string]string) {
	now := time.Now()
	for ts := f.origin.Add(historyInterval); ts.Before(now.Add(-historyInterval)); ts = ts.Add(historyInterval) {
		f.render(ts.Sub(f.origin).Seconds()).openMetrics(b, target, ts)
	}
}
