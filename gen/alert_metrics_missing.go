package gen

import (
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
)

// workqueueByName returns the workqueue series of metric chosen by matchers, with their queue's
// name as their controller label. controller-runtime names a controller's queue after the
// controller, and labels its workqueue series with that name as `name`, and since v0.19 also as
// `controller`: up to v0.18 the series have `name` only.
func workqueueByName(metric string, matchers ...string) string {
	return `label_replace(` + sel(metric, matchers...) + `, "controller", "$1", "name", "(.+)")`
}

// WorkqueueMetricsMissing fires when a controller exports controller-runtime's metrics but no
// workqueue metrics: client-go's workqueue metrics provider is set once, first caller wins, so a
// library that sets its own provider before controller-runtime silently drops every workqueue_*
// series. Its queue's series are looked up by the queue's name, which every version of
// controller-runtime sets: series without the controller label (v0.18 and older) are there, and
// WorkqueueControllerLabelMissing says what they miss.
var WorkqueueMetricsMissing = &Alert{
	Key: "workqueueMetricsMissing", Name: "WorkqueueMetricsMissing",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Level: levelTarget.with("controller"),
	Expr: func(e *exprEnv) string {
		s := e.Selector("controller")
		l := levelTarget.with("controller")
		return lines(
			countBy(l, sel(controllerStarted, s)),
			"unless on ("+l.by()+")",
			countBy(l, workqueueByName("workqueue_adds_total", s)))
	},
	Summary:     "A controller exports no workqueue metrics.",
	Description: "The " + whereTarget + " exports controller-runtime metrics for controller {{ $labels.controller }} but no workqueue_* series: another workqueue metrics provider was registered before controller-runtime's. Queue depth and wait alerts cannot fire for it.",
	NextStep:    "Another workqueue metrics provider was registered before controller-runtime's (client-go's workqueue.SetProvider: the first caller wins). Remove it or let controller-runtime register first; until then queue depth, growth and wait cannot be checked.",
	Panel:       PanelRef{"controller", "Adds vs completions"},
	Cases: func(c *caseEnv) []Case {
		l := c.Controller()
		reconciles := []*Series{
			Gauge(controllerStarted, l.With("name", ""), 2),
			Counter("controller_runtime_reconcile_total", l.With("name", "", "result", "success"), 1),
		}
		return []Case{
			{
				Name:   "fires when a controller reconciles but has no workqueue series",
				Series: reconciles,
				Fires:  &Firing{At: 0, Labels: c.Instance(l), Value: Constant(1)},
			},
			{
				Name:   "stays silent when the workqueue series exist",
				Series: append(reconciles, Counter("workqueue_adds_total", l, 1)),
			},
			{
				Name:   "stays silent when the workqueue series exist without the controller label (controller-runtime v0.18 and older)",
				Series: append(reconciles, Counter("workqueue_adds_total", l.With("controller", ""), 1)),
			},
		}
	},
}

// WorkqueueControllerLabelMissing fires when controllers of a job export their workqueue series
// without the controller label, as controller-runtime up to v0.18 does (the label came in v0.19,
// kubernetes-sigs/controller-runtime#2895): every queue rule aggregates by that label, so queue
// backlog, queue wait and stuck-worker alerts cannot fire for them. One instance per job, whose
// value is how many of its controllers are affected: the remedy (upgrade, or copy `name` into
// `controller` at scrape time) is the job's. A queue counts only when a controller-runtime
// controller of the same name runs in the pod, so client-go queues of processes that are not
// controller-runtime ones (kube-controller-manager) are left alone.
var WorkqueueControllerLabelMissing = &Alert{
	Key: "workqueueControllerLabelMissing", Name: "WorkqueueControllerLabelMissing",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Level: levelJob,
	Expr: func(e *exprEnv) string {
		s := e.Selector("controller")
		l := levelTarget.with("controller")
		return countBy(levelJob, lines(
			"\n  "+countBy(l, workqueueByName("workqueue_adds_total", s, `controller=""`)),
			"  and on ("+l.by()+")",
			"  "+countBy(l, sel(controllerStarted, s))+"\n"))
	},
	Summary:     "A controller's workqueue metrics lack the controller label.",
	Description: "Job {{ $labels.namespace }}/{{ $labels.job }} exports the workqueue_* series of {{ $value }} of its controllers without the controller label, as controller-runtime v0.18 and older do: queue backlog, queue wait and stuck-worker alerts cannot fire for them.",
	NextStep:    "The job's controllers are built with controller-runtime v0.18 or older, whose workqueue series carry the queue's name but no controller label. Upgrade controller-runtime to v0.19 or later, or copy name into controller for the job's workqueue_* series in its metric relabeling (the alert's runbook has the rule); until then queue depth, growth, wait and stuck workers cannot be checked.",
	Panel:       PanelRef{"controller", "Adds vs completions"},
	Cases: func(c *caseEnv) []Case {
		l := c.Controller()
		started := Gauge(controllerStarted, l.With("name", ""), 2)
		old := l.With("controller", "")
		return []Case{
			{
				Name:   "fires when a controller's workqueue series carry only the name label (controller-runtime v0.18 and older)",
				Series: []*Series{started, Counter("workqueue_adds_total", old, 1), Gauge("workqueue_depth", old, 3)},
				Fires:  &Firing{At: 0, Labels: c.Instance(l), Value: Constant(1)},
			},
			{
				Name:   "stays silent when the workqueue series carry the controller label (v0.19 and later, or relabeled)",
				Series: []*Series{started, Counter("workqueue_adds_total", l, 1)},
			},
			{
				Name:   "stays silent on client-go queues of a process that runs no controller-runtime controller of that name",
				Series: []*Series{Counter("workqueue_adds_total", old.With("name", "deployment"), 1), started},
			},
		}
	},
}

