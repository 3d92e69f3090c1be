package catalogue

// The audit exporter's families (package exporter). Label values (outcomes, reasons, tables) are
// the exporter's and live there.

// auditBatchBuckets are the bounds of the per-batch latency histograms, in seconds: a 400-event
// batch takes a fraction of a millisecond.
var auditBatchBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1}

// Per-actor request counters. An actor is a top-K label or "other", so their cardinality is bounded.
var (
	AuditWritesTotal = Metric{
		Name: "loopwatch_audit_writes_total", Type: Counter, Source: SourceExporter,
		Help:   "Completed write requests (create, update, patch, delete, deletecollection) by actor (top-K or \"other\"), verb, API group, resource and response code class.",
		Labels: []string{LabelActor, LabelVerb, LabelGroup, LabelResource, "code_class"},
	}
	AuditConflictsTotal = Metric{
		Name: "loopwatch_audit_conflicts_total", Type: Counter, Source: SourceExporter,
		Help:   "Writes other than creates answered 409 (optimistic-concurrency conflicts), by actor, API group and resource.",
		Labels: []string{LabelActor, LabelGroup, LabelResource},
	}
	AuditHandoffsTotal = Metric{
		Name: "loopwatch_audit_handoffs_total", Type: Counter, Source: SourceExporter,
		Help:   "Successful writes to an object whose previous successful write was by another actor, by previous actor (from_actor), writing actor (to_actor), API group and resource. Reciprocal series (A->B and B->A both rising) are a fight.",
		Labels: []string{"from_actor", "to_actor", LabelGroup, LabelResource},
	}
	AuditReadsTotal = Metric{
		Name: "loopwatch_audit_reads_total", Type: Counter, Source: SourceExporter,
		Help:   "Completed list and watch requests by actor, verb, API group and resource (only when the audit policy records reads).",
		Labels: []string{LabelActor, LabelVerb, LabelGroup, LabelResource},
	}
	AuditInitialListsTotal = Metric{
		Name: "loopwatch_audit_initial_lists_total", Type: Counter, Source: SourceExporter,
		Help:   "Completed requests that load a whole collection from scratch, an informer's initial list or relist, by actor, verb, API group and resource: LISTs (verb=\"list\") and WATCHes with sendInitialEvents=true (verb=\"watch\"; WatchList, how client-go from 1.35 lists). Ordinary watches are not counted. Only when the audit policy records reads.",
		Labels: []string{LabelActor, LabelVerb, LabelGroup, LabelResource},
	}
)

// Top-offender gauges, exposed at scrape time from capped tables whose entries expire: a series
// exists only while its object misbehaves. The object is named by object_namespace and
// object_name (see LabelObjectNamespace); each actor by its name and what ties it to a workload:
// its namespace, service account and pod (see LabelActorPod). These add no series: they are
// functions of the actor and its latest write.
var (
	// actorWorkload are the labels that tie one actor to its workload.
	actorWorkload = []string{LabelActorNamespace, LabelActorServiceAccount, LabelActorPod}

	AuditFightHandoffs = Metric{
		Name: "loopwatch_audit_fight_handoffs", Type: Gauge, Source: SourceExporter,
		Help: "Handoffs in an ongoing write fight: one object written alternately by two actors at least N times within the fight window, with the field manager each writes under, each actor's namespace, service account and pod (of its latest write), and the mutating admission webhook that changed their writes (if one did). Capped set, expires after the offender TTL.",
		Labels: append(append([]string{LabelGroup, LabelResource, LabelSubresource, LabelObjectNamespace, LabelObjectName, "actor_a", "actor_b", LabelFieldManager + "_a", LabelFieldManager + "_b", LabelMutatingWebhook},
			Suffixed(actorWorkload, "_a")...), Suffixed(actorWorkload, "_b")...),
	}
	AuditHotObjectWritesPerSecond = Metric{
		Name: "loopwatch_audit_hot_object_writes_per_second", Type: Gauge, Source: SourceExporter,
		Help:   "Write rate of a hot object: one actor rewriting one object faster than the threshold, with the field manager it writes under, the actor's namespace, service account and pod (of its latest write), and the mutating admission webhook that changed its writes (if one did). Capped set, expires after the offender TTL.",
		Labels: append([]string{LabelGroup, LabelResource, LabelSubresource, LabelObjectNamespace, LabelObjectName, LabelActor, LabelFieldManager, LabelMutatingWebhook}, actorWorkload...),
	}
	AuditReplicaRacePods = Metric{
		Name: "loopwatch_audit_replica_race_pods", Type: Gauge, Source: SourceExporter,
		Help:   "Pods of one actor seen writing one object within the race window (replicas racing without leader election), with the actor's namespace, service account and the pod of its latest write to the object. Capped set, expires after the offender TTL.",
		Labels: append([]string{LabelGroup, LabelResource, LabelSubresource, LabelObjectNamespace, LabelObjectName, LabelActor}, actorWorkload...),
	}
)

