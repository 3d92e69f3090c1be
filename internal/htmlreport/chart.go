package htmlreport

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// TimeScale maps a time range onto the horizontal pixels [X0, X1].
type TimeScale struct {
	From, To time.Time
	X0, X1   float64
}

// X is t's horizontal position, clamped to the scale.
func (s TimeScale) X(t time.Time) float64 {
	span := s.To.Sub(s.From)
	if span <= 0 {
		return (s.X0 + s.X1) / 2
	}
	f := float64(t.Sub(s.From)) / float64(span)
	return s.X0 + math.Max(0, math.Min(1, f))*(s.X1-s.X0)
}

// tickSteps are the steps a time axis may use: the first that gives at most maxTicks ticks.
var tickSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour,
}

const maxTicks = 8

// Ticks are the axis' tick times, on multiples of a round step.
func (s TimeScale) Ticks() ([]time.Time, time.Duration) {
	span := s.To.Sub(s.From)
	step := tickSteps[len(tickSteps)-1]
	for _, st := range tickSteps {
		if span/st < maxTicks {
			step = st
			break
		}
	}
	for span/step >= maxTicks {
		step *= 2
	}
	var out []time.Time
	for t := s.From.Truncate(step); !t.After(s.To); t = t.Add(step) {
		if !t.Before(s.From) {
			out = append(out, t)
		}
	}
	return out, step
}

// TickLabel formats a tick for its step, in UTC.
func TickLabel(t time.Time, step time.Duration) string {
	t = t.UTC()
	switch {
	case step < time.Second:
		return t.Format("15:04:05.000")
	case step < time.Minute:
		return t.Format("15:04:05")
	case step < 24*time.Hour:
		return t.Format("15:04")
	}
	return t.Format("Jan 2")
}

// Stamp formats a time for a reader, in UTC, to the millisecond.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

// Axis draws the time axis along y: a line, ticks with labels, and light grid lines up to top.
func (w *Writer) Axis(s TimeScale, y, top float64) {
	ticks, step := s.Ticks()
	w.Rawf("<g class=\"axis\" aria-hidden=\"true\"><line class=\"ax\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", Coord(s.X0), Coord(y), Coord(s.X1), Coord(y))
	for _, t := range ticks {
		x := Coord(s.X(t))
		w.Rawf("<line class=\"grid\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/><text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>",
			x, Coord(top), x, Coord(y), x, Coord(y+13), Esc(TickLabel(t, step)))
	}
	w.Raw("</g>\n")
}

// Buckets are counts over equal time buckets: bucket i covers [Start+i·Width, Start+(i+1)·Width).
type Buckets struct {
	Start time.Time
	Width time.Duration
	// Rows are the series, each with its label and its counts.
	Rows []BucketRow
}

// BucketRow is one series of counts.
type BucketRow struct {
	Label  string
	Counts []uint32
}

// End is the end of the last bucket.
func (b Buckets) End(n int) time.Time { return b.Start.Add(time.Duration(n) * b.Width) }

