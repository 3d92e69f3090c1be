package gen

import (
	"math"
	"slices"
	"time"
)

// The SLO rules record each error ratio from recorded series (recording_slo.go), so when a
// burn-rate alert starts to hold depends on the whole chain, not on one rate(). sloTrace follows
// that chain evaluation by evaluation, as promtool runs it, for the input series of one
// controller, so that the generated tests pin the exact evaluation at which a condition first
// holds.
//
// promtool evaluates every group at the test's evaluation interval whatever the group's own
// interval says: in the tests the coarse group records every evaluation, not every
// sloCoarseInterval. The tests therefore pin the chain's arithmetic and the burn-rate
// thresholds, not the coarse group's production cadence (see recording_slo.go for what that
// cadence changes).

// sloTrace is what the SLO chain records for one controller at each evaluation 0, eval, 2·eval...
type sloTrace struct {
	eval time.Duration
	// err5 and tot5 are the 5m error and reconcile rates (NaN: not recorded); err30 and tot30
	// their averages over sloCoarseInterval.
	err5, tot5, err30, tot30 []float64
	// Prefix sums (over present samples) of the four series, for window sums.
	sErr5, sTot5, sErr30, sTot30 []float64
	// sampled says whether recSampledControllers is recorded at each evaluation: whether any
	// controller's rate is.
	sampled []bool
}

// newSLOTrace evaluates the chain on series (controller_runtime_reconcile_total of one
// controller, one series per result and replica, and its workload's rest_client_requests_total,
// whose conflicts leave errors out) until limit.
func newSLOTrace(series []*Series, eval, limit time.Duration) *sloTrace {
	return newSLOTraceAmong(series, nil, eval, limit)
}

// newSLOTraceAmong is newSLOTrace with others, the reconcile series of other controllers: they
// do not change this controller's rates, but the count of sampled controllers is recorded while
// any of them is there.
func newSLOTraceAmong(series, others []*Series, eval, limit time.Duration) *sloTrace {
	n := int(limit/eval) + 1
	tr := &sloTrace{eval: eval}
	for k := range n {
		t := time.Duration(k) * eval
		errRate, totRate := math.NaN(), math.NaN()
		for _, s := range series {
			if s.Metric != "controller_runtime_reconcile_total" {
				continue
			}
			r, ok := s.rateAt(t, 5*time.Minute)
			if !ok {
				continue
			}
			totRate = addPresent(totRate, r)
			if s.Labels["result"] == "error" {
				errRate = addPresent(errRate, r)
			}
		}
		if math.IsNaN(totRate) || math.IsNaN(errRate) {
			// The error-rate recording has no series, and the ratios divide by nothing.
			errRate, totRate = math.NaN(), math.NaN()
		}
		errRate = exceptConflicts(errRate, series, t)
		tr.err5 = append(tr.err5, errRate)
		tr.tot5 = append(tr.tot5, totRate)
		tr.sampled = append(tr.sampled, !math.IsNaN(totRate) || slices.ContainsFunc(others, func(s *Series) bool {
			_, ok := s.rateAt(t, 5*time.Minute)
			return ok
		}))
	}
	tr.sErr5, tr.sTot5 = prefixSums(tr.err5), prefixSums(tr.tot5)
	for k := range n {
		evaluated := tr.evaluations(tr.sampled, k, sloCoarseInterval)
		tr.err30 = append(tr.err30, tr.windowSum(tr.sErr5, tr.err5, k, sloCoarseInterval)/float64(evaluated))
		tr.tot30 = append(tr.tot30, tr.windowSum(tr.sTot5, tr.tot5, k, sloCoarseInterval)/float64(evaluated))
	}
	tr.sErr30, tr.sTot30 = prefixSums(tr.err30), prefixSums(tr.tot30)
	return tr
}

// evaluations is how many evaluations of the left-open window ending at evaluation k recorded
// a count of controllers (marks: sampled or sampledCoarse). promtool evaluates every group at
// every evaluation.
func (tr *sloTrace) evaluations(marks []bool, k int, window time.Duration) int {
	n := 0
	for i := k; i >= 0 && time.Duration(k-i)*tr.eval < window; i-- {
		if marks[i] {
			n++
		}
	}
	return n
}

func addPresent(sum, v float64) float64 {
	if math.IsNaN(sum) {
		return v
	}
	return sum + v
}