// MaxConcurrentReconcilesMissing fires when a job exports the reconcile metrics of a controller
// but no replica of it exports controllerStarted for that controller: a scrape keep-list
// (metric_relabel_configs) that drops the series. controller-runtime sets both when it starts a
// controller (reconcile_total's success series is created then since v0.15, and on the first
// success before), so nothing else parts them. The queue rules count a replica's queue only where
// controllerStarted says the controller runs (startedOnly), and the other setup alerts find
// controllers by it: without it they are silent for the job, and this alert is what says so. One
// instance per job, whose value is how many of its controllers are affected: the keep-list is the
// job's.
var MaxConcurrentReconcilesMissing = &Alert{
	Key: "maxConcurrentReconcilesMissing", Name: "MaxConcurrentReconcilesMissing",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Level: levelJob,
	Expr: func(e *exprEnv) string {
		s := e.Selector("controller")
		l := levelController
		return countBy(levelJob, lines(
			"\n  "+countBy(l, sel("controller_runtime_reconcile_total", s, `result="success"`)),
			"  unless on ("+l.by()+")",
			"  "+countBy(l, sel(controllerStarted, s))+"\n"))
	},
	Summary:     "A controller's metrics lack controller_runtime_max_concurrent_reconciles.",
	Description: "Job {{ $labels.namespace }}/{{ $labels.job }} exports the reconcile metrics of {{ $value }} of its controllers without controller_runtime_max_concurrent_reconciles, which controller-runtime sets when it starts a controller: the job's metric relabeling drops it. The queue backlog and queue wait alerts count a replica's queue only where that series shows the controller runs, and the workqueue setup alerts look controllers up by it: none of them can fire for these controllers.",
	NextStep:    "The job's metric relabeling drops controller_runtime_max_concurrent_reconciles (a keep-list that leaves it out). Keep it (the alert's runbook has a keep-list with every metric loopwatch reads); until then queue depth, growth and wait, and the workqueue setup checks, cannot be checked.",
	Panel:       PanelRef{"controller", "Active workers vs max"},
	Cases: func(c *caseEnv) []Case {
		l := c.Controller().With("name", "")
		success := func(l Labels) *Series {
			return Counter("controller_runtime_reconcile_total", l.With("result", "success"), 1)
		}
		return []Case{
			{
				Name:   "fires when a controller's reconcile metrics come without controller_runtime_max_concurrent_reconciles",
				Series: []*Series{success(l), Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1)},
				Fires:  &Firing{At: 0, Labels: c.Instance(l), Value: Constant(1)},
			},
			{
				Name:   "counts controllers, not replicas: two replicas without leader election lack it for one controller",
				Series: []*Series{success(l), success(otherReplica(l))},
				Fires:  &Firing{At: 0, Labels: c.Instance(l), Value: Constant(1)},
			},
			{
				Name:   "stays silent on a leader that exports both and a standby that exports neither",
				Series: []*Series{success(l), Gauge(controllerStarted, l, 2), Gauge("up", otherReplica(l), 1)},
			},
		}
	},
}

