package diagnose

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// point is one value of a series.
type point struct {
	t time.Time
	v float64
}

// series is one series of a range query: its labels and its points in time order.
type series struct {
	labels map[string]string
	points []point
}

func fromMatrix(m model.Matrix) []series {
	out := make([]series, 0, len(m))
	for _, s := range m {
		l := make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			l[string(k)] = string(v)
		}
		ps := make([]point, 0, len(s.Values))
		for _, p := range s.Values {
			ps = append(ps, point{p.Timestamp.Time(), float64(p.Value)})
		}
		out = append(out, series{labels: l, points: ps})
	}
	sort.Slice(out, func(i, j int) bool { return labelKey(out[i].labels) < labelKey(out[j].labels) })
	return out
}

// at returns the value at t: the last point at or before t, if it is less than a step old.
func (s series) at(t time.Time, step time.Duration) (float64, bool) {
	i := sort.Search(len(s.points), func(i int) bool { return s.points[i].t.After(t) }) - 1
	if i < 0 || t.Sub(s.points[i].t) >= step {
		return 0, false
	}
	return s.points[i].v, true
}

// peak is the largest finite value of the series.
func (s series) peak() float64 {
	p := math.Inf(-1)
	for _, x := range s.points {
		if !math.IsNaN(x.v) && !math.IsInf(x.v, 0) {
			p = max(p, x.v)
		}
	}
	return p
}

// lastRun returns the first and last time of the series' last uninterrupted stretch: points
// less than 1.5 steps apart.
func (s series) lastRun(step time.Duration) (first, last time.Time) {
	n := len(s.points)
	if n == 0 {
		return time.Time{}, time.Time{}
	}
	last = s.points[n-1].t
	first = last
	for i := n - 2; i >= 0; i-- {
		if first.Sub(s.points[i].t) > step*3/2 {
			break
		}
		first = s.points[i].t
	}
	return first, last
}

// labelKey is a stable string form of a label set.
func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(l[k])
		b.WriteByte(',')
	}
	return b.String()
}

// matches reports whether series labels l agree with ref: every label both have (with a
// non-empty value) has the same value, and they share at least one.
func matches(l, ref map[string]string) bool {
	shared := false
	for k, v := range ref {
		if v == "" {
			continue
		}
		if w, ok := l[k]; ok && w != "" {
			if w != v {
				return false
			}
			shared = true
		}
	}
	return shared
}