// RateRows draws small multiples: one bar chart per row, each scaled to its own peak, sharing
// the time axis, the counts shown as rates per second (unit names them, e.g. "writes/s"). The
// figure's text alternative gives each row's total, peak and when.
func (w *Writer) RateRows(id, caption, unit string, b Buckets) {
	n := 0
	for _, r := range b.Rows {
		n = max(n, len(r.Counts))
	}
	if n == 0 || len(b.Rows) == 0 {
		return
	}
	const width, left, right, rowH, gap = 940.0, 250.0, 10.0, 34.0, 6.0
	height := float64(len(b.Rows))*(rowH+gap) + 22
	s := TimeScale{From: b.Start, To: b.End(n), X0: left, X1: width - right}
	secs := b.Width.Seconds()
	var desc []string
	w.Rawf("<figure id=\"%s\">\n<svg role=\"img\" aria-labelledby=\"%s-t %s-d\" viewBox=\"0 0 %s %s\" width=\"%s\" height=\"%s\">",
		Esc(id), Esc(id), Esc(id), Num(width), Coord(height), Num(width), Coord(height))
	w.Rawf("<title id=\"%s-t\">%s</title>", Esc(id), Esc(caption))
	bw := (s.X1 - s.X0) / float64(n)
	for i, r := range b.Rows {
		top := float64(i) * (rowH + gap)
		var total uint64
		peak, at := uint32(0), 0
		for j, c := range r.Counts {
			total += uint64(c)
			if c > peak {
				peak, at = c, j
			}
		}
		label := r.Label
		if len(label) > 40 {
			label = "…" + label[len(label)-39:]
		}
		w.Rawf("<g class=\"row\" data-label=\"%s\" data-total=\"%d\"><rect class=\"lane-bg\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>",
			Esc(r.Label), total, Coord(s.X0), Coord(top), Coord(s.X1-s.X0), Num(rowH))
		w.Rawf("<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text><text x=\"%s\" y=\"%s\" text-anchor=\"end\" class=\"muted\">peak %s</text>",
			Coord(left-6), Coord(top+14), Esc(label), Coord(left-6), Coord(top+28), Esc(rate(float64(peak)/secs)+" "+unit))
		if peak > 0 {
			for j, c := range r.Counts {
				if c == 0 {
					continue
				}
				h := float64(c) / float64(peak) * (rowH - 2)
				w.Rawf("<rect class=\"bar\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>",
					Coord(s.X0+float64(j)*bw), Coord(top+rowH-h), Coord(math.Max(bw-0.3, 0.6)), Coord(h))
			}
		}
		w.Raw("</g>\n")
		d := fmt.Sprintf("%s: %d in all", r.Label, total)
		if peak > 0 {
			d += fmt.Sprintf(", at most %s %s (from %s)", rate(float64(peak)/secs), unit, Stamp(b.Start.Add(time.Duration(at)*b.Width)))
		}
		desc = append(desc, d)
	}
	w.Axis(s, float64(len(b.Rows))*(rowH+gap), 0)
	w.Rawf("<desc id=\"%s-d\">%s</desc></svg>\n", Esc(id), Esc(strings.Join(desc, "; ")+"."))
	w.Rawf("<figcaption>%s. Each bar is %s; each row is scaled to its own peak.</figcaption>\n</figure>\n", Esc(caption), Esc(Duration(b.Width)))
}

// rate formats a per-second rate with up to three significant digits.
func rate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// Duration formats a duration the short way: 250ms, 15s, 5m, 2h30m.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return strings.TrimSuffix(d.Round(time.Millisecond).String(), ".000s")
	}
	s := d.Round(time.Second).String() // 1h2m3s, 10m0s, 2h0m0s
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Point is one value of a line.
type Point struct {
	T time.Time
	V float64
}

// Line is one series of a line chart.
type Line struct {
	Label  string
	Points []Point
}

// LineChart is a chart of lines over a time range, with an optional threshold and the stretch
// during which a condition held.
type LineChart struct {
	ID, Caption string
	From, To    time.Time
	Lines       []Line
	// Threshold, when set, is drawn as a dashed line.
	Threshold *float64
	// HeldFrom and HeldTo, when set, shade the stretch during which the condition held.
	HeldFrom, HeldTo time.Time
	// Format formats a value of the unit for the axis and the text alternative.
	Format func(float64) string
}

// maxLines bounds the lines of one chart; the rest are named in the text alternative.
const maxLines = 4

