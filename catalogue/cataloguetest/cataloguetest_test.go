package cataloguetest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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

// A server's /metrics parsed from the text format lists the +Inf bucket that a registry leaves
// implicit: it is not one of the declared bounds, and it is not a difference.
func TestCompareReadsParsedExpositions(t *testing.T) {
	text := "# HELP y_seconds y\n# TYPE y_seconds histogram\n" +
		"y_seconds_bucket{le=\"1\"} 1\ny_seconds_bucket{le=\"2\"} 2\ny_seconds_bucket{le=\"+Inf\"} 3\n" +
		"y_seconds_sum 4\ny_seconds_count 3\n"
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := Compare([]*dto.MetricFamily{families["y_seconds"]}, []catalogue.Metric{declaredHist}); err != nil {
		t.Errorf("unexpected difference: %v", err)
	}
	other := declaredHist
	other.Buckets = []float64{1, 3}
	if err := Compare([]*dto.MetricFamily{families["y_seconds"]}, []catalogue.Metric{other}); err == nil || !strings.Contains(err.Error(), "buckets are [1 2], declared [1 3]") {
		t.Errorf("Compare = %v, want other buckets reported", err)
	}
}
