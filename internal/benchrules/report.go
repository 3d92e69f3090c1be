package benchrules

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is the result of Run, rendered as Markdown (WriteMarkdown) or JSON.
type Report struct {
	RuleFile   string `json:"ruleFile"`
	Prometheus string `json:"prometheus"`
	CPUs       int    `json:"cpus"`
	// CPUModel is the processor's model name (/proc/cpuinfo): the same rule file costs one
	// machine half again what it costs another, so compare runs of one model only. Empty when
	// unknown.
	CPUModel       string    `json:"cpuModel,omitempty"`
	Started        time.Time `json:"started"`
	Duration       string    `json:"duration"`
	ScrapeInterval string    `json:"scrapeInterval"`
	History        string    `json:"history"`
	Scraped        string    `json:"scraped"`
	// Head is how much of the newest history Prometheus replayed into its head on start
	// (Options.Head), as a Go duration; empty when it all lay in blocks.
	Head     string `json:"head,omitempty"`
	Replicas int    `json:"replicas"`
	// EveryGroup: the slower groups were evaluated at each phase's interval too.
	EveryGroup bool `json:"everyGroup"`
	// Floors are the metrics whose floor groups were measured beside the file's (Options.Floors).
	Floors []string `json:"floors,omitempty"`
	// Target is the evaluation time each group's evaluations are counted against
	// (Options.Target), as a Go duration; empty in reports written before it existed.
	Target string `json:"target,omitempty"`
	// Pooled names the reports this one pools (see Pool); empty for a single run.
	Pooled []string      `json:"pooled,omitempty"`
	Fleets []FleetResult `json:"fleets"`
}

// FleetResult is one fleet size: its backfill and each measured interval.
type FleetResult struct {
	Controllers   int            `json:"controllers"`
	Replicas      int            `json:"replicas"`
	Targets       int            `json:"targets"`
	ExposedSeries int            `json:"exposedSeries"`
	Scenarios     map[string]int `json:"scenarios"`
	// ScrapedSamples is sum(scrape_samples_scraped) once every target was up: the exposed
	// series as Prometheus counted them.
	ScrapedSamples float64       `json:"scrapedSamples"`
	Backfill       BackfillStats `json:"backfill"`
	Phases         []Phase       `json:"phases"`
	Queries        []QueryResult `json:"queries"`
	Duration       string        `json:"duration"`
}