// LineChart writes the chart as a figure with its text alternative.
func (w *Writer) LineChart(c LineChart) {
	const width, left, right, top, height = 940.0, 70.0, 10.0, 8.0, 150.0
	bottom := height - 22
	lines := c.Lines
	if len(lines) > maxLines {
		lines = lines[:maxLines]
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		for _, p := range l.Points {
			if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
				lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
			}
		}
	}
	if c.Threshold != nil {
		lo, hi = math.Min(lo, *c.Threshold), math.Max(hi, *c.Threshold)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	lo = math.Min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	hi += (hi - lo) * 0.05
	y := func(v float64) float64 { return bottom - (v-lo)/(hi-lo)*(bottom-top) }
	s := TimeScale{From: c.From, To: c.To, X0: left, X1: width - right}
	format := c.Format
	if format == nil {
		format = func(v float64) string { return fmt.Sprintf("%.3g", v) }
	}
	w.Rawf("<figure id=\"%s\">\n<svg role=\"img\" aria-labelledby=\"%s-t %s-d\" viewBox=\"0 0 %s %s\" width=\"%s\" height=\"%s\">",
		Esc(c.ID), Esc(c.ID), Esc(c.ID), Num(width), Num(height), Num(width), Num(height))
	w.Rawf("<title id=\"%s-t\">%s</title>", Esc(c.ID), Esc(c.Caption))
	if !c.HeldFrom.IsZero() {
		x0, x1 := s.X(c.HeldFrom), s.X(c.HeldTo)
		w.Rawf("<rect class=\"held\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"><title>condition held</title></rect>",
			Coord(x0), Num(top), Coord(math.Max(x1-x0, 1.5)), Coord(bottom-top))
	}
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		w.Rawf("<line class=\"grid\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/><text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text>",
			Coord(left), Coord(y(v)), Coord(s.X1), Coord(y(v)), Coord(left-4), Coord(y(v)+4), Esc(format(v)))
	}
	if c.Threshold != nil {
		w.Rawf("<line class=\"thr\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"><title>threshold %s</title></line>",
			Coord(left), Coord(y(*c.Threshold)), Coord(s.X1), Coord(y(*c.Threshold)), Esc(format(*c.Threshold)))
	}
	var desc []string
	for i, l := range lines {
		var b strings.Builder
		pen := false
		peak, at := math.Inf(-1), time.Time{}
		for _, p := range l.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				pen = false
				continue
			}
			if p.V > peak {
				peak, at = p.V, p.T
			}
			if pen {
				b.WriteByte('L')
			} else {
				b.WriteByte('M')
			}
			b.WriteString(Coord(s.X(p.T)))
			b.WriteByte(',')
			b.WriteString(Coord(y(p.V)))
			pen = true
		}
		w.Rawf("<path class=\"s%d\" data-label=\"%s\" data-points=\"%d\" d=\"%s\"/>", i%4, Esc(l.Label), len(l.Points), b.String())
		d := l.Label + ": no data"
		if !math.IsInf(peak, -1) {
			last := l.Points[len(l.Points)-1]
			d = fmt.Sprintf("%s: peak %s at %s, last %s at %s", l.Label, format(peak), Stamp(at), format(last.V), Stamp(last.T))
		}
		desc = append(desc, d)
	}
	if len(c.Lines) > len(lines) {
		var rest []string
		for _, l := range c.Lines[len(lines):] {
			rest = append(rest, l.Label)
		}
		desc = append(desc, fmt.Sprintf("%d more series not drawn: %s", len(rest), strings.Join(rest, ", ")))
	}
	w.Axis(s, bottom, top)
	w.Rawf("<desc id=\"%s-d\">%s</desc></svg>\n<figcaption>", Esc(c.ID), Esc(strings.Join(desc, "; ")+"."))
	for i, l := range lines {
		w.Rawf("<svg class=\"key\" width=\"26\" height=\"10\" style=\"display:inline\" aria-hidden=\"true\"><line class=\"s%d\" x1=\"0\" y1=\"5\" x2=\"26\" y2=\"5\"/></svg> %s ", i%4, Esc(l.Label))
	}
	if c.Threshold != nil {
		w.Rawf("<svg class=\"key\" width=\"26\" height=\"10\" style=\"display:inline\" aria-hidden=\"true\"><line class=\"thr\" x1=\"0\" y1=\"5\" x2=\"26\" y2=\"5\"/></svg> threshold %s ", Esc(format(*c.Threshold)))
	}
	if !c.HeldFrom.IsZero() {
		w.Raw("· shaded: while the condition held")
	}
	w.Raw("</figcaption>\n</figure>\n")
}