// ControllerMetricsMissing fires when a target of a job that has exported controller-runtime
// controller metrics is up but exports none (a controller that did not start after a rollout, a
// registry mix-up). The job's history is what says a target should be a controller: the name
// selector alone also matches processes that are not controller-runtime ones (Alertmanager, the
// Prometheus operator, kube-controller-manager), which have none of these metrics and never will.
// Standby replicas of a leader-elected manager are expected to have none: controller-runtime
// starts controllers, and creates their metrics, only on the leader.
var ControllerMetricsMissing = &Alert{
	Key: "controllerMetricsMissing", Name: "ControllerMetricsMissing",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: rememberDaysKey, Default: 7, Check: positive,
			Doc: "Days a job stays expected to export controller-runtime metrics after the last time one of its targets did: past them, a job whose controllers were all removed is no longer watched."},
	},
	Level: levelUp,
	Expr: func(e *exprEnv) string {
		s := e.Selector("controllerTargets")
		on := levelScrapeJob.with("instance").by()
		return lines(
			sel("up", s)+" == 1",
			"unless on ("+on+")",
			"count by ("+on+") ("+sel(controllerStarted, s)+")",
			"unless on ("+on+")",
			"max by ("+on+") ("+sel("leader_election_master_status", s)+") == 0",
			"and on ("+levelScrapeJob.by()+")",
			"time() - last_over_time("+jobSeenName+"["+jobSeenRead+"]) < "+e.P(rememberDaysKey)+" * 86400")
	},
	Summary:     "A controller target exports no controller-runtime metrics.",
	Description: "Target {{ $labels.instance }} of job {{ $labels.job }} is up but exports no controller-runtime controller metrics, which the job has exported before: its controllers did not start, or their metrics go to another registry.",
	NextStep:    "Fetch the target's /metrics and look for controller_runtime_reconcile_total: its controllers did not start, or their metrics go to a registry the manager does not serve.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases: func(c *caseEnv) []Case {
		l := c.Target("controllerTargets")
		standby := otherReplica(l)
		started := func(l Labels) []*Series {
			return []*Series{
				Gauge(controllerStarted, l.With("controller", "backup"), 2),
				Counter("controller_runtime_reconcile_total", l.With("controller", "backup", "result", "success"), 1),
			}
		}
		stopped := started(l)
		for _, s := range stopped {
			s.Until(incidentAt)
		}
		return []Case{
			{
				Name:   "fires when a target of a job that exported controller metrics is up without them",
				Series: append(stopped, Gauge("up", l, 1)),
				Fires:  &Firing{At: incidentAt, Labels: l, Value: Constant(1)},
			},
			{
				Name: "fires when one replica of a job without leader election exports no controller metrics",
				Series: append(started(standby),
					Gauge("up", l, 1), Gauge("up", standby, 1)),
				Fires: &Firing{At: 0, Labels: l, Value: Constant(1)},
			},
			{
				Name:   "stays silent on a target whose job never exported controller metrics (not a controller-runtime process)",
				Series: []*Series{Gauge("up", l, 1), Gauge("leader_election_master_status", l.With("name", "kube-controller-manager"), 1)},
			},
			{
				Name: "stays silent on a leader with controller metrics and its standby",
				Series: append(started(l),
					Gauge("up", l, 1),
					Gauge("leader_election_master_status", l.With("name", "backup-operator-lock"), 1),
					Gauge("up", standby, 1),
					Gauge("leader_election_master_status", standby.With("name", "backup-operator-lock"), 0),
				),
			},
		}
	},
}

const (
	rememberDaysKey = "rememberDays"
	// jobSeenKeep is how far back recControllerJobSeen reads its own last value (rule evaluation
	// may stop that long without a job being forgotten), jobSeenRead how far back the alert
	// reads it, from a group evaluated at another moment.
	jobSeenKeep = "1h"
	jobSeenRead = "15m"
)

// jobSeenName is recControllerJobSeen's series, which its own expression reads.
var jobSeenName = levelScrapeJob.record(controllerStarted, "last_seen_timestamp")

// JobSeenSeries is the name of the recorded series that remembers, per scrape job, when its
// targets last exported controller-runtime controller metrics: ControllerMetricsMissing fires
// only for a job that has one.
func JobSeenSeries() string { return jobSeenName }

