package testrules

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// rulesFile is the generated rule file every test file must load (relative to this directory).
const rulesFile = "../rules/loopwatch.rules.yaml"

// unitTestFile is the part of promtool's unit test file format (cmd/promtool/unittest.go) that
// the checks read. Unknown fields are ignored here: promtool itself rejects them.
type unitTestFile struct {
	RuleFiles          []string    `json:"rule_files"`
	EvaluationInterval string      `json:"evaluation_interval"`
	GroupEvalOrder     []string    `json:"group_eval_order"`
	Tests              []testGroup `json:"tests"`
}

type testGroup struct {
	Name           string           `json:"name"`
	AlertRuleTests []alertTestCase  `json:"alert_rule_test"`
	PromqlExprTest []promqlTestCase `json:"promql_expr_test"`
}

type alertTestCase struct {
	EvalTime  string     `json:"eval_time"`
	Alertname string     `json:"alertname"`
	ExpAlerts []expAlert `json:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `json:"exp_labels"`
	ExpAnnotations map[string]string `json:"exp_annotations"`
}

type promqlTestCase struct {
	Expr     string `json:"expr"`
	EvalTime string `json:"eval_time"`
}

// loadRules parses the generated rule file with Prometheus' own rulefmt, as Prometheus loads it.
func loadRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), promslog.NewNopLogger())
	if len(errs) > 0 {
		t.Fatalf("parse %s: %v (run `go run ./cmd/loopwatch gen --out .` from the repository root)", rulesFile, errs)
	}
	return groups
}

// testFiles returns the promtool test files: those gen writes for the default config (in this
// directory) and the hand-written scenarios (in scenarios/), sorted.
func testFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.test.yaml", "scenarios/*.test.yaml"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatalf("list test files: %v", err)
		}
		if len(matches) == 0 {
			t.Fatalf("no %s files in testrules/", pattern)
		}
		files = append(files, matches...)
	}
	slices.Sort(files)
	return files
}

// rulesFileFrom is the path of the rule file relative to the directory of test file path, as
// its rule_files must name it.
func rulesFileFrom(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(filepath.Dir(path), rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// loadTestFile decodes one promtool test file.
func loadTestFile(path string) (*unitTestFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read test file: %w", err)
	}
	var f unitTestFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decode test file %q: %w", path, err)
	}
	return &f, nil
}

// loadTestFiles decodes every promtool test file of this directory, keyed by file name.
func loadTestFiles(t *testing.T) map[string]*unitTestFile {
	t.Helper()
	out := map[string]*unitTestFile{}
	for _, path := range testFiles(t) {
		f, err := loadTestFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out[path] = f
	}
	return out
}

// rulefmtGroup is one rule group as rulefmt decodes it.
type rulefmtGroup = rulefmt.RuleGroup

// findAlert returns the alerting rule named name.
func findAlert(groups []rulefmt.RuleGroup, name string) (rulefmt.Rule, bool) {
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r, true
			}
		}
	}
	return rulefmt.Rule{}, false
}

// hasAlert reports whether an alerting rule named name exists.
func hasAlert(groups []rulefmt.RuleGroup, name string) bool {
	_, ok := findAlert(groups, name)
	return ok
}

// isRecordingGroup reports whether every rule of a group is a recording rule.
func isRecordingGroup(rules []rulefmt.Rule) bool {
	for _, r := range rules {
		if r.Record == "" {
			return false
		}
	}
	return len(rules) > 0
}

// alertNames lists the alerting rules of the rule file in file order.
func alertNames(groups []rulefmt.RuleGroup) []string {
	var names []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}
