package benchrules

import (
	"fmt"
	"slices"

	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/instrument"
)

// family is what the benchmark needs to know about a metric family to synthesise its series:
// the shape every exposed series must have. Its fields are those of the metric declarations.
type family struct {
	Name string
	// Type is "counter", "gauge" or "histogram".
	Type string
	Help string
	// Labels are the family's own label names (target labels come on top), in declared order.
	Labels []string
	// Buckets are a histogram's classic upper bounds, ascending, without +Inf.
	Buckets []float64
}

// lookup returns the declaration of the family called name. It is the only place the benchmark
// reads metric declarations from: today gen's catalogue (names, types, labels) plus the bucket
// lists below, which gen and the exporter keep unexported. When the leaf package catalogue/
// lands, its body becomes
//
//	m, ok := catalogue.Lookup(name); return family{m.Name, string(m.Type), m.Help, m.Labels, m.Buckets}, ok
//
// and bucketsToday and helpToday go away.
func lookup(name string) (family, bool) {
	m, ok := gen.Catalogue()[name]
	if !ok {
		return family{}, false
	}
	return family{
		Name:    m.Name,
		Type:    string(m.Type),
		Help:    helpToday()[name],
		Labels:  slices.Clone(m.Labels),
		Buckets: slices.Clone(bucketsToday[name]),
	}, true
}

// mustLookup is lookup for the families the synthetic fleet is built from: a family missing
// from the declarations is a programming error (a renamed metric), reported loudly.
func mustLookup(name string) family {
	f, ok := lookup(name)
	if !ok {
		panic(fmt.Sprintf("benchrules: metric family %q is not declared in the metrics catalogue", name))
	}
	if f.Type == "histogram" && len(f.Buckets) == 0 {
		panic(fmt.Sprintf("benchrules: histogram %q has no declared buckets", name))
	}
	return f
}

// bucketsToday copies the classic bucket bounds that gen/catalogue.go documents (controller-runtime
// v0.25.2) and exporter/metrics.go uses (batchBuckets); both keep them unexported. The catalogue
// package declares them once; see lookup.
var bucketsToday = map[string][]float64{
	"controller_runtime_reconcile_time_seconds": {0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
	"workqueue_queue_duration_seconds":          {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000},
	"workqueue_work_duration_seconds":           {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000},
	"loopwatch_audit_decode_seconds":            {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1},
	"loopwatch_audit_request_seconds":           {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1},
}

// helpToday collects the help texts the exporter and instrument declare; gen's catalogue has none.
func helpToday() map[string]string {
	out := map[string]string{}
	for _, m := range exporter.MetricCatalogue() {
		out[m.Name] = m.Help
	}
	for _, m := range instrument.MetricCatalogue() {
		out[m.Name] = m.Help
	}
	return out
}
