package gen

import "time"

// FinalizerStuck fires when an object has waited on a controller's finalizer for too long:
// deletions hanging on a clean-up that fails or has no timeout, such as an unreachable store.
// It reads the gauge exported by loopwatch's instrument package; uninstrumented controllers have
// no such series.
var FinalizerStuck = &Alert{
	Key: "finalizerStuck", Name: "FinalizerStuck",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 300, Check: positive,
			Doc: "Seconds an object being deleted may wait on the controller's finalizer."},
	},
	Level: levelController.with("finalizer"),
	Expr: func(e *exprEnv) string {
		return maxBy(levelController.with("finalizer"), sel("loopwatch_controller_finalizer_oldest_pending_seconds", e.Selector("controller"))) +
			" > " + e.P("threshold")
	},
	Summary:     "Objects wait too long on a controller's finalizer.",
	Description: "The oldest object being deleted that still carries finalizer {{ $labels.finalizer }} of " + whereController + " has waited {{ $value | humanizeDuration }}. The clean-up the finalizer guards is failing or has no timeout.",
	NextStep:    "Bound the clean-up finalizer <finalizer> guards with a timeout and remove the finalizer when it gives up (an orphan sweep can finish later); list the stuck objects: those with a deletionTimestamp that still carry <finalizer>.",
	Panel:       PanelRef{"controller", "Oldest object waiting on a finalizer"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Controller().With("name", "", "finalizer", "backup.loopwatch.dev/archive")
		start := th * above
		return []Case{
			{
				Name:   "fires when an object waits on the finalizer past the threshold",
				Series: []*Series{Gauge("loopwatch_controller_finalizer_oldest_pending_seconds", l, 0).Ramp(incidentAt, start, 60)},
				Fires: &Firing{At: incidentAt, Labels: c.Instance(l), Value: func(t time.Duration) float64 {
					return start + 60*float64(sampleIndex(incidentAt, t))
				}},
			},
			{
				Name:   "stays silent while deletions finish under the threshold",
				Series: []*Series{Gauge("loopwatch_controller_finalizer_oldest_pending_seconds", l, th/2)},
			},
		}
	},
}
