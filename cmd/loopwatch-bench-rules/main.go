// Command loopwatch-bench-rules is `make bench-rules`: it measures what a rule file costs a real
// Prometheus evaluating it for a big fleet. For each fleet size it backfills the synthetic
// fleet's history as TSDB blocks, serves the fleet's /metrics, starts bin/prometheus on that
// history with the rule file, and records every group's evaluation time, samples read, failures
// and missed iterations at each interval. See internal/benchrules.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loopwatch/loopwatch/internal/benchrules"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-rules:", err)
		os.Exit(1)
	}
}

// listFlag is a comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// repeatedFlag collects every occurrence.
type repeatedFlag []string

func (r *repeatedFlag) String() string     { return strings.Join(*r, " ") }
func (r *repeatedFlag) Set(s string) error { *r = append(*r, s); return nil }

func run() error {
	o := benchrules.DefaultOptions()
	controllers := listFlag{"50", "500"}
	intervals := listFlag(o.Intervals)
	var floors listFlag
	var promArgs, pool repeatedFlag
	var markdown, jsonOut, resultsRoot string
	flag.StringVar(&o.RuleFile, "rules", o.RuleFile, "rule file to measure")
	flag.Var(&controllers, "controllers", "fleet sizes, comma-separated; each is measured on its own Prometheus")
	flag.IntVar(&o.Replicas, "replicas", o.Replicas, "replicas (scrape targets) per controller")
	flag.Var(&intervals, "intervals", "evaluation intervals measured one after the other, comma-separated: \"default\" (the file's) or a duration replacing the file's shortest group interval")
	flag.DurationVar(&o.ScrapeInterval, "scrape-interval", o.ScrapeInterval, "scrape interval, and the backfill's sample grid")
	flag.DurationVar(&o.History, "history", o.History, "history backfilled before Prometheus starts; must cover the longest range a rule reads")
	flag.DurationVar(&o.Scraped, "scraped", o.Scraped, "how long Prometheus scrapes before the first measurement, so that short windows read its head as on a running Prometheus (0: measure at once, windows reaching into the backfilled blocks)")
	flag.DurationVar(&o.Head, "head", o.Head, "how much of the newest history Prometheus holds in its head when it starts (replayed from a write-ahead log, as after a restart; at most 2h), so that ranges within it read the head as on a running Prometheus (0: all of the history in blocks)")
	flag.IntVar(&o.Evals, "evals", o.Evals, "evaluations measured per group and interval")
	flag.IntVar(&o.Warmup, "warmup", o.Warmup, "evaluations discarded at the start of the first interval (cold caches)")
	flag.StringVar(&o.DataDir, "data-dir", "", "directory for the TSDB data (default: a new temporary directory per fleet size)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the TSDB data and Prometheus' directory after the run")
	flag.IntVar(&o.Workers, "workers", 0, "blocks written in parallel (default GOMAXPROCS)")
	flag.BoolVar(&o.StandbySeries, "standby-series", o.StandbySeries, "standby replicas expose the controller-runtime series too (flat); false: only the leader does")
	flag.Float64Var(&o.Scenarios.Backlog, "backlog-share", o.Scenarios.Backlog, "share of controllers with a growing work queue (pending LoopwatchQueueBacklog)")
	flag.BoolVar(&o.EveryGroup, "every-group", o.EveryGroup, "also measure the slower groups (5m, 30m) at each phase's interval, as copies whose output nothing reads, so that they get -evals evaluations instead of one or none")
	flag.Var(&floors, "floor", "metrics, comma-separated, whose floors are measured beside the rule file's groups: count(m) and, for a counter, sum(rate(m[5m])), each a group of its own, the least any rule reading all of m's series costs (left out of the count of groups over the target)")
	flag.Var(&promArgs, "prometheus-arg", "extra Prometheus flag, e.g. --enable-feature=concurrent-rule-eval (repeatable)")
	flag.DurationVar(&o.Target, "target", o.Target, "evaluation time each group should keep within at p90: the report counts the groups over it and the evaluations that took longer")
	flag.Var(&pool, "pool", "a JSON report of an earlier run (repeatable, two or more): measure nothing, and report the runs pooled, each group's quantiles over every evaluation of every run")
	flag.StringVar(&markdown, "out", "", "write the Markdown report here as well as to stdout")
	flag.StringVar(&jsonOut, "json", "", "write the JSON report here")
	flag.StringVar(&resultsRoot, "results", "", "repository root: also write the report into docs/performance.md's rule-cost table, and its JSON into docs/results/ (make bench-rules does, for the committed rule file)")
	flag.Parse()

	o.Intervals = intervals
	o.PrometheusArgs = promArgs
	o.Floors = floors
	o.Controllers = nil
	for _, c := range controllers {
		n, err := strconv.Atoi(c)
		if err != nil {
			return fmt.Errorf("-controllers: %q is not a number", c)
		}
		o.Controllers = append(o.Controllers, n)
	}
	if len(pool) > 0 {
		rep, err := poolReports(pool, o.Target)
		if err != nil {
			return err
		}
		return write(rep, markdown, jsonOut, resultsRoot)
	}
	logger := log.New(os.Stderr, "", log.Ltime)
	o.Logf = logger.Printf

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, runErr := benchrules.Run(ctx, o)
	if rep != nil {
		if err := write(rep, markdown, jsonOut, resultsRoot); err != nil {
			return err
		}
	}
	logger.Printf("wall time %s", time.Since(start).Round(time.Second))
	return runErr
}

// poolReports reads the JSON reports at paths and pools them, counting against target.
func poolReports(paths []string, target time.Duration) (*benchrules.Report, error) {
	var reports []*benchrules.Report
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r benchrules.Report
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		reports = append(reports, &r)
	}
	rep, err := benchrules.Pool(reports, paths)
	if err != nil {
		return nil, err
	}
	rep.Target = target.String()
	return rep, nil
}

func write(rep *benchrules.Report, markdown, jsonOut, resultsRoot string) error {
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		return err
	}
	fmt.Print(b.String())
	if markdown != "" {
		if err := os.WriteFile(markdown, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", markdown, err)
		}
	}
	if jsonOut != "" {
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encode report: %w", err)
		}
		if err := os.WriteFile(jsonOut, append(raw, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", jsonOut, err)
		}
	}
	if resultsRoot != "" {
		return benchrules.ResultsTable.Write(resultsRoot, rep, b.String())
	}
	return nil
}
