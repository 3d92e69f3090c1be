package gen

import (
	"fmt"
	"math"
	"time"
)

// Building blocks of alert cases. Every case starts healthy; its incident starts at incidentAt,
// after enough history for 5m and 10m windows to be full.

// incidentAt is when the incident of a case starts.
const incidentAt = 10 * time.Minute

// above is a factor that lifts a value above a threshold without landing on a round multiple of
// it: 1 + 1/φ. Incidents are built at threshold·above, so the ramps of their rates cross the
// threshold between two samples, never on one, and float rounding cannot decide a boundary.
const above = 1.6180339887

// margin is the relative distance from a threshold that a computed boundary needs before a case
// relies on it.
const margin = 1e-6

// sampleIndex is how many samples after at the last sample at or before t is.
func sampleIndex(at, t time.Duration) int {
	if t < at {
		return -1
	}
	return int((t - at) / sampleInterval)
}

// crossing returns the first sample time from `from` on at which f(t) > threshold, scanning up to
// limit. It fails when f(t) comes within margin of the threshold, where the float rounding of
// Prometheus and of this computation could disagree.
func (c *caseEnv) crossing(from, limit time.Duration, threshold float64, f func(time.Duration) float64) time.Duration {
	eps := margin * math.Max(math.Abs(threshold), 1e-9)
	for t := from; t <= limit; t += sampleInterval {
		v := f(t)
		if v == 0 && threshold == 0 {
			continue // A counter that does not move has a rate of exactly 0.
		}
		if math.Abs(v-threshold) < eps {
			c.errs = append(c.errs, fmt.Errorf("alert %s: a case's value %g at %s is too close to the threshold %g to pin the boundary", c.a.Key, v, fmtDuration(t), threshold))
			return from
		}
		if v > threshold {
			return t
		}
	}
	c.errs = append(c.errs, fmt.Errorf("alert %s: a case never crosses the threshold %g before %s: its input cannot make the alert fire", c.a.Key, threshold, fmtDuration(limit)))
	return from
}

// crossingExact is crossing for values Prometheus computes exactly (counts of changes, sums of
// small integers): equality with the threshold is a safe "not above".
func (c *caseEnv) crossingExact(from, limit time.Duration, threshold float64, f func(time.Duration) float64) time.Duration {
	for t := from; t <= limit; t += sampleInterval {
		if f(t) > threshold {
			return t
		}
	}
	c.errs = append(c.errs, fmt.Errorf("alert %s: a case never crosses the threshold %g before %s: its input cannot make the alert fire", c.a.Key, threshold, fmtDuration(limit)))
	return from
}

// stepRate is a counter rate that steps from before to after at incidentAt, as rate(...[window])
// reads it at time t.
func stepRate(before, after float64, window time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 { return rampRate(before, after, incidentAt, t, window) }
}

// rateFiring is the firing case of `rate(counter[window]) > threshold` (summed at a level) whose
// counter steps from before to threshold·above per second at incidentAt.
func (c *caseEnv) rateFiring(before, threshold float64, window time.Duration, labels Labels) (after float64, f *Firing) {
	after = threshold*above + before
	if threshold == 0 {
		after = before + 1
	}
	value := stepRate(before, after, window)
	return after, &Firing{At: c.crossing(incidentAt, incidentAt+2*window, threshold, value), Labels: labels, Value: value}
}

// histogram is a classic histogram whose observations arrive at perSecond, a share of them slow
// from the start and shareAfter from `at` on. Slow observations are above every finite bound
// (+Inf only), the others at or under the smallest, so the share above any bucket bound is the
// share of slow observations. le is written as Prometheus formats numbers.
func histogram(metric string, l Labels, bounds []float64, perSecond, share, shareAfter float64, at time.Duration) []*Series {
	var out []*Series
	for _, b := range bounds {
		out = append(out, Counter(metric+"_bucket", l.With("le", formatValue(b)), perSecond*(1-share)).Rate(at, perSecond*(1-shareAfter)))
	}
	return append(out,
		Counter(metric+"_bucket", l.With("le", "+Inf"), perSecond),
		Counter(metric+"_count", l, perSecond))
}

// shareFiring is the firing case of "more than share of the observations above bound": the share
// steps from a healthy tenth of the threshold to between the threshold and 1 at incidentAt.
func (c *caseEnv) shareFiring(share float64, labels Labels) (before, after float64, f *Firing) {
	before, after = share/10, share+(1-share)/above
	value := func(t time.Duration) float64 { return rampRate(before, after, incidentAt, t, 5*time.Minute) }
	return before, after, &Firing{At: c.crossing(incidentAt, incidentAt+10*time.Minute, share, value), Labels: labels, Value: value}
}
