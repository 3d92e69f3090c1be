package gen

import (
	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/instrument"
)

// loopwatch's own metrics join the catalogue from the packages that declare them, so a renamed
// metric breaks the generator's checks instead of silently emptying a rule.
func init() {
	extraCatalogues = append(extraCatalogues, func() []KnownMetric {
		var out []KnownMetric
		for _, m := range instrument.MetricCatalogue() {
			out = append(out, KnownMetric{Name: m.Name, Type: MetricType(m.Type), Labels: m.Labels, Source: "loopwatch instrument"})
		}
		for _, m := range exporter.MetricCatalogue() {
			out = append(out, KnownMetric{Name: m.Name, Type: MetricType(m.Type), Labels: m.Labels, Source: "loopwatch audit exporter"})
		}
		return out
	})
}
