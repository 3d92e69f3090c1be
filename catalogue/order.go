package catalogue

// The audit exporter's event-time order (package exporter/track): the writes its detections read
// wait until the API servers' batches have had time to arrive, and are then taken in the order
// they happened.

var (
	AuditWaitingWrites = Metric{
		Name: "loopwatch_audit_waiting_writes", Type: Gauge, Source: SourceExporter,
		Help: "Writes waiting in the reorder buffer for their turn in event-time order (--reorder-wait, bounded by --max-reorder-bytes).",
	}
	AuditOutOfOrderWritesTotal = Metric{
		Name: "loopwatch_audit_out_of_order_writes_total", Type: Counter, Source: SourceExporter,
		Help:   "Writes the detections took out of event-time order, by reason: late (the write arrived after its --reorder-wait was over: a batch retried or held up longer), overflow (taken before its wait was over, the reorder buffer being full).",
		Labels: []string{"reason"},
	}
)

var orderMetrics = []Metric{AuditWaitingWrites, AuditOutOfOrderWritesTotal}
