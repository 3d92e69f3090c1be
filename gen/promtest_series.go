package gen

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The input series of generated promtool tests are piecewise-linear functions of time, sampled
// every sampleInterval (a scrape interval): a case says "this counter grows at 30/s, from minute
// 10 at 50/s", and the series is rendered in promtool's expanding notation for as long as the
// case needs, which depends on the configured `for` durations.

// sampleInterval is the scrape interval of every generated input series.
const sampleInterval = time.Minute

// counterStart is the least value generated counters start at. Prometheus does not extrapolate
// a rate to before the time the counter would have been zero, so counters start well above what
// they grow in a sample interval: rate() then extrapolates every counter of a case alike and the
// rates and their ratios are exact.
const counterStart = 1000

// Labels is a label set; the metric name is kept apart.
type Labels map[string]string

// With returns a copy of l with more labels (name, value, name, value, ...); an empty value
// removes the label.
func (l Labels) With(nameValues ...string) Labels {
	out := maps.Clone(l)
	if out == nil {
		out = Labels{}
	}
	for i := 0; i+1 < len(nameValues); i += 2 {
		if nameValues[i+1] == "" {
			delete(out, nameValues[i])
		} else {
			out[nameValues[i]] = nameValues[i+1]
		}
	}
	return out
}

// Only returns the labels of l named in names.
func (l Labels) Only(names ...string) Labels {
	out := Labels{}
	for _, n := range names {
		if v, ok := l[n]; ok {
			out[n] = v
		}
	}
	return out
}

// selector renders metric{labels} with the labels sorted.
func (l Labels) selector(metric string) string {
	var parts []string
	for _, k := range sortedKeys(l) {
		parts = append(parts, k+"="+strconv.Quote(l[k]))
	}
	return metric + "{" + strings.Join(parts, ",") + "}"
}

// Series is one input series of a case.
type Series struct {
	Metric string
	Labels Labels
	segs   []segment2
	// counter series are rendered from an offset above zero (see counterStart).
	counter bool
	// native series are native histograms: each value v is rendered as a histogram of count v
	// (every observation in one bucket), as Prometheus stores a histogram it scrapes with
	// scrape_native_histograms (or converts with convert_classic_histograms_to_nhcb).
	native bool
	from   time.Duration
	until  time.Duration // 0: until the end of the case
}

// segment2 is one linear piece of a series: from At on, the value is Value + PerSample·k for the
// k-th sample after At.
type segment2 struct {
	At        time.Duration
	Value     float64
	PerSample float64
}

// Gauge is a series holding v from the start.
func Gauge(metric string, l Labels, v float64) *Series {
	return &Series{Metric: metric, Labels: l, segs: []segment2{{Value: v}}}
}

// Counter is a counter growing by perSecond from the start.
func Counter(metric string, l Labels, perSecond float64) *Series {
	return &Series{Metric: metric, Labels: l, counter: true, segs: []segment2{{PerSample: perSecond * sampleInterval.Seconds()}}}
}

// NativeHistogram is a native histogram whose count grows by perSecond from the start: the one
// series Prometheus keeps for a histogram it ingests as native, without _bucket, _count and _sum.
func NativeHistogram(metric string, l Labels, perSecond float64) *Series {
	s := Counter(metric, l, perSecond)
	s.native = true
	return s
}

// Set makes a gauge hold v from at on.
func (s *Series) Set(at time.Duration, v float64) *Series {
	s.segs = append(s.segs, segment2{At: at, Value: v})
	return s
}

// Ramp makes a gauge start at v at `at` and change by perMinute every minute.
func (s *Series) Ramp(at time.Duration, v, perMinute float64) *Series {
	s.segs = append(s.segs, segment2{At: at, Value: v, PerSample: perMinute * sampleInterval.Minutes()})
	return s
}

// Rate makes a counter grow by perSecond from at on, continuing from its value at at.
func (s *Series) Rate(at time.Duration, perSecond float64) *Series {
	s.segs = append(s.segs, segment2{At: at, Value: s.valueAt(at), PerSample: perSecond * sampleInterval.Seconds()})
	return s
}

// From makes the series absent before at (a target that appears, a label value that is new).
func (s *Series) From(at time.Duration) *Series {
	s.from = at
	return s
}

// Until makes the series absent from at on (a target that goes away, a metric that disappears).
func (s *Series) Until(at time.Duration) *Series {
	s.until = at
	return s
}

// valueAt is the series' value at sample time t, following the segments declared so far.
func (s *Series) valueAt(t time.Duration) float64 {
	seg := s.segs[0]
	for _, g := range s.segs[1:] {
		if g.At <= t {
			seg = g
		}
	}
	return seg.Value + seg.PerSample*float64((t-seg.At)/sampleInterval)
}

// values renders the series in promtool's expanding notation for the samples at 0, 1m, ... end.
func (s *Series) values(end time.Duration) string {
	var out []string
	gap := func(n int) { // '_xn' is n missing samples
		if n == 1 {
			out = append(out, "_")
		} else if n > 1 {
			out = append(out, fmt.Sprintf("_x%d", n))
		}
	}
	samples := func(d time.Duration) int { return int(d / sampleInterval) }
	last := end
	if s.until > 0 && s.until <= end {
		last = s.until - sampleInterval
	}
	gap(samples(s.from))
	offset := 0.0
	if s.counter {
		offset = counterStart
		for _, g := range s.segs {
			offset = max(offset, 100*g.PerSample)
		}
	}
	segs := slices.Clone(s.segs)
	slices.SortStableFunc(segs, func(a, b segment2) int { return int(a.At - b.At) })
	for i, g := range segs {
		start := max(g.At, s.from)
		stop := last
		if i+1 < len(segs) {
			stop = min(stop, segs[i+1].At-sampleInterval)
		}
		if stop < start {
			continue
		}
		n := samples(stop - start)
		v := offset + g.Value + g.PerSample*float64(samples(start-g.At))
		format := formatValue
		if s.native {
			format = nativeHistogramValue
		}
		switch {
		case g.PerSample == 0:
			out = append(out, fmt.Sprintf("%sx%d", format(v), n))
		case g.PerSample > 0:
			out = append(out, fmt.Sprintf("%s+%sx%d", format(v), format(g.PerSample), n))
		default:
			out = append(out, fmt.Sprintf("%s-%sx%d", format(v), format(-g.PerSample), n))
		}
	}
	if s.until > 0 && s.until <= end {
		out = append(out, "stale")
	}
	return strings.Join(out, " ")
}

// formatValue writes a sample value the way promtool's series notation reads it.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// nativeHistogramValue writes a native histogram of count v, its observations all of 1 (the
// bucket (0.5, 1] at schema 0), in promtool's series notation.
func nativeHistogramValue(v float64) string {
	n := formatValue(v)
	return "{{schema:0 sum:" + n + " count:" + n + " buckets:[" + n + "]}}"
}

// rampRate is what rate(c[window]) reads at sample time t when counter c, sampled every
// sampleInterval, grows by before per second until step and by after from then on: Prometheus
// extrapolates the increase between the first and last sample inside the left-open window to the
// whole window, so a change of rate shows up gradually over the window.
func rampRate(before, after float64, step, t, window time.Duration) float64 {
	n := int(window / sampleInterval) // samples in (t-window, t]
	intervals := n - 1
	k := min(max(int((t-step)/sampleInterval), 0), intervals) // intervals since the step
	return (before*float64(intervals-k) + after*float64(k)) / float64(intervals)
}
