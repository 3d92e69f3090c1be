package benchrules

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// defaultGroupInterval is Prometheus' evaluation interval for a group without one: the global
// evaluation_interval the benchmark configures.
const defaultGroupInterval = time.Minute

// ruleFile is a parsed rule file.
type ruleFile struct {
	path   string
	groups []rulefmt.RuleGroup
	// everyGroup: the slower groups are measured at a phase's interval too (see
	// Options.EveryGroup and withInterval).
	everyGroup bool
}

var promqlParser = parser.NewParser(parser.Options{})

// lookbackDelta is Prometheus' default lookback: how far back an instant selector finds a sample.
const lookbackDelta = 5 * time.Minute

// loadRuleFile parses and validates a Prometheus rule file.
func loadRuleFile(path string) (*ruleFile, error) {
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("rule file %s: %w", path, errors.Join(errs...))
	}
	if len(groups.Groups) == 0 {
		return nil, fmt.Errorf("rule file %s: no rule groups", path)
	}
	return &ruleFile{path: path, groups: groups.Groups}, nil
}

// interval is a group's evaluation interval.
func groupInterval(g rulefmt.RuleGroup) time.Duration {
	if g.Interval == 0 {
		return defaultGroupInterval
	}
	return time.Duration(g.Interval)
}

// baseInterval is the shortest group interval of the file: the rule interval the generator was
// configured with. Groups evaluated more slowly on purpose (long windows from low-resolution
// series) have longer ones.
func (rf *ruleFile) baseInterval() time.Duration {
	base := groupInterval(rf.groups[0])
	for _, g := range rf.groups[1:] {
		base = min(base, groupInterval(g))
	}
	return base
}

// copySuffix ends the names of a slower group's measured copy's rules (see withInterval), and
// ownIntervalSuffix the name of the group it copies.
const (
	copySuffix        = "_bench_copy"
	ownIntervalSuffix = " (own interval)"
)

// withInterval writes a copy of the file to path in which every group evaluated at the base
// interval is evaluated every interval instead; slower groups keep theirs. It returns the names
// of the groups it changed.
//
// With everyGroup, each slower group is also measured at interval: the file gets a copy of it
// under its name, evaluated every interval, whose rules record and alert under names ending in
// copySuffix, while the group itself, renamed with ownIntervalSuffix, keeps its interval. So
// the copy reads the series the slower group writes at its own cadence, as in production, and
// what the copy writes is read by nothing: evaluating the slower group itself more often would
// write its recordings more often and make every range over them (a day of 30-minute averages,
// an hour of the last 1d ratio) read more samples than in production.
func (rf *ruleFile) withInterval(path string, interval time.Duration) ([]string, error) {
	base := rf.baseInterval()
	var out rulefmt.RuleGroups
	var changed []string
	for _, g := range rf.groups {
		own := groupInterval(g)
		switch {
		case own == base && interval != base:
			g.Interval = model.Duration(interval)
			changed = append(changed, g.Name)
		case own > base && rf.everyGroup:
			measured := g
			measured.Interval = model.Duration(interval)
			measured.Rules = nil
			for _, r := range g.Rules {
				if r.Record != "" {
					r.Record += copySuffix
				} else {
					r.Alert += copySuffix
				}
				measured.Rules = append(measured.Rules, r)
			}
			g.Name += ownIntervalSuffix
			out.Groups = append(out.Groups, measured)
			changed = append(changed, measured.Name)
		}
		out.Groups = append(out.Groups, g)
	}
	raw, err := yaml.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode rule file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("write rule file: %w", err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return nil, fmt.Errorf("write rule file: %w", err)
	}
	return changed, nil
}

// reaches returns, per group name, how far before an evaluation the group's queries read: the
// longest range plus offset among its rules' selectors, or the lookback of an instant selector.
// Prometheus opens one querier per query over the whole span its selectors read, so every
// selector of a query searches each block that span touches.
func (rf *ruleFile) reaches() (map[string]time.Duration, error) {
	at := time.Unix(1_000_000_000, 0)
	out := map[string]time.Duration{}
	for _, g := range rf.groups {
		for _, r := range g.Rules {
			e, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("group %s: parse %q: %w", g.Name, r.Expr, err)
			}
			mint, maxt := promql.FindMinMaxTime(&parser.EvalStmt{Expr: e, Start: at, End: at, LookbackDelta: lookbackDelta})
			if mint == 0 && maxt == 0 {
				continue // no selector
			}
			out[g.Name] = max(out[g.Name], at.Sub(time.UnixMilli(mint)).Round(time.Second))
		}
	}
	return out, nil
}

// recordingRule is a recording rule with what its group gives it.
type recordingRule struct {
	group    string
	record   string
	expr     string
	interval time.Duration
	// labels are the group's labels overridden by the rule's.
	labels map[string]string
}

// selectorNames returns the metric names expr selects: all of them, and those read over a range
// (a range selector, or anything inside a subquery).
func selectorNames(expr string) (all, ranged []string, err error) {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	parser.Inspect(e, func(node parser.Node, path []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			return nil
		}
		all = append(all, name)
		for _, p := range path {
			switch p.(type) {
			case *parser.MatrixSelector, *parser.SubqueryExpr:
				ranged = append(ranged, name)
				return nil
			}
		}
		return nil
	})
	return all, ranged, nil
}

// rangeReadRecordings returns the recording rules whose output history matters to what the
// benchmark measures: those whose series some rule reads over a range (a production Prometheus
// has weeks of them; a fresh one has none, and reading nothing is cheap), and, transitively, the
// recording rules those are computed from. They come in an order in which each rule's inputs
// come before it.
func (rf *ruleFile) rangeReadRecordings() ([]recordingRule, error) {
	byName := map[string][]recordingRule{}
	var order []string
	reads := map[string][]string{} // record name -> names its rules select
	need := map[string]bool{}
	for _, g := range rf.groups {
		for _, r := range g.Rules {
			all, ranged, err := selectorNames(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("group %q: %w", g.Name, err)
			}
			for _, n := range ranged {
				need[n] = true
			}
			if r.Record == "" {
				continue
			}
			lbls := map[string]string{}
			for k, v := range g.Labels {
				lbls[k] = v
			}
			for k, v := range r.Labels {
				lbls[k] = v
			}
			if _, seen := byName[r.Record]; !seen {
				order = append(order, r.Record)
			}
			byName[r.Record] = append(byName[r.Record], recordingRule{
				group: g.Name, record: r.Record, expr: r.Expr, interval: groupInterval(g), labels: lbls,
			})
			reads[r.Record] = append(reads[r.Record], all...)
		}
	}
	// Keep only recorded names, then close over the inputs of what is needed.
	for n := range need {
		if _, ok := byName[n]; !ok {
			delete(need, n)
		}
	}
	var out []recordingRule
	state := map[string]int{} // 0 unvisited, 1 in progress, 2 done
	var visit func(n string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("recording rule %q depends on itself", n)
		case 2:
			return nil
		}
		state[n] = 1
		for _, in := range reads[n] {
			if _, ok := byName[in]; ok && in != n {
				if err := visit(in); err != nil {
					return err
				}
			}
		}
		state[n] = 2
		out = append(out, byName[n]...)
		return nil
	}
	for _, n := range order {
		if need[n] {
			if err := visit(n); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
