package benchrules

import (
	"context"
	"errors"
	"fmt"
	"github.com/loopwatch/loopwatch/internal/results"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	promModel "github.com/prometheus/common/model"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// Options configures Run.
type Options struct {
	// RuleFile is the Prometheus rule file measured.
	RuleFile string
	// Controllers lists the fleet sizes, each measured on its own Prometheus and history.
	Controllers []int
	Replicas    int
	// ScrapeInterval is the targets' scrape interval (and the backfill's sample grid).
	ScrapeInterval time.Duration
	// Intervals are the evaluation intervals measured one after the other on one Prometheus:
	// IntervalDefault keeps the file's; a duration replaces the file's base (shortest) interval.
	Intervals []string
	// History is how far back the backfill goes; it must cover the longest range a rule reads.
	History time.Duration
	// Scraped is how long Prometheus scrapes the fleet before the first measurement (at least
	// two scrapes: the first creates the head series, the costliest scrape by far). The
	// backfilled history is in persisted blocks, and a range that reaches into a block costs
	// more than one the head holds: at 500 × 3 the controller groups took up to twice as long
	// while their 5-minute windows did. A Prometheus that has been running holds its last hour
	// or more in its head, so its 5-minute rates never read a block. With Head 0 the default
	// (6m) lets the 5-minute windows read the head only; longer ones (the 30m and 1h SLO
	// ratios, a 15m lookback) still reach into the blocks, so they are measured at a cost above
	// production's; Head puts them in the head. GroupResult.BackfillReads counts, per group, the
	// evaluations that read blocks.
	Scraped time.Duration
	// Head is how much of the newest history Prometheus holds in its head when it starts: the
	// backfill writes it as the write-ahead log Prometheus replays on start (see headLog), as on
	// a Prometheus restarted after running that long, and the rest as blocks. A running
	// Prometheus holds between 1h and 3h in its head (it persists the oldest 2h once its head
	// spans 3h), so a range within Head reads the head only, as in production, from the first
	// evaluation on. 0 writes everything as blocks (the benchmark before Head existed): every
	// range longer than Scraped then reads blocks. At most 2h: a head that spans 3h is persisted,
	// so a run longer than an hour sees that compaction.
	Head time.Duration
	// Evals is how many evaluations of every group at the base interval a phase measures,
	// after Warmup evaluations (of the first phase only: later phases run on warm caches).
	Evals, Warmup int
	// DataDir holds the TSDB directories (a new temporary directory when empty); Keep keeps
	// them after the run.
	DataDir string
	Keep    bool
	// Workers write blocks in parallel (default GOMAXPROCS).
	Workers int
	// StandbySeries and Scenarios shape the fleet; see FleetConfig.
	StandbySeries bool
	Scenarios     Scenarios
	// EveryGroup also measures the slower groups (an interval of their own, longer than the
	// base) at each phase's interval, so that they get Evals evaluations like the others instead
	// of one or none: what one evaluation costs depends on the ranges it reads, not on how often
	// it runs. A copy of each is evaluated at the phase's interval, writing series nothing reads,
	// beside the group itself at its own interval (see ruleFile.withInterval).
	EveryGroup bool
	// Floors are metrics whose floor groups are measured beside the file's (see
	// ruleFile.addFloors): what reading all of a metric's series costs this Prometheus.
	Floors []string
	// PrometheusArgs are appended to Prometheus' command line.
	PrometheusArgs []string
	// Target is the evaluation time a group should keep within at p90 (issue 17's budget): the
	// report counts, per group, the evaluations that took longer.
	Target time.Duration
	Logf   func(format string, args ...any)
}

// IntervalDefault names the rule file's own intervals in Options.Intervals.
const IntervalDefault = "default"

// DefaultOptions returns the options of `make bench-rules`.
func DefaultOptions() Options {
	return Options{
		RuleFile: "rules/loopwatch.rules.yaml", Controllers: []int{50, 500}, Replicas: 3,
		ScrapeInterval: 15 * time.Second, Intervals: []string{"15s", IntervalDefault},
		History: 72 * time.Hour, Scraped: 6 * time.Minute, Head: 2 * time.Hour, Evals: 10, Warmup: 1, StandbySeries: true, EveryGroup: true,
		Scenarios: DefaultScenarios(), Target: 50 * time.Millisecond, Logf: func(string, ...any) {},
	}
}

func (o Options) validate() error {
	var errs []error
	if o.RuleFile == "" {
		errs = append(errs, errors.New("a rule file is required"))
	}
	if len(o.Controllers) == 0 {
		errs = append(errs, errors.New("at least one fleet size is required"))
	}
	if len(o.Intervals) == 0 {
		errs = append(errs, errors.New("at least one interval is required"))
	}
	for _, iv := range o.Intervals {
		if iv == IntervalDefault {
			continue
		}
		if d, err := time.ParseDuration(iv); err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("interval %q: want %q or a duration of at least 1s", iv, IntervalDefault))
		}
	}
	if o.Evals < 1 {
		errs = append(errs, errors.New("evals must be at least 1"))
	}
	if o.History < time.Hour {
		errs = append(errs, errors.New("history must be at least 1h"))
	}
	if o.Scraped < 0 {
		errs = append(errs, errors.New("scraped must not be negative"))
	}
	if o.Head < 0 || o.Head > maxHead || o.Head > o.History-time.Hour {
		errs = append(errs, fmt.Errorf("head must be between 0 and %s, and at least an hour shorter than the history", maxHead))
	}
	if o.Target <= 0 {
		errs = append(errs, errors.New("target must be positive"))
	}
	return errors.Join(errs...)
}

