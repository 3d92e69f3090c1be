package benchrules

import (
	"math"
)

// A curve is a value as a closed-form function of time (Unix seconds). The backfill and the live
// targets evaluate the same curves, so history and scrapes join without a seam, and any sample
// can be computed without computing the ones before it.
type curve struct {
	kind curveKind

	// counter: rate per second, starting at 0 at start; the rate swings by ±diurnal over a day
	// (phase in radians) and each noiseCell seconds a jitter of up to jitter×rate×noiseCell is
	// added. diurnal+jitter ≤ 1 keeps the counter monotonic.
	rate, diurnal, phase, jitter float64
	start                        float64

	// gauge: level + amplitude×noise, noise in [0,1) interpolated over noiseCell seconds.
	level, amplitude float64

	// sum: the sum of parts (a histogram's count is the sum of its result counters).
	parts []*curve

	// leader: 1 while floor(t/period) mod replicas == replica, else 0.
	period            float64
	replica, replicas int

	seed      uint64
	noiseCell float64
}

type curveKind uint8

const (
	curveConst curveKind = iota
	curveCounter
	curveGauge
	curveSum
	curveLeader
	curveClock // t itself: a "last seen" timestamp gauge
)

const day = 86400.0

// constant returns a curve of value v.
func constant(v float64) *curve { return &curve{kind: curveConst, level: v} }

// counterCurve returns a counter rising at rate per second from start, with daily swing and jitter.
func counterCurve(rate, start float64, seed uint64) *curve {
	return &curve{
		kind: curveCounter, rate: rate, start: start, seed: seed,
		diurnal: 0.3, jitter: 0.5, noiseCell: 60,
		phase: 2 * math.Pi * unit(seed^0x9e37),
	}
}

// gaugeCurve returns level + amplitude×noise, the noise changing smoothly every cell seconds.
func gaugeCurve(level, amplitude, cell float64, seed uint64) *curve {
	return &curve{kind: curveGauge, level: level, amplitude: amplitude, noiseCell: cell, seed: seed}
}

// sumCurve returns the sum of parts.
func sumCurve(parts ...*curve) *curve { return &curve{kind: curveSum, parts: parts} }

// leaderCurve is 1 for the replica holding the lease: always replica 0 when period is 0, else
// the lease moves to the next replica every period seconds.
func leaderCurve(replica, replicas int, period float64) *curve {
	return &curve{kind: curveLeader, replica: replica, replicas: replicas, period: period}
}

// clockCurve is the time itself, in seconds.
func clockCurve() *curve { return &curve{kind: curveClock} }

// at evaluates the curve at t (Unix seconds).
func (c *curve) at(t float64) float64 {
	switch c.kind {
	case curveConst:
		return c.level
	case curveCounter:
		if t <= c.start || c.rate == 0 {
			return 0
		}
		return c.integral(t) - c.integral(c.start)
	case curveGauge:
		return c.level + c.amplitude*c.noise(t)
	case curveSum:
		var s float64
		for _, p := range c.parts {
			s += p.at(t)
		}
		return s
	case curveLeader:
		if c.period == 0 {
			return b2f(c.replica == 0)
		}
		return b2f(int(math.Floor(t/c.period))%c.replicas == c.replica)
	case curveClock:
		return t
	}
	panic("benchrules: unknown curve kind")
}

// integral is an antiderivative of the counter's rate: rate×(1 + diurnal×sin(ωt+phase)) plus the
// jitter, whose antiderivative is the interpolated noise itself scaled to jitter×rate×cell.
func (c *curve) integral(t float64) float64 {
	const omega = 2 * math.Pi / day
	base := t - c.diurnal/omega*math.Cos(omega*t+c.phase)
	return c.rate * (base + c.jitter*c.noiseCell*c.noise(t))
}

// noise is a value in [0,1) that is random per cell of noiseCell seconds and interpolated
// linearly in between, so counters built on it stay monotonic.
func (c *curve) noise(t float64) float64 {
	x := t / c.noiseCell
	k := math.Floor(x)
	a := unit(mix(c.seed, uint64(int64(k))))
	b := unit(mix(c.seed, uint64(int64(k)+1)))
	return a + (b-a)*(x-k)
}

// mix is splitmix64 over a seed and a cell number.
func mix(seed, k uint64) uint64 {
	z := seed + k*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps a hash to [0,1).
func unit(h uint64) float64 { return float64(mix(h, 0x5851f42d4c957f2d)>>11) / (1 << 53) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// A value turns a curve into a series' value: scaled, and floored for the integer counters
// (reconciles, requests, bucket counts). The bucket counts of one histogram share their count
// curve, each scaled by the share of observations at or below its bound.
type value struct {
	c     *curve
	scale float64
	floor bool
}

func (v value) at(t float64) float64 {
	x := v.c.at(t) * v.scale
	if v.floor {
		return math.Floor(x)
	}
	return x
}

// lognormalCDF is the share of a log-normal distribution (median, sigma of the log) at or
// below x: the latency distributions behind the histograms' buckets.
func lognormalCDF(x, median, sigma float64) float64 {
	if x <= 0 {
		return 0
	}
	return 0.5 * math.Erfc(-(math.Log(x)-math.Log(median))/(sigma*math.Sqrt2))
}

// lognormalMean is the mean of that distribution, which with the count gives a histogram's _sum.
func lognormalMean(median, sigma float64) float64 { return median * math.Exp(sigma*sigma/2) }
