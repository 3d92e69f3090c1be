package gen

import "time"

// The controller's recording rules: per-controller (and, for client-go's metrics, per-pod) rates
// and levels that the controller alerts and dashboards share. ruleGroups gives each raw read of
// thousands of series a group of its own, or shares one among a few small reads; a rule that
// sums another rule's output stays in that rule's group, after it, so that it reads this
// evaluation's value. The rules that combine two groups' outputs (recErrorRatio5m,
// recControllerWrites) read the other group's from its last evaluation, at most one interval
// old: Prometheus evaluates groups side by side, not in file order (errorShare caps what that
// does to a ratio).

// controllerStarted is the series that says a controller-runtime controller has started in a
// process: controller-runtime sets it, one series per controller, when the controller starts
// (since August 2020, kubernetes-sigs/controller-runtime#1125; the four reconcile_total series,
// one per result, are created at the same moment since v0.15). Looking for it instead of
// reconcile_total reads a quarter of the series at the same answer.
const controllerStarted = "controller_runtime_max_concurrent_reconciles"

// startedOnly keeps the per-pod series of expr (a controller's workqueue series, or a function of
// them) of the pods where controller-runtime started that controller. A manager's controllers
// with EnableWarmup (opt-in since controller-runtime v0.22) start their event sources and queue on
// the standby replicas too, before they win the election, but no workers: a standby's queue holds
// every object it has seen and completes none. Summed with the leader's, it would read as a
// backlog that never drains. Start, on the leader only, sets controllerStarted.
// The dashboards use it and standbyOnly too, with their own matchers for controllerStarted.
func startedOnly(expr string, matchers ...string) string {
	return expr + " and" + onReplicaController() + sel(controllerStarted, matchers...)
}

// standbyOnly keeps the per-pod series of expr of the pods where the controller has not started:
// what startedOnly leaves out.
func standbyOnly(expr string, matchers ...string) string {
	return expr + " unless" + onReplicaController() + sel(controllerStarted, matchers...)
}

// onReplicaController matches one controller's series of one scrape target.
func onReplicaController() string { return " on (" + levelUp.with("controller").by() + ") " }

// recQueueDepthByPriority is the depth of a controller's queue by priority, over the replicas
// where the controller runs (startedOnly): the one read of the raw workqueue_depth series, which
// the two depths below sum. It keeps the priority label, whose values are the few the
// controller's handlers use (0, and -100 for the initial list and resyncs; none without the
// priority queue): controller-runtime itself bounds them to 25 per queue, and labels the depth
// of any further priority "exceeded_cardinality_limit" (pkg/internal/metrics/workqueue.go).
var recQueueDepthByPriority = &Recording{
	Name: levelController.with("priority").record("workqueue_depth", "sum"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelController.with("priority"), startedOnly(sel("workqueue_depth", e.Selector("controller"), hasController), e.Selector("controller")))
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller()
		standby := otherReplica(l)
		at := levelController.with("priority")
		return []ExprCase{{
			Name: "sums each priority of a controller's queue over the replicas where it runs, and ignores a warming standby's queue and other components' queues",
			At:   5 * time.Minute,
			Series: []*Series{
				Gauge(controllerStarted, l.With("name", ""), 2),
				Gauge("workqueue_depth", l.With("priority", "0"), 3),
				Gauge("workqueue_depth", l.With("priority", "-100"), 50),
				Gauge("workqueue_depth", standby.With("priority", "-100"), 700),
				Gauge("workqueue_depth", standby.With("priority", "0"), 40),
				Gauge("workqueue_depth", l.With("controller", "", "name", "kube-controller-manager-queue"), 1000),
			},
			Want: []Sample{
				{c.AtLevel(at, l.With("priority", "0")), 3},
				{c.AtLevel(at, l.With("priority", "-100")), 50},
			},
		}}
	},
}