// maxHead bounds Options.Head: Prometheus persists the oldest 2h of its head once it spans 3h
// (2h blocks), which a longer head would reach within the run.
const maxHead = 2 * time.Hour

// scraped is how long Prometheus scrapes before the first measurement (see Options.Scraped).
func (o Options) scraped() time.Duration { return max(2*o.ScrapeInterval, o.Scraped) }

// Run measures the rule file on each fleet size and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	rf, err := loadRuleFile(o.RuleFile)
	if err != nil {
		return nil, err
	}
	rf.everyGroup = o.EveryGroup
	if err := rf.addFloors(o.Floors); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	bin, err := stack.LookPath("prometheus")
	if err != nil {
		return nil, err
	}
	rep := &Report{
		RuleFile: o.RuleFile, Started: time.Now().UTC(), CPUs: runtime.NumCPU(), CPUModel: results.CPUModel(),
		Prometheus: prometheusVersion(bin), ScrapeInterval: o.ScrapeInterval.String(),
		History: o.History.String(), Scraped: o.scraped().String(), Replicas: o.Replicas,
		EveryGroup: o.EveryGroup, Target: o.Target.String(), Floors: o.Floors,
	}
	if o.Head > 0 {
		rep.Head = o.Head.String()
	}
	for _, n := range o.Controllers {
		fr, err := runFleet(ctx, o, rf, n)
		if fr != nil {
			rep.Fleets = append(rep.Fleets, *fr)
		}
		if err != nil {
			return rep, fmt.Errorf("%d controllers: %w", n, err)
		}
	}
	rep.Duration = time.Since(rep.Started).Round(time.Second).String()
	return rep, nil
}

