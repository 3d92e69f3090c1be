package gen

import "time"

// ReconcileSlow fires on the exact share of reconciles slower than a bucket bound of
// controller_runtime_reconcile_time_seconds. An interpolated p99 inside wide buckets would be a
// guess; a share above a bucket bound is a count.
var ReconcileSlow = &Alert{
	Key: "reconcileLatency", Name: "ReconcileSlow",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "bucket", Default: 5, Check: bucketOf("controller_runtime_reconcile_time_seconds", reconcileTimeBuckets),
			Doc: "Reconcile time in seconds: a bucket bound of the histogram, so the share above it is a count, not an interpolation."},
		{Key: "share", Default: 0.1, Check: ratio,
			Doc: "Share of the reconciles slower than the bucket above which the alert fires."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		return paren(shareAbove(levelController, "controller_runtime_reconcile_time_seconds", e.Selector("controller"), e.P("bucket"), "5m")) +
			" > " + e.P("share")
	},
	Summary:     "A controller's reconciles are slow.",
	Description: "{{ $value | humanizePercentage }} of the reconciles of " + whereController + " took longer than ⟦@bucket:g⟧s. Slow external calls or N+1 API reads are the usual causes.",
	NextStep:    "Find the slow call: put timeouts on calls to external systems, read from the informer cache with field indexes instead of the API server, and compare with the API calls per reconcile.",
	Panel:       PanelRef{"controller", "Reconcile latency"},
	Cases: func(c *caseEnv) []Case {
		share := c.P("share")
		l := c.Controller().With("name", "")
		before, after, fires := c.shareFiring(share, c.Instance(l))
		return []Case{
			{
				Name:   "fires when more reconciles than the share are slower than the bucket",
				Series: histogram("controller_runtime_reconcile_time_seconds", l, reconcileTimeBuckets, 2, before, after, incidentAt),
				Fires:  fires,
			},
			{
				Name:   "stays silent when fewer reconciles than the share are slow",
				Series: histogram("controller_runtime_reconcile_time_seconds", l, reconcileTimeBuckets, 2, before, share/2, incidentAt),
			},
		}
	},
}