var recQueueDepth = &Recording{
	Name: levelController.record("workqueue_depth", "sum"),
	Expr: func(e *exprEnv) string { return sumBy(levelController, recQueueDepthByPriority.Name) },
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller()
		return []ExprCase{{
			Name: "sums the priorities of a controller's queue where it runs",
			At:   5 * time.Minute,
			Series: []*Series{
				Gauge(controllerStarted, l.With("name", ""), 2),
				Gauge("workqueue_depth", l.With("priority", "0"), 3),
				Gauge("workqueue_depth", l.With("priority", "-100"), 50),
				Gauge("workqueue_depth", otherReplica(l).With("priority", "-100"), 700),
			},
			Want: []Sample{{c.AtLevel(levelController, l), 53}},
		}}
	},
}

var recQueueAdds = &Recording{
	Name: levelController.record("workqueue_adds_total", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelController, startedOnly(rate(sel("workqueue_adds_total", e.Selector("controller"), hasController), "5m"), e.Selector("controller")))
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller()
		other := otherReplica(l)
		standby := other.With("pod", l["pod"]+"-c", "instance", "10.244.2.7:8443")
		return []ExprCase{{
			Name: "records the rate summed over the replicas where the controller runs, not a warming standby's",
			At:   10 * time.Minute,
			Series: []*Series{
				Gauge(controllerStarted, l.With("name", ""), 2),
				Gauge(controllerStarted, other.With("name", ""), 2),
				Counter("workqueue_adds_total", l, 30),
				Counter("workqueue_adds_total", other, 12.5),
				Counter("workqueue_adds_total", standby, 7),
			},
			Want: []Sample{{c.AtLevel(levelController, l), 42.5}},
		}}
	},
}

// recQueueCompletions: a completed item observes workqueue_work_duration_seconds once, so its
// count is the completion rate.
var recQueueCompletions = &Recording{
	Name: levelController.record("workqueue_work_duration_seconds_count", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelController, rate(sel("workqueue_work_duration_seconds_count", e.Selector("controller"), hasController), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		return counterRateCase(c, "workqueue_work_duration_seconds_count", c.Controller(), levelController)
	},
}

// recQueueWaitLong is the share of a controller's items that waited in its queue longer than
// LoopwatchQueueWaitHigh's bucket. The alert compares it, so that its query, evaluated with every
// backlogged controller an alert instance, reads two recorded series per controller instead of
// the histogram of every replica.
var recQueueWaitLong = &Recording{
	Name:      levelController.record("workqueue_queue_duration_seconds", "share_above_bucket_rate5m"),
	ForAlerts: []string{"queueWait"},
	Share:     true,
	Expr: func(e *exprEnv) string {
		return shareAbove(levelController, "workqueue_queue_duration_seconds", e.Selector("controller")+", "+hasController, e.P("bucket"), "5m")
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller()
		other := otherReplica(l)
		return []ExprCase{{
			Name: "records the share of items that waited longer than the bucket, over replicas",
			At:   10 * time.Minute,
			Series: append(histogram("workqueue_queue_duration_seconds", l, workqueueBuckets, 30, 0.4, 0.4, 0),
				histogram("workqueue_queue_duration_seconds", other, workqueueBuckets, 10, 0, 0, 0)...),
			Want: []Sample{{c.AtLevel(levelController, l), 0.3}},
		}}
	},
}

// recQueueDepthNormal is the depth of a controller's queue without the low-priority items
// (priority -100: the initial list and unchanged resync events). A queue without the priority
// label counts whole. Only LoopwatchQueueWaitHigh reads it.
var recQueueDepthNormal = &Recording{
	Name:      levelController.record("workqueue_depth", "sum_normal_priority"),
	ForAlerts: []string{"queueWait"},
	Expr: func(e *exprEnv) string {
		return sumBy(levelController, recQueueDepthByPriority.Name+`{priority!="-100"}`)
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller()
		other := otherReplica(l)
		return []ExprCase{{
			Name: "sums the queued items of every priority but the initial list's and resyncs'",
			At:   5 * time.Minute,
			Series: []*Series{
				Gauge(controllerStarted, l.With("name", ""), 2),
				Gauge(controllerStarted, other.With("name", ""), 2),
				Gauge("workqueue_depth", l.With("priority", "0"), 3),
				Gauge("workqueue_depth", l.With("priority", "10"), 1),
				Gauge("workqueue_depth", l.With("priority", "-100"), 800),
				Gauge("workqueue_depth", other, 2),
			},
			Want: []Sample{{c.AtLevel(levelController, l), 6}},
		}}
	},
}

// recPodReconciles is each pod's reconcile rate per controller, over results: the one rule that
// reads every controller_runtime_reconcile_total series over a range. The per-controller rate
// sums it, and so does the per-pod reconcile rate of LoopwatchAPICallsPerReconcileHigh, instead
// of reading the raw counters again. It keeps no result label: that would record as many series
// as it reads.
var recPodReconciles = &Recording{
	Name: levelTarget.with("controller").record("controller_runtime_reconcile_total", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelTarget.with("controller"), rate(sel("controller_runtime_reconcile_total", e.Selector("controller")), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Target("controller").With("controller", "backup")
		b := otherReplica(l)
		return []ExprCase{{
			Name: "records each pod's reconcile rate by controller, over results",
			At:   10 * time.Minute,
			Series: []*Series{
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), 4),
				Counter("controller_runtime_reconcile_total", b.With("result", "success"), 0),
				Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0.5),
				Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 1),
			},
			Want: []Sample{
				{c.AtLevel(levelTarget.with("controller"), l), 5.5},
				{c.AtLevel(levelTarget.with("controller"), b), 0},
			},
		}}
	},
}

