package benchrules

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// poolRun is a one-fleet, one-phase report whose group "g" took the given milliseconds, one
// evaluation a minute from start, with a phase of wall minutes at cpu Prometheus cores.
func poolRun(start time.Time, wall time.Duration, cpu float64, failures float64, ms ...float64) *Report {
	g := GroupResult{Name: "g", Interval: "1m", Failures: failures}
	var secs []float64
	for i, v := range ms {
		g.Runs = append(g.Runs, Evaluation{Start: start.Add(time.Duration(i) * time.Minute), Seconds: v / 1000})
		secs = append(secs, v/1000)
	}
	g.Evaluations, g.Seconds = len(secs), quantiles(secs)
	return &Report{
		RuleFile: "rules.yaml", Prometheus: "3.15.0", Replicas: 3, ScrapeInterval: "15s", History: "72h0m0s",
		Scraped: "6m0s", EveryGroup: true, Target: "50ms", Started: start, Duration: wall.String(),
		Fleets: []FleetResult{{Controllers: 500, Phases: []Phase{{
			Interval: IntervalDefault, Start: start, End: start.Add(wall), PrometheusCPU: cpu, Groups: []GroupResult{g},
		}}}},
	}
}

func TestPoolComputesQuantilesOverEveryEvaluation(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	// Each run alone: p50 50 ms in a (the 5th of 10), 200 ms in b; pooled, the 8th of 15 is
	// 80 ms. CPU 0.1 over 10 minutes and 0.4 over 30 average to 0.325.
	a := poolRun(t0, 10*time.Minute, 0.1, 1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
	b := poolRun(t0.Add(time.Hour), 30*time.Minute, 0.4, 2, 200, 200, 200, 200, 200)
	a.Fleets[0].Phases[0].Groups[0].BackfillReads, a.Fleets[0].Phases[0].Groups[0].Reach = 3, "15m0s"
	b.Fleets[0].Phases[0].Groups[0].BackfillReads, b.Fleets[0].Phases[0].Groups[0].Reach = 2, "15m0s"
	got, err := Pool([]*Report{a, b}, []string{"a.json", "b.json"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Fleets[0].Phases[0].Groups[0].Seconds.P50 != 0.050 || b.Fleets[0].Phases[0].Groups[0].Seconds.P50 != 0.200 {
		t.Fatalf("the runs' own medians are not 50 and 200 ms: the test's premise is wrong")
	}
	ph := got.Fleets[0].Phases[0]
	g := ph.Groups[0]
	if g.Evaluations != 15 || len(g.Runs) != 15 {
		t.Errorf("pooled evaluations = %d (%d runs), want 15", g.Evaluations, len(g.Runs))
	}
	if g.Seconds.P50 != 0.080 || g.Seconds.P90 != 0.200 || g.Seconds.Max != 0.200 {
		t.Errorf("pooled quantiles = %+v, want p50 80 ms, p90 and max 200 ms", g.Seconds)
	}
	if g.Failures != 3 {
		t.Errorf("pooled failures = %v, want 3", g.Failures)
	}
	if g.BackfillReads != 5 || g.Reach != "15m0s" {
		t.Errorf("pooled backfill reads = %d (reach %q), want 5 (15m0s)", g.BackfillReads, g.Reach)
	}
	if d := ph.PrometheusCPU - 0.325; d > 1e-9 || d < -1e-9 {
		t.Errorf("pooled CPU = %v, want 0.325 (weighted by wall time)", ph.PrometheusCPU)
	}
	if ph.Pooled != 2 || len(got.Pooled) != 2 || got.Duration != "40m0s" {
		t.Errorf("pooled phase count %d, runs %q, duration %s", ph.Pooled, got.Pooled, got.Duration)
	}

	// The pooled report says what it pools and counts what is over the target.
	var md strings.Builder
	if err := got.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pooled from 2 runs", "a.json (rule file rules.yaml", "| *groups over 50ms at p90* | 1 of 1 |",
		"| *evaluations over 50ms* | 10 of 15 (67 %) |", "| g | 1m | 15 | 80 | 200 | 200 | 10 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("pooled report lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "Tails:") {
		t.Errorf("pooled report has a tails paragraph computed over the gap between the runs:\n%s", md.String())
	}
}

func TestPoolSpansTheRunsInWhateverOrderGiven(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	early, late := poolRun(t0, 10*time.Minute, 0.1, 0, 10), poolRun(t0.Add(time.Hour), 10*time.Minute, 0.1, 0, 10)
	early.Fleets[0].Phases[0].LoadBefore, early.Fleets[0].Phases[0].LoadAfter = 1, 2
	late.Fleets[0].Phases[0].LoadBefore, late.Fleets[0].Phases[0].LoadAfter = 3, 4
	got, err := Pool([]*Report{late, early}, []string{"late", "early"})
	if err != nil {
		t.Fatal(err)
	}
	ph := got.Fleets[0].Phases[0]
	if !ph.Start.Equal(t0) || !ph.End.Equal(t0.Add(70*time.Minute)) || ph.LoadBefore != 1 || ph.LoadAfter != 4 {
		t.Errorf("pooled phase %s → %s, load %v → %v; want the early run's start and load before, the late run's end and load after",
			ph.Start, ph.End, ph.LoadBefore, ph.LoadAfter)
	}
}

func TestPoolReadsItsOwnJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	var reports []*Report
	for i, r := range []*Report{poolRun(t0, 10*time.Minute, 0.1, 0, 10, 20), poolRun(t0, 10*time.Minute, 0.1, 0, 30)} {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		reports = append(reports, &back)
	}
	got, err := Pool(reports, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Fleets[0].Phases[0].Groups[0].Seconds; q.P50 != 0.020 || q.Max != 0.030 {
		t.Errorf("pooled from JSON: %+v, want p50 20 ms, max 30 ms", q)
	}
}

func TestPoolRefusesRunsMeasuredDifferently(t *testing.T) {
	t0 := time.Now()
	a, b := poolRun(t0, time.Minute, 0, 0, 10), poolRun(t0, time.Minute, 0, 0, 10)
	b.Replicas, b.ScrapeInterval, b.Head, b.Floors = 1, "30s", "2h0m0s", []string{"x_total", "y"}
	_, err := Pool([]*Report{a, b}, []string{"a.json", "b.json"})
	if err == nil {
		t.Fatal("pooled runs with different replicas, scrape intervals, history in the head and floors")
	}
	for _, want := range []string{"b.json: replicas is 1, not 3", "scrape interval is 30s, not 15s", "history in the head is 2h0m0s, not none as in a.json", "floors is x_total,y, not none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := Pool([]*Report{a}, []string{"a.json"}); err == nil {
		t.Error("pooled one report")
	}

	// Processors: refused when both reports name theirs and they differ; a report from before
	// the field (no model) pools with any.
	c, d, old := poolRun(t0, time.Minute, 0, 0, 10), poolRun(t0, time.Minute, 0, 0, 10), poolRun(t0, time.Minute, 0, 0, 10)
	c.CPUModel, d.CPUModel = "CPU A", "CPU B"
	if _, err := Pool([]*Report{c, d}, []string{"c.json", "d.json"}); err == nil || !strings.Contains(err.Error(), "d.json: processor is CPU B, not CPU A") {
		t.Errorf("pooling runs on two processors: error %v, want one naming both", err)
	}
	if _, err := Pool([]*Report{c, old}, []string{"c.json", "old.json"}); err != nil {
		t.Errorf("pooling with a report that names no processor: %v", err)
	}
}
