package benchrules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

// floorPrefix begins the name of every floor group (see addFloors).
const floorPrefix = "floor: "

// isFloor reports whether a measured group is a floor group rather than one of the rule file's.
func isFloor(group string) bool { return strings.HasPrefix(group, floorPrefix) }

// counterSuffixes end the names of the series a rule reads with rate(): a floor measures the rate
// over those, and only touching the series for the others.
var counterSuffixes = []string{"_total", "_count", "_sum", "_bucket"}

// addFloors adds to the rule file, for each metric, groups that read every series of that metric
// and do as little with them as a rule can: count(m), which reads one sample of each series, and,
// for a counter, sum(rate(m[5m])), the cheapest rule that takes the 5-minute rate of each. Each is
// a group of its own at the file's base interval, so it is moved to each phase's interval with the
// file's groups and measured beside them, under the same load: what reading that metric costs this
// Prometheus, a floor under the time of any group that reads all of it. The report keeps them out
// of its count of groups over the target.
//
// Each metric must be one the file's rules read and none of them records: a floor of a name
// nothing reads, or of a recorded series, would say nothing about the file.
func (rf *ruleFile) addFloors(metrics []string) error {
	if len(metrics) == 0 {
		return nil
	}
	read, recorded := map[string]bool{}, map[string]bool{}
	for _, g := range rf.groups {
		for _, r := range g.Rules {
			all, _, err := selectorNames(r.Expr)
			if err != nil {
				return fmt.Errorf("group %q: %w", g.Name, err)
			}
			for _, n := range all {
				read[n] = true
			}
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	var errs []error
	seen := map[string]bool{}
	for _, m := range metrics {
		switch {
		case recorded[m]:
			errs = append(errs, fmt.Errorf("floor %q: recorded by the rule file, not scraped", m))
		case !model.LegacyValidation.IsValidMetricName(m) || strings.Contains(m, ":"):
			errs = append(errs, fmt.Errorf("floor %q: not the name of a scraped metric", m))
		case !read[m]:
			errs = append(errs, fmt.Errorf("floor %q: no rule of %s reads it", m, rf.path))
		case seen[m]:
			errs = append(errs, fmt.Errorf("floor %q: named twice", m))
		}
		seen[m] = true
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	base := model.Duration(rf.baseInterval())
	group := func(expr, record string) rulefmt.RuleGroup {
		return rulefmt.RuleGroup{
			Name: floorPrefix + expr, Interval: base,
			Rules: []rulefmt.Rule{{Record: record, Expr: expr}},
		}
	}
	for _, m := range metrics {
		rf.groups = append(rf.groups, group("count("+m+")", "floor:"+m+":count"))
		if slices.ContainsFunc(counterSuffixes, func(s string) bool { return strings.HasSuffix(m, s) }) {
			rf.groups = append(rf.groups, group("sum(rate("+m+"[5m]))", "floor:"+m+":rate5m"))
		}
	}
	return nil
}
