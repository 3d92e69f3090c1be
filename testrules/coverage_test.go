package testrules

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// TestEveryAlertHasFiringAndSilentCases fails when an alert of the rule file lacks a test case
// that expects it to fire, or one that expects it to stay silent, and when a test names an
// alert the rule file no longer has.
func TestEveryAlertHasFiringAndSilentCases(t *testing.T) {
	groups := loadRules(t)
	files := loadTestFiles(t)

	firing := map[string]int{}
	silent := map[string]int{}
	for path, f := range files {
		for _, tg := range f.Tests {
			for _, c := range tg.AlertRuleTests {
				if len(c.ExpAlerts) == 0 {
					silent[c.Alertname]++
				} else {
					firing[c.Alertname]++
				}
				if !hasAlert(groups.Groups, c.Alertname) {
					t.Errorf("%s: test %q checks alert %q, which the rule file does not define", path, tg.Name, c.Alertname)
				}
			}
		}
	}

	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if firing[r.Alert] == 0 {
				t.Errorf("alert %s (group %s) has no test case with non-empty exp_alerts", r.Alert, g.Name)
			}
			if silent[r.Alert] == 0 {
				t.Errorf("alert %s (group %s) has no test case with empty exp_alerts (a healthy case)", r.Alert, g.Name)
			}
		}
	}
}

// TestEveryRecordingRuleHasAnExprTest fails when a recording rule is not read by any
// promql_expr_test expression. Expressions are parsed, so a name in a comment does not count.
func TestEveryRecordingRuleHasAnExprTest(t *testing.T) {
	groups := loadRules(t)
	p := parser.NewParser(parser.Options{})

	tested := map[string]bool{}
	for path, f := range loadTestFiles(t) {
		for _, tg := range f.Tests {
			for _, c := range tg.PromqlExprTest {
				names, err := metricNames(p, c.Expr)
				if err != nil {
					t.Errorf("%s: test %q: %v", path, tg.Name, err)
					continue
				}
				for _, n := range names {
					tested[n] = true
				}
			}
		}
	}

	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" && !tested[r.Record] {
				t.Errorf("recording rule %s (group %s) is not checked by any promql_expr_test", r.Record, g.Name)
			}
		}
	}
}

// metricNames returns the metric names the vector and matrix selectors of expr read.
func metricNames(p parser.Parser, expr string) ([]string, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}
