package gen

// The controller overview dashboard: one panel for every controller-runtime signal the alerts
// watch, filtered by cluster, namespace, job and controller.

// filters is the matcher list shared by a dashboard's queries.
type filters struct {
	selector string
	cluster  string
}

// matchers returns the dashboard's matchers, with the controller variable when perController.
func (f filters) matchers(perController bool, extra ...string) []string {
	ms := []string{f.selector, f.cluster + `=~"$cluster"`, `namespace=~"$namespace"`, `job=~"$job"`}
	if perController {
		ms = append(ms, `controller=~"$controller"`)
	}
	return append(ms, extra...)
}

func (f filters) series(metric string, perController bool, extra ...string) string {
	return sel(metric, f.matchers(perController, extra...)...)
}

func (f filters) rate(metric string, perController bool, extra ...string) string {
	return rate(f.series(metric, perController, extra...), "$__rate_interval")
}

// running returns the series of a workqueue metric (series(extra matchers...)) of the replicas
// that run their controller, as the queue rules count them (startedOnly), and those without the
// controller label: controller-runtime v0.18 and older label its queues by name only, and it has
// warming standbys only since v0.22, so they stay, under an empty controller.
func (f filters) running(series func(extra ...string) string) string {
	return startedOnly(series(hasController), f.matchers(true)...) + " or " + series(`controller=""`)
}

// standby returns the series of a workqueue metric of the replicas where the controller has not
// started: warming standbys (standbyOnly).
func (f filters) standby(series func(extra ...string) string) string {
	return standbyOnly(series(hasController), f.matchers(true)...)
}

func quantileTargets(f filters, histogram string, perController bool) []targetSpec {
	var out []targetSpec
	for _, q := range []struct{ q, name string }{{"0.5", "p50"}, {"0.9", "p90"}, {"0.99", "p99"}} {
		out = append(out, targetSpec{
			expr:   "histogram_quantile(" + q.q + ", " + sumByLabels([]string{"controller", "le"}, f.rate(histogram+"_bucket", perController)) + ")",
			legend: "{{controller}} " + q.name,
		})
	}
	return out
}

func heatmapTarget(f filters, histogram string) []targetSpec {
	return []targetSpec{{expr: sumByLabels([]string{"le"}, f.rate(histogram+"_bucket", true)), legend: "{{le}}"}}
}

