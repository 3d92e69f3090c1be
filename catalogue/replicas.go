package catalogue

// The audit exporter's replicas (package exporter, replicate.go): one replica leads (it holds a
// Kubernetes Lease) and counts; the others stand by, in step with it, and take over.

var (
	AuditReplicaLeader = Metric{
		Name: "loopwatch_audit_replica_leader", Type: Gauge, Source: SourceExporter,
		Help: "1 on the exporter replica that holds the lease and counts the audit batches, 0 on a standby (only with --leader-elect).",
	}
	AuditReplicaStandbys = Metric{
		Name: "loopwatch_audit_replica_standbys", Type: Gauge, Source: SourceExporter,
		Help: "Standby replicas in step with this leader: each has applied every batch the leader answered, and could take over without losing one.",
	}
	AuditReplicaStandbyDropsTotal = Metric{
		Name: "loopwatch_audit_replica_standby_drops_total", Type: Counter, Source: SourceExporter,
		Help:   "Standby streams this leader ended, by reason: ack_timeout (a standby did not apply a batch within --replica-ack-timeout), queue_full (it fell too far behind), closed (it went away), leader_stopped (this leader stepped down). A dropped standby joins again.",
		Labels: []string{"reason"},
	}
	AuditReplicaTakeoversTotal = Metric{
		Name: "loopwatch_audit_replica_takeovers_total", Type: Counter, Source: SourceExporter,
		Help:   "Times this replica became the leader, by what became of the previous leader's increments that Prometheus had not scraped: adopted (counted here: the previous leader died or stepped down while this replica followed it), discarded (none to adopt: first leader, or this replica was not following the previous one).",
		Labels: []string{"unscraped"},
	}
	AuditReplicaForwardedTotal = Metric{
		Name: "loopwatch_audit_replica_forwarded_total", Type: Counter, Source: SourceExporter,
		Help:   "Webhook batches a standby received and forwarded to the leader, by outcome: ok (the leader took it), refused (the leader answered an error, passed on to the API server), no_leader (no leader to forward to: answered 503, the API server retries).",
		Labels: []string{"outcome"},
	}
)

var replicaMetrics = []Metric{AuditReplicaLeader, AuditReplicaStandbys, AuditReplicaStandbyDropsTotal, AuditReplicaTakeoversTotal, AuditReplicaForwardedTotal}
