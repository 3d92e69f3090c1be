package gen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-jsonnet"
	"go.yaml.in/yaml/v3"
)

// evalMixin evaluates expr (jsonnet, with `mixin` bound to the mixin in dir) with go-jsonnet.
func evalMixin(t *testing.T, dir, expr string) any {
	t.Helper()
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{dir}})
	out, err := vm.EvaluateAnonymousSnippet("test.jsonnet", "local mixin = import 'mixin.libsonnet';\n"+expr)
	if err != nil {
		t.Fatalf("jsonnet: %v", err)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// yamlTree parses YAML into the same generic shape encoding/json produces.
func yamlTree(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonTree(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// mixinRules evaluates the mixin's recording groups followed by its alert groups: the order of
// the groups in rules/loopwatch.rules.yaml.
const mixinRules = "{ groups: mixin.prometheusRules.groups + mixin.prometheusAlerts.groups }"

// With the default _config, the mixin evaluates to exactly the committed rules and dashboards.
func TestMixinEqualsCommittedRulesAndDashboards(t *testing.T) {
	dir := filepath.Join(repoRoot, MixinDir)
	rulesYAML, err := os.ReadFile(filepath.Join(repoRoot, RulesFile))
	if err != nil {
		t.Fatal(err)
	}
	got, want := evalMixin(t, dir, mixinRules), yamlTree(t, rulesYAML)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mixin rules differ from %s:\n%s", RulesFile, firstDiff(got, want, ""))
	}
	dashboards := evalMixin(t, dir, "mixin.grafanaDashboards").(map[string]any)
	files, _ := filepath.Glob(filepath.Join(repoRoot, "dashboards", "*.json"))
	if len(files) == 0 || len(dashboards) != len(files) {
		t.Fatalf("mixin has %d dashboards, dashboards/ has %d", len(dashboards), len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, want := dashboards[filepath.Base(f)], jsonTree(t, b)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("mixin dashboard %s differs:\n%s", filepath.Base(f), firstDiff(got, want, ""))
		}
	}
}

// Overriding _config changes the expressions exactly as `loopwatch gen` does with the same
// overrides in its YAML config.
func TestMixinOverridesMatchGenerator(t *testing.T) {
	cfg, err := Parse("overrides", []byte(`
clusterLabel: k8s_cluster
selectors: {controller: 'job="backup-operator"'}
alerts:
  queueBacklog: {depth: 250, for: 20m}
  reconcileLatency: {bucket: 2.5, share: 0.25}
slo: {objective: 0.995}
dashboards:
  uids: {controller: my-controllers}
`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs := files(t, m)
	overrides := `mixin + { _config+:: { clusterLabel: 'k8s_cluster', controllerSelector: 'job="backup-operator"',
	  queueBacklogDepth: 250, queueBacklogFor: '20m', reconcileLatencyBucket: 2.5, reconcileLatencyShare: 0.25,
	  errorBudgetBurnObjective: 0.995, controllerDashboardUID: 'my-controllers' } }`
	dir := filepath.Join(repoRoot, MixinDir)
	got := evalMixin(t, dir, "local m = "+overrides+";\n"+strings.ReplaceAll(mixinRules, "mixin.", "m."))
	if want := yamlTree(t, fs[RulesFile]); !reflect.DeepEqual(got, want) {
		t.Errorf("overridden mixin differs from gen with the same config:\n%s", firstDiff(got, want, ""))
	}
	gotDash := evalMixin(t, dir, "("+overrides+").grafanaDashboards['loopwatch-controller.json']")
	if want := jsonTree(t, fs["dashboards/loopwatch-controller.json"]); !reflect.DeepEqual(gotDash, want) {
		t.Errorf("overridden mixin dashboard differs:\n%s", firstDiff(gotDash, want, ""))
	}
	rules, err := jsonFile(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`workqueue_depth{job=\"backup-operator\", controller!=\"\"}`, "k8s_cluster, namespace", "> 250", `le=~\"2.5(\\\\.0)?\"`, "(1 - 0.995)"} {
		if !strings.Contains(string(rules), want) {
			t.Errorf("overridden rules lack %s", want)
		}
	}
	// The overridden rules are valid for promtool.
	promtool := promtoolPath(t)
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the overridden mixin: %v\n%s", err, out)
	}
}

// The promtool unit tests in testrules/ pass against the rules rendered from the mixin.
func TestTestrulesPassOnMixinRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool")
	}
	promtool := promtoolPath(t)
	dir := t.TempDir()
	rules, _ := json.Marshal(evalMixin(t, filepath.Join(repoRoot, MixinDir), mixinRules))
	if err := os.WriteFile(filepath.Join(dir, "mixin-rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, _ := filepath.Glob(filepath.Join(repoRoot, "testrules", "*.yaml"))
	if len(tests) == 0 {
		t.Fatal("no promtool tests in testrules/")
	}
	var args []string
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.ReplaceAll(string(b), "../rules/loopwatch.rules.yaml", "mixin-rules.yaml"))
		p := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command(promtool, append([]string{"test", "rules"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules on the mixin's rules: %v\n%s", err, out)
	}
}

// Numbers in _config are formatted by jsonnet's %g exactly as the generator formats them.
func TestJsonnetNumberFormattingMatches(t *testing.T) {
	values := []float64{0, 1, 10, 100, 600, 1000, 0.1, 0.01, 0.05, 0.25, 2.5, 14.4, 0.99, 0.995, 1e-8, 123456, 1234567, 0.0001}
	vm := jsonnet.MakeVM()
	for _, v := range values {
		out, err := vm.EvaluateAnonymousSnippet("f", "'%g' % "+jsonnetValue(v, ""))
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got != formatG(v) {
			t.Errorf("jsonnet %%g of %v = %q, generator %q", v, got, formatG(v))
		}
	}
}

func promtoolPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, "bin", "promtool"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if testing.Short() {
			t.Skip("bin/promtool missing (make tools)")
		}
		t.Fatalf("bin/promtool missing: run make tools")
	}
	return p
}

// firstDiff describes the first difference between two JSON trees.
func firstDiff(a, b any, path string) string {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok {
			return path + ": object vs " + typeName(b)
		}
		for k := range at {
			if _, ok := bt[k]; !ok {
				return path + "." + k + ": only in the first"
			}
		}
		for k := range bt {
			if _, ok := at[k]; !ok {
				return path + "." + k + ": only in the second"
			}
			if d := firstDiff(at[k], bt[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			return path + ": lists differ in length or type"
		}
		for i := range at {
			if d := firstDiff(at[i], bt[i], path+"["+itoa(i)+"]"); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return path + ": " + string(ja) + " vs " + string(jb)
		}
		return ""
	}
}

func typeName(v any) string { return reflect.TypeOf(v).String() }

func itoa(i int) string { return strconv.Itoa(i) }
