// Package benchrules measures what a Prometheus rule file costs a real Prometheus (bin/prometheus)
// that evaluates it for a big fleet of controllers: `make bench-rules`.
//
// For each fleet size it
//
//  1. builds a synthetic fleet (Fleet): N controller managers × 3 replicas exposing
//     controller-runtime's series with their real names, labels and bucket layouts (taken from the
//     metric declarations, see lookup), package instrument's series for some, the audit exporter at
//     its top-K and offender bounds, and three kube-apiservers. Every value is a closed-form curve
//     of time: counters rise with a daily swing and noise, some controllers are in a state that
//     makes an alert's expression true (a growing queue, errors, slow reconciles, a hot loop, ...);
//  2. backfills its history (Backfill), long enough for the longest range a rule reads, as TSDB
//     blocks laid out as a Prometheus with 15d retention would have them (18h, 6h and 2h blocks).
//     The recording rules whose output another rule reads over a range (LoopwatchHotLoop's 1d
//     baseline; the long SLO windows of rules restructured to read low-resolution series) are
//     evaluated over that history by the PromQL engine and written with it, so long windows read
//     what they would in production. The blocks are written with the TSDB's own index and chunk
//     writers rather than through a head, which would take ten times longer;
//  3. serves the fleet's /metrics (one path per target, computed at scrape time from the same
//     curves, so the scrapes continue the history without a seam: checked after start) and
//     starts bin/prometheus on the history with the rule file, one scrape job per Service as
//     ServiceMonitors give, and lets it scrape for a while (Options.Scraped) so that the short
//     windows read its head, as on a Prometheus that has been running;
//  4. measures each interval in turn on that Prometheus (the file's own, and 15s by default: a
//     copy of the rule file with the shortest group interval replaced, loaded by a reload): every
//     group's and rule's evaluation time from /api/v1/rules after each evaluation (the value of
//     prometheus_rule_group_last_duration_seconds), rule evaluation failures and missed iterations
//     from Prometheus' own counters, head series, Prometheus' CPU; and the samples each rule reads,
//     by replaying its expression once as an instant query with stats=all (Prometheus counts
//     samples per query, not per rule).
//
// With Options.Floors, each named metric also gets floor groups measured beside the file's (see
// ruleFile.addFloors): the least any rule that reads all of that metric costs this Prometheus on
// this machine, the baseline a run carries for the cost of the groups that read it.
//
// The report is Markdown (the summary table goes into the README's performance section) and JSON;
// it counts, per group, the evaluations over Options.Target. Pool merges the JSON reports of
// several runs, for a group's tail read over more evaluations than one run has.
package benchrules