// recReconcileMean is recorded only while the controller reconciles: an idle controller would
// record NaN (0/0), and one NaN in a day would poison any average over time of it.
var recReconcileMean = &Recording{
	Name: levelController.record("controller_runtime_reconcile_time_seconds", "mean5m"),
	Expr: func(e *exprEnv) string {
		s := e.Selector("controller")
		return lines(
			sumBy(levelController, rate(sel("controller_runtime_reconcile_time_seconds_sum", s), "5m")),
			"/",
			paren(sumBy(levelController, rate(sel("controller_runtime_reconcile_time_seconds_count", s), "5m"))+" > 0"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller()
		idle := l.With("controller", "idle", "name", "idle")
		return []ExprCase{{
			Name: "records the mean reconcile time and nothing for an idle controller",
			At:   10 * time.Minute,
			Series: []*Series{
				Counter("controller_runtime_reconcile_time_seconds_sum", l, 0.5),
				Counter("controller_runtime_reconcile_time_seconds_count", l, 4),
				Counter("controller_runtime_reconcile_time_seconds_sum", idle, 0),
				Counter("controller_runtime_reconcile_time_seconds_count", idle, 0),
			},
			Want: []Sample{{c.AtLevel(levelController, l), 0.125}},
		}}
	},
}

// recReconciles is each controller's reconcile rate over every result: what the error ratios
// divide by, over 5m here and, summed over time, over the SLO windows.
var recReconciles = &Recording{
	Name: levelController.record("controller_runtime_reconcile_total", "rate5m"),
	Expr: func(e *exprEnv) string { return sumBy(levelController, recPodReconciles.Name) },
	Cases: func(c *caseEnv) []ExprCase {
		return reconcileRateCase(c, "records the reconcile rate over every result and replica", 7.5)
	},
}

// recReconcileErrors is each controller's rate of reconciles that returned an error: one result
// of four, read from the raw counters in a group of its own rather than recorded by result with
// the others. A controller whose result="error" series is missing records none, as its
// ratio is unknown.
var recReconcileErrors = &Recording{
	Name: levelController.record("controller_runtime_reconcile_error", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelController, rate(sel("controller_runtime_reconcile_total", e.Selector("controller"), `result="error"`), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		return reconcileRateCase(c, "records the rate of reconciles that returned an error, over replicas", 1.5)
	},
}

// reconcileRateCase: two replicas, errors, successes and RequeueAfter results.
func reconcileRateCase(c *caseEnv, name string, want float64) []ExprCase {
	l := c.Controller().With("name", "")
	b := otherReplica(l)
	return []ExprCase{{
		Name: name,
		At:   10 * time.Minute,
		Series: []*Series{
			Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1),
			Counter("controller_runtime_reconcile_total", b.With("result", "error"), 0.5),
			Counter("controller_runtime_reconcile_total", l.With("result", "success"), 4),
			Counter("controller_runtime_reconcile_total", b.With("result", "requeue_after"), 2),
		},
		Want: []Sample{{c.AtLevel(levelController, l), want}},
	}}
}

// recErrorRatio5m is the share of reconciles that returned an error other than a conflict over 5
// minutes (recording_conflicts.go).
var recErrorRatio5m = &Recording{
	Name:  recErrorRatioName("5m"),
	Expr:  func(e *exprEnv) string { return errorShare(recReconcileErrorsExceptConflicts.Name, recReconciles.Name) },
	Share: true,
	Cases: func(c *caseEnv) []ExprCase { return errorRatioCase(c, 10*time.Minute) },
}

var recClientRequests = &Recording{
	Name: levelTarget.with("method").record("rest_client_requests_total", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelTarget.with("method"), rate(sel("rest_client_requests_total", e.Selector("controller")), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Target("controller").With("host", "10.96.0.1:443")
		return []ExprCase{{
			Name: "records each pod's client-go request rate by method, over response codes",
			At:   10 * time.Minute,
			Series: []*Series{
				Counter("rest_client_requests_total", l.With("method", "PATCH", "code", "200"), 3),
				Counter("rest_client_requests_total", l.With("method", "PATCH", "code", "409"), 1),
				Counter("rest_client_requests_total", l.With("method", "GET", "code", "200"), 0.5),
			},
			Want: []Sample{
				{c.AtLevel(levelTarget, l).With("method", "PATCH"), 4},
				{c.AtLevel(levelTarget, l).With("method", "GET"), 0.5},
			},
		}}
	},
}

var recAPIRequests = &Recording{
	Name: levelController.with("access").record("loopwatch_controller_api_requests_total", "rate5m"),
	Expr: func(e *exprEnv) string {
		return sumBy(levelController.with("access"), rate(sel("loopwatch_controller_api_requests_total", e.Selector("controller")), "5m"))
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller().With("name", "")
		return []ExprCase{{
			Name: "records an instrumented controller's API calls by access, over verbs",
			At:   10 * time.Minute,
			Series: []*Series{
				Counter("loopwatch_controller_api_requests_total", l.With("verb", "get", "access", "read"), 2),
				Counter("loopwatch_controller_api_requests_total", l.With("verb", "list", "access", "read"), 1),
				Counter("loopwatch_controller_api_requests_total", l.With("verb", "patch", "access", "write"), 0.25),
			},
			Want: []Sample{
				{c.AtLevel(levelController, l).With("access", "read"), 3},
				{c.AtLevel(levelController, l).With("access", "write"), 0.25},
			},
		}}
	},
}

// recControllerWrites is each controller's write rate: its own writes where it is instrumented
// with loopwatch's instrument package; otherwise its process's POST, PUT, PATCH and DELETE,
// shared among the process's controllers in proportion to their reconciles (client-go's request
// metric has no controller label, and a controller's writes happen in its reconciles).
var recControllerWrites = &Recording{
	Name: levelController.record("controller_writes", "rate5m"),
	Expr: func(e *exprEnv) string {
		reconciles := recReconciles.Name
		return lines(
			sumBy(levelController, recAPIRequests.Name+`{access="write"}`),
			"or",
			"(",
			"  "+reconciles,
			"  / on ("+levelJob.by()+") group_left ()",
			"  "+sumBy(levelJob, recReconciles.Name),
			"  * on ("+levelJob.by()+") group_left ()",
			"  "+sumBy(levelJob, recClientRequests.Name+`{method=~"POST|PUT|PATCH|DELETE"}`),
			"  unless on ("+levelJob.by()+")",
			"  "+recAPIRequests.Name,
			")")
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller().With("name", "")
		other := l.With("controller", "snapshot")
		pod := c.Target("controller").With("host", "10.96.0.1:443")
		return []ExprCase{
			{
				Name: "shares an uninstrumented process's writes among its controllers by reconciles",
				At:   10 * time.Minute,
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "success"), 3),
					Counter("controller_runtime_reconcile_total", other.With("result", "requeue_after"), 1),
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "200"), 6),
					Counter("rest_client_requests_total", pod.With("method", "PATCH", "code", "409"), 2),
					Counter("rest_client_requests_total", pod.With("method", "GET", "code", "200"), 50),
				},
				Want: []Sample{
					{c.AtLevel(levelController, l), 6},
					{c.AtLevel(levelController, other), 2},
				},
			},
			{
				Name: "records an instrumented controller's own writes",
				At:   10 * time.Minute,
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "success"), 2),
					Counter("controller_runtime_reconcile_total", other.With("result", "success"), 2),
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "200"), 6),
					Counter("loopwatch_controller_api_requests_total", l.With("verb", "status_update", "access", "write"), 0.5),
					Counter("loopwatch_controller_api_requests_total", l.With("verb", "get", "access", "read"), 4),
					Counter("loopwatch_controller_api_requests_total", other.With("verb", "patch", "access", "write"), 0),
				},
				Want: []Sample{
					{c.AtLevel(levelController, l), 0.5},
					{c.AtLevel(levelController, other), 0},
				},
			},
		}
	},
}

