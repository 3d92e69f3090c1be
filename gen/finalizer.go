package gen

// finalizerStuckAlert fires when an object has waited on a controller's finalizer for too long
// (seed 000: deletions hanging on an unreachable store). It reads the gauge exported by
// loopwatch's instrument package; uninstrumented controllers have no such series.
func (b *builder) finalizerStuckAlert() []Rule {
	a := b.cfg.Alerts.FinalizerStuck
	expr := maxBy(levelController.with("finalizer"), sel("loopwatch_controller_finalizer_oldest_pending_seconds", b.selector("controller"))) +
		" > " + b.p.G("finalizerStuckThreshold", a.Threshold)
	return b.alert("finalizerStuck", "FinalizerStuck", a.Common, expr,
		"Objects wait too long on a controller's finalizer.",
		"The oldest object being deleted that still carries finalizer {{ $labels.finalizer }} of "+whereController+" has waited {{ $value | humanizeDuration }}. The clean-up the finalizer guards is failing or has no timeout.")
}
