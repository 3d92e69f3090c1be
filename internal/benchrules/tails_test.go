package benchrules

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPhaseTails(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Medians 10 ms. Group a's run at 15,000 is slow (30 ms) and overlaps b's run at 15,020;
	// b's run at 30,000 is slow (40 ms, to 30,040) and overlaps nothing but a GC cycle, which
	// a's run at 30,100 starts after. Another GC cycle overlaps b's run at 5,000, not slow.
	ph := Phase{
		Start: at(0), End: at(40_000),
		Groups: []GroupResult{
			{Name: "a", Seconds: Quantiles{P50: 0.010}, Runs: []Evaluation{
				{Start: at(0), Seconds: 0.010}, {Start: at(15_000), Seconds: 0.030}, {Start: at(30_100), Seconds: 0.010},
			}},
			{Name: "b", Seconds: Quantiles{P50: 0.010}, Runs: []Evaluation{
				{Start: at(5_000), Seconds: 0.010}, {Start: at(15_020), Seconds: 0.009}, {Start: at(30_000), Seconds: 0.040},
			}},
		},
		GCCycles: []GCCycle{{Start: at(4_995), Seconds: 0.030}, {Start: at(29_990), Seconds: 0.080}},
	}
	got := phaseTails(ph)
	want := tailStats{
		Evaluations: 6, Overlapped: 2, InGC: 2,
		Slow: 2, SlowOverlapped: 1, SlowInGC: 1, SlowGroups: []string{"a", "b"},
		GCCycles: 2, GCShare: 0.110 / 40,
	}
	if got.Evaluations != want.Evaluations || got.Overlapped != want.Overlapped || got.InGC != want.InGC ||
		got.Slow != want.Slow || got.SlowOverlapped != want.SlowOverlapped || got.SlowInGC != want.SlowInGC ||
		!slices.Equal(got.SlowGroups, want.SlowGroups) || got.GCCycles != want.GCCycles ||
		got.GCShare < want.GCShare-1e-9 || got.GCShare > want.GCShare+1e-9 {
		t.Fatalf("phaseTails = %+v, want %+v", got, want)
	}
	var b strings.Builder
	got.write(&b)
	for _, part := range []string{
		"2 of 6 evaluations took more than twice their group's median (in 2 groups)",
		"1 of 2 (50 %) ran during one of Prometheus' 2 garbage collection cycles, which covered 0.3 % of the phase (2 of 6 (33 %) of all evaluations)",
		"1 of 2 (50 %) while another group was evaluated (2 of 6 (33 %) of all)",
	} {
		if !strings.Contains(b.String(), part) {
			t.Errorf("write: %q\nwant it to contain %q", b.String(), part)
		}
	}
}

func TestParseGCTrace(t *testing.T) {
	started := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	log := strings.Join([]string{
		`gc 1 @0.009s 3%: 0.071+1.1+0.054 ms clock, 0.14+0.068/0.59/0.14+0.10 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P`,
		`time=2026-11-27T16:00:00.100Z level=INFO source=main.go:1 msg="Starting Prometheus Server"`,
		`gc 51 @53.521s 0%: 1.5+162+0.039 ms clock, 3.0+1.9/82/56+0.079 ms cpu, 487->512->312 MB, 514 MB goal, 2 MB stacks, 0 MB globals, 2 P`,
		`gc 52 @59.280s 0%: 0.064+68+0.006 ms clock, 0.12+1.0/38/81+0.012 ms cpu, 506->508->290 MB, 549 MB goal, 2 MB stacks, 0 MB globals, 2 P`,
	}, "\n")
	got, err := parseGCTrace(strings.NewReader(log), started)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("parsed %d cycles, want 3: %+v", len(got), got)
	}
	if want := started.Add(53521 * time.Millisecond); !got[1].Start.Equal(want) {
		t.Errorf("cycle 51 starts at %s, want %s", got[1].Start, want)
	}
	if d := got[1].Seconds - 0.163539; d < -1e-9 || d > 1e-9 {
		t.Errorf("cycle 51 took %v s, want 0.163539 (1.5 + 162 + 0.039 ms)", got[1].Seconds)
	}
}