// recControllerJobSeen is, per scrape job, the last time one of its targets exported
// controller-runtime controller metrics. It reads its own last value when they are gone, so it
// remembers a job without reading days of samples, and drops it after rememberDays: a job that is
// gone does not stay a series forever.
var recControllerJobSeen = &Recording{
	Name:      jobSeenName,
	ForAlerts: []string{"controllerMetricsMissing"},
	Expr: func(e *exprEnv) string {
		return lines(
			maxBy(levelScrapeJob, "timestamp("+sel(controllerStarted, e.Selector("controllerTargets"))+")"),
			"or",
			"last_over_time("+jobSeenName+"["+jobSeenKeep+"]) > time() - "+e.P(rememberDaysKey)+" * 86400")
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Target("controllerTargets")
		other := otherReplica(l)
		job := c.AtLevel(levelScrapeJob, l)
		// The series stops at `stop`; the last evaluation before it saw the sample it then had.
		const stop = 20 * time.Minute
		lastEval := ceilTo(stop, c.Interval()) - c.Interval()
		lastSeen := lastEval - lastEval%sampleInterval
		return []ExprCase{
			{
				Name: "records the last time a target of the job exported controller metrics",
				At:   30 * time.Minute,
				Series: []*Series{
					Gauge(controllerStarted, l.With("controller", "backup"), 1),
					Gauge(controllerStarted, other.With("controller", "backup"), 1).Until(10 * time.Minute),
				},
				Want: []Sample{{job, (30 * time.Minute).Seconds()}},
			},
			{
				Name:   "remembers it for longer than it reads back after every target stopped",
				At:     3 * time.Hour,
				Series: []*Series{Gauge(controllerStarted, l.With("controller", "backup"), 1).Until(stop)},
				Want:   []Sample{{job, lastSeen.Seconds()}},
			},
		}
	},
}

// reconcileTime is controller-runtime's reconcile-time histogram, which it exposes both classic
// and native (its NativeHistogramBucketFactor is set in the pinned version's
// pkg/internal/controller/metrics); so are the workqueue's.
var reconcileTime = catalogue.ControllerRuntimeReconcileTimeSeconds.Name

// ClassicHistogramsMissing fires when Prometheus keeps a controller's histograms only as native
// histograms: scraped with scrape_native_histograms (or converted with
// convert_classic_histograms_to_nhcb) and without always_scrape_classic_histograms, a histogram
// is stored as one series under its base name and its _bucket, _count and _sum series are not
// ingested. Every rule that reads them is then empty for the job, and the alerts on reconcile
// latency, queue wait and queue backlog cannot fire. The reconcile-time histogram stands for all of
// them: the setting is the scrape job's. A target whose classic series another job keeps (a second
// job that scrapes the same pods native only, beside the one the rules read) is not missing
// anything, so the classic series are matched per scraped address, whichever job scraped them.
var ClassicHistogramsMissing = &Alert{
	Key: "classicHistogramsMissing", Name: "ClassicHistogramsMissing",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Level: levelJob,
	Expr: func(e *exprEnv) string {
		s := e.Selector("controller")
		return countBy(levelJob, lines(
			"\n  "+sel(reconcileTime, s),
			"  unless on ("+levelEndpoint.by()+")",
			"  "+sel(reconcileTime+"_count", s)+"\n"))
	},
	Summary:     "Prometheus keeps a controller's histograms only as native histograms.",
	Description: "Prometheus stores the reconcile-time histogram of job {{ $labels.namespace }}/{{ $labels.job }} only as a native histogram, without its _bucket, _count and _sum series: reconcile latency, queue wait and queue backlog cannot be measured or alerted on for its controllers.",
	NextStep:    "Prometheus ingests this job's histograms as native histograms only (scrape_native_histograms or convert_classic_histograms_to_nhcb without always_scrape_classic_histograms). Set always_scrape_classic_histograms: true on its scrape configuration (scrapeClassicHistograms: true on its ServiceMonitor or PodMonitor); until then reconcile latency, queue wait and queue backlog cannot be checked.",
	Panel:       PanelRef{"controller", "Reconcile latency"},
	Cases: func(c *caseEnv) []Case {
		l := c.Controller()
		native := NativeHistogram(reconcileTime, l, 2)
		classic := Counter(reconcileTime+"_count", l, 2)
		cases := []Case{
			{
				Name:   "fires when the reconcile-time histogram is stored only as a native histogram",
				Series: []*Series{native},
				Fires:  &Firing{At: 0, Labels: c.Instance(l), Value: Constant(1)},
			},
			{
				Name:   "stays silent when the classic series are kept beside the native histogram",
				Series: []*Series{native, classic},
			},
			{
				Name:   "stays silent when the histogram is scraped classic only",
				Series: []*Series{classic, Counter(reconcileTime+"_bucket", l.With("le", "+Inf"), 2)},
			},
		}
		// twin: the same target as scraped by a second job, when the selector takes one.
		twin, ok := c.secondJob("controller", l)
		if !ok {
			return cases
		}
		return append(cases,
			Case{
				Name:   "stays silent for a second job that scrapes the same targets native only, beside a job that keeps their classic series",
				Series: []*Series{classic, NativeHistogram(reconcileTime, twin, 2)},
			},
			Case{
				Name:   "fires for a native-only job whose targets no job keeps classic, beside a classic job of other targets",
				Series: []*Series{classic, NativeHistogram(reconcileTime, otherReplica(twin), 2)},
				Fires:  &Firing{At: 0, Labels: c.Instance(twin), Value: Constant(1)},
			})
	},
}
