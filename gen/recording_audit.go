package gen

import "time"

// Audit rules read the loopwatch audit exporter's metrics. The exporter attributes every write
// in the API server's audit log to an actor (the top-K writers by name, the rest "other") and
// exposes capped, expiring "top offender" gauges naming the object and the actors of each fight,
// hot object and replica race.

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

// auditRateRecording records the 5m rate of one exporter counter at level lv.
func auditRateRecording(lv level, metric string, cases func(c *caseEnv) []ExprCase) *Recording {
	return &Recording{
		Name:  lv.record(metric, "rate5m"),
		Expr:  func(e *exprEnv) string { return sumBy(lv, rate(sel(metric, e.Selector("exporter")), "5m")) },
		Cases: cases,
	}
}

// auditCase checks an audit rate rule: two exporter replicas each see part of the batches, and
// the rule adds them up.
func auditCase(metric string, lv level, l Labels) func(c *caseEnv) []ExprCase {
	return func(c *caseEnv) []ExprCase {
		one := c.Target("exporter").With(flat(l)...)
		two := one.With("pod", one["pod"]+"-b", "instance", "10.244.3.9:8443")
		return []ExprCase{{
			Name:   "records the rate over the exporter replicas",
			At:     10 * time.Minute,
			Series: []*Series{Counter(metric, one, 1.5), Counter(metric, two, 0.5)},
			Want:   []Sample{{c.AtLevel(lv, one), 2}},
		}}
	}
}

var (
	recAuditWrites = auditRateRecording(levelActorVerb, "loopwatch_audit_writes_total",
		auditCase("loopwatch_audit_writes_total", levelActorVerb, Labels{"actor": "system:serviceaccount:backup-system:backup-operator", "verb": "patch", "group": "backup.loopwatch.dev", "resource": "backups", "code_class": "2xx"}))
	recAuditHandoffs = auditRateRecording(levelHandoff, "loopwatch_audit_handoffs_total",
		auditCase("loopwatch_audit_handoffs_total", levelHandoff, Labels{"from_actor": "system:serviceaccount:kube-system:tier-controller", "to_actor": "system:serviceaccount:backup-system:backup-operator", "group": "", "resource": "serviceaccounts"}))
	recAuditConflicts = auditRateRecording(levelActor, "loopwatch_audit_conflicts_total",
		auditCase("loopwatch_audit_conflicts_total", levelActor, Labels{"actor": "system:serviceaccount:backup-system:backup-operator", "group": "backup.loopwatch.dev", "resource": "backups"}))
	recAuditReads = auditRateRecording(levelActorVerb, "loopwatch_audit_reads_total",
		auditCase("loopwatch_audit_reads_total", levelActorVerb, Labels{"actor": "system:serviceaccount:backup-system:backup-operator", "verb": "list", "group": "backup.loopwatch.dev", "resource": "backups"}))
	recAuditInitialLists = auditRateRecording(levelActorVerb, "loopwatch_audit_initial_lists_total",
		auditCase("loopwatch_audit_initial_lists_total", levelActorVerb, Labels{"actor": "system:serviceaccount:backup-system:backup-operator", "verb": "watch", "group": "backup.loopwatch.dev", "resource": "backups"}))
)

// flat returns l as name, value, name, value, ... sorted by name, for Labels.With.
func flat(l Labels) []string {
	var out []string
	for _, k := range sortedKeys(l) {
		out = append(out, k, l[k])
	}
	return out
}
