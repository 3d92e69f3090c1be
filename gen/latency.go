package gen

// reconcileLatencyAlert fires on the exact share of reconciles slower than a bucket bound of
// controller_runtime_reconcile_time_seconds. An interpolated p99 inside wide buckets would be a
// guess; a share above a bucket bound is a count.
func (b *builder) reconcileLatencyAlert() []Rule {
	a := b.cfg.Alerts.ReconcileLatency
	s := b.selector("controller")
	bound := b.p.G("reconcileLatencyBucket", a.Bucket)
	expr := paren(shareAbove(levelController, "controller_runtime_reconcile_time_seconds", s, bound, "5m")) +
		" > " + b.p.G("reconcileLatencyShare", a.Share)
	return b.alert("reconcileLatency", "ReconcileSlow", a.Common, expr,
		"A controller's reconciles are slow.",
		"{{ $value | humanizePercentage }} of the reconciles of "+whereController+" took longer than "+bound+"s. Slow external calls or N+1 API reads are the usual causes.")
}
