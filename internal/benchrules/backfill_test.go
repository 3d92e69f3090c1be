package benchrules

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"
)

func TestBlockLayoutIsProductionLike(t *testing.T) {
	h := int64(time.Hour / time.Millisecond)
	from, to := 100*18*h+5*h, 100*18*h+5*h+72*h+37*60*1000
	layout := blockLayout(from, to)
	if layout[0][0] != from || layout[len(layout)-1][1] != to {
		t.Fatalf("layout %v does not cover [%d, %d)", layout, from, to)
	}
	for i, b := range layout {
		if i > 0 && b[0] != layout[i-1][1] {
			t.Fatalf("blocks %v and %v leave a gap or overlap", layout[i-1], b)
		}
		size := b[1] - b[0]
		if i > 0 && i < len(layout)-1 && size != 18*h && size != 6*h && size != 2*h {
			t.Errorf("block %d spans %dh, want a full 18h, 6h or 2h range", i, size/h)
		}
		if size == 18*h && b[0]%(18*h) != 0 {
			t.Errorf("18h block %v is not aligned", b)
		}
	}
	if last := layout[len(layout)-1]; last[1]-last[0] >= 2*h {
		t.Errorf("the newest block spans %v, more than the head would hold", time.Duration(last[1]-last[0])*time.Millisecond)
	}
}

// readBlocks returns every series of the blocks under dir with its samples, by labels.
func readBlocks(t *testing.T, dir string) (map[string][]sample, []blockMeta) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sample{}
	var metas []blockMeta
	for _, e := range entries {
		if e.Name() == "wal" {
			continue // the history for the head: readHeadLog
		}
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("a temporary block directory %s was left behind", e.Name())
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m blockMeta
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		metas = append(metas, m)
		ir, err := index.NewFileReader(filepath.Join(dir, e.Name(), "index"), index.DecodePostingsRaw)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := chunks.NewDirReader(filepath.Join(dir, e.Name(), "chunks"), nil)
		if err != nil {
			t.Fatal(err)
		}
		name, value := index.AllPostingsKey()
		p, err := ir.Postings(context.Background(), name, value)
		if err != nil {
			t.Fatal(err)
		}
		var b labels.ScratchBuilder
		var chks []chunks.Meta
		n := 0
		for p.Next() {
			if err := ir.Series(p.At(), &b, &chks); err != nil {
				t.Fatal(err)
			}
			key := b.Labels().String()
			for _, c := range chks {
				chk, _, err := cr.ChunkOrIterable(c)
				if err != nil {
					t.Fatal(err)
				}
				it := chk.Iterator(nil)
				for it.Next() == chunkenc.ValFloat {
					ts, v := it.At()
					if ts < m.MinTime || ts >= m.MaxTime {
						t.Errorf("block %s [%d, %d) holds a sample at %d", e.Name(), m.MinTime, m.MaxTime, ts)
					}
					out[key] = append(out[key], sample{ts, v})
				}
			}
			n++
		}
		if uint64(n) != m.Stats.NumSeries {
			t.Errorf("block %s indexes %d series, meta says %d", e.Name(), n, m.Stats.NumSeries)
		}
		_ = ir.Close()
		_ = cr.Close()
	}
	return out, metas
}

type sample struct {
	t int64
	f float64
}

func sortSamples(s []sample) { sort.Slice(s, func(i, j int) bool { return s[i].t < s[j].t }) }

