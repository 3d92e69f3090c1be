package benchrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

var testStart = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func testFleet(t *testing.T, n int, standby bool) *Fleet {
	t.Helper()
	cfg := DefaultFleetConfig(n, testStart)
	cfg.StandbySeries = standby
	f, err := NewFleet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// parse parses one target's exposition with client_golang's parser, as any scraper would.
func parse(t *testing.T, tg *Target, now time.Time) map[string]*dto.MetricFamily {
	t.Helper()
	raw := tg.AppendExposition(nil, now)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: exposition does not parse: %v\n%s", tg.Path, err, raw)
	}
	return fams
}

func TestExpositionHasTheDeclaredShapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		standby bool
	}{
		{"standby replicas expose the controller series", 20, true},
		{"only the leader exposes the controller series", 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFleet(t, tc.n, tc.standby)
			now := testStart.Add(3 * time.Hour)
			total := 0
			for _, tg := range f.Targets {
				fams := parse(t, tg, now)
				for _, want := range tg.Families {
					got, ok := fams[want.Name]
					if !ok {
						t.Fatalf("%s: family %s missing", tg.Path, want.Name)
					}
					if string(want.Type) != strings.ToLower(got.GetType().String()) {
						t.Errorf("%s: %s has type %s, declared %s", tg.Path, want.Name, got.GetType(), want.Type)
					}
					for _, m := range got.GetMetric() {
						var names []string
						for _, l := range m.GetLabel() {
							names = append(names, l.GetName())
						}
						declared := slices.Clone(want.Labels)
						slices.Sort(declared)
						slices.Sort(names)
						if !slices.Equal(names, declared) {
							t.Errorf("%s: %s has labels %v, declared %v", tg.Path, want.Name, names, declared)
						}
						if h := m.GetHistogram(); h != nil {
							checkHistogram(t, tg.Path+" "+want.Name, want.family, h)
							total += len(h.GetBucket()) + 2 // buckets with +Inf, _sum, _count
						} else {
							total++
						}
					}
				}
				if len(fams) != len(tg.Families) {
					t.Errorf("%s: %d families exposed, %d built", tg.Path, len(fams), len(tg.Families))
				}
			}
			if total != f.ExposedSeries() {
				t.Errorf("parsed %d series, the fleet says it exposes %d", total, f.ExposedSeries())
			}
		})
	}
}

// checkHistogram: the buckets are exactly the declared bounds, cumulative, below the count.
func checkHistogram(t *testing.T, what string, decl family, h *dto.Histogram) {
	t.Helper()
	var bounds []float64
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		if b.GetCumulativeCount() < prev {
			t.Errorf("%s: bucket %v holds %d, less than the bucket below (%d)", what, b.GetUpperBound(), b.GetCumulativeCount(), prev)
		}
		prev = b.GetCumulativeCount()
	}
	if want := append(slices.Clone(decl.Buckets), math.Inf(1)); !slices.Equal(bounds, want) {
		t.Errorf("%s: bucket bounds %v, want the declared %v and +Inf", what, bounds, decl.Buckets)
	}
	if prev > h.GetSampleCount() {
		t.Errorf("%s: last bucket %d exceeds the count %d", what, prev, h.GetSampleCount())
	}
}

// TestStoredLabelsAreWhatPrometheusIngests parses the exposition with Prometheus' own text
// parser, which normalises bucket bounds ("1" to "1.0"), and checks that target labels plus the
// parsed labels are exactly the labels the backfill writes: otherwise the scrapes would start new
// series instead of continuing the history.
func TestStoredLabelsAreWhatPrometheusIngests(t *testing.T) {
	f := testFleet(t, 5, true)
	now := testStart.Add(time.Hour)
	for _, tg := range f.Targets {
		var want []labels.Labels
		for _, fam := range tg.Families {
			for _, s := range fam.Series {
				want = append(want, s.Labels)
			}
		}
		p, err := textparse.New(tg.AppendExposition(nil, now), ContentType, labels.NewSymbolTable(), textparse.ParserOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []labels.Labels
		for {
			e, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: prometheus cannot parse the exposition: %v", tg.Path, err)
			}
			if e != textparse.EntrySeries {
				continue
			}
			var l labels.Labels
			p.Labels(&l)
			b := labels.NewBuilder(l)
			tg.Labels.Range(func(tl labels.Label) { b.Set(tl.Name, tl.Value) })
			got = append(got, b.Labels())
		}
		if !slices.EqualFunc(got, want, labels.Equal) {
			for i := range min(len(got), len(want)) {
				if !labels.Equal(got[i], want[i]) {
					t.Fatalf("%s: series %d ingested as %s, backfilled as %s", tg.Path, i, got[i], want[i])
				}
			}
			t.Fatalf("%s: %d series ingested, %d backfilled", tg.Path, len(got), len(want))
		}
	}
}

// TestCountersNeverDecrease follows every counter and bucket of a few targets through a day at
// the scrape interval: the noise must never make a counter go down (rate() would see a reset).
func TestCountersNeverDecrease(t *testing.T) {
	f := testFleet(t, 6, true)
	step := f.Config.ScrapeInterval.Seconds()
	from := float64(testStart.Unix())
	for _, tg := range f.Targets[:6] {
		for _, fam := range tg.Families {
			if fam.Type == "gauge" {
				continue
			}
			for _, s := range fam.Series {
				prev := math.Inf(-1)
				for x := from; x < from+day; x += step {
					v := s.v.at(x)
					if v < prev {
						t.Fatalf("%s went down from %v to %v at %v", s.Labels, prev, v, x)
					}
					prev = v
				}
			}
		}
	}
}