// The exporter's health: what it received, refused and dropped, how long it took, how full its
// bounded tables are.
var (
	AuditRequestsTotal = Metric{
		Name: "loopwatch_audit_requests_total", Type: Counter, Source: SourceExporter,
		Help:   "Webhook requests by outcome (accepted, rejected) and reason (ok; unauthenticated, forbidden, method_not_allowed, unsupported_media_type, too_large, too_many_events, malformed, not_event_list, overloaded, slow_body, shutting_down, plain_http, too_many_connections). The API server retries a rejected batch, then drops it.",
		Labels: []string{"outcome", "reason"},
	}
	AuditScrapesRefusedTotal = Metric{
		Name: "loopwatch_audit_scrapes_refused_total", Type: Counter, Source: SourceExporter,
		Help:   "Requests for /metrics refused, by reason (unauthenticated: no credentials, forbidden: wrong ones).",
		Labels: []string{"reason"},
	}
	AuditBatchesTotal = Metric{
		Name: "loopwatch_audit_batches_total", Type: Counter, Source: SourceExporter,
		Help: "Event batches decoded and tracked (webhook requests and file ingest chunks).",
	}
	AuditEventsTotal = Metric{
		Name: "loopwatch_audit_events_total", Type: Counter, Source: SourceExporter,
		Help:   "Audit events received, by outcome: counted, ignored_stage (not ResponseComplete or Panic), unattributable (no verb or no user: nothing to count them for) or duplicate (the same event seen before: a retried batch).",
		Labels: []string{"outcome"},
	}
	AuditDroppedEventsTotal = Metric{
		Name: "loopwatch_audit_dropped_events_total", Type: Counter, Source: SourceExporter,
		Help:   "Lines dropped by file or stdin ingest, by reason (malformed, line_too_long, not_audit_event).",
		Labels: []string{"reason"},
	}
	AuditDecodeSeconds = Metric{
		Name: "loopwatch_audit_decode_seconds", Type: Histogram, Source: SourceExporter,
		Help:    "Time to decode and attribute one batch.",
		Buckets: auditBatchBuckets,
	}
	AuditRequestSeconds = Metric{
		Name: "loopwatch_audit_request_seconds", Type: Histogram, Source: SourceExporter,
		Help:    "Time to handle one webhook request whose body is read: receiving and decrypting the body, decoding, tracking and answering.",
		Buckets: auditBatchBuckets,
	}
	AuditRequestBytes = Metric{
		Name: "loopwatch_audit_request_bytes", Type: Histogram, Source: SourceExporter,
		Help:    "Size of the webhook request bodies received, in bytes: how close the API server's batches come to the exporter's --max-body-bytes.",
		Buckets: []float64{16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20},
	}
	AuditLastBatchTimestampSeconds = Metric{
		Name: "loopwatch_audit_last_batch_timestamp_seconds", Type: Gauge, Source: SourceExporter,
		Help: "Unix time of the last batch accepted; a stale value means the API server stopped sending.",
	}
	AuditTrackedObjects = Metric{
		Name: "loopwatch_audit_tracked_objects", Type: Gauge, Source: SourceExporter,
		Help: "Objects with per-object state (bounded by --max-objects).",
	}
	AuditTrackedActors = Metric{
		Name: "loopwatch_audit_tracked_actors", Type: Gauge, Source: SourceExporter,
		Help: "Actors counted for top-K ranking (bounded by the candidate table).",
	}
	AuditLabelledActors = Metric{
		Name: "loopwatch_audit_labelled_actors", Type: Gauge, Source: SourceExporter,
		Help: "Actors that currently have their own label value (at most top-K).",
	}
	AuditEvictionsTotal = Metric{
		Name: "loopwatch_audit_evictions_total", Type: Counter, Source: SourceExporter,
		Help:   "State evicted to stay within bounds, by table: objects (per-object state), offenders (top-offender entries), actor_labels (labels handed to a more active actor).",
		Labels: []string{"table"},
	}
)

// Suffixed returns names each with suffix appended: the labels of one side of a pair (_a, _b).
func Suffixed(names []string, suffix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + suffix
	}
	return out
}

var exporterMetrics = []Metric{
	AuditWritesTotal, AuditConflictsTotal, AuditHandoffsTotal, AuditReadsTotal, AuditInitialListsTotal,
	AuditFightHandoffs, AuditHotObjectWritesPerSecond, AuditReplicaRacePods,
	AuditRequestsTotal, AuditScrapesRefusedTotal, AuditBatchesTotal, AuditEventsTotal, AuditDroppedEventsTotal,
	AuditDecodeSeconds, AuditRequestSeconds, AuditRequestBytes, AuditLastBatchTimestampSeconds,
	AuditTrackedObjects, AuditTrackedActors, AuditLabelledActors, AuditEvictionsTotal,
}
