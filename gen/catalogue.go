package gen

import "sort"

// MetricType is the Prometheus type of a metric family.
type MetricType string

// Metric types.
const (
	Counter   MetricType = "counter"
	Gauge     MetricType = "gauge"
	Histogram MetricType = "histogram"
)

// KnownMetric is a metric family that rules and dashboards may read.
type KnownMetric struct {
	Name   string
	Type   MetricType
	Labels []string
	// Source says who exports it.
	Source string
}

// The bucket bounds of controller-runtime's histograms (v0.25, pkg/internal/controller/metrics
// and pkg/internal/metrics/workqueue.go). Bucket-exact alerts must use one of them.
var (
	reconcileTimeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}
	workqueueBuckets     = []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000}
)

var controllerRuntimeMetrics = []KnownMetric{
	{"controller_runtime_reconcile_total", Counter, []string{"controller", "result"}, "controller-runtime"},
	{"controller_runtime_reconcile_errors_total", Counter, []string{"controller"}, "controller-runtime"},
	{"controller_runtime_terminal_reconcile_errors_total", Counter, []string{"controller"}, "controller-runtime"},
	{"controller_runtime_reconcile_panics_total", Counter, []string{"controller"}, "controller-runtime"},
	{"controller_runtime_reconcile_time_seconds", Histogram, []string{"controller"}, "controller-runtime"},
	{"controller_runtime_max_concurrent_reconciles", Gauge, []string{"controller"}, "controller-runtime"},
	{"controller_runtime_active_workers", Gauge, []string{"controller"}, "controller-runtime"},
	{"workqueue_depth", Gauge, []string{"name", "controller", "priority"}, "controller-runtime"},
	{"workqueue_adds_total", Counter, []string{"name", "controller"}, "controller-runtime"},
	{"workqueue_queue_duration_seconds", Histogram, []string{"name", "controller"}, "controller-runtime"},
	{"workqueue_work_duration_seconds", Histogram, []string{"name", "controller"}, "controller-runtime"},
	{"workqueue_unfinished_work_seconds", Gauge, []string{"name", "controller"}, "controller-runtime"},
	{"workqueue_longest_running_processor_seconds", Gauge, []string{"name", "controller"}, "controller-runtime"},
	{"workqueue_retries_total", Counter, []string{"name", "controller"}, "controller-runtime"},
	{"rest_client_requests_total", Counter, []string{"code", "method", "host"}, "controller-runtime (client-go adapter)"},
	{"leader_election_master_status", Gauge, []string{"name"}, "controller-runtime"},
	{"up", Gauge, nil, "Prometheus"},
	{"apiserver_audit_error_total", Counter, []string{"plugin"}, "kube-apiserver"},
	{"apiserver_audit_event_total", Counter, nil, "kube-apiserver"},
}

// extraCatalogues are added by packages that export loopwatch's own metrics (see catalogue_loopwatch.go).
var extraCatalogues []func() []KnownMetric

// Catalogue returns every metric family the generated rules and dashboards may read, by name.
func Catalogue() map[string]KnownMetric {
	out := map[string]KnownMetric{}
	add := func(ms []KnownMetric) {
		for _, m := range ms {
			out[m.Name] = m
		}
	}
	add(controllerRuntimeMetrics)
	for _, f := range extraCatalogues {
		add(f())
	}
	return out
}

// CatalogueNames returns the names in the catalogue, sorted.
func CatalogueNames() []string {
	var names []string
	for n := range Catalogue() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
