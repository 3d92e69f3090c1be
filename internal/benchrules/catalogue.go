package benchrules

import (
	"fmt"
	"slices"

	"github.com/loopwatch/loopwatch/catalogue"
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

// lookup returns the declaration of the family called name from the metrics catalogue.
func lookup(name string) (family, bool) {
	m, ok := catalogue.Lookup(name)
	if !ok {
		return family{}, false
	}
	return family{
		Name:    m.Name,
		Type:    string(m.Type),
		Help:    m.Help,
		Labels:  slices.Clone(m.Labels),
		Buckets: slices.Clone(m.Buckets),
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
