package gen

import "time"

// The APF alerts read the API server's API Priority and Fairness metrics for the FlowSchemas
// loopwatch generates, one per controller named in apf.controllers: what each controller costs
// the API server, and whether the API server makes it wait or turns it away. Since v0.21
// controller-runtime's config getters turn client-go's client-side rate limiter off (QPS -1,
// kubernetes-sigs/controller-runtime#3119: "rely on API priority and fairness instead"), so APF
// is the only limit most controllers meet.

// whereFlowSchema names the controller of an APF alert instance.
const whereFlowSchema = "the controller of FlowSchema {{ $labels.flow_schema }} (priority level {{ $labels.priority_level }})"

// ownRecorded selects a recorded APF series of loopwatch's own FlowSchemas.
func ownRecorded(r *Recording, matchers ...string) string {
	return sel(r.Name, append([]string{ownFlowSchema}, matchers...)...)
}

// APFRequestsRejected fires when API Priority and Fairness rejects (HTTP 429) a share of a
// controller's requests: its priority level is saturated and its queues are full, or its
// requests time out waiting. client-go retries 429s, so the controller slows down rather than
// fails, and every retry is load again.
var APFRequestsRejected = &Alert{
	Key: "apfRejected", Name: "APFRequestsRejected",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "share", Default: 0.01, Check: ratio,
			Doc: "Share of a controller's requests rejected by API Priority and Fairness (HTTP 429) above which the alert fires."},
	},
	Level: levelFlowSchema,
	Expr: func(e *exprEnv) string {
		rejected := sumBy(levelFlowSchema, ownRecorded(recAPFRejected))
		// A controller whose every request is rejected has no dispatched series: the `or`
		// keeps it, at a share of 1.
		return lines(
			rejected,
			"/",
			"(",
			"  "+rejected,
			"  + "+ownRecorded(recAPFDispatched),
			"  or",
			"  "+rejected,
			")",
			"> "+e.P("share"))
	},
	Summary:     "The API server rejects a controller's requests.",
	Description: "API Priority and Fairness rejects {{ $value | humanizePercentage }} of the requests of " + whereFlowSchema + " with 429 Too Many Requests: the priority level's seats are busy and the controller's queues are full, or its requests time out in them. The controller slows down and retries.",
	NextStep:    "The controller of FlowSchema <flow_schema> is throttled: find what it sends (its API calls per reconcile, relists, writes that re-trigger it) before giving priority level <priority_level> more seats.",
	Panel:       PanelRef{"apf", "Rejected requests by controller and reason"},
	Cases: func(c *caseEnv) []Case {
		share := c.P("share")
		own := apiserverFlowSchema(c, testOwnFlowSchema, "workload-low")
		const dispatched = 10.0
		// The share of rejected requests steps from 0 to between the threshold and 1.
		shareAfter := share + (1-share)/above
		after := dispatched * shareAfter / (1 - shareAfter)
		value := func(t time.Duration) float64 {
			r := rampRate(0, after, incidentAt, t, 5*time.Minute)
			return r / (r + dispatched)
		}
		rejected := func(l Labels, perSecond float64) *Series {
			return Counter("apiserver_flowcontrol_rejected_requests_total", l.With("reason", "queue-full"), perSecond)
		}
		shared := apiserverFlowSchema(c, testSharedFlowSchema, "workload-low")
		return []Case{
			{
				Name: "fires when a share of the controller's requests is rejected",
				Series: []*Series{
					Counter("apiserver_flowcontrol_dispatched_requests_total", own, dispatched),
					rejected(own, 0).Rate(incidentAt, after),
				},
				Fires: &Firing{At: c.crossing(incidentAt, incidentAt+10*time.Minute, share, value), Labels: c.Instance(own), Value: value},
			},
			{
				Name:   "fires when every request of a controller is rejected",
				Series: []*Series{rejected(own, 1).From(incidentAt)},
				// A rate needs two samples.
				Fires: &Firing{At: incidentAt + sampleInterval, Labels: c.Instance(own), Value: Constant(1)},
			},
			{
				Name: "stays silent when fewer requests than the share are rejected",
				Series: []*Series{
					Counter("apiserver_flowcontrol_dispatched_requests_total", own, dispatched),
					rejected(own, dispatched*share/2),
				},
			},
			{
				Name: "stays silent on rejections of a FlowSchema loopwatch does not generate",
				Series: []*Series{
					Counter("apiserver_flowcontrol_dispatched_requests_total", shared, dispatched),
					rejected(shared, dispatched),
				},
			},
		}
	},
}

