package gen

// processorStuckAlert fires when one reconcile has been running for too long: a worker stuck on
// a call without a timeout. workqueue_longest_running_processor_seconds is a gauge: compared
// as is, never rate()d.
func (b *builder) processorStuckAlert() []Rule {
	a := b.cfg.Alerts.ProcessorStuck
	expr := maxBy(levelController, sel("workqueue_longest_running_processor_seconds", b.selector("controller"), hasController)) +
		" > " + b.p.G("processorStuckThreshold", a.Threshold)
	return b.alert("processorStuck", "ProcessorStuck", a.Common, expr,
		"A controller's reconcile has been running for too long.",
		"A worker of "+whereController+" has been processing one item for {{ $value | humanizeDuration }}. Look for a call without a timeout.")
}