// runFleet backfills, starts the targets and Prometheus, and measures each interval.
func runFleet(ctx context.Context, o Options, rf *ruleFile, n int) (_ *FleetResult, err error) {
	start := time.Now()
	cfg := DefaultFleetConfig(n, start.Add(-o.History))
	cfg.Replicas, cfg.ScrapeInterval, cfg.StandbySeries, cfg.Scenarios = o.Replicas, o.ScrapeInterval, o.StandbySeries, o.Scenarios
	fleet, err := NewFleet(cfg)
	if err != nil {
		return nil, err
	}
	fr := &FleetResult{
		Controllers: n, Replicas: o.Replicas, Targets: len(fleet.Targets),
		ExposedSeries: fleet.ExposedSeries(), Scenarios: fleet.ScenarioCounts,
	}
	work, err := workDir(o.DataDir, n)
	if err != nil {
		return fr, err
	}
	defer func() {
		if o.Keep {
			o.Logf("kept %s", work)
			return
		}
		err = errors.Join(err, os.RemoveAll(work))
	}()
	dataDir := filepath.Join(work, "data")
	if err := checkDisk(work, fleet, o.History); err != nil {
		return fr, err
	}

	o.Logf("%d controllers × %d replicas: %d targets, %d exposed series; backfilling %s", n, o.Replicas, fr.Targets, fr.ExposedSeries, o.History)
	bf, err := Backfill(ctx, fleet, rf, dataDir, cfg.Start, o.Head, o.Workers, o.Logf)
	fr.Backfill = bf
	if err != nil {
		return fr, fmt.Errorf("backfill: %w", err)
	}
	o.Logf("backfilled %d blocks, %d samples, and %d samples to the write-ahead log from %s, %.1f GiB in %s (recording rules %s: %s)", bf.Blocks, bf.Samples,
		bf.HeadSamples, bf.BlocksTo.UTC().Format(time.RFC3339), float64(bf.Bytes)/(1<<30), time.Since(start).Round(time.Second), bf.RecordDuration.Round(time.Second), strings.Join(bf.RecordedRules, ", "))

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fr, fmt.Errorf("listen for the targets: %w", err)
	}
	srv := &http.Server{Handler: fleet.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	defer func() { _ = srv.Close() }()

	rulesDir := filepath.Join(work, "rules")
	phaseFile := func(i int, iv string) string {
		return filepath.Join(rulesDir, fmt.Sprintf("phase-%d-%s.yaml", i, strings.ReplaceAll(iv, "/", "")))
	}
	reach, err := rf.reaches()
	if err != nil {
		return fr, err
	}
	first := phaseFile(0, o.Intervals[0])
	changed, err := rf.withInterval(first, phaseInterval(rf, o.Intervals[0]))
	if err != nil {
		return fr, err
	}
	prom, err := stack.StartPrometheus(ctx, stack.PrometheusOptions{
		RuleFiles:          []string{filepath.Join(rulesDir, "*.yaml")},
		Targets:            scrapeTargets(fleet, lis.Addr().String()),
		ScrapeInterval:     o.ScrapeInterval,
		EvaluationInterval: defaultGroupInterval,
		StartTimeout:       10 * time.Minute,
		DataDir:            dataDir,
		Args: append([]string{
			// Persisted blocks are never compacted during the run: no compaction competes
			// with the rules for the CPU while they are measured.
			"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h",
			"--storage.tsdb.retention.time=15d",
		}, o.PrometheusArgs...),
		// A line per garbage collection cycle in the log: the report sets the slow evaluations
		// against the cycles.
		Env: gctraceEnv(),
	})
	if err != nil {
		return fr, err
	}
	defer func() {
		if stopErr := prom.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if err != nil || o.Keep {
			for name, path := range prom.Logs() {
				o.Logf("%s log: %s", name, path)
			}
		}
		if !o.Keep && err == nil {
			_ = os.RemoveAll(prom.Dir())
		}
	}()
	api := newAPIClient(prom.URL())
	if err := checkHistory(ctx, api, fleet, o.History, rf); err != nil {
		return fr, err
	}
	if err := checkHead(ctx, api, fleet, fr.Backfill); err != nil {
		return fr, err
	}
	if fr.ScrapedSamples, err = waitForScrapes(ctx, api, len(fleet.Targets)); err != nil {
		return fr, err
	}
	if err := checkSeam(ctx, api, fleet); err != nil {
		return fr, err
	}
	o.Logf("%d controllers: scraping for %s before measuring", n, o.scraped())
	select {
	case <-ctx.Done():
		return fr, ctx.Err()
	case <-time.After(o.scraped()):
	}

	prev := first
	for i, iv := range o.Intervals {
		file := prev
		if i > 0 {
			file = phaseFile(i, iv)
			if changed, err = rf.withInterval(file, phaseInterval(rf, iv)); err != nil {
				return fr, err
			}
			if err := os.Remove(prev); err != nil {
				return fr, fmt.Errorf("remove previous rule file: %w", err)
			}
			if err := prom.Reload(ctx); err != nil {
				return fr, err
			}
			prev = file
		}
		warmup := 0
		if i == 0 {
			warmup = o.Warmup
		}
		o.Logf("%d controllers: measuring at interval %s (%d evaluations per group after %d warm-up)", n, iv, o.Evals, warmup)
		ph, err := measurePhase(ctx, prom, api, rf, file, iv, changed, o.Evals, warmup, o.Logf)
		ph.countBackfillReads(reach, fr.Backfill.BlocksTo)
		fr.Phases = append(fr.Phases, ph)
		if err != nil {
			return fr, err
		}
	}
	// Replay with the rules unloaded, so each query runs alone, at a time before the unloading
	// wrote staleness markers for the recorded series.
	replayAt := time.Now().Add(-time.Second)
	if err := os.Remove(prev); err != nil {
		return fr, fmt.Errorf("remove rule file: %w", err)
	}
	if err := prom.Reload(ctx); err != nil {
		return fr, err
	}
	o.Logf("%d controllers: replaying every rule's query alone, with stats", n)
	if fr.Queries, err = replayQueries(ctx, api, rf, replayAt); err != nil {
		return fr, err
	}
	fr.Duration = time.Since(start).Round(time.Second).String()
	return fr, nil
}

