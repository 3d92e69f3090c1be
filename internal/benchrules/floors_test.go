package benchrules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const floorsFile = `groups:
  - name: fast
    interval: 1m
    rules:
      - {record: job:requests:rate5m, expr: "sum by (job) (rate(requests_total{job!=\"\"}[5m]))"}
      - {alert: Deep, expr: "depth > 100 and job:requests:rate5m > 0"}
  - name: slow
    interval: 30m
    rules: [{record: job:requests:rate30m, expr: "avg_over_time(job:requests:rate5m[30m])"}]
`

// TestFloorsAreGroupsAtTheBaseInterval: each floor metric gets count() and, for a counter, the
// sum of its 5-minute rates, each a group of its own at the file's base interval, so a phase
// moves them with the file's groups.
func TestFloorsAreGroupsAtTheBaseInterval(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(src, []byte(floorsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	rf := mustRuleFile(t, src)
	if err := rf.addFloors([]string{"requests_total", "depth"}); err != nil {
		t.Fatal(err)
	}
	changed, err := rf.withInterval(filepath.Join(dir, "out.yaml"), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := mustRuleFile(t, filepath.Join(dir, "out.yaml"))
	var got []string
	for _, g := range out.groups {
		if !isFloor(g.Name) {
			continue
		}
		if len(g.Rules) != 1 {
			t.Errorf("floor group %q has %d rules, want 1", g.Name, len(g.Rules))
			continue
		}
		got = append(got, fmt.Sprintf("%s@%s %s=%s", g.Name, groupInterval(g), g.Rules[0].Record, g.Rules[0].Expr))
	}
	want := []string{
		"floor: count(requests_total)@15s floor:requests_total:count=count(requests_total)",
		"floor: sum(rate(requests_total[5m]))@15s floor:requests_total:rate5m=sum(rate(requests_total[5m]))",
		"floor: count(depth)@15s floor:depth:count=count(depth)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("floor groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"floor: count(depth)", "fast"} {
		if !strings.Contains(strings.Join(changed, ","), w) {
			t.Errorf("changed groups %v lack %q", changed, w)
		}
	}
	// A floor records a series of its own, read by nothing: no backfill needed.
	recs, err := rf.rangeReadRecordings()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if isFloor(r.group) {
			t.Errorf("floor recording %s is backfilled", r.record)
		}
	}
}

// TestFloorsReportEveryBadName: a name no rule reads, a recorded series, a name that is not a
// metric name and a name given twice are each reported, together, and nothing is added.
func TestFloorsReportEveryBadName(t *testing.T) {
	src := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(src, []byte(floorsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	rf := mustRuleFile(t, src)
	n := len(rf.groups)
	err := rf.addFloors([]string{"requests_total", "unread_total", "job:requests:rate5m", "bad-name", "requests_total"})
	if err == nil {
		t.Fatal("no error for four bad floor names")
	}
	for _, want := range []string{`"unread_total": no rule`, `"job:requests:rate5m": recorded`, `"bad-name": not the name`, `"requests_total": named twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(rf.groups) != n {
		t.Errorf("a failed addFloors added %d groups", len(rf.groups)-n)
	}
}

// TestReportLeavesFloorsOutOfTheCounts: a floor over the target is shown but not counted among
// the groups or evaluations over it, nor listed among the most expensive rules.
func TestReportLeavesFloorsOutOfTheCounts(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	rep := poolRun(t0, 10*time.Minute, 0.2, 0, 10, 20, 30)
	floor := GroupResult{Name: floorPrefix + "count(x)", Interval: "1m"}
	var secs []float64
	for i, v := range []float64{80, 90, 100} {
		floor.Runs = append(floor.Runs, Evaluation{Start: t0.Add(time.Duration(i) * time.Minute), Seconds: v / 1000})
		secs = append(secs, v/1000)
	}
	floor.Evaluations, floor.Seconds = len(secs), quantiles(secs)
	floor.Rules = []RuleResult{{Name: "floor:x:count", Seconds: floor.Seconds}}
	ph := &rep.Fleets[0].Phases[0]
	ph.Groups = append(ph.Groups, floor)
	rep.Floors = []string{"x"}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| *groups over 50ms at p90* | 0 of 1 |", "| *evaluations over 50ms* | 0 of 3 (0 %) |",
		"| floor: count(x) | 100 |", "(`-floor`, for x)",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "| floor: count(x) | floor:x:count |") {
		t.Errorf("a floor is listed among the most expensive rules:\n%s", md.String())
	}
}
