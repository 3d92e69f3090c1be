package gen

// backlogAlert fires when a queue is deep AND still growing (adds outpace completions), so a
// deep queue that is draining (a startup list, seed 000's periodic spike) does not page.
func (b *builder) backlogAlert() []Rule {
	a := b.cfg.Alerts.QueueBacklog
	expr := lines(
		recQueueDepth+" > "+b.p.G("queueBacklogDepth", a.Depth),
		"and",
		recQueueAdds+" > "+recQueueCompletions)
	return b.alert("queueBacklog", "QueueBacklog", a.Common, expr,
		"A controller's work queue is deep and still growing.",
		"The work queue of "+whereController+" holds {{ $value | humanize }} items and items are added faster than they are completed. Check reconcile latency, errors and worker saturation.")
}
