package faults

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// unregisteredQueue builds a controller's work queue whose metrics are
// registered with a registry nobody serves: what a controller gets when
// another workqueue metrics provider won client-go's SetProvider race, or
// when a custom queue is built without controller-runtime's provider. The
// controller still reconciles and exports controller_runtime_*, but no
// workqueue_* series.
func unregisteredQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{
		Name:            name,
		MetricsProvider: privateProvider{prometheus.NewRegistry()},
	})
}

// privateProvider is a workqueue.MetricsProvider registering with its own
// registry.
type privateProvider struct{ reg *prometheus.Registry }

func (p privateProvider) gauge(name, queue string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name, ConstLabels: prometheus.Labels{"name": queue}})
	p.reg.MustRegister(g)
	return g
}

func (p privateProvider) counter(name, queue string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name, ConstLabels: prometheus.Labels{"name": queue}})
	p.reg.MustRegister(c)
	return c
}

func (p privateProvider) histogram(name, queue string) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: name, ConstLabels: prometheus.Labels{"name": queue}})
	p.reg.MustRegister(h)
	return h
}

func (p privateProvider) NewDepthMetric(q string) workqueue.GaugeMetric {
	return p.gauge("workqueue_depth", q)
}

func (p privateProvider) NewAddsMetric(q string) workqueue.CounterMetric {
	return p.counter("workqueue_adds_total", q)
}

func (p privateProvider) NewLatencyMetric(q string) workqueue.HistogramMetric {
	return p.histogram("workqueue_queue_duration_seconds", q)
}

func (p privateProvider) NewWorkDurationMetric(q string) workqueue.HistogramMetric {
	return p.histogram("workqueue_work_duration_seconds", q)
}

func (p privateProvider) NewUnfinishedWorkSecondsMetric(q string) workqueue.SettableGaugeMetric {
	return p.gauge("workqueue_unfinished_work_seconds", q)
}

func (p privateProvider) NewLongestRunningProcessorSecondsMetric(q string) workqueue.SettableGaugeMetric {
	return p.gauge("workqueue_longest_running_processor_seconds", q)
}

func (p privateProvider) NewRetriesMetric(q string) workqueue.CounterMetric {
	return p.counter("workqueue_retries_total", q)
}
