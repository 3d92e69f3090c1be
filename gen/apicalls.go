package gen

// apiCallsPerReconcileAlert fires when reconciles make many API calls each (seed 000: 50 calls
// where 2 would do). Where a controller is instrumented with loopwatch's instrument package the
// ratio is per controller; elsewhere it falls back to the process's client-go requests per
// reconcile (which also counts informer lists, watches and lease renewals). The denominators keep
// only controllers that reconcile at least minReconcilesPerSecond: a process's background
// requests divided by a rare reconcile (or by none: +Inf) is not an N+1 pattern.
func (b *builder) apiCallsPerReconcileAlert() []Rule {
	a := b.cfg.Alerts.APICallsPerReconcile
	s := b.selector("controller")
	threshold := b.p.G("apiCallsPerReconcileThreshold", a.Threshold)
	minRate := b.p.G("apiCallsPerReconcileMinReconcilesPerSecond", a.MinReconcilesPerSecond)
	expr := lines(
		"(",
		"  "+sumBy(levelController, recAPIRequests),
		"  /",
		"  "+paren(sumBy(levelController, recReconcileByResult)+" > "+minRate),
		") > "+threshold,
		"or",
		"(",
		"  (",
		"    "+sumBy(levelTarget, recClientRequests),
		"    /",
		"    "+paren(sumBy(levelTarget, rate(sel("controller_runtime_reconcile_total", s), "5m"))+" > "+minRate),
		"  ) > "+threshold,
		"  unless on ("+levelJob.by()+")",
		"  "+recAPIRequests,
		")")
	return b.alert("apiCallsPerReconcile", "APICallsPerReconcileHigh", a.Common, expr,
		"A controller makes many API calls per reconcile.",
		"The {{ if $labels.controller }}"+whereController+"{{ else }}"+whereTarget+"{{ end }} makes {{ $value | humanize }} API calls per reconcile. Read from the informer cache with field indexes instead of listing or getting per object.")
}
