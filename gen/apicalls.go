package gen

// apiCallsPerReconcileAlert fires when reconciles make many API calls each (seed 000: 50 calls
// where 2 would do). Where a controller is instrumented with loopwatch's instrument package the
// ratio is per controller; elsewhere it falls back to the process's client-go requests per
// reconcile (which also counts informer lists and watches). A controller that made calls but did
// not reconcile in the window (a runnable, a restart) would divide by zero: +Inf is not a ratio,
// so the denominators only keep controllers that reconciled.
func (b *builder) apiCallsPerReconcileAlert() []Rule {
	a := b.cfg.Alerts.APICallsPerReconcile
	s := b.selector("controller")
	threshold := b.p.G("apiCallsPerReconcileThreshold", a.Threshold)
	expr := lines(
		"(",
		"  "+sumBy(levelController, recAPIRequests),
		"  /",
		"  "+paren(sumBy(levelController, recReconcileByResult)+" > 0"),
		") > "+threshold,
		"or",
		"(",
		"  (",
		"    "+sumBy(levelTarget, recClientRequests),
		"    /",
		"    "+paren(sumBy(levelTarget, rate(sel("controller_runtime_reconcile_total", s), "5m"))+" > 0"),
		"  ) > "+threshold,
		"  unless on ("+levelJob.by()+")",
		"  "+recAPIRequests,
		")")
	return b.alert("apiCallsPerReconcile", "APICallsPerReconcileHigh", a.Common, expr,
		"A controller makes many API calls per reconcile.",
		"The {{ if $labels.controller }}"+whereController+"{{ else }}"+whereTarget+"{{ end }} makes {{ $value | humanize }} API calls per reconcile. Read from the informer cache with field indexes instead of listing or getting per object.")
}