func (b *builder) controllerDashboard() Dashboard {
	f := filters{selector: b.selector("controller"), cluster: clusterRef}
	c := []string{"controller"}
	pod := []string{"pod"}
	vars := []variableSpec{
		{"cluster", "Cluster", sel("controller_runtime_reconcile_total", f.selector), clusterRef},
		{"namespace", "Namespace", sel("controller_runtime_reconcile_total", f.selector, clusterRef+`=~"$cluster"`), "namespace"},
		{"job", "Job", sel("controller_runtime_reconcile_total", f.selector, clusterRef+`=~"$cluster"`, `namespace=~"$namespace"`), "job"},
		{"controller", "Controller", sel("controller_runtime_reconcile_total", f.selector, clusterRef+`=~"$cluster"`, `namespace=~"$namespace"`, `job=~"$job"`), "controller"},
	}
	depth := func(extra ...string) string { return f.series("workqueue_depth", true, extra...) }
	adds := func(extra ...string) string { return f.rate("workqueue_adds_total", true, extra...) }
	rows := []rowSpec{
		{title: "Work queue", panels: []panelSpec{
			{title: "Queue depth by priority", unit: "short",
				description: "Ready items per controller and priority, on the replicas that run the controller: the depth the alerts count. With the priority queue, -100 is low priority (initial list, resync); other items wait behind it during storms. A standby replica warming its caches (EnableWarmup) queues every object it sees and works none until it leads: its queue is shown apart, and no alert counts it.",
				targets: []targetSpec{
					{expr: sumByLabels([]string{"controller", "priority"}, f.running(depth)), legend: "{{controller}} priority={{priority}}"},
					{expr: sumByLabels(c, f.standby(depth)), legend: "{{controller}} on warming standbys"},
				}},
			{title: "Adds vs completions", unit: "ops",
				description: "A queue grows while adds outpace completions (work_duration count). Adds on the replicas that run the controller, as the alerts count them: a warming standby's are left out.",
				targets: []targetSpec{
					{expr: sumByLabels(c, f.running(adds)), legend: "{{controller}} adds"},
					{expr: sumByLabels(c, f.rate("workqueue_work_duration_seconds_count", true)), legend: "{{controller}} completions"},
				}},
			{title: "Retries (delayed adds)", unit: "ops",
				description: "workqueue_retries_total counts every delayed add, RequeueAfter included: not an error rate.",
				targets:     []targetSpec{{expr: sumByLabels(c, f.rate("workqueue_retries_total", true)), legend: "{{controller}}"}}},
			{title: "Longest running processor", unit: "s",
				description: "How long the oldest in-flight reconcile has been running (a gauge).",
				targets:     []targetSpec{{expr: aggregate("max", []string{"controller"}, f.series("workqueue_longest_running_processor_seconds", true)), legend: "{{controller}}"}}},
			{title: "Queue wait", kind: kindHeatmap, unit: "s",
				description: "Time items spent in the queue before a worker picked them up.",
				targets:     heatmapTarget(f, "workqueue_queue_duration_seconds")},
			{title: "Queue wait quantiles", unit: "s",
				description: "Interpolated inside decade buckets: read the heatmap for exact counts.",
				targets:     quantileTargets(f, "workqueue_queue_duration_seconds", true)},
		}},
		{title: "Reconciles", panels: []panelSpec{
			{title: "Reconciles by result", unit: "ops",
				description: "requeue_after is a healthy scheduled requeue; error is a failed reconcile.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"controller", "result"}, f.rate("controller_runtime_reconcile_total", true)), legend: "{{controller}} {{result}}"}}},
			{title: "Errors", unit: "ops",
				description: "reconcile_errors_total includes terminal errors, which are not retried.",
				targets: []targetSpec{
					{expr: sumByLabels(c, f.rate("controller_runtime_reconcile_errors_total", true)), legend: "{{controller}} errors"},
					{expr: sumByLabels(c, f.rate("controller_runtime_terminal_reconcile_errors_total", true)), legend: "{{controller}} terminal"},
					{expr: sumByLabels(c, f.rate("controller_runtime_reconcile_panics_total", true)), legend: "{{controller}} panics"},
				}},
			{title: "Reconcile latency", kind: kindHeatmap, unit: "s",
				targets: heatmapTarget(f, "controller_runtime_reconcile_time_seconds")},
			{title: "Reconcile latency quantiles", unit: "s",
				description: "A p50 far below usual with a high reconcile rate: a controller re-triggering itself with writes that change nothing.",
				targets:     quantileTargets(f, "controller_runtime_reconcile_time_seconds", true)},
			{title: "Active workers vs max", unit: "short",
				description: "Workers busy all the time mean the controller is saturated.",
				targets: []targetSpec{
					{expr: sumByLabels(c, f.series("controller_runtime_active_workers", true)), legend: "{{controller}} active"},
					{expr: aggregate("max", []string{"controller"}, f.series("controller_runtime_max_concurrent_reconciles", true)), legend: "{{controller}} max"},
				}},
			{title: "Oldest object waiting on a finalizer", unit: "s",
				description: "From loopwatch's instrument package; empty for uninstrumented controllers.",
				targets:     []targetSpec{{expr: aggregate("max", []string{"controller", "finalizer"}, f.series("loopwatch_controller_finalizer_oldest_pending_seconds", true)), legend: "{{controller}} {{finalizer}}"}}},
		}},
		{title: "API requests", panels: []panelSpec{
			{title: "Client requests by method and code", unit: "reqps",
				description: "client-go requests of each process (no controller label exists for them).",
				targets:     []targetSpec{{expr: sumByLabels([]string{"pod", "method", "code"}, f.rate("rest_client_requests_total", false)), legend: "{{pod}} {{method}} {{code}}"}}},
			{title: "PATCH rate per pod", unit: "reqps",
				description: "Sustained above ⟦patchRateThreshold:g⟧/s, a controller is most likely patching in a loop.",
				targets:     []targetSpec{{expr: sumByLabels(pod, f.rate("rest_client_requests_total", false, `method="PATCH"`)), legend: "{{pod}}"}}},
			{title: "API calls per reconcile", unit: "short",
				description: "Per controller where instrumented (loopwatch instrument package), per process otherwise.",
				targets: []targetSpec{
					{expr: sumByLabels(c, f.rate("loopwatch_controller_api_requests_total", true)) + " / " + sumByLabels(c, f.rate("controller_runtime_reconcile_total", true)), legend: "{{controller}}"},
					{expr: sumByLabels(pod, f.rate("rest_client_requests_total", false)) + " / " + sumByLabels(pod, f.rate("controller_runtime_reconcile_total", false)), legend: "{{pod}} (process)"},
				}},
			{title: "API calls by controller and verb", unit: "reqps",
				description: "From loopwatch's instrument package: which verbs each controller's reconciles use.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"controller", "verb", "access"}, f.rate("loopwatch_controller_api_requests_total", true)), legend: "{{controller}} {{verb}} ({{access}})"}}},
		}},
		{title: "Leader election", panels: []panelSpec{
			{title: "Leader per lease", unit: "short", width: 24,
				description: "Exactly one pod should report 1 per lease.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"name", "pod"}, f.series("leader_election_master_status", false)), legend: "{{name}} {{pod}}"}}},
		}},
	}
	return b.newDashboard("controller", "loopwatch / Controller overview",
		"Queue, reconcile, API and leader-election signals of controller-runtime controllers. Alerts: the loopwatch.controller, loopwatch.slo and loopwatch.leader-election rule groups.",
		vars, rows)
}

// dashboards returns every dashboard of the model.
func (b *builder) dashboards() []Dashboard {
	var out []Dashboard
	if b.cfg.Groups.Controller {
		out = append(out, b.controllerDashboard())
	}
	if b.cfg.Groups.Audit {
		out = append(out, b.auditDashboard(), b.exporterDashboard())
	}
	if b.cfg.Groups.APF {
		out = append(out, b.apfDashboard())
	}
	return out
}
