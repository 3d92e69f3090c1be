package gen

// workqueueMetricsMissingAlert fires when a controller exports reconcile metrics but no
// workqueue metrics: client-go's workqueue metrics provider is set once, first caller wins, so
// a library that sets its own provider before controller-runtime silently drops every
// workqueue_* series.
func (b *builder) workqueueMetricsMissingAlert() []Rule {
	a := b.cfg.Alerts.WorkqueueMetricsMissing
	s := b.selector("controller")
	l := levelTarget.with("controller")
	expr := lines(
		countBy(l, sel("controller_runtime_reconcile_total", s)),
		"unless on ("+l.by()+")",
		countBy(l, sel("workqueue_adds_total", s)))
	return b.alert("workqueueMetricsMissing", "WorkqueueMetricsMissing", a, expr,
		"A controller exports no workqueue metrics.",
		"The "+whereTarget+" exports reconcile metrics for controller {{ $labels.controller }} but no workqueue_* series: another workqueue metrics provider was registered before controller-runtime's. Queue depth and wait alerts cannot fire for it.")
}

// controllerMetricsMissingAlert fires when a target that should be a controller is up but
// exports no controller-runtime reconcile metrics (a registry mix-up, a controller that never
// started). Standby replicas of a leader-elected manager are expected to have none.
func (b *builder) controllerMetricsMissingAlert() []Rule {
	a := b.cfg.Alerts.ControllerMetricsMissing
	s := b.selector("controllerTargets")
	on := clusterRef + ", job, instance"
	expr := lines(
		sel("up", s)+" == 1",
		"unless on ("+on+")",
		"count by ("+on+") ("+sel("controller_runtime_reconcile_total", s)+")",
		// controller-runtime starts controllers, and creates their metrics, only on the leader:
		// a standby replica legitimately has none.
		"unless on ("+on+")",
		"max by ("+on+") ("+sel("leader_election_master_status", s)+") == 0")
	return b.alert("controllerMetricsMissing", "ControllerMetricsMissing", a, expr,
		"A controller target exports no controller-runtime metrics.",
		"Target {{ $labels.instance }} of job {{ $labels.job }} is up but exports no controller_runtime_reconcile_total: its controllers did not start, or their metrics go to another registry.")
}
