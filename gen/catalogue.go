package gen

import "github.com/loopwatch/loopwatch/catalogue"

// The bucket bounds of the histograms that bucket-exact alerts read: an alert's bucket must be
// one of them (see HistogramShareAlert).
var (
	reconcileTimeBuckets = catalogue.ControllerRuntimeReconcileTimeSeconds.Buckets
	workqueueBuckets     = catalogue.WorkqueueQueueDurationSeconds.Buckets
	apfWaitBuckets       = catalogue.APIServerFlowcontrolRequestWaitDurationSeconds.Buckets
)

// knownMetrics returns every metric family the generated rules and dashboards may read, by name.
func knownMetrics() map[string]catalogue.Metric {
	out := map[string]catalogue.Metric{}
	for _, m := range catalogue.All() {
		out[m.Name] = m
	}
	return out
}
