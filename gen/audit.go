package gen

// Audit rules read the loopwatch audit exporter's metrics (exporter/metrics.go).

func (b *builder) auditRecordingRules() []Rule { return nil }

func (b *builder) auditAlerts() []Rule { return nil }
