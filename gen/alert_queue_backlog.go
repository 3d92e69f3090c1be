package gen

import "time"

// QueueBacklog fires when a controller's queue is deep AND still growing (adds outpace
// completions): a deep queue that is draining, after a restart or a periodic burst, does not page.
var QueueBacklog = &Alert{
	Key: "queueBacklog", Name: "QueueBacklog",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "depth", Default: 100, Check: positive,
			Doc: "Queue depth (ready items of every priority) above which a queue that keeps growing is a backlog."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		return lines(
			recQueueDepth.Name+" > "+e.P("depth"),
			"and",
			recQueueAdds.Name+" > "+recQueueCompletions.Name)
	},
	Summary:     "A controller's work queue is deep and still growing.",
	Description: "The work queue of " + whereController + " holds {{ $value | humanize }} items and items are added faster than they are completed.",
	NextStep:    "Find why completions lag behind adds: slow or failing reconciles (their alerts fire too), saturated workers (raise MaxConcurrentReconciles when reconciles wait on I/O) or a burst of adds (predicates such as GenerationChangedPredicate keep metadata churn out).",
	Panel:       PanelRef{"controller", "Adds vs completions"},
	Cases: func(c *caseEnv) []Case {
		d := c.P("depth")
		l := c.Controller()
		standby := otherReplica(l)
		started := Gauge(controllerStarted, l.With("name", ""), 1)
		queue := func(normal, low *Series, adds, done float64, addsAfter float64) []*Series {
			return []*Series{started, normal, low,
				Counter("workqueue_adds_total", l, adds).Rate(incidentAt, addsAfter),
				Counter("workqueue_work_duration_seconds_count", l, done),
				Counter("workqueue_retries_total", l, 0.5),
			}
		}
		until := c.For() + 30*time.Minute
		drainPerMinute := 40 * d / until.Minutes()
		return []Case{
			{
				Name: "fires when the queue is deep and adds outpace completions",
				// From incidentAt, 30 items/s are added and 20/s complete: the depth jumps above
				// the threshold at once; the adds rate passes the completions one sample later.
				Series: queue(
					Gauge("workqueue_depth", l.With("priority", "0"), d/4).Ramp(incidentAt, 2*d, d/10),
					Gauge("workqueue_depth", l.With("priority", "-100"), d/2),
					20, 20, 30),
				Fires: &Firing{At: incidentAt + sampleInterval, Labels: c.Instance(l), Value: func(t time.Duration) float64 {
					return d/2 + 2*d + d/10*float64(sampleIndex(incidentAt, t))
				}},
			},
			{
				Name: "stays silent while a deep queue drains",
				Series: queue(
					Gauge("workqueue_depth", l.With("priority", "0"), 50*d).Ramp(sampleInterval, 50*d, -drainPerMinute),
					Gauge("workqueue_depth", l.With("priority", "-100"), 0),
					10, 12.5, 10),
				Until: until,
			},
			{
				// With EnableWarmup, a standby replica fills its queue from its event sources and
				// never works it: its depth grows with every new object and its adds have no
				// completions. The leader keeps up.
				Name: "stays silent when only a warming standby replica's queue is deep and growing",
				Series: append(queue(
					Gauge("workqueue_depth", l.With("priority", "0"), 2),
					Gauge("workqueue_depth", l.With("priority", "-100"), 0),
					20, 20, 20),
					Gauge("workqueue_depth", standby.With("priority", "-100"), 3*d),
					Gauge("workqueue_depth", standby.With("priority", "0"), 0).Ramp(incidentAt, d, d/10),
					Counter("workqueue_adds_total", standby, 0).Rate(incidentAt, 3)),
				Until: until,
			},
			{
				Name: "stays silent while a growing queue is still shallow",
				Series: queue(
					Gauge("workqueue_depth", l.With("priority", "0"), 0).Ramp(sampleInterval, 0, d/2/until.Minutes()),
					Gauge("workqueue_depth", l.With("priority", "-100"), 0),
					12, 10, 12),
				Until: until,
			},
		}
	},
}