// waitForScrapes waits until every target has been scraped (scrape_samples_scraped exists only
// for live scrapes, not in the backfill) and returns the samples scraped, summed over targets.
func waitForScrapes(ctx context.Context, api *apiClient, targets int) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var got float64
	for {
		n, err := api.scalarQuery(ctx, "count(scrape_samples_scraped)")
		if err == nil && int(n) == targets {
			return api.scalarQuery(ctx, "sum(scrape_samples_scraped)")
		}
		if err == nil {
			got = n
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for every target to be scraped: %d of %d after 3m: %w", int(got), targets, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// checkSeam fails unless the scraped series are the backfilled ones: within the 5-minute
// lookback, which holds both the end of the history and the first scrapes, every exposed series
// (and up) must count once. A label that differs between the two (a bucket bound written "1" instead of
// "1.0") would count twice and break every rate across the seam.
func checkSeam(ctx context.Context, api *apiClient, f *Fleet) error {
	const q = `count({job!="", __name__!~"scrape_.+|ALERTS|ALERTS_FOR_STATE|.+:.+"})`
	got, err := api.scalarQuery(ctx, q)
	if err != nil {
		return err
	}
	if want := f.ExposedSeries() + len(f.Targets); int(got) != want {
		return fmt.Errorf("the scraped series do not continue the backfilled ones: %s = %v, want %d", q, got, want)
	}
	return nil
}

// phaseInterval is the base interval a phase evaluates at.
func phaseInterval(rf *ruleFile, iv string) time.Duration {
	if iv == IntervalDefault {
		return rf.baseInterval()
	}
	d, _ := time.ParseDuration(iv) // validated by Options.validate
	return d
}

// workDir creates the directory of one fleet's data: under dir when given, else a new
// temporary directory.
func workDir(dir string, n int) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", fmt.Sprintf("loopwatch-bench-rules-%d-", n))
		if err != nil {
			return "", fmt.Errorf("create work directory: %w", err)
		}
		return d, nil
	}
	d := filepath.Join(dir, fmt.Sprintf("controllers-%d", n))
	if _, err := os.Stat(d); err == nil {
		return "", fmt.Errorf("work directory %s exists: remove it or choose another -data-dir", d)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("create work directory: %w", err)
	}
	return d, nil
}

// bytesPerSample is a generous estimate of a block's size per sample (XOR chunks of these
// series take about 1.3 B per sample, plus the index).
const bytesPerSample = 2.5

// checkDisk refuses to start a backfill that would not fit in the free space of dir.
func checkDisk(dir string, f *Fleet, history time.Duration) error {
	need := float64(f.ExposedSeries()+len(f.Targets)) * float64(history/f.Config.ScrapeInterval) * bytesPerSample
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("check free disk space: %w", err)
	}
	free := float64(st.Bavail) * float64(st.Bsize)
	if free < need*1.2 {
		return fmt.Errorf("the backfill needs about %.1f GiB, %s has %.1f GiB free", need/(1<<30), dir, free/(1<<30))
	}
	return nil
}

// scrapeTargets is one scrape job per Service, as a ServiceMonitor per controller gives; every
// target is the same server, told apart by its metrics path.
func scrapeTargets(f *Fleet, addr string) []stack.ScrapeTarget {
	var out []stack.ScrapeTarget
	for _, t := range f.Targets {
		lbls := t.Labels.Map()
		delete(lbls, "job")
		lbls["__metrics_path__"] = t.Path
		out = append(out, stack.ScrapeTarget{Job: t.Job, Addresses: []string{addr}, Labels: lbls})
	}
	return out
}

