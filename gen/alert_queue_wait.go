package gen

import "time"

// QueueWaitHigh fires when a share of the items waited longer than a bucket bound in the queue
// while normal-priority items are queued. With the priority queue, items from the initial list
// and resyncs have priority -100 (handler.LowPriority); the alert is about edge-triggered work
// stuck behind them in startup and periodic storms. The queue-wait histogram has no priority
// label, so the depth of the other priorities gates it.
var QueueWaitHigh = &Alert{
	Key: "queueWait", Name: "QueueWaitHigh",
	Severity: SeverityWarning, For: 10 * time.Minute,
	Params: []Param{
		{Key: "bucket", Default: 10, Check: bucketOf("workqueue_queue_duration_seconds", workqueueBuckets),
			Doc: "Queue wait in seconds: a bucket bound of the histogram, so the share above it is a count, not an interpolation."},
		{Key: "share", Default: 0.1, Check: ratio,
			Doc: "Share of the items that waited longer than the bucket above which the alert fires."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		return lines(
			recQueueWaitLong.Name+" > "+e.P("share"),
			"and",
			recQueueDepthNormal.Name+" > 0")
	},
	Summary:     "Items wait too long in a controller's work queue.",
	Description: "{{ $value | humanizePercentage }} of the items of " + whereController + " waited more than ⟦@bucket:g⟧s in the queue while normal-priority items are queued.",
	NextStep:    "Items wait behind others: when priority -100 items (initial list, resync) fill the queue this is a startup or resync storm; otherwise add workers or make reconciles faster.",
	Panel:       PanelRef{"controller", "Queue wait"},
	Cases: func(c *caseEnv) []Case {
		share := c.P("share")
		l := c.Controller()
		before, after, fires := c.shareFiring(share, c.Instance(l))
		queue := func(share, shareAfter, normal, low float64) []*Series {
			return append(histogram("workqueue_queue_duration_seconds", l, workqueueBuckets, 20, share, shareAfter, incidentAt),
				Gauge(controllerStarted, l.With("name", ""), 1),
				Gauge("workqueue_depth", l.With("priority", "0"), normal),
				Gauge("workqueue_depth", l.With("priority", "-100"), low))
		}
		return []Case{
			{
				Name:   "fires when items wait longer than the bucket while normal-priority items are queued",
				Series: queue(before, after, 5, 800),
				Fires:  fires,
			},
			{
				Name:   "stays silent when only low-priority items (initial list, resync) are queued",
				Series: queue(before, after, 0, 800),
			},
			{
				// With EnableWarmup, a standby replica queues every new object at normal priority
				// and never works it; the leader's normal-priority items are all done.
				Name:   "stays silent when only a warming standby replica holds normal-priority items",
				Series: append(queue(before, after, 0, 800), Gauge("workqueue_depth", otherReplica(l).With("priority", "0"), 5)),
			},
			{
				Name:   "stays silent when fewer items than the share wait longer",
				Series: queue(before, share/2, 5, 0),
			},
		}
	},
}
