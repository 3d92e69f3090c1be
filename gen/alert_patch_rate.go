package gen

import "time"

// PatchRateHigh fires when a controller process sends PATCH requests faster than a threshold
// (above 10/s sustained a controller is most likely patching in a loop). client-go's request
// metric has no controller label, so the rate is per scrape target.
var PatchRateHigh = &Alert{
	Key: "patchRate", Name: "PatchRateHigh",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 10, Check: positive,
			Doc: "PATCH requests per second of one controller pod above which the alert fires."},
	},
	Level:       levelTarget.with("method"),
	Expr:        func(e *exprEnv) string { return recClientRequests.Name + `{method="PATCH"} > ` + e.P("threshold") },
	Summary:     "A controller sends PATCH requests at a high rate.",
	Description: "The " + whereTarget + " sends {{ $value | printf \"%.2f\" }} PATCH requests per second. A write that changes nothing, or a field other writers change back, keeps it busy.",
	NextStep:    "Find what pod <namespace>/<pod> patches and why: the audit exporter's writes by actor name the objects. Patch only when the object differs from what it should be, and keep the controller's own writes from waking it (predicates).",
	Panel:       PanelRef{"controller", "PATCH rate per pod"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Target("controller").With("host", "10.96.0.1:443")
		patch := l.With("method", "PATCH", "code", "200")
		before := th / 20
		after, fires := c.rateFiring(before, th, 5*time.Minute, c.Instance(l.With("method", "PATCH")))
		return []Case{
			{
				Name: "fires when a pod patches faster than the threshold",
				Series: []*Series{
					Counter("rest_client_requests_total", patch, before).Rate(incidentAt, after),
					Counter("rest_client_requests_total", l.With("method", "GET", "code", "200"), 1),
				},
				Fires: fires,
			},
			{
				Name: "stays silent on many reads and few patches",
				Series: []*Series{
					Counter("rest_client_requests_total", patch, th/2),
					Counter("rest_client_requests_total", l.With("method", "GET", "code", "200"), 10*th),
				},
			},
		}
	},
}
