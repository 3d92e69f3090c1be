// Package catalogue declares, once each and with their full literal names, every metric family
// loopwatch exports and every foreign metric family its rules and dashboards read: name, type,
// help, label names, who exports it and, for histograms, the bucket bounds.
//
// It is the vocabulary shared by the producers (the audit exporter and package instrument build
// their collectors from these declarations) and the consumers (the rule generator checks every
// expression against them). Neither side imports the other, and this package imports only the
// standard library, so the generator does not link the exporter, client_golang or
// controller-runtime.
package catalogue

import (
	"slices"
	"strings"
)

// Type is the Prometheus type of a metric family.
type Type string

// Metric types.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Source is who exports a metric family.
type Source string

// Sources. A benchmark that synthesises a scrape target exposes the families of one source;
// SourcePrometheus families are written by Prometheus itself and never appear in a target's
// exposition.
const (
	// SourceExporter is loopwatch's audit-log webhook exporter.
	SourceExporter Source = "loopwatch audit exporter"
	// SourceInstrument is loopwatch's package instrument, linked into a controller's manager.
	SourceInstrument Source = "loopwatch instrument"
	// SourceControllerRuntime is controller-runtime's metrics.Registry, served by every manager.
	SourceControllerRuntime Source = "controller-runtime"
	// SourceClientGo is client-go's REST client, whose metrics controller-runtime adapts into the
	// same registry.
	SourceClientGo Source = "controller-runtime (client-go adapter)"
	// SourceKubeAPIServer is the kube-apiserver's own /metrics.
	SourceKubeAPIServer Source = "kube-apiserver"
	// SourceKubeStateMetrics is kube-state-metrics, which exports the cluster's objects as series.
	SourceKubeStateMetrics Source = "kube-state-metrics"
	// SourcePrometheus is the Prometheus server, which writes synthetic series per scrape target.
	SourcePrometheus Source = "Prometheus"
)

// Metric declares one metric family.
type Metric struct {
	// Name is the full family name; a histogram's series add _bucket, _sum and _count.
	Name string
	Type Type
	// Help is the help text as the source exposes it.
	Help string
	// Labels are the label names in the order the source declares them; nil when there are none.
	Labels []string
	Source Source
	// Buckets are a histogram's classic upper bounds in ascending order, without +Inf.
	Buckets []float64
}

// all is every declaration; All sorts a copy.
var all = slices.Concat(exporterMetrics, orderMetrics, replicaMetrics, managedMetrics, instrumentMetrics, controllerRuntimeMetrics, kubeAPIServerMetrics, kubeStateMetrics, prometheusMetrics)

// All returns every declared metric family, ordered by name. The slices are copies: callers may
// keep and change them.
func All() []Metric {
	out := make([]Metric, len(all))
	for i, m := range all {
		out[i] = m.clone()
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// FromSource returns the families one source exports, ordered by name.
func FromSource(s Source) []Metric {
	return slices.DeleteFunc(All(), func(m Metric) bool { return m.Source != s })
}

// Lookup returns the family called name. A histogram is found by its family name only, not by
// the name of one of its _bucket, _sum or _count series.
func Lookup(name string) (Metric, bool) {
	for _, m := range all {
		if m.Name == name {
			return m.clone(), true
		}
	}
	return Metric{}, false
}

func (m Metric) clone() Metric {
	m.Labels = slices.Clone(m.Labels)
	m.Buckets = slices.Clone(m.Buckets)
	return m
}
