package instrument

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/catalogue/cataloguetest"
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
	if err := cataloguetest.Compare(families, catalogue.FromSource(catalogue.SourceInstrument)); err != nil {
		t.Error(err)
	}
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
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: catalogue.ControllerAPIRequestsTotal.Name, Help: "something else"}))
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
