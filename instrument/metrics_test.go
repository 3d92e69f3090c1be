package instrument

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCatalogueMatchesRegisteredMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.countCall("backup", VerbGet)
	m.setFinalizerOldest("backup", "f", 0)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		got[f.GetName()] = strings.ToLower(f.GetType().String())
		for _, metric := range f.GetMetric() {
			var labels []string
			for _, l := range metric.GetLabel() {
				labels = append(labels, l.GetName())
			}
			want := catalogueEntry(t, f.GetName()).Labels
			if strings.Join(sorted(labels), ",") != strings.Join(sorted(want), ",") {
				t.Errorf("%s labels = %v, want %v", f.GetName(), labels, want)
			}
		}
	}
	for _, c := range MetricCatalogue() {
		if got[c.Name] != c.Type {
			t.Errorf("%s registered as %q, catalogue says %q", c.Name, got[c.Name], c.Type)
		}
		if c.Help == "" {
			t.Errorf("%s has no help", c.Name)
		}
	}
}

func catalogueEntry(t *testing.T, name string) MetricInfo {
	t.Helper()
	for _, c := range MetricCatalogue() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("metric %s is not in the catalogue", name)
	return MetricInfo{}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestNewMetricsSharesCollectorsOfOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("second registration into the same registry: %v", err)
	}
	a.countCall("backup", VerbGet)
	b.countCall("backup", VerbGet)
	if got := testutil.ToFloat64(a.apiRequests.WithLabelValues("backup", "get", "read")); got != 2 {
		t.Errorf("shared counter = %v, want 2", got)
	}
	if _, err := NewMetrics(nil); err == nil {
		t.Fatal("a nil registerer was accepted")
	}
}

func TestNewMetricsRefusesAConflictingMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: APIRequestsTotalName, Help: "something else"}))
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("registered over a different metric of the same name")
	}
}

func TestInitControllerExportsEveryVerbAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.initController("backup")
	if n := testutil.CollectAndCount(m.apiRequests); n != len(AllVerbs()) {
		t.Errorf("%d series, want one per verb (%d)", n, len(AllVerbs()))
	}
}
