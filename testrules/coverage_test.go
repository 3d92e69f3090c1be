package testrules

import (
	"fmt"
	"slices"
	"strings"
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

// TestFiringCasesAssertFullLabelsAndAnnotations fails when an expected alert leaves out the
// severity label, a label the alert's expression aggregates by, or one of the annotations the
// rule defines: promtool compares exactly, but only what the test file spells out.
func TestFiringCasesAssertFullLabelsAndAnnotations(t *testing.T) {
	groups := loadRules(t)
	for path, f := range loadTestFiles(t) {
		for _, tg := range f.Tests {
			for _, c := range tg.AlertRuleTests {
				rule, ok := findAlert(groups.Groups, c.Alertname)
				if !ok {
					continue // Reported by TestEveryAlertHasFiringAndSilentCases.
				}
				for i, exp := range c.ExpAlerts {
					for name := range rule.Labels {
						if _, ok := exp.ExpLabels[name]; !ok {
							t.Errorf("%s: test %q, %s at %s, alert %d: label %q is not asserted", path, tg.Name, c.Alertname, c.EvalTime, i, name)
						}
					}
					for name := range rule.Annotations {
						if _, ok := exp.ExpAnnotations[name]; !ok {
							t.Errorf("%s: test %q, %s at %s, alert %d: annotation %q is not asserted", path, tg.Name, c.Alertname, c.EvalTime, i, name)
						}
					}
					// Every rule aggregates by cluster and namespace; the firing inputs carry both.
					for _, name := range []string{"cluster", "namespace"} {
						if _, ok := exp.ExpLabels[name]; !ok {
							t.Errorf("%s: test %q, %s at %s, alert %d: label %q is not asserted", path, tg.Name, c.Alertname, c.EvalTime, i, name)
						}
					}
				}
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

// TestTestFilesEvaluateEveryGroupInOrder fails when a test file does not load the generated rule
// file, or its group_eval_order misses a group or lists an alerting group before a recording
// group. promtool gives unlisted groups position 0, so a missing group would silently be
// evaluated first.
func TestTestFilesEvaluateEveryGroupInOrder(t *testing.T) {
	groups := loadRules(t)
	for path, f := range loadTestFiles(t) {
		if !slices.Equal(f.RuleFiles, []string{rulesFile}) {
			t.Errorf("%s: rule_files = %v, want [%s]", path, f.RuleFiles, rulesFile)
		}
		lastRecording, firstAlerting := -1, len(f.GroupEvalOrder)
		for _, g := range groups.Groups {
			i := slices.Index(f.GroupEvalOrder, g.Name)
			if i < 0 {
				t.Errorf("%s: group_eval_order misses group %s", path, g.Name)
				continue
			}
			if isRecordingGroup(g.Rules) {
				lastRecording = max(lastRecording, i)
			} else {
				firstAlerting = min(firstAlerting, i)
			}
		}
		if lastRecording > firstAlerting {
			t.Errorf("%s: group_eval_order %v lists an alerting group before a recording group", path, f.GroupEvalOrder)
		}
		for _, name := range f.GroupEvalOrder {
			if !slices.ContainsFunc(groups.Groups, func(g rulefmtGroup) bool { return g.Name == name }) {
				t.Errorf("%s: group_eval_order names group %s, which the rule file does not define", path, name)
			}
		}
	}
}

// TestTestCasesAreNamedAsSentences fails on unnamed test groups and on duplicate names, which
// make promtool's failure output ambiguous.
func TestTestCasesAreNamedAsSentences(t *testing.T) {
	seen := map[string]string{}
	for path, f := range loadTestFiles(t) {
		for i, tg := range f.Tests {
			if len(strings.Fields(tg.Name)) < 3 {
				t.Errorf("%s: test %d is named %q; name it with a sentence that says what it shows", path, i, tg.Name)
			}
			if other, ok := seen[tg.Name]; ok {
				t.Errorf("%s: test name %q is also used in %s", path, tg.Name, other)
			}
			seen[tg.Name] = path
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
