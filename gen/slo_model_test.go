package gen

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestSLOTraceMatchesAStepByStepRecomputation checks the SLO chain model against values
// computed independently, by re-running Prometheus' arithmetic step by step outside Go, for a
// controller reconciling 10 times a second whose reconciles fail at 40% from minute 360 on,
// evaluated every minute, its counters rendered as the generator renders them (from 24000 and
// 60000: far enough above zero that rate() extrapolates both alike).
func TestSLOTraceMatchesAStepByStepRecomputation(t *testing.T) {
	l := Labels{"controller": "backup"}
	series := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(6*time.Hour, 4),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10).Rate(6*time.Hour, 6),
	}
	tr := newSLOTrace(series, time.Minute, 390*time.Minute)
	for _, c := range []struct {
		window string
		at     time.Duration
		want   float64
	}{
		{"5m", 362 * time.Minute, 0.2},
		{"5m", 365 * time.Minute, 0.4},
		{"1h", 383 * time.Minute, 0.14333333333333334},
		{"1h", 384 * time.Minute, 0.15},
		{"30m", 384 * time.Minute, 0.3},
		{"6h", 384 * time.Minute, 0.009824781785657082},
		{"3d", 359 * time.Minute, 0},
	} {
		if got := tr.ratio(c.window, c.at); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s ratio at %s: %v, want %v", c.window, fmtDuration(c.at), got, c.want)
		}
	}
}

// TestSLOTraceCoarseWindowsLagTheFineOnes: after a step, a coarse window's ratio (30-minute
// averages) rises later than a fine one's over a similar span.
func TestSLOTraceCoarseWindowsLagTheFineOnes(t *testing.T) {
	l := Labels{"controller": "backup"}
	series := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(2*time.Hour, 10),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10).Rate(2*time.Hour, 0),
	}
	tr := newSLOTrace(series, time.Minute, 3*time.Hour)
	at := 2*time.Hour + 20*time.Minute
	fine, coarse := tr.ratio("2h", at), tr.ratio("6h", at)
	if !(fine > 0 && coarse > 0 && coarse < fine) {
		t.Errorf("20 minutes into an outage: 2h ratio %v, 6h ratio %v; want both above 0, the 6h one lower", fine, coarse)
	}
}

// Every burn window's ratio is recorded by exactly one SLO group, and the recording groups list
// them in the order of sloFineWindows and sloCoarseWindows.
func TestSLOGroupsRecordEveryWindowOnce(t *testing.T) {
	var got []string
	for _, windows := range [][]string{sloShortGroupWindows, sloLongGroupWindows, sloCoarseGroupWindows, sloDaysGroupWindows} {
		got = append(got, windows...)
	}
	want := append(slices.Clone(sloFineWindows), sloCoarseWindows...)
	if !slices.Equal(got, want) {
		t.Errorf("the SLO groups record the ratios over %v, want each of %v once", got, want)
	}
}

// The ratios over a day and more add day sums (sloDaysSum): their windows are whole days.
func TestSLODaySumWindowsAreWholeDays(t *testing.T) {
	for _, w := range append(slices.Clone(sloCoarseGroupWindows), sloDaysGroupWindows...) {
		if d := parseWindow(w); d < sloDay || d%sloDay != 0 {
			t.Errorf("the ratio over %s adds day sums, but %s is not a whole number of days", w, w)
		}
	}
}