// errorShare divides an error rate by the reconcile rate, capped at 1. The two come from
// different groups' evaluations (recReconcileErrors and recReconciles are separate raw reads),
// up to one interval apart: while the rates move, at a controller's start or when errors begin,
// the quotient of a newer error rate and an older reconcile rate overshoots (measured on a real
// Prometheus at a 2s interval: 1.85, and +Inf while the older reconcile rate was still 0, where
// every reconcile failed). A share of reconciles is at most 1; the cap keeps alert texts and
// dashboards from reading "185 %", and `loopwatch diagnose` from taking the overshoot for a peak
// the errors fell from.
func errorShare(errors, reconciles string) string {
	return "clamp_max(\n  " + errors + "\n  /\n  " + reconciles + "\n, 1)"
}

// recErrorRatioName is the name of the error ratio recorded over window.
func recErrorRatioName(window string) string {
	return levelController.record("controller_runtime_reconcile_error", "ratio_rate"+window)
}

// counterRateCase checks a rule that records one counter's rate per level: two replicas' rates
// add up.
func counterRateCase(c *caseEnv, metric string, l Labels, lv level) []ExprCase {
	other := otherReplica(l)
	return []ExprCase{{
		Name: "records the rate summed over the replicas",
		At:   10 * time.Minute,
		Series: []*Series{
			Counter(metric, l, 30),
			Counter(metric, other, 12.5),
		},
		Want: []Sample{{c.AtLevel(lv, l), 42.5}},
	}}
}

// errorRatioCase checks an error-ratio rule over a window that the input fills: one error in
// every four reconciles, requeue_after results counting as healthy reconciles.
func errorRatioCase(c *caseEnv, at time.Duration) []ExprCase {
	l := c.Controller().With("name", "")
	return []ExprCase{{
		Name: "records the share of reconciles that returned an error",
		At:   at,
		Series: []*Series{
			Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1),
			Counter("controller_runtime_reconcile_total", l.With("result", "success"), 2),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 1),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
		},
		Want: []Sample{{c.AtLevel(levelController, l), 0.25}},
	}}
}
