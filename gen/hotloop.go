package gen

// hotLoopAlert fires when a controller reconciles often, its reconciles finish much faster than
// usual (or absurdly fast), and it writes: seed 002's time.Now() annotation that
// re-triggers every reconcile. All three are needed: a busy healthy controller writes too, but
// does real work per reconcile.
func (b *builder) hotLoopAlert() []Rule {
	a := b.cfg.Alerts.HotLoop
	// Writes of the controller itself where it is instrumented (loopwatch's instrument package);
	// otherwise the writes of its whole process, spread to each of its controllers.
	jobWrites := sumBy(levelJob, recClientRequests+`{method=~"POST|PUT|PATCH|DELETE"}`)
	writes := lines(
		"(",
		"  "+sumBy(levelController, recAPIRequests+`{access="write"}`),
		"  or",
		"  (",
		"    "+sumBy(levelController, recReconcileByResult)+" * 0",
		"    + on ("+levelJob.by()+") group_left ()",
		"    "+jobWrites,
		"    unless on ("+levelJob.by()+")",
		"    "+recAPIRequests,
		"  )",
		")")
	expr := lines(
		sumBy(levelController, recReconcileByResult)+" > "+b.p.G("hotLoopReconcilesPerSecond", a.ReconcilesPerSecond),
		"and on ("+levelController.by()+")",
		"(",
		"  "+recReconcileMean+" < "+b.p.G("hotLoopFastSeconds", a.FastSeconds),
		"  or",
		"  "+recReconcileMean+" < avg_over_time("+recReconcileMean+"[1d]) / "+b.p.G("hotLoopFasterThanUsual", a.FasterThanUsual),
		")",
		"and on ("+levelController.by()+")",
		writes+" > "+b.p.G("hotLoopWritesPerSecond", a.WritesPerSecond))
	return b.alert("hotLoop", "HotLoop", a.Common, expr,
		"A controller looks stuck in a reconcile hot loop.",
		"The "+whereController+" reconciles {{ $value | printf \"%.2f\" }} times per second, each much faster than usual, while its process keeps writing. A write that triggers its own watch event (an annotation with a timestamp, a status that always changes) re-queues the object forever.")
}
