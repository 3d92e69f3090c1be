package gen

import (
	"math"
	"time"
)

// ReconcileErrors fires on the result="error" share of reconciles, less the errors of its
// workload's optimistic-concurrency conflicts (recording_conflicts.go): a controller that returns
// a conflict and requeues is healthy, and a conflict storm has its own alert. It reads
// controller_runtime_reconcile_total{result}, not workqueue_retries_total: retries also count
// every RequeueAfter, so a healthy controller on a schedule would look like an error storm.
var ReconcileErrors = &Alert{
	Key: "reconcileErrors", Name: "ReconcileErrors",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 0.1, Check: ratio,
			Doc: "Share of reconciles returning an error other than a conflict (409 to an update, patch or delete of the controller's process) above which the alert fires."},
	},
	Level:       levelController,
	Expr:        func(e *exprEnv) string { return recErrorRatio5m.Name + " > " + e.P("threshold") },
	Summary:     "A controller's reconciles fail.",
	Description: "{{ $value | humanizePercentage }} of the reconciles of " + whereController + " return an error other than a conflict.",
	NextStep:    "Read the errors: kubectl -n <namespace> logs deploy/<job> --since=15m | grep -i error. Expected waits should return ctrl.Result{RequeueAfter: d} with a nil error: those count as requeue_after, not as errors.",
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
		// A controller that reconciles once a second (fewer conflicts a second than a conflict
		// storm), from incidentAt `failing` of them conflicting and returning the conflict.
		conflicting := []*Series{
			Counter("controller_runtime_reconcile_total", l.With("result", "success"), 1).Rate(incidentAt, 1-failing),
			Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(incidentAt, failing),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 0),
			conflictSeries(c, 0).Rate(incidentAt, failing),
		}
		// Real errors at the incident's share, beside conflicts at up to half that share from
		// the start.
		share := math.Min(failing/2, (1-failing)/2)
		mixed := []*Series{
			Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10*(1-share)).Rate(incidentAt, 10*(1-share-failing)),
			Counter("controller_runtime_reconcile_total", l.With("result", "error"), 10*share).Rate(incidentAt, 10*(share+failing)),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 0),
			conflictSeries(c, 10*share),
		}
		return []Case{
			{
				Name:   "fires when more reconciles than the threshold return an error",
				Series: results(failing),
				Fires:  &Firing{At: c.crossing(incidentAt, incidentAt+10*time.Minute, th, value), Labels: c.Instance(l), Value: value},
			},
			{
				// Counted as errors, the conflicts are `failing` of the reconciles, over the threshold.
				Name:   "stays silent when the errors are optimistic-concurrency conflicts",
				Series: conflicting,
				Checks: []time.Duration{c.crossing(incidentAt, incidentAt+10*time.Minute, th, value) + c.For()},
			},
			{
				Name:   "fires when real errors come beside conflicts",
				Series: mixed,
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
