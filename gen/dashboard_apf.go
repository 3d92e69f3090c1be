package gen

// The APF dashboard: each named controller's load on the API server, from the API server's API
// Priority and Fairness metrics, per FlowSchema. It is a dashboard of its own rather than a row of
// the controller overview: its series come from the API server's scrape, not the controller's,
// carry none of the labels that overview filters by (namespace, job, controller), and it follows
// its own switch (groups.apf) for users whose Prometheus cannot scrape the API server.

func (b *builder) apfDashboard() Dashboard {
	api := b.selector("apiserver")
	cluster := clusterRef + `=~"$cluster"`
	level := `priority_level=~"$priority_level"`
	controllers := []string{ownFlowSchema, `flow_schema=~"$flow_schema"`, level}
	const dispatched = "apiserver_flowcontrol_dispatched_requests_total"
	const wait = "apiserver_flowcontrol_request_wait_duration_seconds"
	r := func(metric string, extra ...string) string {
		return rate(sel(metric, append([]string{api, cluster}, extra...)...), "$__rate_interval")
	}
	gauge := func(metric string) string { return sel(metric, append([]string{api, cluster}, controllers...)...) }
	byFlowSchema := []string{"flow_schema", "priority_level"}
	legend := "{{flow_schema}} ({{priority_level}})"
	bucket := b.p.G(APFQueueWaitHigh.mixinName("bucket"), b.cfg.Alerts[APFQueueWaitHigh.Key].Values["bucket"])
	waitQuantile := func(q, name string) targetSpec {
		return targetSpec{
			expr:   "histogram_quantile(" + q + ", " + sumByLabels(append(append([]string{}, byFlowSchema...), "le"), r(wait+"_bucket", controllers...)) + ")",
			legend: legend + " " + name,
		}
	}
	vars := []variableSpec{
		{"cluster", "Cluster", sel(dispatched, api), clusterRef},
		{"priority_level", "Priority level", sel(dispatched, api, cluster, ownFlowSchema), "priority_level"},
		{"flow_schema", "Controller (FlowSchema)", sel(dispatched, api, cluster, ownFlowSchema, level), "flow_schema"},
	}
	rows := []rowSpec{
		{title: "Requests", panels: []panelSpec{
			{title: "Requests by controller", unit: "reqps",
				description: "Requests per second the API server executed for each controller's FlowSchema (a WATCH counts once, when it starts).",
				targets:     []targetSpec{{expr: sumByLabels(byFlowSchema, r(dispatched, controllers...)), legend: legend}}},
			{title: "Share of the priority level", unit: "percentunit",
				description: "Each controller's share of the requests its priority level executed. The level's other FlowSchemas (service-accounts, kube-system-service-accounts, ...) compete for the same seats.",
				targets: []targetSpec{{
					expr: sumByLabels(byFlowSchema, r(dispatched, controllers...)) +
						"\n/ on (priority_level) group_left ()\n" +
						sumByLabels([]string{"priority_level"}, r(dispatched, level)),
					legend: legend,
				}}},
			{title: "Rejected requests by controller and reason", unit: "reqps",
				description: "Requests answered 429 Too Many Requests. queue-full: every queue the request could join was full; time-out: it waited too long in its queue; concurrency-limit: a priority level that rejects instead of queuing had no free seat.",
				targets:     []targetSpec{{expr: sumByLabels(append(append([]string{}, byFlowSchema...), "reason"), r("apiserver_flowcontrol_rejected_requests_total", controllers...)), legend: legend + " {{reason}}"}}},
			{title: "Requests executing by controller", unit: "short",
				description: "Requests of each controller running now (a WATCH only while it sends its initial events).",
				targets:     []targetSpec{{expr: sumByLabels(byFlowSchema, gauge("apiserver_flowcontrol_current_executing_requests")), legend: legend}}},
		}},
		{title: "Queueing", panels: []panelSpec{
			{title: "Requests that waited longer than the alert's bucket", unit: "percentunit",
				description: "Exact share of each controller's requests that waited more than " + bucket + "s in an API Priority and Fairness queue before they ran (a bucket bound: no interpolation).",
				targets: []targetSpec{{
					expr: "1 - " + paren(
						sumByLabels(byFlowSchema, r(wait+"_bucket", append([]string{leMatcher(bucket)}, controllers...)...))+
							"\n/\n"+
							sumByLabels(byFlowSchema, r(wait+"_count", controllers...))),
					legend: legend,
				}}},
			{title: "Queue wait quantiles", unit: "s",
				description: "Interpolated inside the histogram's buckets: read the share panel for exact counts.",
				targets:     []targetSpec{waitQuantile("0.5", "p50"), waitQuantile("0.99", "p99")}},
			{title: "Requests in queue by controller", unit: "short", width: 24,
				description: "Requests of each controller waiting for a seat now (none on a priority level that rejects instead of queuing).",
				targets:     []targetSpec{{expr: sumByLabels(byFlowSchema, gauge("apiserver_flowcontrol_current_inqueue_requests")), legend: legend}}},
		}},
	}
	return b.newDashboard("apf", "loopwatch / API server load per controller (APF)",
		"Each controller named in the generator's apf.controllers has its own API Priority and Fairness FlowSchema (loopwatch-<name>, on the priority level it had before): the API server's own metrics then say what each controller costs it, whether it waits for a seat and whether it is turned away, with no audit pipeline. Alerts: the loopwatch.apf rule group.",
		vars, rows)
}
