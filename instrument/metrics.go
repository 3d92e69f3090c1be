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

	"github.com/loopwatch/loopwatch/catalogue"
)

// Metrics holds the collectors of this package, built from their declarations in
// package catalogue (ControllerAPIRequestsTotal, ControllerFinalizerOldestPendingSeconds),
// whose label order the methods below follow. A nil *Metrics is valid and records nothing,
// so tests can use an instrumented client without metrics.
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
			Name: catalogue.ControllerAPIRequestsTotal.Name,
			Help: catalogue.ControllerAPIRequestsTotal.Help,
		}, catalogue.ControllerAPIRequestsTotal.Labels),
		finalizerOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: catalogue.ControllerFinalizerOldestPendingSeconds.Name,
			Help: catalogue.ControllerFinalizerOldestPendingSeconds.Help,
		}, catalogue.ControllerFinalizerOldestPendingSeconds.Labels),
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
