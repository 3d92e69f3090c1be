package gen

// Audit rules read the loopwatch audit exporter's metrics (exporter/metrics.go). The exporter
// attributes every write in the API server's audit log to an actor (the top-K writers by name,
// the rest "other") and exposes capped, expiring "top offender" gauges naming the object and the
// actors of each fight, hot object and replica race.

// Levels of the audit series. The exporter's own target labels (namespace, job, pod of the
// exporter) are dropped: several exporter replicas each see part of the API servers' batches.
var (
	levelActor       = level{"cluster_actor_group_resource", []string{clusterRef, "actor", "group", "resource"}}
	levelActorVerb   = level{"cluster_actor_verb_group_resource", []string{clusterRef, "actor", "verb", "group", "resource"}}
	levelHandoff     = level{"cluster_from_actor_to_actor_group_resource", []string{clusterRef, "from_actor", "to_actor", "group", "resource"}}
	levelAuditObject = level{"cluster_group_resource_object", []string{clusterRef, "group", "resource", "subresource", "object_namespace", "object_name"}}
	levelExporter    = levelJob
	levelAPIServer   = level{"cluster_job_instance", []string{clusterRef, "job", "instance"}}
)

var (
	recAuditWrites    = levelActorVerb.record("loopwatch_audit_writes_total", "rate5m")
	recAuditHandoffs  = levelHandoff.record("loopwatch_audit_handoffs_total", "rate5m")
	recAuditConflicts = levelActor.record("loopwatch_audit_conflicts_total", "rate5m")
	recAuditReads     = levelActorVerb.record("loopwatch_audit_reads_total", "rate5m")
)

func (b *builder) auditRecordingRules() []Rule {
	s := b.selector("exporter")
	return []Rule{
		record(recAuditWrites, sumBy(levelActorVerb, rate(sel("loopwatch_audit_writes_total", s), "5m"))),
		record(recAuditHandoffs, sumBy(levelHandoff, rate(sel("loopwatch_audit_handoffs_total", s), "5m"))),
		record(recAuditConflicts, sumBy(levelActor, rate(sel("loopwatch_audit_conflicts_total", s), "5m"))),
		record(recAuditReads, sumBy(levelActorVerb, rate(sel("loopwatch_audit_reads_total", s), "5m"))),
	}
}

const whereObject = "{{ $labels.resource }}{{ if $labels.group }}.{{ $labels.group }}{{ end }} {{ if $labels.object_namespace }}{{ $labels.object_namespace }}/{{ end }}{{ $labels.object_name }}{{ if $labels.subresource }} ({{ $labels.subresource }}){{ end }}"

