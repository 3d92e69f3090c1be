package benchrules

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// tailStats relates a phase's slow evaluations to what else ran meanwhile: an evaluation is slow
// when it took more than twice its group's median; it overlapped a group when another group's
// evaluation ran during some part of it, a garbage collection cycle when one of Prometheus'
// did. Each count of slow evaluations reads against the same count over all evaluations.
type tailStats struct {
	Evaluations, Overlapped, InGC  int
	Slow, SlowOverlapped, SlowInGC int
	SlowGroups                     []string // groups with a slow evaluation, sorted
	// GCCycles and GCShare: the phase's garbage collection cycles and the share of the phase
	// they covered.
	GCCycles int
	GCShare  float64
}

// span is one evaluation of one group, as a wall-clock interval.
type span struct {
	group      int
	start, end time.Time
	slow       bool
}

func phaseTails(ph Phase) tailStats {
	var spans []span
	slowGroups := map[string]bool{}
	for gi, g := range ph.Groups {
		for _, r := range g.Runs {
			slow := r.Seconds > 2*g.Seconds.P50
			if slow {
				slowGroups[g.Name] = true
			}
			spans = append(spans, span{group: gi, start: r.Start, end: r.Start.Add(seconds(r.Seconds)), slow: slow})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	t := tailStats{GCCycles: len(ph.GCCycles)}
	for i, s := range spans {
		overlapped := false
		// Earlier starts overlap s when they end after it starts; later ones when they start
		// before it ends. Evaluations last milliseconds: a minute back is far enough.
		for j := i - 1; j >= 0 && !overlapped && s.start.Sub(spans[j].start) < time.Minute; j-- {
			overlapped = spans[j].group != s.group && spans[j].end.After(s.start)
		}
		for j := i + 1; j < len(spans) && !overlapped && spans[j].start.Before(s.end); j++ {
			overlapped = spans[j].group != s.group
		}
		inGC := slices.ContainsFunc(ph.GCCycles, func(c GCCycle) bool { return c.Start.Before(s.end) && c.end().After(s.start) })
		t.Evaluations++
		t.Overlapped += b2i(overlapped)
		t.InGC += b2i(inGC)
		if s.slow {
			t.Slow++
			t.SlowOverlapped += b2i(overlapped)
			t.SlowInGC += b2i(inGC)
		}
	}
	for name := range slowGroups {
		t.SlowGroups = append(t.SlowGroups, name)
	}
	slices.Sort(t.SlowGroups)
	if wall := ph.End.Sub(ph.Start); wall > 0 {
		var covered time.Duration
		for _, c := range ph.GCCycles {
			from, to := maxTime(c.Start, ph.Start), minTime(c.end(), ph.End)
			if to.After(from) {
				covered += to.Sub(from)
			}
		}
		t.GCShare = covered.Seconds() / wall.Seconds()
	}
	return t
}

// write describes the tails in a paragraph.
func (t tailStats) write(b *strings.Builder) {
	if t.Evaluations == 0 {
		return
	}
	fmt.Fprintf(b, "Tails: %d of %d evaluations took more than twice their group's median (in %d groups). %s ran during one of Prometheus' %d garbage collection cycles, which covered %.1f %% of the phase (%s of all evaluations); %s while another group was evaluated (%s of all).\n\n",
		t.Slow, t.Evaluations, len(t.SlowGroups), ofCount(t.SlowInGC, t.Slow), t.GCCycles, 100*t.GCShare,
		ofCount(t.InGC, t.Evaluations), ofCount(t.SlowOverlapped, t.Slow), ofCount(t.Overlapped, t.Evaluations))
}

// ofCount writes "3 of 20 (15 %)".
func ofCount(n, of int) string {
	if of == 0 {
		return "0 of 0"
	}
	return fmt.Sprintf("%d of %d (%.0f %%)", n, of, 100*float64(n)/float64(of))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
