package gen

import "time"

// ReconcilePanics fires when a controller's reconciles panic. controller-runtime recovers the
// panic (RecoverPanic is on by default), logs it and requeues the object with backoff, so the
// process keeps running and nothing else shows that a nil pointer or an index out of range hits
// some objects on every pass.
var ReconcilePanics = &Alert{
	Key: "reconcilePanics", Name: "ReconcilePanics",
	Severity: SeverityWarning, For: 0,
	Params: []Param{
		{Key: "threshold", Default: 0, Check: nonNegative,
			Doc: "Panics of one controller's reconciles in 10 minutes above which the alert fires."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		return sumBy(levelController, "increase("+sel("controller_runtime_reconcile_panics_total", e.Selector("controller"))+"[10m])") +
			" > " + e.P("threshold")
	},
	Summary:     "A controller's reconciles panic.",
	Description: "The reconciles of " + whereController + " panicked {{ $value | printf \"%.0f\" }} times in the last 10 minutes. controller-runtime recovers each panic and retries the object with backoff.",
	NextStep:    "Read the stack trace: kubectl -n <namespace> logs deploy/<job> --since=15m | grep -A 30 -i panic. Guard the nil pointer or index the trace points at; controller-runtime retries the object with backoff until then.",
	Panel:       PanelRef{"controller", "Errors"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Controller().With("name", "")
		window := 10 * time.Minute
		// One panic a minute from incidentAt on, or more when the threshold asks for more.
		perSecond := (th + 1) * above / window.Seconds()
		increase := func(t time.Duration) float64 { return stepRate(0, perSecond, window)(t) * window.Seconds() }
		panics := func(after float64) []*Series {
			return []*Series{
				Counter("controller_runtime_reconcile_panics_total", l, 0).Rate(incidentAt, after),
				Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0.5),
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), 2),
			}
		}
		return []Case{
			{
				Name:   "fires when reconciles panic",
				Series: panics(perSecond),
				Fires:  &Firing{At: c.crossing(incidentAt, incidentAt+window, th, increase), Labels: c.Instance(l), Value: increase},
			},
			{
				Name:   "stays silent when reconciles fail without panicking",
				Series: panics(0),
			},
		}
	},
}
