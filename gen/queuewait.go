package gen

// queueWaitAlert fires when a share of the items waited longer than a bucket bound in the queue
// while normal-priority items are queued. With the priority queue, items from the initial list
// and resyncs have priority -100 (handler.LowPriority); the alert is about edge-triggered work
// (priority != -100) stuck behind them (seed 000's startup and periodic storms). The queue-wait
// histogram has no priority label, so the depth of non-low-priority items gates it.
func (b *builder) queueWaitAlert() []Rule {
	a := b.cfg.Alerts.QueueWait
	s := b.selector("controller")
	bound := b.p.G("queueWaitBucket", a.Bucket)
	expr := lines(
		paren(shareAbove(levelController, "workqueue_queue_duration_seconds", s+", "+hasController, bound, "5m"))+" > "+b.p.G("queueWaitShare", a.Share),
		"and on ("+levelController.by()+")",
		sumBy(levelController, sel("workqueue_depth", s, hasController, `priority!="-100"`))+" > 0")
	return b.alert("queueWait", "QueueWaitHigh", a.Common, expr,
		"Items wait too long in a controller's work queue.",
		"{{ $value | humanizePercentage }} of the items of "+whereController+" waited more than "+bound+"s in the queue while normal-priority items are queued. Look for a resync or startup storm, or too few workers.")
}