// checkHistory fails unless Prometheus serves the backfilled history: every target's up an hour
// after the history starts, and each backfilled recorded series an hour before it ends (a
// recording that reads another one days back, as the SLO rules' past day sums do, starts that
// much later than the history).
func checkHistory(ctx context.Context, api *apiClient, f *Fleet, history time.Duration, rf *ruleFile) error {
	offset := (history - time.Hour).Truncate(time.Minute)
	q := fmt.Sprintf("count(count_over_time(up[10m] offset %s))", promDuration(offset))
	got, err := api.scalarQuery(ctx, q)
	if err != nil {
		return err
	}
	if int(got) != len(f.Targets) {
		return fmt.Errorf("prometheus does not serve the backfilled history: %s = %v, want %d", q, got, len(f.Targets))
	}
	rules, err := rf.rangeReadRecordings()
	if err != nil {
		return err
	}
	for _, r := range rules {
		window := max(10*time.Minute, 2*r.interval) // a slow group's series has a sample per interval
		q := fmt.Sprintf("count(count_over_time(%s[%s] offset 1h))", r.record, promDuration(window))
		got, err := api.scalarQuery(ctx, q)
		if err != nil {
			return err
		}
		if got == 0 {
			return fmt.Errorf("prometheus does not serve the backfilled recording rule %s: %s is empty", r.record, q)
		}
	}
	return nil
}

// checkHead fails unless Prometheus replayed the backfill's write-ahead log into its head: it
// must serve every target's up from the middle of the span the log holds, which no block holds
// and no scrape reached.
func checkHead(ctx context.Context, api *apiClient, f *Fleet, bf BackfillStats) error {
	if bf.HeadSamples == 0 {
		return nil
	}
	span := bf.To.Sub(bf.BlocksTo)
	window := min(10*time.Minute, span/2).Truncate(time.Second)
	at := bf.BlocksTo.Add(span/2 + window/2)
	q := fmt.Sprintf("count(count_over_time(up[%s] @ %d))", promDuration(window), at.Unix())
	got, err := api.scalarQuery(ctx, q)
	if err != nil {
		return err
	}
	if int(got) != len(f.Targets) {
		return fmt.Errorf("prometheus does not serve the history it should have replayed into its head from the write-ahead log: %s = %v, want %d", q, got, len(f.Targets))
	}
	return nil
}

// promDuration formats a duration as PromQL writes it ("71h").
func promDuration(d time.Duration) string { return promModel.Duration(d).String() }

