// Package instrument gives any controller-runtime controller the two signals
// loopwatch's rules and dashboards read per controller, not just per process:
// the API calls its reconciler makes (by verb, reads versus writes) and the age
// of the oldest object waiting on its finalizer.
//
// Wrap the client a reconciler uses with [NewClient] (or build the reconciler
// with [Reconciler]), run a [FinalizerAge] per finalizer, and register the
// [Metrics] into the registry the manager serves (controller-runtime's
// metrics.Registry). The package never touches the global Prometheus registry.
package instrument

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, declared once so rules, dashboards and tests can refer to them.
const (
	// APIRequestsTotalName counts API calls made by a reconciler through the wrapped client.
	APIRequestsTotalName = "loopwatch_controller_api_requests_total"
	// FinalizerOldestPendingSecondsName is the age of the oldest object waiting on a finalizer.
	FinalizerOldestPendingSecondsName = "loopwatch_controller_finalizer_oldest_pending_seconds"
)

// Label names used by the metrics of this package.
const (
	LabelController = "controller"
	LabelVerb       = "verb"
	LabelAccess     = "access"
	LabelFinalizer  = "finalizer"
)

const (
	apiRequestsHelp = "API calls made by a controller's reconciler through the instrumented client, by verb " +
		"(get, list, create, update, patch, delete, deletecollection, status_update, status_patch) and access " +
		"(read or write). Cached reads count too: the ratio to controller_runtime_reconcile_total is the calls per reconcile."
	finalizerOldestHelp = "Age in seconds of the oldest object that has a deletionTimestamp and still carries the " +
		"controller's finalizer; 0 when no object is waiting."
)

// MetricInfo describes one metric the package exports.
type MetricInfo struct {
	// Name is the full metric name.
	Name string
	// Type is the Prometheus metric type: "counter" or "gauge".
	Type string
	// Labels are the label names, in order.
	Labels []string
	// Help is the help text exported with the metric.
	Help string
}

// MetricCatalogue lists every metric the package exports, so a generator or a
// test can check that the metrics a rule or dashboard uses really exist.
func MetricCatalogue() []MetricInfo {
	return []MetricInfo{
		{
			Name:   APIRequestsTotalName,
			Type:   "counter",
			Labels: []string{LabelController, LabelVerb, LabelAccess},
			Help:   apiRequestsHelp,
		},
		{
			Name:   FinalizerOldestPendingSecondsName,
			Type:   "gauge",
			Labels: []string{LabelController, LabelFinalizer},
			Help:   finalizerOldestHelp,
		},
	}
}

// Metrics holds the collectors of this package. A nil *Metrics is valid and
// records nothing, so tests can use an instrumented client without metrics.
type Metrics struct {
	apiRequests     *prometheus.CounterVec
	finalizerOldest *prometheus.GaugeVec
}

// NewMetrics builds the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("instrument metrics: a prometheus registerer is required")
	}
	m := &Metrics{
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: APIRequestsTotalName,
			Help: apiRequestsHelp,
		}, []string{LabelController, LabelVerb, LabelAccess}),
		finalizerOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: FinalizerOldestPendingSecondsName,
			Help: finalizerOldestHelp,
		}, []string{LabelController, LabelFinalizer}),
	}
	var err error
	if m.apiRequests, err = register(reg, m.apiRequests); err != nil {
		return nil, err
	}
	if m.finalizerOldest, err = register(reg, m.finalizerOldest); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the identical collector already registered,
// so several managers in one process (tests, a demo) can share a registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register instrument metrics: %w", err)
	}
	return c, nil
}

func (m *Metrics) countCall(controller string, verb Verb) {
	if m == nil {
		return
	}
	m.apiRequests.WithLabelValues(controller, string(verb), string(verb.Access())).Inc()
}

// initController creates every series of a controller at zero, so rate() works
// from the first scrape and an absent series means "not instrumented".
func (m *Metrics) initController(controller string) {
	if m == nil {
		return
	}
	for _, v := range AllVerbs() {
		m.apiRequests.WithLabelValues(controller, string(v), string(v.Access()))
	}
}

func (m *Metrics) setFinalizerOldest(controller, finalizer string, seconds float64) {
	if m == nil {
		return
	}
	m.finalizerOldest.WithLabelValues(controller, finalizer).Set(seconds)
}
