package testrules

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// TestFiringCasesAssertFullLabelsAndAnnotations fails when an expected alert leaves out a label
// the rule sets (severity), one of the annotations the rule defines, or the cluster label.
// promtool already compares label and annotation sets exactly; this check says which part is
// missing, and that every firing case runs on multi-cluster data, so that a rule that drops the
// cluster label in an aggregation fails its test.
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
					if _, ok := exp.ExpLabels["cluster"]; !ok {
						t.Errorf("%s: test %q, %s at %s, alert %d: the cluster label is not asserted (give the input a cluster label)", path, tg.Name, c.Alertname, c.EvalTime, i)
					}
				}
			}
		}
	}
}

// TestFiringCasesPinTheForBoundary fails when a test group expects an alert to fire but does not
// also expect it to be silent one evaluation interval before the first time it fires: only the
// pair shows that the alert fires exactly at its `for:` boundary.
func TestFiringCasesPinTheForBoundary(t *testing.T) {
	for path, f := range loadTestFiles(t) {
		interval := time.Minute
		if f.EvaluationInterval != "" {
			d, err := model.ParseDuration(f.EvaluationInterval)
			if err != nil {
				t.Fatalf("%s: evaluation_interval %q: %v", path, f.EvaluationInterval, err)
			}
			interval = time.Duration(d)
		}
		for _, tg := range f.Tests {
			firstFiring := map[string]time.Duration{}
			silentAt := map[string]map[time.Duration]bool{}
			for _, c := range tg.AlertRuleTests {
				d, err := model.ParseDuration(c.EvalTime)
				if err != nil {
					t.Errorf("%s: test %q: eval_time %q: %v", path, tg.Name, c.EvalTime, err)
					continue
				}
				at := time.Duration(d)
				if len(c.ExpAlerts) == 0 {
					if silentAt[c.Alertname] == nil {
						silentAt[c.Alertname] = map[time.Duration]bool{}
					}
					silentAt[c.Alertname][at] = true
					continue
				}
				if first, ok := firstFiring[c.Alertname]; !ok || at < first {
					firstFiring[c.Alertname] = at
				}
			}
			for alert, at := range firstFiring {
				if !silentAt[alert][at-interval] {
					t.Errorf("%s: test %q expects %s to fire at %s but not that it is silent at %s", path, tg.Name, alert, model.Duration(at), model.Duration(at-interval))
				}
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
