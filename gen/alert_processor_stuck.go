package gen

import "time"

// ProcessorStuck fires when one reconcile has been running for too long: a worker stuck on a
// call without a timeout. workqueue_longest_running_processor_seconds is a gauge: compared as is,
// never rate()d.
var ProcessorStuck = &Alert{
	Key: "processorStuck", Name: "ProcessorStuck",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 600, Check: positive,
			Doc: "Seconds one reconcile may run before its worker counts as stuck."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		return maxBy(levelController, sel("workqueue_longest_running_processor_seconds", e.Selector("controller"), hasController)) +
			" > " + e.P("threshold")
	},
	Summary:     "A controller's reconcile has been running for too long.",
	Description: "A worker of " + whereController + " has been processing one item for {{ $value | humanizeDuration }}.",
	NextStep:    "A worker is blocked on one item: take a goroutine dump (SIGQUIT, or /debug/pprof/goroutine?debug=2) of a pod of <namespace>/<job> and put a timeout (context.WithTimeout) on the call it waits on.",
	Panel:       PanelRef{"controller", "Longest running processor"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Controller()
		start := th * above
		return []Case{
			{
				Name: "fires when one reconcile runs past the threshold and keeps running",
				// The gauge is refreshed every 500ms: it grows by a minute every minute.
				Series: []*Series{Gauge("workqueue_longest_running_processor_seconds", l, 0.2).Ramp(incidentAt, start, 60)},
				Fires: &Firing{At: incidentAt, Labels: c.Instance(l), Value: func(t time.Duration) float64 {
					return start + 60*float64(sampleIndex(incidentAt, t))
				}},
			},
			{
				Name: "stays silent while reconciles finish under the threshold",
				Series: []*Series{
					Gauge("workqueue_longest_running_processor_seconds", l, th/2),
					// kube-controller-manager's queues have no controller label: not ours.
					Gauge("workqueue_longest_running_processor_seconds", l.With("controller", "", "name", "garbagecollector"), th*10),
				},
			},
		}
	},
}
