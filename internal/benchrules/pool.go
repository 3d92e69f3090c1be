package benchrules

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Pool merges the reports of several runs of one rule file into one, as if each phase had been
// measured for as many evaluations as the runs together: a p90 over 20 evaluations is decided
// by its 2 or 3 slowest, and pooling runs is how to read a group's tail with confidence. Each
// group's quantiles are computed again over every evaluation of every run (nearest rank);
// failures and missed iterations are summed, CPU averaged over the runs' wall time. What cannot
// be pooled is left out: per-rule quantiles (a report keeps no rule's single evaluations), the
// replayed queries and the tails paragraph (each run's own report has its tails). names label
// the reports (their file names) in the pooled report.
//
// The runs must have been measured alike (Prometheus, replicas, scrape interval, history, the
// history in the head, scraping before measuring, every-group, the floors measured beside the
// file, and the processor where both reports name it): Pool
// refuses reports that differ in any of those.
// It cannot check that their rule files have the same content; it lists each run's rule file.
func Pool(reports []*Report, names []string) (*Report, error) {
	if len(reports) < 2 || len(names) != len(reports) {
		return nil, fmt.Errorf("pool: want two reports or more, each with a name (got %d reports, %d names)", len(reports), len(names))
	}
	first := reports[0]
	out := &Report{
		RuleFile: first.RuleFile, Prometheus: first.Prometheus, CPUs: first.CPUs, CPUModel: first.CPUModel, Started: first.Started,
		ScrapeInterval: first.ScrapeInterval, History: first.History, Scraped: first.Scraped, Head: first.Head,
		Replicas: first.Replicas, EveryGroup: first.EveryGroup, Target: first.Target, Floors: first.Floors,
	}
	var errs []error
	var total time.Duration
	files := map[string]bool{}
	for i, r := range reports {
		for _, d := range []struct{ what, got, want string }{
			{"Prometheus", r.Prometheus, first.Prometheus},
			{"replicas", fmt.Sprint(r.Replicas), fmt.Sprint(first.Replicas)},
			{"scrape interval", r.ScrapeInterval, first.ScrapeInterval},
			{"history", r.History, first.History},
			{"scraping before measuring", r.Scraped, first.Scraped},
			{"history in the head", headOrNone(r.Head), headOrNone(first.Head)},
			{"every-group", fmt.Sprint(r.EveryGroup), fmt.Sprint(first.EveryGroup)},
			{"floors", floorsOrNone(r.Floors), floorsOrNone(first.Floors)},
		} {
			if d.got != d.want {
				errs = append(errs, fmt.Errorf("%s: %s is %s, not %s as in %s", names[i], d.what, d.got, d.want, names[0]))
			}
		}
		if r.CPUModel != "" && first.CPUModel != "" && r.CPUModel != first.CPUModel {
			errs = append(errs, fmt.Errorf("%s: processor is %s, not %s as in %s", names[i], r.CPUModel, first.CPUModel, names[0]))
		}
		if d, err := time.ParseDuration(r.Duration); err == nil {
			total += d
		}
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		files[r.RuleFile] = true
		out.Pooled = append(out.Pooled, fmt.Sprintf("%s (rule file %s, started %s)", names[i], r.RuleFile, r.Started.Format("2006-01-02 15:04 UTC")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pool: the runs were not measured alike: %w", err)
	}
	if len(files) > 1 {
		out.RuleFile = strings.Join(slices.Sorted(maps.Keys(files)), ", ")
	}
	out.Duration = total.String()
	for _, r := range reports {
		for _, f := range r.Fleets {
			i := slices.IndexFunc(out.Fleets, func(o FleetResult) bool { return o.Controllers == f.Controllers })
			if i < 0 {
				out.Fleets = append(out.Fleets, FleetResult{
					Controllers: f.Controllers, Replicas: f.Replicas, Targets: f.Targets,
					ExposedSeries: f.ExposedSeries, Scenarios: f.Scenarios, ScrapedSamples: f.ScrapedSamples,
				})
				i = len(out.Fleets) - 1
			}
			for _, ph := range f.Phases {
				out.Fleets[i].poolPhase(ph)
			}
		}
	}
	for i := range out.Fleets {
		for j := range out.Fleets[i].Phases {
			out.Fleets[i].Phases[j].finishPool()
		}
	}
	return out, nil
}

// poolPhase adds a run's phase to the fleet's phase of the same interval.
func (f *FleetResult) poolPhase(ph Phase) {
	i := slices.IndexFunc(f.Phases, func(p Phase) bool { return p.Interval == ph.Interval })
	if i < 0 {
		f.Phases = append(f.Phases, Phase{Interval: ph.Interval, ChangedGroups: ph.ChangedGroups, Start: ph.Start, End: ph.End, LoadBefore: ph.LoadBefore, LoadAfter: ph.LoadAfter})
		i = len(f.Phases) - 1
	}
	p := &f.Phases[i]
	wall := ph.End.Sub(ph.Start).Seconds()
	// The CPU figures and the engine's rate are summed weighted by wall time here and divided
	// by the total in finishPool.
	p.PrometheusCPU += ph.PrometheusCPU * wall
	p.BenchCPU += ph.BenchCPU * wall
	p.OtherCPU += ph.OtherCPU * wall
	p.EngineSamplesPerSecond += ph.EngineSamplesPerSecond * wall
	p.poolWall += wall
	if ph.Start.Before(p.Start) {
		p.Start, p.LoadBefore = ph.Start, ph.LoadBefore
	}
	if ph.End.After(p.End) {
		p.End, p.LoadAfter = ph.End, ph.LoadAfter
	}
	p.HeadSeries = max(p.HeadSeries, ph.HeadSeries)
	p.GCCycles = append(p.GCCycles, ph.GCCycles...)
	if ph.Incomplete != "" {
		p.Incomplete = strings.TrimPrefix(p.Incomplete+"; "+ph.Incomplete, "; ")
	}
	p.Pooled++
	for _, g := range ph.Groups {
		j := slices.IndexFunc(p.Groups, func(o GroupResult) bool { return o.Name == g.Name })
		if j < 0 {
			p.Groups = append(p.Groups, GroupResult{Name: g.Name, Interval: g.Interval})
			j = len(p.Groups) - 1
		}
		o := &p.Groups[j]
		o.Failures += g.Failures
		o.Missed += g.Missed
		o.Runs = append(o.Runs, g.Runs...)
		o.BackfillReads += g.BackfillReads
		if o.Reach == "" {
			o.Reach = g.Reach
		}
	}
}

// finishPool turns the sums poolPhase kept into the pooled phase's figures.
func (p *Phase) finishPool() {
	if p.poolWall > 0 {
		p.PrometheusCPU /= p.poolWall
		p.BenchCPU /= p.poolWall
		p.OtherCPU /= p.poolWall
		p.EngineSamplesPerSecond /= p.poolWall
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		secs := make([]float64, len(g.Runs))
		for k, e := range g.Runs {
			secs[k] = e.Seconds
		}
		g.Evaluations = len(secs)
		g.Seconds = quantiles(secs)
	}
}

// headOrNone names Report.Head for a message: "none" when the history was all in blocks.
func headOrNone(head string) string {
	if head == "" {
		return "none"
	}
	return head
}

// floorsOrNone names a report's floors (Report.Floors) for Pool's comparison.
func floorsOrNone(floors []string) string {
	if len(floors) == 0 {
		return "none"
	}
	return strings.Join(floors, ",")
}
