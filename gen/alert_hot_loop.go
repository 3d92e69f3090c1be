package gen

import "time"

// HotLoop fires when a controller reconciles often, its reconciles finish much faster than usual
// (or absurdly fast), and it writes: a write that triggers its own watch event, such as a
// timestamp annotation, re-queues the object forever. All three are needed: a busy healthy
// controller writes too, but does real work per reconcile.
var HotLoop = &Alert{
	Key: "hotLoop", Name: "HotLoop",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "reconcilesPerSecond", Default: 1, Check: positive,
			Doc: "Reconcile rate of a controller above which it may be hot-looping."},
		{Key: "writesPerSecond", Default: 1, Check: positive,
			Doc: "Write rate above which the loop is costly: the controller's own writes where it is instrumented, its process's POST, PUT, PATCH and DELETE otherwise."},
		{Key: "fastSeconds", Default: 0.01, Check: positive,
			Doc: "A mean reconcile time under this many seconds is too fast to be doing work."},
		{Key: "fasterThanUsual", Default: 10, Check: greaterThanOne,
			Doc: "A mean reconcile time this many times lower than the controller's own average of the last day is also too fast."},
	},
	Level: levelController,
	Expr: func(e *exprEnv) string {
		// Writes of the controller itself where it is instrumented (loopwatch's instrument
		// package); otherwise the writes of its whole process, spread to each of its controllers.
		jobWrites := sumBy(levelJob, recClientRequests.Name+`{method=~"POST|PUT|PATCH|DELETE"}`)
		writes := lines(
			"(",
			"  "+sumBy(levelController, recAPIRequests.Name+`{access="write"}`),
			"  or",
			"  (",
			"    "+sumBy(levelController, recReconcileByResult.Name)+" * 0",
			"    + on ("+levelJob.by()+") group_left ()",
			"    "+jobWrites,
			"    unless on ("+levelJob.by()+")",
			"    "+recAPIRequests.Name,
			"  )",
			")")
		mean := recReconcileMean.Name
		return lines(
			sumBy(levelController, recReconcileByResult.Name)+" > "+e.P("reconcilesPerSecond"),
			"and on ("+levelController.by()+")",
			"(",
			"  "+mean+" < "+e.P("fastSeconds"),
			"  or",
			"  "+mean+" < avg_over_time("+mean+"[1d]) / "+e.P("fasterThanUsual"),
			")",
			"and on ("+levelController.by()+")",
			writes+" > "+e.P("writesPerSecond"))
	},
	Summary:     "A controller looks stuck in a reconcile hot loop.",
	Description: "The " + whereController + " reconciles {{ $value | printf \"%.2f\" }} times per second, each much faster than usual, while its process keeps writing. A write that triggers its own watch event (an annotation with a timestamp, a status that always changes) re-queues the object forever.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases: func(c *caseEnv) []Case {
		rps, wps, fast := c.P("reconcilesPerSecond"), c.P("writesPerSecond"), c.P("fastSeconds")
		l := c.Controller().With("name", "")
		client := c.Target("controller").With("host", "10.96.0.1:443")
		// A controller that reconciles and patches at rate r, each reconcile taking seconds.
		run := func(r0, r1, w0, w1, seconds float64) []*Series {
			return []*Series{
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), r0).Rate(incidentAt, r1),
				Counter("controller_runtime_reconcile_time_seconds_sum", l, r0*seconds).Rate(incidentAt, r1*seconds),
				Counter("controller_runtime_reconcile_time_seconds_count", l, r0).Rate(incidentAt, r1),
				Counter("rest_client_requests_total", client.With("method", "PATCH", "code", "200"), w0).Rate(incidentAt, w1),
			}
		}
		r1, w1 := rps*above+0.1, wps*above+0.1
		reconciles := stepRate(0.1, r1, 5*time.Minute)
		writes := stepRate(0.1, w1, 5*time.Minute)
		at := max(c.crossing(incidentAt, incidentAt+10*time.Minute, rps, reconciles),
			c.crossing(incidentAt, incidentAt+10*time.Minute, wps, writes))
		return []Case{
			{
				Name:   "fires when an uninstrumented controller reconciles fast and often while its process writes",
				Series: run(0.1, r1, 0.1, w1, fast/2),
				Fires:  &Firing{At: at, Labels: c.Instance(l), Value: reconciles},
			},
			{
				Name:   "stays silent on a busy controller whose reconciles do real work",
				Series: run(0.1, r1, 0.1, w1, fast*20),
			},
			{
				Name:   "stays silent on fast reconciles that write nothing",
				Series: run(0.1, r1, 0, 0, fast/2),
			},
		}
	},
}
