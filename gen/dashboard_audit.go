package gen

// The audit dashboards: who writes what ("API writes & fights", from the audit exporter) and
// whether the audit pipeline itself is healthy ("audit exporter health").

func (b *builder) auditDashboard() Dashboard {
	ex := b.selector("exporter")
	ctl := b.selector("controller")
	cluster := clusterRef + `=~"$cluster"`
	actor := `actor=~"$actor"`
	writes := func(extra ...string) string {
		return rate(sel("loopwatch_audit_writes_total", append([]string{ex, cluster, actor}, extra...)...), "$__rate_interval")
	}
	object := []string{"resource", "subresource", "object_namespace", "object_name"}
	table := func(title, description, metric, value string, labels ...string) panelSpec {
		return panelSpec{title: title, description: description, kind: kindTable, value: value, width: 24, targets: []targetSpec{{
			expr:    sumByLabels(append(append([]string{}, object...), labels...), sel(metric, ex, cluster)),
			instant: true,
		}}}
	}
	vars := []variableSpec{
		{"cluster", "Cluster", sel("loopwatch_audit_writes_total", ex), clusterRef},
		{"actor", "Actor", sel("loopwatch_audit_writes_total", ex, cluster), "actor"},
		{"job", "Controller job", sel("rest_client_requests_total", ctl, cluster), "job"},
	}
	rows := []rowSpec{
		{title: "Writers", panels: []panelSpec{
			{title: "Top writers", unit: "ops",
				description: "Completed writes per second by actor (the top-K writers by name, the rest \"other\").",
				targets:     []targetSpec{{expr: "topk(10, " + sumByLabels([]string{"actor"}, writes()) + ")", legend: "{{actor}}"}}},
			{title: "Writes by verb and resource", unit: "ops",
				targets: []targetSpec{{expr: sumByLabels([]string{"verb", "resource"}, writes()), legend: "{{verb}} {{resource}}"}}},
			{title: "Failed writes by actor and code class", unit: "ops",
				targets: []targetSpec{{expr: sumByLabels([]string{"actor", "code_class"}, writes(`code_class!="2xx"`)), legend: "{{actor}} {{code_class}}"}}},
			{title: "Conflicts (409) by actor", unit: "ops",
				description: "Updates from stale reads, or two writers racing for the same objects.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"actor", "resource"}, rate(sel("loopwatch_audit_conflicts_total", ex, cluster, actor), "$__rate_interval")), legend: "{{actor}} {{resource}}"}}},
		}},
		{title: "Fights, hot objects and races", panels: []panelSpec{
			{title: "Handoff matrix", kind: kindTable, value: "handoffs", width: 24,
				description: "Writes to an object whose previous write was by another actor, over the dashboard's range. A pair that appears in both directions is a fight.",
				targets: []targetSpec{{
					expr:    sumByLabels([]string{"from_actor", "to_actor", "resource"}, "increase("+sel("loopwatch_audit_handoffs_total", ex, cluster)+"[$__range])"),
					instant: true,
				}}},
			table("Active fights", "Objects written alternately by two actors at least N times within the fight window, with the field manager each writes under and the mutating admission webhook that changed their writes, when one did.", "loopwatch_audit_fight_handoffs", "handoffs", "actor_a", "actor_b", "field_manager_a", "field_manager_b", "mutating_webhook"),
			table("Hot objects", "One actor rewriting one object faster than the threshold, with the field manager it writes under and the mutating admission webhook that changed its writes, when one did.", "loopwatch_audit_hot_object_writes_per_second", "writes per second", "actor", "field_manager", "mutating_webhook"),
			table("Replica races", "Objects written by several pods of one actor within the race window.", "loopwatch_audit_replica_race_pods", "pods", "actor"),
		}},
		{title: "A controller's own view next to the audit log", panels: []panelSpec{
			{title: "PATCH rate: client-go vs audit", unit: "ops",
				description: "The controller's own PATCH requests (rest_client_requests_total of $job) next to the patches the audit log attributes to each actor: the same rate under a service account confirms who is writing.",
				targets: []targetSpec{
					{expr: sumByLabels([]string{"job"}, rate(sel("rest_client_requests_total", ctl, cluster, `job=~"$job"`, `method="PATCH"`), "$__rate_interval")), legend: "{{job}} PATCH (client-go)"},
					{expr: sumByLabels([]string{"actor"}, writes(`verb="patch"`)), legend: "{{actor}} patch (audit)"},
				}},
			{title: "Initial lists (relists) by actor", unit: "ops",
				description: "Requests that load a whole collection: LISTs, and WATCHes with sendInitialEvents=true (WatchList, how client-go from 1.35 lists). An informer makes one when it starts and one per relist after its watch expires (410 Gone); a steady rate is a relist storm. Needs an audit policy that records list and watch.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"actor", "verb", "resource"}, rate(sel("loopwatch_audit_initial_lists_total", ex, cluster, actor), "$__rate_interval")), legend: "{{actor}} {{verb}} {{resource}}"}}},
			{title: "Lists and watches by actor", unit: "ops",
				description: "Every list and watch; informers renew each watch every 5 to 10 minutes. Needs an audit policy that records list and watch.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"actor", "verb", "resource"}, rate(sel("loopwatch_audit_reads_total", ex, cluster, actor), "$__rate_interval")), legend: "{{actor}} {{verb}} {{resource}}"}}},
		}},
	}
	return b.newDashboard("audit", "loopwatch / API writes & fights",
		"Every write in the API server's audit log, attributed to an actor by the loopwatch exporter: who writes what, who fights whom. Alerts: the loopwatch.audit rule group.",
		vars, rows)
}

func (b *builder) exporterDashboard() Dashboard {
	ex := b.selector("exporter")
	api := b.selector("apiserver")
	cluster := clusterRef + `=~"$cluster"`
	r := func(metric string, extra ...string) string {
		return rate(sel(metric, append([]string{ex, cluster}, extra...)...), "$__rate_interval")
	}
	vars := []variableSpec{{"cluster", "Cluster", sel("loopwatch_audit_batches_total", ex), clusterRef}}
	rows := []rowSpec{
		{title: "Intake", panels: []panelSpec{
			{title: "Webhook requests by outcome and reason", unit: "reqps",
				description: "Rejected requests are retried by the API server 4 more times, then their events are dropped. too_large and too_many_events: batches over the exporter's limits (turn on the API server's --audit-webhook-truncate-enabled with a max event size that keeps batches below them); slow_body: a sender cut off below the minimum transfer rate; overloaded: no room or slot within the queue wait.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"outcome", "reason"}, r("loopwatch_audit_requests_total")), legend: "{{outcome}} {{reason}}"}}},
			{title: "Events by outcome", unit: "ops",
				description: "duplicate: an event seen before (a retried batch); unattributable: no verb or user; ignored_stage: not the stage that completes a request.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"outcome"}, r("loopwatch_audit_events_total")), legend: "{{outcome}}"}}},
			{title: "Seconds since the last batch", unit: "s",
				targets: []targetSpec{{expr: "time() - " + aggregate("max", []string{"pod"}, sel("loopwatch_audit_last_batch_timestamp_seconds", ex, cluster)), legend: "{{pod}}"}}},
			{title: "Dropped events", unit: "ops",
				targets: []targetSpec{{expr: sumByLabels([]string{"reason"}, r("loopwatch_audit_dropped_events_total")), legend: "{{reason}}"}}},
			{title: "Batch size", unit: "bytes",
				description: "Webhook bodies received: the largest should stay well below the exporter's --max-body-bytes.",
				targets: []targetSpec{
					{expr: "histogram_quantile(0.5, " + sumByLabels([]string{"le"}, r("loopwatch_audit_request_bytes_bucket")) + ")", legend: "p50"},
					{expr: "histogram_quantile(0.99, " + sumByLabels([]string{"le"}, r("loopwatch_audit_request_bytes_bucket")) + ")", legend: "p99"},
				}},
			{title: "Refused scrapes of /metrics", unit: "reqps",
				description: "/metrics takes the webhook's or the scrape credentials: a Prometheus without them is refused here (and its target is down).",
				targets:     []targetSpec{{expr: sumByLabels([]string{"reason"}, r("loopwatch_audit_scrapes_refused_total")), legend: "{{reason}}"}}},
			{title: "Batch handling time", unit: "s",
				description: "decode: decoding and tracking a batch; request: the whole webhook request, receiving and decrypting the body included.",
				targets: []targetSpec{
					{expr: "histogram_quantile(0.5, " + sumByLabels([]string{"le"}, r("loopwatch_audit_decode_seconds_bucket")) + ")", legend: "decode p50"},
					{expr: "histogram_quantile(0.99, " + sumByLabels([]string{"le"}, r("loopwatch_audit_decode_seconds_bucket")) + ")", legend: "decode p99"},
					{expr: "histogram_quantile(0.99, " + sumByLabels([]string{"le"}, r("loopwatch_audit_request_seconds_bucket")) + ")", legend: "request p99"},
				}},
			{title: "API server audit errors", unit: "ops",
				description: "apiserver_audit_error_total: events the API server could not deliver (webhook) or buffer (buffered).",
				targets:     []targetSpec{{expr: sumByLabels([]string{"instance", "plugin"}, rate(sel("apiserver_audit_error_total", api, cluster), "$__rate_interval")), legend: "{{instance}} {{plugin}}"}}},
		}},
		{title: "Managed-cluster sources", panels: []panelSpec{
			{title: "Source deliveries by outcome and reason", unit: "reqps",
				description: "Deliveries from EKS (Firehose requests), GKE (Pub/Sub pushes) and AKS (Event Hub events). Firehose and Pub/Sub retry what is rejected; duplicate: a Firehose request ID or Pub/Sub message ID accepted before, acknowledged again and not counted twice.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"source", "outcome", "reason"}, r("loopwatch_audit_source_deliveries_total")), legend: "{{source}} {{outcome}} {{reason}}"}}},
			{title: "Source records by what became of them", unit: "ops",
				description: "decoded: an audit event; control_message: a CloudWatch Logs health check; not_audit: another log's record; unmappable: a GKE entry that cannot be mapped without guessing; truncated: cut by CloudWatch Logs at 256 KB; malformed; too_large.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"source", "reason"}, r("loopwatch_audit_source_records_total")), legend: "{{source}} {{reason}}"}}},
		}},
		{title: "Bounded state", panels: []panelSpec{
			{title: "Tracked objects and actors", unit: "short",
				targets: []targetSpec{
					{expr: sumByLabels([]string{"pod"}, sel("loopwatch_audit_tracked_objects", ex, cluster)), legend: "{{pod}} objects"},
					{expr: sumByLabels([]string{"pod"}, sel("loopwatch_audit_tracked_actors", ex, cluster)), legend: "{{pod}} actors"},
					{expr: sumByLabels([]string{"pod"}, sel("loopwatch_audit_labelled_actors", ex, cluster)), legend: "{{pod}} labelled actors"},
				}},
			{title: "Evictions by table", unit: "ops",
				description: "State evicted to stay within its bounds.",
				targets:     []targetSpec{{expr: sumByLabels([]string{"table"}, r("loopwatch_audit_evictions_total")), legend: "{{table}}"}}},
		}},
	}
	return b.newDashboard("exporter", "loopwatch / Audit exporter health",
		"The audit pipeline: requests the exporter accepts and rejects, events it counts, and the bounds of its state.",
		vars, rows)
}
