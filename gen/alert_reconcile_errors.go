package gen

import "time"

// ReconcileErrors fires on the result="error" share of reconciles. It reads
// controller_runtime_reconcile_total{result}, not workqueue_retries_total: retries also count
// every RequeueAfter, so a healthy controller on a schedule would look like an error storm.
var ReconcileErrors = &Alert{
	Key: "reconcileErrors", Name: "ReconcileErrors",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 0.1, Check: ratio,
			Doc: "Share of reconciles returning an error above which the alert fires."},
	},
	Level:       levelController,
	Expr:        func(e *exprEnv) string { return recErrorRatio5m.Name + " > " + e.P("threshold") },
	Summary:     "A controller's reconciles fail.",
	Description: "{{ $value | humanizePercentage }} of the reconciles of " + whereController + " return an error. Read the controller's logs for the error.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Controller().With("name", "")
		failing := th + (1-th)/above
		value := stepRate(0, failing, 5*time.Minute)
		// 10 reconciles a second; from incidentAt, `failing` of them return an error.
		results := func(share float64) []*Series {
			return []*Series{
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10).Rate(incidentAt, 10*(1-share)),
				Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(incidentAt, 10*share),
				Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
				Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 0),
			}
		}
		return []Case{
			{
				Name:   "fires when more reconciles than the threshold return an error",
				Series: results(failing),
				Fires:  &Firing{At: c.crossing(incidentAt, incidentAt+10*time.Minute, th, value), Labels: c.Instance(l), Value: value},
			},
			{
				Name:   "stays silent when fewer reconciles than the threshold fail",
				Series: results(th / 2),
			},
			{
				Name: "stays silent on a RequeueAfter steady state",
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "success"), 1),
					Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 5),
					Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0),
					Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
					Counter("workqueue_retries_total", c.Controller(), 5),
				},
			},
		}
	},
}
