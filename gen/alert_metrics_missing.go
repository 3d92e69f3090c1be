package gen

import "time"

// controllerStarted is the series that says a controller-runtime controller has started in a
// process: controller-runtime sets it, one series per controller, when the controller starts
// (since August 2020, kubernetes-sigs/controller-runtime#1125; the four reconcile_total series,
// one per result, are created at the same moment since v0.15). Looking for it instead of
// reconcile_total reads a quarter of the series at the same answer.
const controllerStarted = "controller_runtime_max_concurrent_reconciles"

// WorkqueueMetricsMissing fires when a controller exports controller-runtime's metrics but no
// workqueue metrics: client-go's workqueue metrics provider is set once, first caller wins, so a
// library that sets its own provider before controller-runtime silently drops every workqueue_*
// series.
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
			countBy(l, sel("workqueue_adds_total", s)))
	},
	Summary:     "A controller exports no workqueue metrics.",
	Description: "The " + whereTarget + " exports controller-runtime metrics for controller {{ $labels.controller }} but no workqueue_* series: another workqueue metrics provider was registered before controller-runtime's. Queue depth and wait alerts cannot fire for it.",
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
		}
	},
}

// ControllerMetricsMissing fires when a target that should be a controller is up but exports no
// controller-runtime controller metrics (a registry mix-up, a controller that never started).
// Standby replicas of a leader-elected manager are expected to have none: controller-runtime
// starts controllers, and creates their metrics, only on the leader.
var ControllerMetricsMissing = &Alert{
	Key: "controllerMetricsMissing", Name: "ControllerMetricsMissing",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Level: levelUp,
	Expr: func(e *exprEnv) string {
		s := e.Selector("controllerTargets")
		on := clusterRef + ", job, instance"
		return lines(
			sel("up", s)+" == 1",
			"unless on ("+on+")",
			"count by ("+on+") ("+sel(controllerStarted, s)+")",
			"unless on ("+on+")",
			"max by ("+on+") ("+sel("leader_election_master_status", s)+") == 0")
	},
	Summary:     "A controller target exports no controller-runtime metrics.",
	Description: "Target {{ $labels.instance }} of job {{ $labels.job }} is up but exports no controller-runtime controller metrics: its controllers did not start, or their metrics go to another registry.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases: func(c *caseEnv) []Case {
		l := c.Target("controllerTargets")
		standby := otherReplica(l)
		return []Case{
			{
				Name:   "fires when a controller target is up without controller metrics",
				Series: []*Series{Gauge("up", l, 1)},
				Fires:  &Firing{At: 0, Labels: l, Value: Constant(1)},
			},
			{
				Name: "stays silent on a leader with controller metrics and its standby",
				Series: []*Series{
					Gauge("up", l, 1),
					Gauge(controllerStarted, l.With("controller", "backup"), 2),
					Counter("controller_runtime_reconcile_total", l.With("controller", "backup", "result", "success"), 1),
					Gauge("leader_election_master_status", l.With("name", "backup-operator-lock"), 1),
					Gauge("up", standby, 1),
					Gauge("leader_election_master_status", standby.With("name", "backup-operator-lock"), 0),
				},
			},
		}
	},
}