func (b *builder) auditAlerts() []Rule {
	s := b.selector("exporter")
	a := b.cfg.Alerts
	var rules []Rule
	add := func(r []Rule) { rules = append(rules, r...) }

	add(b.alert("writeFight", "WriteFight", a.WriteFight.Common,
		maxBy(levelAuditObject.with("actor_a", "actor_b"), sel("loopwatch_audit_fight_handoffs", s))+" >= "+b.p.G("writeFightThreshold", a.WriteFight.Threshold),
		"Two actors keep overwriting each other's writes to one object.",
		"{{ $labels.actor_a }} and {{ $labels.actor_b }} took turns writing "+whereObject+" ({{ $value }} handoffs in the exporter's fight window). Each undoes the other (seed 004: two controllers fighting over a ServiceAccount's annotations). Find which field both set: kubectl get --show-managed-fields, and the writes-by-actor panel."))

	add(b.alert("hotObject", "HotObject", a.HotObject.Common,
		maxBy(levelAuditObject.with("actor"), sel("loopwatch_audit_hot_object_writes_per_second", s))+" > "+b.p.G("hotObjectThreshold", a.HotObject.Threshold),
		"One actor rewrites one object at a high rate.",
		"{{ $labels.actor }} writes "+whereObject+" {{ $value | printf \"%.2f\" }} times per second. A controller that writes on every reconcile (a timestamp, a status that always changes) re-triggers itself (seed 002)."))

	add(b.alert("replicaRace", "ReplicaRace", a.ReplicaRace.Common,
		maxBy(levelAuditObject.with("actor"), sel("loopwatch_audit_replica_race_pods", s))+" >= "+b.p.G("replicaRaceThreshold", a.ReplicaRace.Threshold),
		"Several replicas of one controller write the same object.",
		"{{ $value }} pods of {{ $labels.actor }} wrote "+whereObject+" within the race window: the replicas reconcile the same objects at once. Check that leader election is on and that they share one lease (seed 000)."))

	add(b.alert("conflictStorm", "ConflictStorm", a.ConflictStorm.Common,
		recAuditConflicts+" > "+b.p.G("conflictStormThreshold", a.ConflictStorm.Threshold),
		"An actor's writes are rejected with 409 Conflict at a high rate.",
		"{{ $labels.actor }} gets {{ $value | printf \"%.2f\" }} conflicts per second writing {{ $labels.resource }}{{ if $labels.group }}.{{ $labels.group }}{{ end }}: it updates from stale reads, or races another writer (another replica, another controller) for the same objects."))

	add(b.alert("relistStorm", "RelistStorm", a.RelistStorm.Common,
		sumBy(levelActor, recAuditReads+`{verb="list"}`)+" > "+b.p.G("relistStormThreshold", a.RelistStorm.Threshold),
		"An actor lists a resource at a high rate.",
		"{{ $labels.actor }} lists {{ $labels.resource }}{{ if $labels.group }}.{{ $labels.group }}{{ end }} {{ $value | printf \"%.2f\" }} times per second. Informers relisting after 410 Gone, restarts in a loop, or a client listing per reconcile load the API server (seed 004). Needs an audit policy that records list at Metadata level."))

	notReceiving := lines(
		sumBy(levelExporter, rate(sel("loopwatch_audit_batches_total", s), "10m"))+" == 0",
		"or",
		maxBy(levelExporter, sel("up", s))+" == 0")
	add(b.alert("exporterNotReceiving", "AuditExporterNotReceiving", a.ExporterNotReceiving,
		notReceiving,
		"The audit exporter receives no audit events.",
		"The loopwatch exporter {{ $labels.namespace }}/{{ $labels.job }} received no audit batch for 10 minutes, or is down: fights, hot objects and races go unseen. Check the API server's --audit-webhook-config-file, the webhook's client certificate, and apiserver_audit_error_total."))

	threshold := b.p.G("exporterDroppingThreshold", a.ExporterDropping.Threshold)
	dropping := lines(
		sumBy(levelExporter, rate(sel("loopwatch_audit_requests_total", s, `outcome="rejected"`), "5m"))+" > "+threshold,
		"or",
		sumBy(levelExporter, rate(sel("loopwatch_audit_dropped_events_total", s), "5m"))+" > "+threshold)
	add(b.alert("exporterDropping", "AuditExporterDropping", a.ExporterDropping.Common,
		dropping,
		"The audit exporter rejects or drops audit data.",
		"The loopwatch exporter {{ $labels.namespace }}/{{ $labels.job }} rejects webhook requests or drops events ({{ $value | printf \"%.2f\" }}/s): see loopwatch_audit_requests_total by reason. The API server retries a rejected batch 4 times, then drops it."))

	add(b.alert("auditWebhookErrors", "AuditWebhookErrors", a.AuditWebhookErrors.Common,
		sumBy(levelAPIServer, rate(sel("apiserver_audit_error_total", b.selector("apiserver"), `plugin=~"webhook|buffered"`), "5m"))+" > "+b.p.G("auditWebhookErrorsThreshold", a.AuditWebhookErrors.Threshold),
		"The API server fails to deliver audit events.",
		"kube-apiserver {{ $labels.instance }} drops {{ $value | printf \"%.2f\" }} audit events per second (webhook delivery failed after its retries, or its buffer was full). The audit exporter's view, and any audit trail fed by the webhook, has gaps."))
	return rules
}
