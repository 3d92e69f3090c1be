package catalogue

// The kube-apiserver's audit families (k8s.io/apiserver v0.37.0 pkg/audit/metrics.go), read by
// the exporter's alerts to tell "the API server sends nothing" from "the exporter refuses it".
// They are registered through component-base, which prefixes the help with the stability level.
var (
	APIServerAuditEventTotal = Metric{
		Name: "apiserver_audit_event_total", Type: Counter, Source: SourceKubeAPIServer,
		Help: "[ALPHA] Counter of audit events generated and sent to the audit backend.",
	}
	// APIServerAuditErrorTotal's plugin is the backend that lost the events: "webhook" after the
	// last retry of a batch failed, "buffered" when the batch buffer was full.
	APIServerAuditErrorTotal = Metric{
		Name: "apiserver_audit_error_total", Type: Counter, Source: SourceKubeAPIServer,
		Help:   "[ALPHA] Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
		Labels: []string{"plugin"},
	}
)

// The API Priority and Fairness families the APF rules and dashboard read
// (k8s.io/apiserver pkg/util/flowcontrol/metrics/metrics.go; identical for these families in
// v0.36.3, which kube-apiserver v1.36.3 is built from, and v0.37.0). Every request is labelled
// with the FlowSchema that classified it and that schema's priority level: a FlowSchema per
// controller ServiceAccount makes these per-controller series.
var (
	// APIServerFlowcontrolDispatchedRequestsTotal counts requests that were executed, exempt
	// ones included.
	APIServerFlowcontrolDispatchedRequestsTotal = Metric{
		Name: "apiserver_flowcontrol_dispatched_requests_total", Type: Counter, Source: SourceKubeAPIServer,
		Help:   "[BETA] Number of requests executed by API Priority and Fairness subsystem",
		Labels: []string{LabelPriorityLevel, LabelFlowSchema},
	}
	// APIServerFlowcontrolRejectedRequestsTotal counts requests answered 429 by APF. reason is
	// "queue-full" (every queue of the hand was full), "time-out" (the request waited in its queue
	// beyond the limit, or its client gave up) or "concurrency-limit" (a priority level of type
	// Reject, such as catch-all, had no free seat).
	APIServerFlowcontrolRejectedRequestsTotal = Metric{
		Name: "apiserver_flowcontrol_rejected_requests_total", Type: Counter, Source: SourceKubeAPIServer,
		Help:   "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
		Labels: []string{LabelPriorityLevel, LabelFlowSchema, "reason"},
	}
	// APIServerFlowcontrolRequestWaitDurationSeconds observes every request of a non-exempt
	// priority level once, with its queue wait (close to 0 when a seat was free): execute="true"
	// for those dispatched or timed out in their queue, "false" for those rejected on arrival. Its
	// count is therefore every non-exempt request, dispatched or rejected.
	APIServerFlowcontrolRequestWaitDurationSeconds = Metric{
		Name: "apiserver_flowcontrol_request_wait_duration_seconds", Type: Histogram, Source: SourceKubeAPIServer,
		Help:    "[BETA] Length of time a request spent waiting in its queue",
		Labels:  []string{LabelPriorityLevel, LabelFlowSchema, "execute"},
		Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30},
	}
	// APIServerFlowcontrolCurrentInqueueRequests: on a priority level with queues every request
	// passes through a queue, even for no time, so the series exists (at 0 when nothing waits)
	// from a FlowSchema's first request; a level that rejects instead of queuing never has it.
	APIServerFlowcontrolCurrentInqueueRequests = Metric{
		Name: "apiserver_flowcontrol_current_inqueue_requests", Type: Gauge, Source: SourceKubeAPIServer,
		Help:   "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem",
		Labels: []string{LabelPriorityLevel, LabelFlowSchema},
	}
	// APIServerFlowcontrolCurrentExecutingRequests counts a WATCH only while it sends its initial
	// events.
	APIServerFlowcontrolCurrentExecutingRequests = Metric{
		Name: "apiserver_flowcontrol_current_executing_requests", Type: Gauge, Source: SourceKubeAPIServer,
		Help:   "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
		Labels: []string{LabelPriorityLevel, LabelFlowSchema},
	}
)

var kubeAPIServerMetrics = []Metric{
	APIServerAuditEventTotal, APIServerAuditErrorTotal,
	APIServerFlowcontrolDispatchedRequestsTotal, APIServerFlowcontrolRejectedRequestsTotal,
	APIServerFlowcontrolRequestWaitDurationSeconds, APIServerFlowcontrolCurrentInqueueRequests,
	APIServerFlowcontrolCurrentExecutingRequests,
}
