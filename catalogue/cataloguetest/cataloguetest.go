// Package cataloguetest checks that what a registry really exposes is what the catalogue
// declares. It is separate from package catalogue so that the catalogue stays free of
// client_golang: only tests import this package.
package cataloguetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Compare reports every difference between the families gathered and the declarations, all at
// once: a declared family that was not gathered, a gathered family that is not declared, a
// different type or help, a series whose label names are not the declared ones, and a histogram
// whose classic bucket bounds differ. A vec family is gathered only once one of its series
// exists, so the caller touches every vec first.
func Compare(gathered []*dto.MetricFamily, declared []catalogue.Metric) error {
	want := map[string]catalogue.Metric{}
	for _, m := range declared {
		want[m.Name] = m
	}
	var errs []error
	seen := map[string]bool{}
	for _, f := range gathered {
		name := f.GetName()
		seen[name] = true
		m, ok := want[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s is exposed but not declared in the catalogue", name))
			continue
		}
		errs = append(errs, compareFamily(f, m)...)
	}
	for _, m := range declared {
		if !seen[m.Name] {
			errs = append(errs, fmt.Errorf("%s is declared in the catalogue but not exposed (a vec is exposed once one of its series exists)", m.Name))
		}
	}
	return errors.Join(errs...)
}

func compareFamily(f *dto.MetricFamily, m catalogue.Metric) []error {
	var errs []error
	if got := typeOf(f.GetType()); got != m.Type {
		errs = append(errs, fmt.Errorf("%s is exposed as a %s, declared as a %s", m.Name, got, m.Type))
	}
	if f.GetHelp() != m.Help {
		errs = append(errs, fmt.Errorf("%s help is %q, declared %q", m.Name, f.GetHelp(), m.Help))
	}
	wantLabels := slices.Sorted(slices.Values(m.Labels))
	for _, s := range f.GetMetric() {
		var got []string
		for _, l := range s.GetLabel() {
			got = append(got, l.GetName())
		}
		slices.Sort(got)
		if !slices.Equal(got, wantLabels) {
			errs = append(errs, fmt.Errorf("%s series has labels [%s], declared [%s]", m.Name, strings.Join(got, ", "), strings.Join(wantLabels, ", ")))
			break
		}
		if h := s.GetHistogram(); h != nil {
			var bounds []float64
			for _, b := range h.GetBucket() {
				// A registry's histograms leave +Inf implicit; one parsed from the text format
				// (a real server's /metrics) lists it.
				if !math.IsInf(b.GetUpperBound(), +1) {
					bounds = append(bounds, b.GetUpperBound())
				}
			}
			if !slices.Equal(bounds, m.Buckets) {
				errs = append(errs, fmt.Errorf("%s buckets are %v, declared %v", m.Name, bounds, m.Buckets))
				break
			}
		}
	}
	return errs
}

func typeOf(t dto.MetricType) catalogue.Type {
	switch t {
	case dto.MetricType_COUNTER:
		return catalogue.Counter
	case dto.MetricType_GAUGE:
		return catalogue.Gauge
	case dto.MetricType_HISTOGRAM:
		return catalogue.Histogram
	}
	return catalogue.Type(strings.ToLower(t.String()))
}
