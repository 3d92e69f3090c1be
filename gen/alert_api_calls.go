package gen

import "time"

// APICallsPerReconcileHigh fires when reconciles make many API calls each (50 calls where 2 would
// do: listing or getting per object instead of reading the informer cache). Where a controller is
// instrumented with loopwatch's instrument package the ratio is per controller; elsewhere it falls
// back to the process's client-go requests per reconcile (which also counts informer lists,
// watches and lease renewals). The denominators keep only controllers that reconcile at least
// minReconcilesPerSecond: a process's background requests divided by a rare reconcile (or by
// none: +Inf) is not an N+1 pattern.
var APICallsPerReconcileHigh = &Alert{
	Key: "apiCallsPerReconcile", Name: "APICallsPerReconcileHigh",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 20, Check: positive,
			Doc: "API calls per reconcile above which the alert fires."},
		{Key: "minReconcilesPerSecond", Default: 0.1, Check: nonNegative,
			Doc: "Controllers reconciling less often than this are ignored: background requests (lease renewals) over rare reconciles are not N+1."},
	},
	// Per controller where instrumented; per pod (levelTarget) otherwise.
	Level: levelController,
	Expr: func(e *exprEnv) string {
		threshold, minRate := e.P("threshold"), e.P("minReconcilesPerSecond")
		return lines(
			"(",
			"  "+sumBy(levelController, recAPIRequests.Name),
			"  /",
			"  "+paren(recReconciles.Name+" > "+minRate),
			") > "+threshold,
			"or",
			"(",
			"  (",
			"    "+sumBy(levelTarget, recClientRequests.Name),
			"    /",
			"    "+paren(sumBy(levelTarget, recPodReconciles.Name)+" > "+minRate),
			"  ) > "+threshold,
			"  unless on ("+levelJob.by()+")",
			"  "+recAPIRequests.Name,
			")")
	},
	Summary:     "A controller makes many API calls per reconcile.",
	Description: "The {{ if $labels.controller }}" + whereController + "{{ else }}" + whereTarget + "{{ end }} makes {{ $value | humanize }} API calls per reconcile.",
	NextStep:    "Read through the manager's cached client instead of the API server, look objects up by a field index instead of listing and filtering, and never GET per object in a loop.",
	Panel:       PanelRef{"controller", "API calls per reconcile"},
	Cases: func(c *caseEnv) []Case {
		th, minRate := c.P("threshold"), c.P("minReconcilesPerSecond")
		l := c.Controller().With("name", "")
		client := c.Target("controller").With("host", "10.96.0.1:443")
		r := max(2, 4*minRate) // reconciles per second
		perCall := stepRate(2, th*above, 5*time.Minute)
		at := c.crossing(incidentAt, incidentAt+10*time.Minute, th, perCall)
		reconciles := func(rate float64) *Series {
			return Counter("controller_runtime_reconcile_total", l.With("result", "success"), rate)
		}
		return []Case{
			{
				Name: "fires when an instrumented controller's reconciles make many calls each",
				Series: []*Series{
					reconciles(r),
					Counter("loopwatch_controller_api_requests_total", l.With("verb", "get", "access", "read"), 2*r).Rate(incidentAt, th*above*r),
				},
				Fires: &Firing{At: at, Labels: c.Instance(l), Value: perCall},
			},
			{
				Name: "fires per pod when an uninstrumented process's reconciles make many calls each",
				Series: []*Series{
					reconciles(r),
					Counter("rest_client_requests_total", client.With("method", "GET", "code", "200"), 2*r).Rate(incidentAt, th*above*r),
				},
				Fires: &Firing{At: at, Labels: client.Only(levelTarget.resolve(c.cfg)...), Value: perCall},
			},
			{
				Name: "stays silent on an idle controller whose process renews its lease",
				Series: []*Series{
					reconciles(minRate / 2),
					Counter("rest_client_requests_total", client.With("method", "PUT", "code", "200"), 2*th*max(minRate, 0.01)),
				},
			},
			{
				Name: "stays silent on a few calls per reconcile",
				Series: []*Series{
					reconciles(r),
					Counter("loopwatch_controller_api_requests_total", l.With("verb", "get", "access", "read"), th*r/2),
				},
			},
		}
	},
}
