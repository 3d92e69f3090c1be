package catalogue

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

var sources = []Source{SourceExporter, SourceInstrument, SourceControllerRuntime, SourceClientGo, SourceKubeAPIServer, SourceKubeStateMetrics, SourcePrometheus}

// problems returns what is wrong with one declaration, so the well-formedness rules can be
// tested on bad declarations too.
func problems(m Metric) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if !metricName.MatchString(m.Name) || strings.HasPrefix(m.Name, "__") {
		add("invalid metric name")
	}
	if m.Help == "" {
		add("no help")
	}
	if !slices.Contains(sources, m.Source) {
		add("unknown source %q", m.Source)
	}
	switch m.Type {
	case Counter:
		if !strings.HasSuffix(m.Name, "_total") {
			add("counter name does not end in _total")
		}
	case Gauge, Histogram:
		if strings.HasSuffix(m.Name, "_total") {
			add("%s name ends in _total, which is for counters", m.Type)
		}
	default:
		add("unknown type %q", m.Type)
	}
	for i, l := range m.Labels {
		if !labelName.MatchString(l) || strings.HasPrefix(l, "__") {
			add("invalid label name %q", l)
		}
		if slices.Contains(m.Labels[:i], l) {
			add("label %q twice", l)
		}
		if m.Type == Histogram && l == "le" {
			add("label le is reserved for histogram buckets")
		}
	}
	if m.Type == Histogram {
		if len(m.Buckets) == 0 {
			add("histogram without buckets")
		}
		for i, b := range m.Buckets {
			if math.IsNaN(b) || math.IsInf(b, 0) {
				add("bucket %v: the +Inf bucket is implicit", b)
			}
			if i > 0 && b <= m.Buckets[i-1] {
				add("buckets not strictly ascending at %v", b)
			}
		}
	} else if len(m.Buckets) > 0 {
		add("%s with buckets", m.Type)
	}
	return out
}

func TestEveryDeclarationIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		for _, p := range problems(m) {
			t.Errorf("%s: %s", m.Name, p)
		}
		if seen[m.Name] {
			t.Errorf("%s declared twice", m.Name)
		}
		seen[m.Name] = true
	}
	for _, s := range sources {
		if len(FromSource(s)) == 0 {
			t.Errorf("no metric from source %q", s)
		}
	}
}

func TestWellFormednessRejects(t *testing.T) {
	good := Metric{Name: "x_seconds", Type: Histogram, Help: "h", Source: SourceExporter, Labels: []string{"a"}, Buckets: []float64{1, 2}}
	if p := problems(good); len(p) != 0 {
		t.Fatalf("a good declaration has problems: %v", p)
	}
	for _, tc := range []struct {
		name string
		edit func(*Metric)
		want string
	}{
		{"a name with a dash", func(m *Metric) { m.Name = "x-seconds" }, "invalid metric name"},
		{"a reserved name", func(m *Metric) { m.Name = "__x" }, "invalid metric name"},
		{"no help", func(m *Metric) { m.Help = "" }, "no help"},
		{"an unknown source", func(m *Metric) { m.Source = "someone" }, "unknown source"},
		{"an unknown type", func(m *Metric) { m.Type = "summary"; m.Buckets = nil }, "unknown type"},
		{"a counter not ending in _total", func(m *Metric) { m.Type = Counter; m.Buckets = nil }, "does not end in _total"},
		{"a gauge ending in _total", func(m *Metric) { m.Name = "x_total"; m.Type = Gauge; m.Buckets = nil }, "which is for counters"},
		{"an invalid label", func(m *Metric) { m.Labels = []string{"a.b"} }, "invalid label name"},
		{"a reserved label", func(m *Metric) { m.Labels = []string{"__name__"} }, "invalid label name"},
		{"a label twice", func(m *Metric) { m.Labels = []string{"a", "a"} }, "twice"},
		{"a histogram labelled le", func(m *Metric) { m.Labels = []string{"le"} }, "reserved"},
		{"a histogram without buckets", func(m *Metric) { m.Buckets = nil }, "without buckets"},
		{"buckets out of order", func(m *Metric) { m.Buckets = []float64{2, 1} }, "not strictly ascending"},
		{"a bucket twice", func(m *Metric) { m.Buckets = []float64{1, 1} }, "not strictly ascending"},
		{"an explicit +Inf bucket", func(m *Metric) { m.Buckets = []float64{1, math.Inf(1)} }, "implicit"},
		{"a gauge with buckets", func(m *Metric) { m.Type = Gauge }, "gauge with buckets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good.clone()
			tc.edit(&m)
			p := problems(m)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("problems %v, want one containing %q", p, tc.want)
			}
		})
	}
}

func TestAllIsSortedAndCopied(t *testing.T) {
	a := All()
	if !slices.IsSortedFunc(a, func(x, y Metric) int { return strings.Compare(x.Name, y.Name) }) {
		t.Error("All is not sorted by name")
	}
	if len(a) != len(all) {
		t.Errorf("All has %d families, %d declared", len(a), len(all))
	}
	for i := range a {
		if len(a[i].Labels) > 0 {
			a[i].Labels[0] = "changed"
		}
		if len(a[i].Buckets) > 0 {
			a[i].Buckets[0] = -1
		}
	}
	for _, m := range All() {
		if slices.Contains(m.Labels, "changed") || slices.Contains(m.Buckets, -1) {
			t.Fatalf("changing All's result changed the declaration of %s", m.Name)
		}
	}
}

func TestLookupFindsFamiliesByTheirOwnName(t *testing.T) {
	for _, m := range All() {
		got, ok := Lookup(m.Name)
		if !ok || got.Name != m.Name || got.Type != m.Type {
			t.Errorf("Lookup(%q) = %v, %v", m.Name, got, ok)
		}
	}
	for _, name := range []string{"", "no_such_metric_total", "controller_runtime_reconcile_time_seconds_bucket"} {
		if _, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) found a family", name)
		}
	}
}

func TestFromSourcePartitionsAll(t *testing.T) {
	n := 0
	for _, s := range sources {
		for _, m := range FromSource(s) {
			if m.Source != s {
				t.Errorf("FromSource(%q) returned %s from %q", s, m.Name, m.Source)
			}
			n++
		}
	}
	if n != len(All()) {
		t.Errorf("the sources hold %d families, All %d", n, len(All()))
	}
}

// The bounds must be the ones client_golang exposes: the le values of real scrapes.
func TestWorkqueueBucketsAreClientGolangsExponentialBuckets(t *testing.T) {
	want := []float64{1e-8, 1e-7, 1e-6, 9.999999999999999e-06, 9.999999999999999e-05, 1e-3, 0.01, 0.1, 1, 10, 100, 1000}
	if got := WorkqueueQueueDurationSeconds.Buckets; !slices.Equal(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}