// APFQueueWaitHigh fires when a share of a controller's requests waited longer than a bucket
// bound in API Priority and Fairness queues before they ran: its priority level has no free seat
// for a while. The share above a bucket bound is a count, not an interpolation.
var APFQueueWaitHigh = &Alert{
	Key: "apfQueueWait", Name: "APFQueueWaitHigh",
	Severity: SeverityWarning, For: 10 * time.Minute,
	Params: []Param{
		// 0 is a bound too, but every request waits more than 0s: it would always fire.
		{Key: "bucket", Default: 1, Check: bucketOf("apiserver_flowcontrol_request_wait_duration_seconds", apfWaitBuckets[1:]),
			Doc: "Queue wait in seconds: a bucket bound of the histogram, so the share above it is a count, not an interpolation."},
		{Key: "share", Default: 0.1, Check: ratio,
			Doc: "Share of a controller's requests that waited longer than the bucket above which the alert fires."},
	},
	Level: levelFlowSchema,
	Expr: func(e *exprEnv) string {
		return "1 - " + paren(lines(
			"",
			"  "+sumBy(levelFlowSchema, ownRecorded(recAPFWaitBuckets, leMatcher(e.P("bucket")))),
			"  /",
			"  "+sumBy(levelFlowSchema, ownRecorded(recAPFWaitBuckets, `le="+Inf"`)),
			"")) + " > " + e.P("share")
	},
	Summary:     "A controller's requests wait long in the API server's queues.",
	Description: "{{ $value | humanizePercentage }} of the requests of " + whereFlowSchema + " waited more than ⟦@bucket:g⟧s in API Priority and Fairness queues: every seat of the priority level is busy.",
	NextStep:    "Every seat of priority level <priority_level> is busy: see which FlowSchemas fill it (apiserver_flowcontrol_dispatched_requests_total by flow_schema) and what makes <flow_schema> send more than usual.",
	Panel:       PanelRef{"apf", "Requests that waited longer than the alert's bucket"},
	Cases: func(c *caseEnv) []Case {
		share := c.P("share")
		own := apiserverFlowSchema(c, testOwnFlowSchema, "workload-low").With("execute", "true")
		shared := apiserverFlowSchema(c, testSharedFlowSchema, "workload-low").With("execute", "true")
		before, after, fires := c.shareFiring(share, c.Instance(own))
		const metric = "apiserver_flowcontrol_request_wait_duration_seconds"
		return []Case{
			{
				Name:   "fires when more requests than the share wait longer than the bucket",
				Series: histogram(metric, own, apfWaitBuckets, 10, before, after, incidentAt),
				Fires:  fires,
			},
			{
				Name:   "stays silent when fewer requests than the share wait longer",
				Series: histogram(metric, own, apfWaitBuckets, 10, before, share/2, incidentAt),
			},
			{
				Name: "stays silent when the requests of a FlowSchema loopwatch does not generate wait",
				Series: append(histogram(metric, shared, apfWaitBuckets, 10, before, after, incidentAt),
					histogram(metric, own, apfWaitBuckets, 10, 0, 0, incidentAt)...),
			},
		}
	},
}

// APFRequestRateHigh fires when a controller keeps the API server busy with more requests per
// second than a threshold: an N+1 pattern (a read per object per reconcile), a hot loop, or a
// relist storm, seen from the server without instrumenting the controller.
var APFRequestRateHigh = &Alert{
	Key: "apfRequestRate", Name: "APFRequestRateHigh",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 20, Check: positive,
			Doc: "Requests per second of one controller, executed by the API server, above which the alert fires. A controller that reads from its informers' cache sends few requests at steady state."},
	},
	Level: levelFlowSchema,
	Expr: func(e *exprEnv) string {
		return ownRecorded(recAPFDispatched) + " > " + e.P("threshold")
	},
	Summary:     "A controller sends many requests to the API server.",
	Description: "The API server executes {{ $value | printf \"%.1f\" }} requests per second for " + whereFlowSchema + ". A controller reading from its cache sends few.",
	NextStep:    "The controller of FlowSchema <flow_schema> sends many requests: read from its cache, look objects up by field index, and stop writes that re-trigger its reconciles.",
	Panel:       PanelRef{"apf", "Requests by controller"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		own := apiserverFlowSchema(c, testOwnFlowSchema, "workload-low")
		shared := apiserverFlowSchema(c, testSharedFlowSchema, "workload-low")
		after, fires := c.rateFiring(th/20, th, 5*time.Minute, c.Instance(own))
		return []Case{
			{
				Name:   "fires when a controller's request rate goes above the threshold",
				Series: []*Series{Counter("apiserver_flowcontrol_dispatched_requests_total", own, th/20).Rate(incidentAt, after)},
				Fires:  fires,
			},
			{
				Name: "stays silent under the threshold, whatever the default FlowSchemas carry",
				Series: []*Series{
					Counter("apiserver_flowcontrol_dispatched_requests_total", own, th/2),
					Counter("apiserver_flowcontrol_dispatched_requests_total", shared, 10*th),
				},
			},
		}
	},
}