// Phase is one evaluation interval measured on a running Prometheus.
type Phase struct {
	// Interval is "default" (the file's) or the interval that replaced the base interval.
	Interval      string    `json:"interval"`
	ChangedGroups []string  `json:"changedGroups"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	LoadBefore    float64   `json:"loadBefore"`
	LoadAfter     float64   `json:"loadAfter"`
	// PrometheusCPU is Prometheus' CPU time over the phase, in cores; BenchCPU the benchmark's
	// own (the targets and the polling); OtherCPU what the rest of the machine used, which
	// competes with Prometheus for the CPUs.
	PrometheusCPU          float64       `json:"prometheusCPU"`
	BenchCPU               float64       `json:"benchCPU"`
	OtherCPU               float64       `json:"otherCPU"`
	EngineSamplesPerSecond float64       `json:"engineSamplesPerSecond"`
	HeadSeries             int           `json:"headSeries"`
	Groups                 []GroupResult `json:"groups"`
	// GCCycles are Prometheus' garbage collection cycles during the phase.
	GCCycles []GCCycle `json:"gcCycles"`
	// Incomplete says why the phase ended before every group had its evaluations.
	Incomplete string `json:"incomplete,omitempty"`
	// Pooled is how many runs' phases this one pools (see Pool); 0 for a measured phase.
	Pooled int `json:"pooled,omitempty"`
	// poolWall is the wall time of the phases pooled so far, in seconds (Pool's weights).
	poolWall float64
}

// GroupResult is one rule group in one phase.
type GroupResult struct {
	Name        string       `json:"name"`
	Interval    string       `json:"interval"`
	Evaluations int          `json:"evaluations"`
	Seconds     Quantiles    `json:"seconds"`
	Failures    float64      `json:"failures"`
	Missed      float64      `json:"missedIterations"`
	Rules       []RuleResult `json:"rules"`
	// Runs are the measured evaluations, in order: when each started and what it took.
	Runs []Evaluation `json:"runs"`
	// Reach is how far before an evaluation the group's queries read (ruleFile.reaches), as a
	// Go duration; BackfillReads how many of Runs read that far back into the backfilled
	// blocks: before the history the head started with (Report.Head), or before Prometheus'
	// first scrape when it started with none. Empty and 0 in reports written before they existed.
	Reach         string `json:"reach,omitempty"`
	BackfillReads int    `json:"backfillReads"`
}

// countBackfillReads sets each group's Reach and counts its evaluations that read before the
// backfilled blocks' end, to.
func (ph *Phase) countBackfillReads(reach map[string]time.Duration, to time.Time) {
	for i := range ph.Groups {
		g := &ph.Groups[i]
		r, ok := reach[strings.TrimSuffix(g.Name, ownIntervalSuffix)]
		if !ok {
			continue
		}
		g.Reach, g.BackfillReads = r.String(), 0
		for _, e := range g.Runs {
			if e.Start.Add(-r).Before(to) {
				g.BackfillReads++
			}
		}
	}
}

// Evaluation is one evaluation of a group.
type Evaluation struct {
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// RuleResult is one rule's evaluation time in one phase, and its active alerts at the end.
type RuleResult struct {
	Name    string    `json:"name"`
	Seconds Quantiles `json:"seconds"`
	Pending int       `json:"pending,omitempty"`
	Firing  int       `json:"firing,omitempty"`
}

// QueryResult is a rule's expression run once as an instant query with stats=all.
type QueryResult struct {
	Group   string  `json:"group"`
	Rule    string  `json:"rule"`
	Samples int64   `json:"samples"`
	Series  int     `json:"series"`
	Seconds float64 `json:"seconds"`
}

// WriteMarkdown renders the report: a summary of p90 evaluation time per group and fleet size,
// a table per fleet size and interval, and the most expensive rules.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	if len(r.Pooled) > 0 {
		fmt.Fprintf(&b, "Pooled from %d runs (every evaluation of each group and interval, the quantiles computed over all of them): %s.\n\n", len(r.Pooled), strings.Join(r.Pooled, "; "))
	}
	cpus := fmt.Sprintf("%d CPUs", r.CPUs)
	if r.CPUModel != "" {
		cpus += " (" + r.CPUModel + ")"
	}
	head := "all of it in blocks"
	if r.Head != "" {
		head = "the newest " + r.Head + " of it in Prometheus' head (replayed from the write-ahead log on start, as after a restart), the rest in blocks"
	}
	fmt.Fprintf(&b, "Rule file `%s` on %s, %s. Each controller runs %d replicas scraped every %s; %s of backfilled history, %s, and Prometheus scraped for %s before the first measurement. Started %s, took %s.\n\n",
		r.RuleFile, r.Prometheus, cpus, r.Replicas, r.ScrapeInterval, r.History, head, r.Scraped, r.Started.Format("2006-01-02 15:04 UTC"), r.Duration)
	if r.EveryGroup {
		b.WriteString("Every group, the slower ones (an interval of their own) too, was evaluated at each phase's interval (`-every-group`): the slower groups have as many evaluations as the others.\n\n")
	}
	if len(r.Floors) > 0 {
		fmt.Fprintf(&b, "*%s…* groups (`-floor`, for %s) read every series of one metric and do as little with them as a rule can: `count()`, one sample of each, and for a counter `sum(rate(…[5m]))`. Measured beside the file's groups, under the same load, they are the least any rule that reads all of that metric costs this Prometheus; they are not counted among the groups over the target.\n\n", strings.TrimSpace(floorPrefix), strings.Join(r.Floors, ", "))
	}
	b.WriteString("*Read into blocks (reach)*: the evaluations whose queries read back into the backfilled blocks, before the history Prometheus' head started with (reach: the longest range plus offset the group's queries read, or the 5-minute lookback). Every selector of such a query also searches the blocks the span touches, which costs more than reading the head alone. A running Prometheus holds its last 1 to 3 hours in its head: a reach within that reads blocks here only when the head started with less.\n\n")
	r.summary(&b)
	target, _ := r.target()
	for _, f := range r.Fleets {
		for _, ph := range f.Phases {
			f.phaseTable(&b, ph, target)
		}
		f.expensiveRules(&b, 10)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// phaseLabel names an interval column: "default (1m)" or "15s".
func phaseLabel(ph Phase) string {
	if ph.Interval != IntervalDefault || len(ph.Groups) == 0 {
		return ph.Interval
	}
	return fmt.Sprintf("default (%s)", ph.Groups[0].Interval)
}

func (r *Report) summary(b *strings.Builder) {
	type col struct {
		f  FleetResult
		ph Phase
	}
	var cols []col
	var groups []string
	seen := map[string]bool{}
	for _, f := range r.Fleets {
		for _, ph := range f.Phases {
			cols = append(cols, col{f, ph})
			for _, g := range ph.Groups {
				if !seen[g.Name] {
					seen[g.Name] = true
					groups = append(groups, g.Name)
				}
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	b.WriteString("p90 evaluation time per group (ms), over the evaluations measured; failures and missed iterations are summed over every group.\n\n| group |")
	for _, c := range cols {
		fmt.Fprintf(b, " %d × %d, %s |", c.f.Controllers, c.f.Replicas, phaseLabel(c.ph))
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, name := range groups {
		fmt.Fprintf(b, "| %s |", name)
		for _, c := range cols {
			g, ok := findGroup(c.ph, name)
			if !ok || g.Evaluations == 0 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %s |", ms(g.Seconds.P90))
		}
		b.WriteString("\n")
	}
	if target, ok := r.target(); ok {
		fmt.Fprintf(b, "| *groups over %s at p90* |", r.Target)
		for _, c := range cols {
			over, of := 0, 0
			for _, g := range c.ph.Groups {
				// A slower group's copy stands for it at the phase's interval: the group at its
				// own interval has one evaluation or none, not a p90.
				if g.Evaluations == 0 || strings.HasSuffix(g.Name, ownIntervalSuffix) || isFloor(g.Name) {
					continue
				}
				of++
				if seconds(g.Seconds.P90) > target {
					over++
				}
			}
			fmt.Fprintf(b, " %d of %d |", over, of)
		}
		fmt.Fprintf(b, "\n| *evaluations over %s* |", r.Target)
		for _, c := range cols {
			over, of := 0, 0
			for _, g := range c.ph.Groups {
				if isFloor(g.Name) {
					continue
				}
				over += g.over(target)
				of += len(g.Runs)
			}
			fmt.Fprintf(b, " %s |", ofCount(over, of))
		}
		b.WriteString("\n")
	}
	b.WriteString("| *failures / missed iterations* |")
	for _, c := range cols {
		var fail, missed float64
		for _, g := range c.ph.Groups {
			fail += g.Failures
			missed += g.Missed
		}
		fmt.Fprintf(b, " %s / %s |", count(fail), count(missed))
	}
	b.WriteString("\n| *CPU cores: Prometheus / rest of the machine* |")
	for _, c := range cols {
		fmt.Fprintf(b, " %.2f / %.2f |", c.ph.PrometheusCPU, c.ph.OtherCPU)
	}
	b.WriteString("\n\n")
}

// target is the report's Target, and whether it has one.
func (r *Report) target() (time.Duration, bool) {
	d, err := time.ParseDuration(r.Target)
	return d, err == nil && d > 0
}

// over counts the group's evaluations that took longer than target.
func (g GroupResult) over(target time.Duration) int {
	n := 0
	for _, e := range g.Runs {
		if seconds(e.Seconds) > target {
			n++
		}
	}
	return n
}

func findGroup(ph Phase, name string) (GroupResult, bool) {
	for _, g := range ph.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return GroupResult{}, false
}

// groupSamples sums the samples the replayed queries of a group read: one evaluation's worth.
func (f FleetResult) groupSamples(group string) (int64, bool) {
	var n int64
	found := false
	for _, q := range f.Queries {
		if q.Group == group {
			n += q.Samples
			found = true
		}
	}
	return n, found
}

// phaseTable writes one phase's groups; with a target, how many evaluations of each took longer.
func (f FleetResult) phaseTable(b *strings.Builder, ph Phase, target time.Duration) {
	fmt.Fprintf(b, "#### %d controllers × %d replicas, interval %s\n\n", f.Controllers, f.Replicas, phaseLabel(ph))
	fmt.Fprintf(b, "%d targets, %s exposed series (Prometheus scraped %s), %s head series at the end. CPU: Prometheus %.2f cores, the benchmark %.2f, the rest of the machine %.2f; load average %.2f → %.2f; %s → %s.",
		f.Targets, count(float64(f.ExposedSeries)), count(f.ScrapedSamples), count(float64(ph.HeadSeries)), ph.PrometheusCPU,
		ph.BenchCPU, ph.OtherCPU, ph.LoadBefore, ph.LoadAfter, ph.Start.Format("15:04:05"), ph.End.Format("15:04:05"))
	if len(ph.ChangedGroups) > 0 && ph.Interval != IntervalDefault {
		fmt.Fprintf(b, " Groups evaluated every %s: %s.", ph.Interval, strings.Join(ph.ChangedGroups, ", "))
	}
	if ph.Incomplete != "" {
		fmt.Fprintf(b, " **Incomplete**: %s.", ph.Incomplete)
	}
	overHead, overRule := "", ""
	if target > 0 {
		overHead, overRule = " over "+target.String()+" |", "---:|"
	}
	fmt.Fprintf(b, "\n\n| group | interval | evaluations | p50 ms | p90 ms | max ms |%s read into blocks (reach) | samples read / evaluation | failures | missed iterations |\n|---|---|---:|---:|---:|---:|%s---:|---:|---:|---:|\n", overHead, overRule)
	for _, g := range ph.Groups {
		samples := "–"
		if n, ok := f.groupSamples(g.Name); ok {
			samples = count(float64(n))
		}
		over := ""
		if target > 0 {
			over = " " + strconv.Itoa(g.over(target)) + " |"
		}
		backfill := "–"
		if g.Reach != "" {
			backfill = fmt.Sprintf("%d (%s)", g.BackfillReads, g.Reach)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s |%s %s | %s | %s | %s |\n", g.Name, g.Interval, g.Evaluations,
			ms(g.Seconds.P50), ms(g.Seconds.P90), ms(g.Seconds.Max), over, backfill, samples, count(g.Failures), count(g.Missed))
	}
	b.WriteString("\n")
	if ph.Pooled == 0 {
		phaseTails(ph).write(b)
	}
}

// expensiveRules lists the top rules by p90 evaluation time in the default-interval phase (the
// last one when there is none), with the samples their query reads and their active alerts.
func (f FleetResult) expensiveRules(b *strings.Builder, top int) {
	if len(f.Phases) == 0 {
		return
	}
	ph := f.Phases[len(f.Phases)-1]
	for _, p := range f.Phases {
		if p.Interval == IntervalDefault {
			ph = p
		}
	}
	type row struct {
		group string
		r     RuleResult
		q     QueryResult
	}
	var rows []row
	for _, g := range ph.Groups {
		if isFloor(g.Name) {
			continue
		}
		for _, r := range g.Rules {
			rw := row{group: g.Name, r: r}
			for _, q := range f.Queries {
				if q.Group == g.Name && q.Rule == r.Name {
					rw.q.Samples += q.Samples
					rw.q.Seconds += q.Seconds
				}
			}
			rows = append(rows, rw)
		}
	}
	if len(rows) == 0 {
		return
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].r.Seconds.P90 > rows[j].r.Seconds.P90 })
	rows = rows[:min(top, len(rows))]
	fmt.Fprintf(b, "Most expensive rules, %d controllers, interval %s (evaluation time in its group; samples read and time of its query replayed alone, with stats=all):\n\n", f.Controllers, phaseLabel(ph))
	b.WriteString("| group | rule | p50 ms | p90 ms | active alerts | samples read | query ms |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, rw := range rows {
		alerts := ""
		if rw.r.Pending+rw.r.Firing > 0 {
			alerts = fmt.Sprintf("%d pending, %d firing", rw.r.Pending, rw.r.Firing)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", rw.group, rw.r.Name, ms(rw.r.Seconds.P50), ms(rw.r.Seconds.P90),
			alerts, count(float64(rw.q.Samples)), ms(rw.q.Seconds))
	}
	b.WriteString("\n")
}

// ms formats seconds as milliseconds with a precision that suits the size.
func ms(s float64) string {
	if math.IsNaN(s) {
		return "–"
	}
	v := s * 1000
	switch {
	case v >= 100:
		return count(math.Round(v))
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// count formats a whole number with thousands separators.
func count(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
