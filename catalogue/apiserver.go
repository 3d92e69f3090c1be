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

var kubeAPIServerMetrics = []Metric{APIServerAuditEventTotal, APIServerAuditErrorTotal}
