package benchrules

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	promvalue "github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
)

// queryPiece bounds one range query of the recording-rule backfill, so memory stays bounded
// whatever the history's length.
const queryPiece = 6 * time.Hour

// newEngine returns a PromQL engine configured as Prometheus' defaults are (5m lookback, the
// global evaluation interval as a subquery's default step), without a sample limit: the
// backfill's range queries are long by design.
func newEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:               math.MaxInt32,
		Timeout:                  24 * time.Hour,
		LookbackDelta:            lookbackDelta,
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		NoStepSubqueryIntervalFn: func(int64) int64 { return defaultGroupInterval.Milliseconds() },
		Parser:                   promqlParser,
	})
}

// record evaluates each rule at its group's interval over [from, to) against the history
// (which includes what the rules before it recorded) and adds the results to it, with a staleness
// marker where a series stops, as Prometheus writes one.
func (h *history) record(ctx context.Context, engine *promql.Engine, rules []recordingRule, from, to int64) error {
	byKey := map[string]*storedSeries{}
	for _, s := range h.series {
		if s.recorded {
			byKey[s.labels.String()] = s
		}
	}
	for _, r := range rules {
		step := r.interval.Milliseconds()
		first := (from + step - 1) / step * step
		if first >= to {
			continue
		}
		touched := map[*storedSeries]bool{}
		for start, end := first, int64(0); start < to; start = end + step {
			end = min(start+queryPiece.Milliseconds()-step, to-1)
			end -= (end - start) % step
			q, err := engine.NewRangeQuery(ctx, h, nil, r.expr, time.UnixMilli(start), time.UnixMilli(end), r.interval)
			if err != nil {
				return fmt.Errorf("recording rule %s: %w", r.record, err)
			}
			res := q.Exec(ctx)
			if res.Err != nil {
				q.Close()
				return fmt.Errorf("recording rule %s: %w", r.record, res.Err)
			}
			m, err := res.Matrix()
			if err != nil {
				q.Close()
				return fmt.Errorf("recording rule %s: %w", r.record, err)
			}
			for _, s := range m {
				lb := labels.NewBuilder(s.Metric)
				lb.Set(model.MetricNameLabel, r.record)
				for k, v := range r.labels {
					lb.Set(k, v)
				}
				lset := lb.Labels()
				key := lset.String()
				st, ok := byKey[key]
				if !ok {
					st = &storedSeries{labels: lset, recorded: true}
					byKey[key] = st
					h.series = append(h.series, st)
				}
				for _, p := range s.Floats {
					if n := len(st.ts); n > 0 && p.T <= st.ts[n-1] {
						q.Close()
						return fmt.Errorf("recording rule %s: two rules record %s at %d", r.record, lset, p.T)
					}
					st.ts = append(st.ts, p.T)
					st.vs = append(st.vs, p.F)
				}
				touched[st] = true
			}
			q.Close()
		}
		last := first + (to-1-first)/step*step
		for st := range touched {
			markStale(st, step, first, last)
		}
		h.index()
	}
	return nil
}

// markStale inserts a staleness marker one step after each sample in [first, last] that the
// next evaluation did not follow, as a rule group does for a series its rule stopped returning.
func markStale(s *storedSeries, step, first, last int64) {
	var ts []int64
	var vs []float64
	stale := math.Float64frombits(promvalue.StaleNaN)
	for i, t := range s.ts {
		ts = append(ts, t)
		vs = append(vs, s.vs[i])
		if t < first || t > last || promvalue.IsStaleNaN(s.vs[i]) {
			continue
		}
		if next := t + step; next <= last && (i+1 == len(s.ts) || s.ts[i+1] > next) {
			ts = append(ts, next)
			vs = append(vs, stale)
		}
	}
	s.ts, s.vs = ts, vs
}