// avgOver is avg_over_time(v[window]) at evaluation k: the mean of the present samples in the
// left-open window.
func (tr *sloTrace) avgOver(v []float64, k int, window time.Duration) float64 {
	sum, n := 0.0, 0
	for i := k; i >= 0 && time.Duration(k-i)*tr.eval < window; i-- {
		if !math.IsNaN(v[i]) {
			sum += v[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func prefixSums(v []float64) []float64 {
	out := make([]float64, len(v)+1)
	for i, x := range v {
		out[i+1] = out[i]
		if !math.IsNaN(x) {
			out[i+1] += x
		}
	}
	return out
}

// windowSum is sum_over_time over the left-open window ending at evaluation k (NaN when the
// window holds no sample).
func (tr *sloTrace) windowSum(prefix, v []float64, k int, window time.Duration) float64 {
	first := k - int((window-1)/tr.eval) // evaluations at k·eval - t < window
	first = max(first, 0)
	if !slices.ContainsFunc(v[first:k+1], func(x float64) bool { return !math.IsNaN(x) }) {
		return math.NaN()
	}
	return prefix[k+1] - prefix[first]
}

// ratio is the error ratio the SLO rules record over window at time t (an evaluation time).
func (tr *sloTrace) ratio(window string, t time.Duration) float64 {
	k := int(t / tr.eval)
	if k < 0 || k >= len(tr.err5) {
		return math.NaN()
	}
	switch sloSource(window) {
	case sloInstant:
		return share(tr.err5[k], tr.tot5[k])
	case sloFine:
		w := parseWindow(window)
		return share(tr.windowSum(tr.sErr5, tr.err5, k, w), tr.windowSum(tr.sTot5, tr.tot5, k, w))
	default:
		w := parseWindow(window)
		return share(tr.windowSum(tr.sErr30, tr.err30, k, w), tr.windowSum(tr.sTot30, tr.tot30, k, w))
	}
}

// failed is the failed reconciles over window at time t, as sloFailedRef reads them: the error
// rates (fine, or coarse averages) summed over the window times the spacing of their group's
// clock, which promtool records at every evaluation from the first on; nothing (NaN) while the
// window holds one evaluation.
func (tr *sloTrace) failed(window string, t time.Duration) float64 {
	k := int(t / tr.eval)
	if k < 1 || k >= len(tr.err5) {
		return math.NaN()
	}
	v, prefix := tr.err5, tr.sErr5
	if sloSource(window) == sloCoarse {
		v, prefix = tr.err30, tr.sErr30
	}
	w := parseWindow(window)
	if w <= tr.eval {
		return math.NaN()
	}
	return tr.windowSum(prefix, v, k, w) * tr.eval.Seconds()
}

// failedOverWholeWindow is the most failed reconciles any condition's long window holds at time
// t read as a mean over the window times the window's length, whatever the controller's age: what
// the failed reconciles were before they were counted from the group's evaluations.
func (tr *sloTrace) failedOverWholeWindow(conds []burnCondition, t time.Duration) float64 {
	k := int(t / tr.eval)
	most := 0.0
	for _, cond := range conds {
		v := tr.err5
		if sloSource(cond.long) == sloCoarse {
			v = tr.err30
		}
		w := parseWindow(cond.long)
		if f := tr.avgOver(v, k, w) * w.Seconds(); f > most {
			most = f
		}
	}
	return most
}

// share is errors / reconciles capped at 1, as errorShare records it (clamp_max keeps NaN).
func share(errors, reconciles float64) float64 {
	r := errors / reconciles
	if r > 1 {
		return 1
	}
	return r
}

// rateAt is rate(s[window]) at time t as Prometheus computes it (promql's extrapolatedRate for a
// counter without resets), and false where it has no value.
func (s *Series) rateAt(t, window time.Duration) (float64, bool) {
	type point struct {
		t time.Duration
		v float64
	}
	var pts []point
	for ts := (t - window).Truncate(sampleInterval); ts <= t; ts += sampleInterval {
		if ts <= t-window || ts < 0 {
			continue
		}
		if v, ok := s.sampleAt(ts); ok {
			pts = append(pts, point{ts, v})
		}
	}
	if len(pts) < 2 {
		return 0, false
	}
	first, last := pts[0], pts[len(pts)-1]
	result := last.v - first.v
	for i := 1; i < len(pts); i++ {
		if pts[i].v < pts[i-1].v {
			result += pts[i-1].v
		}
	}
	toStart := (first.t - (t - window)).Seconds()
	toEnd := (t - last.t).Seconds()
	sampled := (last.t - first.t).Seconds()
	avg := sampled / float64(len(pts)-1)
	threshold := avg * 1.1
	if toStart >= threshold {
		toStart = avg / 2
	}
	toZero := toStart
	if result > 0 && first.v >= 0 {
		toZero = sampled * (first.v / result)
	}
	toStart = min(toStart, toZero)
	if toEnd >= threshold {
		toEnd = avg / 2
	}
	return result * (sampled + toStart + toEnd) / sampled / window.Seconds(), true
}

// sampleAt is the value promtool loads for the series at sample time t (a multiple of
// sampleInterval), and false where the series has no sample.
func (s *Series) sampleAt(t time.Duration) (float64, bool) {
	if t < s.from || (s.until > 0 && t >= s.until) {
		return 0, false
	}
	offset := 0.0
	if s.counter {
		offset = counterStart
		for _, g := range s.segs {
			offset = max(offset, 100*g.PerSample)
		}
	}
	return offset + s.valueAt(t), true
}
