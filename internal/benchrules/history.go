package benchrules

import (
	"context"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// history is the backfilled past: every series the targets expose, the up series Prometheus
// writes per target, and the recorded series later rules read over a range, in [from, to).
// It is both what the blocks are written from and a storage.Queryable for the PromQL engine
// that computes the recorded series, so both see the same samples.
type history struct {
	from, to int64 // milliseconds, [from, to)
	interval int64 // scrape interval, milliseconds
	series   []*storedSeries
	byName   map[string][]*storedSeries
}

// storedSeries is one series of the history: scraped (a value on its target's sample grid) or
// recorded (samples computed by a recording rule).
type storedSeries struct {
	labels labels.Labels
	v      value
	phase  int64 // offset of the target's grid, milliseconds
	// recorded series only:
	recorded bool
	ts       []int64
	vs       []float64
}

// newHistory holds the fleet's scraped series (and up) over [from, to).
func newHistory(f *Fleet, from, to time.Time) *history {
	h := &history{from: from.UnixMilli(), to: to.UnixMilli(), interval: f.Config.ScrapeInterval.Milliseconds()}
	for _, t := range f.Targets {
		phase := t.Phase.Milliseconds()
		up := labels.NewBuilder(t.Labels).Set(model.MetricNameLabel, "up").Labels()
		h.series = append(h.series, &storedSeries{labels: up, v: value{c: constant(1), scale: 1}, phase: phase})
		for _, fam := range t.Families {
			for _, s := range fam.Series {
				h.series = append(h.series, &storedSeries{labels: s.Labels, v: s.v, phase: phase})
			}
		}
	}
	h.index()
	return h
}

// index sorts the series by labels, as blocks store them, and indexes them by name.
func (h *history) index() {
	sort.Slice(h.series, func(i, j int) bool { return labels.Compare(h.series[i].labels, h.series[j].labels) < 0 })
	h.byName = map[string][]*storedSeries{}
	for _, s := range h.series {
		n := s.labels.Get(model.MetricNameLabel)
		h.byName[n] = append(h.byName[n], s)
	}
}

// samples returns the series' samples in [mint, maxt), reusing ts and vs.
func (s *storedSeries) samples(h *history, mint, maxt int64, c *curveCache, ts []int64, vs []float64) ([]int64, []float64) {
	ts, vs = ts[:0], vs[:0]
	mint, maxt = max(mint, h.from), min(maxt, h.to)
	if s.recorded {
		i := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] >= mint })
		j := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] >= maxt })
		return append(ts, s.ts[i:j]...), append(vs, s.vs[i:j]...)
	}
	for t := h.gridFrom(s.phase, mint); t < maxt; t += h.interval {
		ts = append(ts, t)
	}
	return ts, s.v.fill(ts, vs, c)
}

// gridFrom is the first time of a grid with the given phase at or after t.
func (h *history) gridFrom(phase, t int64) int64 {
	k := (t - phase + h.interval - 1) / h.interval
	if t-phase < 0 {
		k = -((phase - t) / h.interval)
	}
	return phase + k*h.interval
}

// fill appends the value at each of ts (milliseconds) to vs, reusing the cache for the curves
// several series share (a histogram's buckets all scale one count).
func (v value) fill(ts []int64, vs []float64, c *curveCache) []float64 {
	base := c.values(v.c, ts)
	for _, x := range base {
		x *= v.scale
		if v.floor {
			x = math.Floor(x)
		}
		vs = append(vs, x)
	}
	return vs
}

// curveCache keeps the last few curves evaluated over one time grid. Series are written in label
// order, which keeps a target's buckets of one histogram (and its result counters) together, so a
// few entries catch nearly every reuse.
type curveCache struct {
	entries [32]cacheEntry
	next    int
}

type cacheEntry struct {
	c      *curve
	first  int64
	n      int
	values []float64
}

func (cc *curveCache) values(c *curve, ts []int64) []float64 {
	if len(ts) == 0 {
		return nil
	}
	for i := range cc.entries {
		e := &cc.entries[i]
		if e.c == c && e.first == ts[0] && e.n == len(ts) {
			return e.values
		}
	}
	var out []float64
	if c.kind == curveSum {
		out = make([]float64, len(ts))
		for _, p := range c.parts {
			for i, x := range cc.values(p, ts) {
				out[i] += x
			}
		}
	} else {
		out = make([]float64, len(ts))
		for i, t := range ts {
			out[i] = c.at(float64(t) / 1000)
		}
	}
	e := &cc.entries[cc.next]
	cc.next = (cc.next + 1) % len(cc.entries)
	*e = cacheEntry{c: c, first: ts[0], n: len(ts), values: out}
	return out
}

// Querier implements storage.Queryable.
func (h *history) Querier(mint, maxt int64) (storage.Querier, error) {
	return &historyQuerier{h: h, mint: mint, maxt: maxt}, nil
}

type historyQuerier struct {
	h          *history
	mint, maxt int64
	cache      curveCache
}

func (q *historyQuerier) Select(_ context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	candidates := q.h.series
	for _, m := range ms {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			candidates = q.h.byName[m.Value]
		}
	}
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	var out []storage.Series
	for _, s := range candidates {
		if matchesAll(s.labels, ms) {
			out = append(out, &historySeries{h: q.h, s: s, mint: mint, maxt: maxt, cache: &q.cache})
		}
	}
	return &seriesSet{series: out, i: -1}
}

func matchesAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

func (q *historyQuerier) LabelValues(_ context.Context, name string, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]bool{}
	for _, s := range q.h.series {
		if v := s.labels.Get(name); v != "" && matchesAll(s.labels, ms) {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil, nil
}

func (q *historyQuerier) LabelNames(_ context.Context, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]bool{}
	for _, s := range q.h.series {
		if matchesAll(s.labels, ms) {
			s.labels.Range(func(l labels.Label) { seen[l.Name] = true })
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil, nil
}

func (q *historyQuerier) Close() error { return nil }

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// historySeries is a selected series. Its iterator encodes the selected range as XOR chunks and
// iterates those: the engine reads the samples through the same decoder as from a block.
type historySeries struct {
	h          *history
	s          *storedSeries
	mint, maxt int64
	cache      *curveCache
}

func (s *historySeries) Labels() labels.Labels { return s.s.labels }

// maxChunkSamples stays below the XOR chunk's 16-bit sample count.
const maxChunkSamples = 1 << 15

func (s *historySeries) Iterator(chunkenc.Iterator) chunkenc.Iterator {
	ts, vs := s.s.samples(s.h, s.mint, s.maxt+1, s.cache, nil, nil)
	var its []chunkenc.Iterator
	for i := 0; i < len(ts); i += maxChunkSamples {
		j := min(i+maxChunkSamples, len(ts))
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			panic(err) // a new XOR chunk always has an appender
		}
		for k := i; k < j; k++ {
			app.Append(0, ts[k], vs[k])
		}
		its = append(its, c.Iterator(nil))
	}
	switch len(its) {
	case 0:
		return chunkenc.NewNopIterator()
	case 1:
		return its[0]
	}
	return storage.ChainSampleIteratorFromIterators(nil, its)
}
