package gen

// The controller rule groups: recording rules shared by the alerts and dashboards, and the
// alerts of every controller-runtime signal. Each alert's builder lives in the file named after
// it (backlog.go, latency.go, ...).

// Recording-rule names. Every one is produced in controllerRecordingRules.
var (
	recQueueDepth        = levelController.record("workqueue_depth", "sum")
	recQueueAdds         = levelController.record("workqueue_adds_total", "rate5m")
	recQueueCompletions  = levelController.record("workqueue_work_duration_seconds_count", "rate5m")
	recReconcileByResult = levelController.with("result").record("controller_runtime_reconcile_total", "rate5m")
	recReconcileMean     = levelController.record("controller_runtime_reconcile_time_seconds", "mean5m")
	recClientRequests    = levelTarget.with("method").record("rest_client_requests_total", "rate5m")
	recAPIRequests       = levelController.with("access").record("loopwatch_controller_api_requests_total", "rate5m")
	recErrorRatio5m      = recErrorRatio("5m")
)

// recErrorRatio is the share of reconciles that returned an error, over window.
func recErrorRatio(window string) string {
	return levelController.record("controller_runtime_reconcile_error", "ratio_rate"+window)
}

func (b *builder) controllerRecordingRules() []Rule {
	s := b.selector("controller")
	reconcile := sel("controller_runtime_reconcile_total", s)
	return []Rule{
		// workqueue_depth carries a `priority` label whose values churn with the priority queue:
		// summing by the controller level drops it.
		record(recQueueDepth, sumBy(levelController, sel("workqueue_depth", s, hasController))),
		record(recQueueAdds, sumBy(levelController, rate(sel("workqueue_adds_total", s, hasController), "5m"))),
		// A completed item observes workqueue_work_duration_seconds once: its count is the
		// completion rate.
		record(recQueueCompletions, sumBy(levelController, rate(sel("workqueue_work_duration_seconds_count", s, hasController), "5m"))),
		record(recReconcileByResult, sumBy(levelController.with("result"), rate(reconcile, "5m"))),
		// Only while the controller reconciles: an idle controller would record NaN (0/0), and
		// one NaN in a day poisons the hot-loop alert's avg_over_time of "usual" speed.
		record(recReconcileMean, lines(
			sumBy(levelController, rate(sel("controller_runtime_reconcile_time_seconds_sum", s), "5m")),
			"/",
			paren(sumBy(levelController, rate(sel("controller_runtime_reconcile_time_seconds_count", s), "5m"))+" > 0"))),
		record(recErrorRatio5m, errorRatio(s, "5m")),
		record(recClientRequests, sumBy(levelTarget.with("method"), rate(sel("rest_client_requests_total", s), "5m"))),
		record(recAPIRequests, sumBy(levelController.with("access"), rate(sel("loopwatch_controller_api_requests_total", s), "5m"))),
	}
}

// errorRatio is the result="error" share of reconciles per controller over window. requeue and
// requeue_after are healthy results: a controller that schedules itself with RequeueAfter has
// a ratio of 0.
func errorRatio(selector, window string) string {
	return lines(
		sumBy(levelController, rate(sel("controller_runtime_reconcile_total", selector, `result="error"`), window)),
		"/",
		sumBy(levelController, rate(sel("controller_runtime_reconcile_total", selector), window)))
}

func (b *builder) controllerAlerts() []Rule {
	var rules []Rule
	for _, f := range []func() []Rule{
		b.backlogAlert,
		b.queueWaitAlert,
		b.reconcileLatencyAlert,
		b.processorStuckAlert,
		b.reconcileErrorsAlert,
		b.patchRateAlert,
		b.hotLoopAlert,
		b.apiCallsPerReconcileAlert,
		b.finalizerStuckAlert,
		b.workqueueMetricsMissingAlert,
		b.controllerMetricsMissingAlert,
	} {
		rules = append(rules, f()...)
	}
	return rules
}

// Description fragments naming where to look.
const (
	whereController = "controller {{ $labels.controller }} of {{ $labels.namespace }}/{{ $labels.job }}"
	whereTarget     = "pod {{ $labels.namespace }}/{{ $labels.pod }} (job {{ $labels.job }})"
)