func TestScenariosGiveAlertsInstances(t *testing.T) {
	f := testFleet(t, 500, true)
	want := map[string]int{scenarioBacklog: 295, scenarioErrors: 20, scenarioSlow: 10, scenarioHotLoop: 5, scenarioNoWorkqueue: 3}
	for s, n := range want {
		if got := f.ScenarioCounts[s]; got != n {
			t.Errorf("%d controllers in scenario %s, want %d", got, s, n)
		}
	}
	small := testFleet(t, 50, true)
	for _, s := range []string{scenarioErrors, scenarioSlow, scenarioHotLoop, scenarioNPlusOne, scenarioStuckProcessor, scenarioLeaderFlapping, scenarioNoWorkqueue} {
		if small.ScenarioCounts[s] == 0 {
			t.Errorf("a fleet of 50 has no controller in scenario %s", s)
		}
	}
}

func TestLeaderIsOneReplica(t *testing.T) {
	f := testFleet(t, 10, true)
	now := testStart.Add(2 * time.Hour)
	leaders := map[string]float64{}
	for _, tg := range f.Targets {
		fam := parse(t, tg, now)["leader_election_master_status"]
		if fam == nil {
			continue
		}
		leaders[tg.Job] += fam.GetMetric()[0].GetGauge().GetValue()
	}
	if len(leaders) != 10 {
		t.Fatalf("%d controllers expose leader_election_master_status, want 10", len(leaders))
	}
	for job, n := range leaders {
		if n != 1 {
			t.Errorf("%s has %v leaders, want 1", job, n)
		}
	}
}

func TestExporterIsAtItsBounds(t *testing.T) {
	f := testFleet(t, 1, true)
	var exp *Target
	for _, tg := range f.Targets {
		if tg.Job == "loopwatch-exporter" {
			exp = tg
		}
	}
	fams := parse(t, exp, testStart.Add(time.Hour))
	actors := map[string]bool{}
	for _, m := range fams["loopwatch_audit_writes_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "actor" {
				actors[l.GetValue()] = true
			}
		}
	}
	if len(actors) != exporterTopK+1 {
		t.Errorf("%d actor label values, want top-K %d + other", len(actors), exporterTopK)
	}
	for _, name := range []string{"loopwatch_audit_fight_handoffs", "loopwatch_audit_hot_object_writes_per_second", "loopwatch_audit_replica_race_pods"} {
		if got := len(fams[name].GetMetric()); got != exporterMaxOffenders {
			t.Errorf("%s has %d series, want a full table of %d", name, got, exporterMaxOffenders)
		}
	}
}

// The offender gauges name their writers' pods as the audit exporter does (actor_namespace,
// actor_pod): most are pods the fleet's targets carry, so that the audit alerts' join with the
// scrape targets finds jobs, as in a cluster where controllers fight or race; some are pods that
// are gone, and actors that are no service account name none.
func TestOffendersNameTheFleetsPods(t *testing.T) {
	f := testFleet(t, 50, true)
	targets := map[string]bool{}
	var exp *Target
	for _, tg := range f.Targets {
		if tg.Job == "loopwatch-exporter" {
			exp = tg
			continue
		}
		targets[tg.Labels.Get("namespace")+"/"+tg.Labels.Get("pod")] = true
	}
	fams := parse(t, exp, testStart.Add(time.Hour))
	for name, sides := range map[string][]string{
		"loopwatch_audit_fight_handoffs":               {"_a", "_b"},
		"loopwatch_audit_hot_object_writes_per_second": {""},
		"loopwatch_audit_replica_race_pods":            {""},
	} {
		var targeted, gone, none int
		for _, m := range fams[name].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			for _, side := range sides {
				switch pod := l["actor_pod"+side]; {
				case pod == "":
					none++
				case targets[l["actor_namespace"+side]+"/"+pod]:
					targeted++
				default:
					gone++
				}
			}
		}
		if targeted == 0 || gone == 0 || none == 0 || gone > targeted {
			t.Errorf("%s: %d writers are scrape targets, %d pods are gone, %d have no pod: want most targets, some of each other", name, targeted, gone, none)
		}
	}
}

func TestQuantilesAreNearestRank(t *testing.T) {
	var v []float64
	for i := 10; i >= 1; i-- {
		v = append(v, float64(i))
	}
	q := quantiles(v)
	if q.P50 != 5 || q.P90 != 9 || q.Max != 10 {
		t.Errorf("quantiles of 1..10 = %+v, want p50 5, p90 9, max 10", q)
	}
	if q := quantiles(nil); !math.IsNaN(q.P90) {
		t.Errorf("quantiles of nothing = %+v, want NaN", q)
	}
}

func TestCountFormatsThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 7882000: "7,882,000", -1234: "-1,234"} {
		if got := count(in); got != want {
			t.Errorf("count(%v) = %q, want %q", in, got, want)
		}
	}
	if got := ms(7.882); got != "7,882" {
		t.Errorf("ms(7.882) = %q", got)
	}
	if got := ms(0.0019); got != "1.9" {
		t.Errorf("ms(0.0019) = %q", got)
	}
}

// TestQuantilesOfNoEvaluationsEncode: a slow group that did not run in a phase has no
// quantiles, and the JSON report still encodes.
func TestQuantilesOfNoEvaluationsEncode(t *testing.T) {
	raw, err := json.Marshal(quantiles(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"p50":null,"p90":null,"max":null}` {
		t.Errorf("got %s", raw)
	}
	raw, err = json.Marshal(quantiles([]float64{0.002, 0.001}))
	if err != nil || string(raw) != `{"p50":0.001,"p90":0.002,"max":0.002}` {
		t.Errorf("got %s, %v", raw, err)
	}
}