func valuesEqual(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func mustRuleFile(t *testing.T, p string) *ruleFile {
	t.Helper()
	rf, err := loadRuleFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

// TestBackfillWritesTheFleetsHistory backfills a small fleet with the repository's rules and
// reads the blocks back with the TSDB's own readers: every scraped series on its grid with the
// curve's values, up per target, and the recorded series a rule reads over a range.
func TestBackfillWritesTheFleetsHistory(t *testing.T) {
	f, dir, from, stats := backfillTestFleet(t, 5*time.Hour, 0)
	if _, err := os.Stat(filepath.Join(dir, "wal")); !os.IsNotExist(err) {
		t.Errorf("a backfill without head history wrote a write-ahead log (%v)", err)
	}
	if !stats.BlocksTo.Equal(stats.To) || stats.HeadSamples != 0 {
		t.Errorf("blocks end at %s with %d samples for the head, want the history's end %s and none", stats.BlocksTo, stats.HeadSamples, stats.To)
	}
	series, metas := readBlocks(t, dir)
	checkBlocks(t, metas, stats)
	checkHistoryWritten(t, f, from, stats, series)
}

// TestBackfillLeavesTheNewestHourForTheHead backfills the same fleet with an hour for the head:
// the blocks end an hour before the history does, the write-ahead log holds that hour, each
// series declared before its samples and in time order, and blocks and log together hold the
// whole history.
func TestBackfillLeavesTheNewestHourForTheHead(t *testing.T) {
	f, dir, from, stats := backfillTestFleet(t, 5*time.Hour, time.Hour)
	if got := stats.To.Sub(stats.BlocksTo); got < time.Hour || got > time.Hour+time.Minute {
		t.Errorf("the blocks end %s before the history does, want an hour", got)
	}
	series, metas := readBlocks(t, dir)
	checkBlocks(t, metas, stats)
	logged, n := readHeadLog(t, filepath.Join(dir, "wal"))
	if n != stats.HeadSamples || n == 0 {
		t.Errorf("the write-ahead log holds %d samples, the stats say %d", n, stats.HeadSamples)
	}
	var inBlocks uint64
	for _, m := range metas {
		inBlocks += m.Stats.NumSamples
	}
	if inBlocks != stats.Samples {
		t.Errorf("the blocks hold %d samples, the stats say %d", inBlocks, stats.Samples)
	}
	for key, smps := range logged {
		for _, smp := range smps {
			if smp.t < stats.BlocksTo.UnixMilli() || smp.t >= stats.To.UnixMilli() {
				t.Fatalf("%s: the write-ahead log holds a sample at %d, outside [%d, %d)", key, smp.t, stats.BlocksTo.UnixMilli(), stats.To.UnixMilli())
			}
		}
		series[key] = append(series[key], smps...)
	}
	checkHistoryWritten(t, f, from, stats, series)
}

// backfillTestFleet backfills a fleet of 2 controllers with the repository's rules over the last
// history into a temporary directory, head of it for the head.
func backfillTestFleet(t *testing.T, history, head time.Duration) (*Fleet, string, time.Time, BackfillStats) {
	t.Helper()
	f := testFleet(t, 2, true)
	rf := mustRuleFile(t, "../../rules/loopwatch.rules.yaml")
	dir := t.TempDir()
	from := time.Now().Add(-history).Truncate(time.Second)
	f.Config.Start = from
	stats, err := Backfill(context.Background(), f, rf, dir, from, head, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir, from, stats
}

// checkBlocks fails when blocks overlap, reach past the blocks' end, or differ from the stats.
func checkBlocks(t *testing.T, metas []blockMeta, stats BackfillStats) {
	t.Helper()
	sort.Slice(metas, func(i, j int) bool { return metas[i].MinTime < metas[j].MinTime })
	for i := 1; i < len(metas); i++ {
		if metas[i].MinTime < metas[i-1].MaxTime {
			t.Errorf("blocks overlap: [%d, %d) and [%d, %d)", metas[i-1].MinTime, metas[i-1].MaxTime, metas[i].MinTime, metas[i].MaxTime)
		}
	}
	if n := len(metas); n > 0 && metas[n-1].MaxTime > stats.BlocksTo.UnixMilli() {
		t.Errorf("the newest block ends at %d, after the blocks' end %d", metas[n-1].MaxTime, stats.BlocksTo.UnixMilli())
	}
	if stats.Blocks != len(metas) {
		t.Errorf("stats count %d blocks, %d on disk", stats.Blocks, len(metas))
	}
}

// readHeadLog returns the samples of the write-ahead log under dir by series labels, and how
// many it holds. It fails on a sample of a series not declared before it, and on a series whose
// samples are not in time order (Prometheus' replay drops those).
func readHeadLog(t *testing.T, dir string) (map[string][]sample, uint64) {
	t.Helper()
	sr, err := wlog.NewSegmentsReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	var (
		dec     = record.NewDecoder(labels.NewSymbolTable(), promslog.NewNopLogger())
		r       = wlog.NewReader(sr)
		byRef   = map[chunks.HeadSeriesRef]string{}
		out     = map[string][]sample{}
		n       uint64
		series  []record.RefSeries
		samples []record.RefSample
	)
	for r.Next() {
		rec := r.Record()
		switch dec.Type(rec) {
		case record.Series:
			if series, err = dec.Series(rec, series[:0]); err != nil {
				t.Fatal(err)
			}
			for _, s := range series {
				byRef[s.Ref] = s.Labels.String()
			}
		case record.Samples:
			if samples, err = dec.Samples(rec, samples[:0]); err != nil {
				t.Fatal(err)
			}
			for _, s := range samples {
				key, ok := byRef[s.Ref]
				if !ok {
					t.Fatalf("a sample of series %d, not declared before it", s.Ref)
				}
				if prev := out[key]; len(prev) > 0 && prev[len(prev)-1].t >= s.T {
					t.Fatalf("%s: a sample at %d after one at %d", key, s.T, prev[len(prev)-1].t)
				}
				out[key] = append(out[key], sample{s.T, s.V})
				n++
			}
		default:
			t.Fatalf("a record of type %v", dec.Type(rec))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out, n
}

// checkHistoryWritten fails unless series (by labels) hold the fleet's history from from to
// stats.To: every scraped series on its grid with the curve's values, up per target, and the
// recorded series the SLO ratios read over a range.
func checkHistoryWritten(t *testing.T, f *Fleet, from time.Time, stats BackfillStats, series map[string][]sample) {
	t.Helper()
	interval := f.Config.ScrapeInterval.Milliseconds()
	checked := 0
	for _, tg := range f.Targets {
		up := labels.NewBuilder(tg.Labels).Set(model.MetricNameLabel, "up").Labels().String()
		if len(series[up]) == 0 {
			t.Errorf("no up for %s", tg.Path)
		}
		for _, fam := range tg.Families {
			for _, s := range fam.Series {
				got := series[s.Labels.String()]
				sortSamples(got)
				want := int((stats.To.UnixMilli() - from.UnixMilli()) / interval)
				if len(got) < want-1 || len(got) > want+1 {
					t.Fatalf("%s has %d samples over the history, want %d", s.Labels, len(got), want)
				}
				for i, smp := range got {
					if i > 0 && smp.t-got[i-1].t != interval {
						t.Fatalf("%s: samples %d and %d are %dms apart", s.Labels, got[i-1].t, smp.t, smp.t-got[i-1].t)
					}
					if w := s.v.at(float64(smp.t) / 1000); !valuesEqual(smp.f, w) {
						t.Fatalf("%s at %d is %v, the curve says %v", s.Labels, smp.t, smp.f, w)
					}
				}
				checked++
			}
		}
	}
	if checked != f.ExposedSeries() {
		t.Errorf("checked %d series, the fleet exposes %d", checked, f.ExposedSeries())
	}
	// The SLO ratios read these recorded series over up to 2h and 3d: their history is written
	// at their groups' intervals, one series per controller.
	for _, rec := range []struct {
		name     string
		min, max int
	}{
		{"cluster_namespace_job_controller:controller_runtime_reconcile:rate5m", 4 * 60, 5*60 + 1},
		{"cluster_namespace_job_controller:controller_runtime_reconcile:rate30m", 9, 11},
	} {
		n := 0
		for key, s := range series {
			if strings.Contains(key, `"`+rec.name+`"`) {
				n++
				if len(s) < rec.min || len(s) > rec.max {
					t.Errorf("%s has %d samples over 5h, want %d to %d", key, len(s), rec.min, rec.max)
				}
			}
		}
		if n != 2 {
			t.Errorf("%d recorded %s series, want one per controller (2)", n, rec.name)
		}
	}
}

func TestRangeReadRecordingsFollowDependencies(t *testing.T) {
	rf := mustRuleFile(t, "../../rules/loopwatch.rules.yaml")
	rules, err := rf.rangeReadRecordings()
	if err != nil {
		t.Fatal(err)
	}
	// The SLO ratios read the 5m rates as sampled every minute (copied from the 5m rates less
	// the workload's conflicts, which are computed from the per-pod ones) over up to 2h, and the
	// coarse 30m averages over up to 1d; the coarse averages divide by the count of controllers
	// sampled, read over the window; the failed reconciles multiply by the spacing of the sample
	// (coarse) group's clock, read over the window; the 3d ratio adds the day sums of one and two
	// days ago, which read the day sums over a range; the burn alerts read the 1d and 3d ratios
	// and the 6h, 1d and 3d failed reconciles the coarse and days groups record over the last
	// hour; LoopwatchLeaderFlapping reads an hour of the sampled leader status, and
	// LoopwatchControllerMetricsMissing the last 15 minutes of each job's last-seen time: all of them need
	// history, inputs first.
	var got []string
	for _, r := range rules {
		got = append(got, r.record+"@"+r.interval.String())
	}
	want := []string{
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate5m@1m0s",
		"cluster_namespace_job:rest_client_conflicts:rate5m@1m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate5m_except_conflicts@1m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate5m_sampled1m@1m0s",
		"cluster_namespace_job_pod_controller:controller_runtime_reconcile:rate5m@1m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile:rate5m@1m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile:rate5m_sampled1m@1m0s",
		":controller_runtime_reconcile:rate5m_sampled1m_controllers@1m0s",
		":controller_runtime_reconcile:rate5m_sampled1m_timestamp@1m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate30m@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile:rate30m@30m0s",
		":controller_runtime_reconcile:rate30m_timestamp@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate30m_sum1d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile:rate30m_sum1d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:ratio_rate1d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:increase1d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:increase6h@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate30m_sum1d_offset1d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:rate30m_sum1d_offset2d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile:rate30m_sum1d_offset1d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile:rate30m_sum1d_offset2d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:ratio_rate3d@30m0s",
		"cluster_namespace_job_controller:controller_runtime_reconcile_error:increase3d@30m0s",
		"cluster_namespace_job_pod_instance_name:leader_election_master_status:max@1m0s",
		"cluster_job:controller_runtime_max_concurrent_reconciles:last_seen_timestamp@5m0s",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("recordings read over a range, in backfill order:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	path := writeChainRules(t)
	rules, err = mustRuleFile(t, path).rangeReadRecordings()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rules {
		names = append(names, r.record+"@"+r.interval.String())
	}
	if got, want := strings.Join(names, " "), "job:errors:rate5m@1m0s job:errors:rate30m@30m0s"; got != want {
		t.Errorf("recordings to backfill: %s, want %s (inputs first, unused ones left out)", got, want)
	}
	if rules[1].labels["window"] != "30m" {
		t.Errorf("the rule's labels are lost: %v", rules[1].labels)
	}
}

// writeChainRules writes a rule file shaped like long windows built from low-resolution
// recorded series: a slow group records from a fast one, an alert reads the slow one over 3d.
// jobOf returns the job label of a series key as readBlocks writes it.
func jobOf(t *testing.T, key string) string {
	t.Helper()
	m := regexp.MustCompile(`job="([^"]*)"`).FindStringSubmatch(key)
	if m == nil {
		t.Fatalf("%s has no job label", key)
	}
	return m[1]
}

func writeChainRules(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chain.yaml")
	if err := os.WriteFile(path, []byte(`groups:
  - name: fast
    interval: 1m
    rules:
      - record: job:errors:rate5m
        expr: sum by (job) (rate(controller_runtime_reconcile_total{result="error"}[5m]))
      - record: job:unused:rate5m
        expr: sum by (job) (rate(controller_runtime_reconcile_total[5m]))
  - name: slow
    interval: 30m
    rules:
      - record: job:errors:rate30m
        expr: avg_over_time(job:errors:rate5m[30m])
        labels: {window: 30m}
  - name: alerts
    rules:
      - alert: Burn
        expr: sum_over_time(job:errors:rate30m[3d]) > 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBackfillComputesChainedRecordings backfills the chain: the slow series, computed from the
// fast one's backfilled history, has one sample per 30 minutes and the value the engine gives.
func TestBackfillComputesChainedRecordings(t *testing.T) {
	f := testFleet(t, 2, true)
	dir := t.TempDir()
	from := time.Now().Add(-5 * time.Hour).Truncate(time.Second)
	if _, err := Backfill(context.Background(), f, mustRuleFile(t, writeChainRules(t)), dir, from, 0, 2, t.Logf); err != nil {
		t.Fatal(err)
	}
	series, _ := readBlocks(t, dir)
	fastByJob := map[string][]sample{}
	for key, s := range series {
		if strings.Contains(key, "job:errors:rate5m") {
			sortSamples(s)
			fastByJob[jobOf(t, key)] = s
		}
	}
	fast, slow, nonZero := len(fastByJob), 0, 0
	for key, s := range series {
		sortSamples(s)
		switch {
		case strings.Contains(key, "job:unused:rate5m"):
			t.Errorf("%s was backfilled though no rule reads it over a range", key)
		case strings.Contains(key, "job:errors:rate5m"):
			if len(s) < 4*60 {
				t.Errorf("%s has %d samples, want one a minute", key, len(s))
			}
		case strings.Contains(key, "job:errors:rate30m"):
			slow++
			if !strings.Contains(key, `window="30m"`) {
				t.Errorf("%s lacks the rule's label", key)
			}
			if len(s) < 9 || len(s) > 11 {
				t.Errorf("%s has %d samples over 5h, want one per 30m", key, len(s))
			}
			for i := 1; i < len(s); i++ {
				if s[i].t-s[i-1].t != (30 * time.Minute).Milliseconds() {
					t.Errorf("%s: samples %d apart", key, s[i].t-s[i-1].t)
				}
			}
			// Every sample is avg_over_time of the fast series over (t-30m, t], as the engine
			// computes it from the backfilled fast samples.
			for _, x := range s {
				want, n := 0.0, 0
				for _, y := range fastByJob[jobOf(t, key)] {
					if y.t > x.t-(30*time.Minute).Milliseconds() && y.t <= x.t {
						want += y.f
						n++
					}
				}
				if n == 0 {
					t.Errorf("%s at %d: no fast sample in its window", key, x.t)
					continue
				}
				if want /= float64(n); math.Abs(x.f-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("%s at %d = %v, want the average of the 5m rate over 30m, %v", key, x.t, x.f, want)
				}
				if x.f > 0 {
					nonZero++
				}
			}
		}
	}
	// The comparison above means something only if some errors were recorded: over 5 hours the
	// fleet's controllers fail a few reconciles.
	if nonZero == 0 {
		t.Error("every 30m average is 0: the check compared nothing but zeros")
	}
	// One series per job: 2 controllers, and the exporter and API servers have no reconciles.
	if fast != 2 || slow != 2 {
		t.Errorf("backfilled %d fast and %d slow recorded series, want 2 of each", fast, slow)
	}
}

func TestWithIntervalRewritesTheBaseGroupsOnly(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(src, []byte(`groups:
  - name: fast
    interval: 1m
    rules: [{record: a:b:c, expr: vector(1)}]
  - name: slow
    interval: 30m
    rules: [{record: a:b:d, expr: vector(1)}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rf := mustRuleFile(t, src)
	changed, err := rf.withInterval(filepath.Join(dir, "out.yaml"), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(changed, ",") != "fast" {
		t.Errorf("changed %v, want only the base-interval group", changed)
	}
	out := mustRuleFile(t, filepath.Join(dir, "out.yaml"))
	if got := groupInterval(out.groups[0]); got != 15*time.Second {
		t.Errorf("fast group at %s, want 15s", got)
	}
	if got := groupInterval(out.groups[1]); got != 30*time.Minute {
		t.Errorf("slow group at %s, want its own 30m", got)
	}

	// everyGroup: the slow group keeps its interval under another name, and a copy of it under
	// its name, evaluated every 15s, records and alerts under names nothing reads.
	rf.everyGroup = true
	changed, err = rf.withInterval(filepath.Join(dir, "every.yaml"), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(changed, ",") != "fast,slow" {
		t.Errorf("with everyGroup changed %v, want both groups", changed)
	}
	out = mustRuleFile(t, filepath.Join(dir, "every.yaml"))
	var got []string
	for _, g := range out.groups {
		got = append(got, fmt.Sprintf("%s@%s:%s", g.Name, groupInterval(g), g.Rules[0].Record))
	}
	want := "fast@15s:a:b:c slow@15s:a:b:d" + copySuffix + " slow" + ownIntervalSuffix + "@30m0s:a:b:d"
	if strings.Join(got, " ") != want {
		t.Errorf("with everyGroup the file has %q, want %q", strings.Join(got, " "), want)
	}
	if got := groupIntervalIn(rf, "slow", "15s"); got != 15*time.Second {
		t.Errorf("with everyGroup, the slow group's interval in the 15s phase is %s, want 15s", got)
	}
}

// TestReachesAreTheLongestSpanAGroupReads pins what counts as a group's reach: the lookback of
// an instant selector, a range, an offset on top of either, a subquery's range, and nothing for
// a group without selectors.
func TestReachesAreTheLongestSpanAGroupReads(t *testing.T) {
	src := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(src, []byte(`groups:
  - name: instant
    rules: [{alert: A, expr: up == 0}]
  - name: ranges
    rules:
      - {record: a:b:c, expr: "rate(x_total[5m])"}
      - {alert: B, expr: "up == 1 and on (job) last_over_time(a:b:c[15m]) > 0"}
  - name: offset
    rules: [{record: a:b:d, expr: "x offset 1h"}]
  - name: subquery
    rules: [{record: a:b:e, expr: "max_over_time(rate(x_total[5m])[1h:5m])"}]
  - name: none
    rules: [{record: a:b:f, expr: vector(1)}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mustRuleFile(t, src).reaches()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"instant":  5 * time.Minute,
		"ranges":   15 * time.Minute,
		"offset":   time.Hour + 5*time.Minute,
		"subquery": time.Hour + 5*time.Minute,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reaches = %v, want %v", got, want)
	}
}

// TestCountBackfillReads counts the evaluations whose reach began before the backfill's end,
// for a measured copy and for the group at its own interval alike.
func TestCountBackfillReads(t *testing.T) {
	to := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	runs := func(minutes ...int) []Evaluation {
		var out []Evaluation
		for _, m := range minutes {
			out = append(out, Evaluation{Start: to.Add(time.Duration(m) * time.Minute)})
		}
		return out
	}
	ph := Phase{Groups: []GroupResult{
		{Name: "short", Runs: runs(4, 5, 6, 10)},
		{Name: "long", Runs: runs(6, 14, 15, 16)},
		{Name: "long" + ownIntervalSuffix, Runs: runs(10, 20)},
		{Name: "unknown", Runs: runs(1)},
	}}
	ph.countBackfillReads(map[string]time.Duration{"short": 5 * time.Minute, "long": 15 * time.Minute}, to)
	var got []string
	for _, g := range ph.Groups {
		got = append(got, fmt.Sprintf("%s:%d/%s", g.Name, g.BackfillReads, g.Reach))
	}
	want := "short:1/5m0s long:2/15m0s long" + ownIntervalSuffix + ":1/15m0s unknown:0/"
	if strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}

// TestPrometheusServesTheHeadHistoryFromItsHead starts the real Prometheus on a backfill that
// leaves the newest hour for the head: Prometheus replays the write-ahead log into its head and
// serves the whole history, the hour in the head included.
func TestPrometheusServesTheHeadHistoryFromItsHead(t *testing.T) {
	stack.SkipShort(t)
	f, dir, _, stats := backfillTestFleet(t, 4*time.Hour, time.Hour)
	prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{DataDir: dir, StartTimeout: 2 * time.Minute})
	ctx := context.Background()
	api := newAPIClient(prom.URL())
	if err := checkHead(ctx, api, f, stats); err != nil {
		t.Error(err)
	}
	// Half an hour ago lies in the head, three hours ago in the blocks: up of every target in
	// both, and the recorded 5m rates the SLO ratios read, one per controller.
	for _, q := range []struct {
		query string
		want  int
	}{
		{"count(count_over_time(up[10m] offset 30m))", len(f.Targets)},
		{"count(count_over_time(up[10m] offset 3h))", len(f.Targets)},
		{"count(count_over_time(cluster_namespace_job_controller:controller_runtime_reconcile:rate5m[10m] offset 30m))", 2},
		{"count(count_over_time(cluster_namespace_job_controller:controller_runtime_reconcile:rate5m[10m] offset 3h))", 2},
	} {
		got, err := api.scalarQuery(ctx, q.query)
		if err != nil {
			t.Fatal(err)
		}
		if int(got) != q.want {
			t.Errorf("%s = %v, want %d", q.query, got, q.want)
		}
	}
	// Every series of the history is in the head, replayed from the log.
	families, err := prom.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mf := families["prometheus_tsdb_head_series"]; len(mf.GetMetric()) != 1 || int(metricValue(mf.GetMetric()[0])) != stats.Series {
		t.Errorf("prometheus_tsdb_head_series = %v, want the history's %d series", mf.GetMetric(), stats.Series)
	}
}