// measurePhase measures one interval: it waits until every group at the phase's base interval
// has been evaluated warmup+evals times, then reads Prometheus' counters.
func measurePhase(ctx context.Context, prom *stack.Prometheus, api *apiClient, rf *ruleFile, file, iv string, changed []string, evals, warmup int, logf func(string, ...any)) (Phase, error) {
	ph := Phase{Interval: iv, ChangedGroups: changed, Start: time.Now().UTC(), LoadBefore: loadAverage()}
	base := phaseInterval(rf, iv)
	families, err := prom.Metrics(ctx)
	if err != nil {
		return ph, err
	}
	before, cpuBefore := readSelfMetrics(families), readCPUTimes()
	abs, err := filepath.Abs(file)
	if err != nil {
		return ph, err
	}
	s := newSampler(api, abs, warmup)
	deadline := time.Now().Add(time.Duration(warmup+evals+2)*base + 2*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		if err := s.poll(ctx); err != nil {
			return ph, err
		}
		done := true
		var behind []string
		for _, g := range rf.groups {
			if _, seen := s.groups[g.Name]; !seen {
				done = false // not loaded yet
			}
			if interval := groupIntervalIn(rf, g.Name, iv); interval > base {
				continue // a slow group: measured if it runs, not waited for
			}
			if m := s.measured(g.Name); m < evals {
				done = false
				behind = append(behind, fmt.Sprintf("%s %d/%d", g.Name, max(m, 0), evals))
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			ph.Incomplete = fmt.Sprintf("stopped at the deadline with groups behind: %s", strings.Join(behind, ", "))
			logf("%s", ph.Incomplete)
			break
		}
		if time.Since(lastLog) > time.Minute {
			logf("  waiting for evaluations: %s", strings.Join(behind, ", "))
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case <-tick.C:
		}
	}
	families, err = prom.Metrics(ctx)
	if err != nil {
		return ph, err
	}
	after, cpuAfter := readSelfMetrics(families), readCPUTimes()
	ph.End = time.Now().UTC()
	ph.LoadAfter = loadAverage()
	wall := ph.End.Sub(ph.Start).Seconds()
	ph.PrometheusCPU = (after.cpuSeconds - before.cpuSeconds) / wall
	ph.BenchCPU = (cpuAfter.self - cpuBefore.self) / wall
	if cpuAfter.machine > 0 {
		ph.OtherCPU = max(0, (cpuAfter.machine-cpuBefore.machine)/wall-ph.PrometheusCPU-ph.BenchCPU)
	}
	ph.EngineSamplesPerSecond = (after.engineSamples - before.engineSamples) / wall
	if ph.GCCycles, err = gcCyclesBetween(prom.Logs()["prometheus"], prom.Started(), ph.Start, ph.End); err != nil {
		return ph, err
	}
	ph.HeadSeries = int(after.headSeries)
	for _, name := range s.order {
		e := s.groups[name]
		key := e.file + ";" + e.name
		g := GroupResult{
			Name: e.name, Interval: promDuration(e.interval), Evaluations: len(e.group),
			Seconds:  quantiles(e.group),
			Failures: after.failures[key] - before.failures[key],
			Missed:   after.missed[key] - before.missed[key],
		}
		for i, start := range e.starts {
			g.Runs = append(g.Runs, Evaluation{Start: start, Seconds: e.group[i]})
		}
		for _, r := range e.ruleOrder {
			g.Rules = append(g.Rules, RuleResult{Name: r, Seconds: quantiles(e.rules[r])})
		}
		ph.Groups = append(ph.Groups, g)
	}
	// Active alerts per alerting rule at the end of the phase.
	groups, err := api.ruleGroups(ctx, true)
	if err != nil {
		return ph, err
	}
	for _, g := range groups {
		if g.File != abs {
			continue
		}
		for gi := range ph.Groups {
			if ph.Groups[gi].Name != g.Name {
				continue
			}
			for _, r := range g.Rules {
				for ri := range ph.Groups[gi].Rules {
					rr := &ph.Groups[gi].Rules[ri]
					if rr.Name != r.Name {
						continue
					}
					for _, a := range r.Alerts {
						switch a.State {
						case "pending":
							rr.Pending++
						case "firing":
							rr.Firing++
						}
					}
				}
			}
		}
	}
	return ph, nil
}

// groupIntervalIn is a group's interval in a phase.
func groupIntervalIn(rf *ruleFile, group, iv string) time.Duration {
	for _, g := range rf.groups {
		if g.Name != group {
			continue
		}
		if d := groupInterval(g); d != rf.baseInterval() && !rf.everyGroup {
			return d
		}
		return phaseInterval(rf, iv)
	}
	return 0
}

// replayQueries runs every rule's expression once at ts as an instant query with stats: the
// samples one evaluation of it reads, which Prometheus does not report per rule.
func replayQueries(ctx context.Context, api *apiClient, rf *ruleFile, ts time.Time) ([]QueryResult, error) {
	var out []QueryResult
	for _, g := range rf.groups {
		for _, r := range g.Rules {
			name := r.Record
			if name == "" {
				name = r.Alert
			}
			st, err := api.instantQueryStats(ctx, r.Expr, ts)
			if err != nil {
				return out, fmt.Errorf("replay %s/%s: %w", g.Name, name, err)
			}
			out = append(out, QueryResult{Group: g.Name, Rule: name, Samples: st.Samples, Series: st.Series, Seconds: st.EvalTime.Seconds()})
		}
	}
	return out, nil
}

// prometheusVersion is the first line of `prometheus --version`.
func prometheusVersion(bin string) string {
	out, err := execOutput(bin, "--version")
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(line)
}

func execOutput(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}
