package catalogue

// The managed-cluster sources of the audit exporter (package exporter/managed): EKS through
// Amazon Data Firehose, GKE through Pub/Sub push, AKS through an Event Hub's Kafka endpoint.
// Their events then go through the same pipeline as the webhook's (loopwatch_audit_events_total
// and the per-actor families).

// LabelSource names a managed-cluster source: eks_firehose, gke_pubsub or aks_eventhub.
const LabelSource = "source"

var (
	AuditSourceDeliveriesTotal = Metric{
		Name: "loopwatch_audit_source_deliveries_total", Type: Counter, Source: SourceExporter,
		Help:   "Deliveries from managed-cluster sources (a Firehose request, a Pub/Sub push, an Event Hub event) by source (eks_firehose, gke_pubsub, aks_eventhub), outcome (accepted, duplicate, rejected) and reason (ok, or why it was refused: unauthenticated, forbidden, malformed, too_large, overloaded, ...).",
		Labels: []string{LabelSource, "outcome", "reason"},
	}
	AuditSourceRecordsTotal = Metric{
		Name: "loopwatch_audit_source_records_total", Type: Counter, Source: SourceExporter,
		Help:   "Records inside accepted deliveries from managed-cluster sources (CloudWatch log events, Cloud Logging entries, Azure resource-log records) by source and by what became of them: decoded, control_message, not_audit (another log's record), unmappable (cannot be mapped to an audit event without guessing), truncated (cut by CloudWatch Logs), malformed, too_large.",
		Labels: []string{LabelSource, "reason"},
	}
)

var managedMetrics = []Metric{AuditSourceDeliveriesTotal, AuditSourceRecordsTotal}
