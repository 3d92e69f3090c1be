package cataloguetest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/catalogue"
)

var (
	declaredCounter = catalogue.Metric{Name: "x_total", Type: catalogue.Counter, Help: "x", Labels: []string{"a", "b"}}
	declaredHist    = catalogue.Metric{Name: "y_seconds", Type: catalogue.Histogram, Help: "y", Buckets: []float64{1, 2}}
)

// gather registers the collectors in a fresh registry and gathers them.
func gather(t *testing.T, cs ...prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	return reg
}

func TestCompare(t *testing.T) {
	counter := func(help string, labels ...string) prometheus.Collector {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: help}, labels)
		v.WithLabelValues(make([]string, len(labels))...)
		return v
	}
	hist := func(buckets ...float64) prometheus.Collector {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "y_seconds", Help: "y", Buckets: buckets})
	}
	for _, tc := range []struct {
		name     string
		exposed  []prometheus.Collector
		declared []catalogue.Metric
		want     []string // substrings of the error, none when empty
	}{
		{"accepts what is declared, labels in any order",
			[]prometheus.Collector{counter("x", "b", "a"), hist(1, 2)}, []catalogue.Metric{declaredCounter, declaredHist}, nil},
		{"reports a declared family that is not exposed",
			[]prometheus.Collector{counter("x", "a", "b")}, []catalogue.Metric{declaredCounter, declaredHist}, []string{"y_seconds is declared in the catalogue but not exposed"}},
		{"reports an exposed family that is not declared",
			[]prometheus.Collector{counter("x", "a", "b"), hist(1, 2)}, []catalogue.Metric{declaredCounter}, []string{"y_seconds is exposed but not declared"}},
		{"reports another help and other labels",
			[]prometheus.Collector{counter("other", "a")}, []catalogue.Metric{declaredCounter}, []string{`help is "other"`, "labels [a], declared [a, b]"}},
		{"reports other buckets",
			[]prometheus.Collector{hist(1, 3)}, []catalogue.Metric{declaredHist}, []string{"buckets are [1 3], declared [1 2]"}},
		{"reports another type",
			[]prometheus.Collector{prometheus.NewGauge(prometheus.GaugeOpts{Name: "y_seconds", Help: "y"})}, []catalogue.Metric{declaredHist}, []string{"exposed as a gauge, declared as a histogram"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			families, err := gather(t, tc.exposed...).Gather()
			if err != nil {
				t.Fatal(err)
			}
			err = Compare(families, tc.declared)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected difference: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no difference reported, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
