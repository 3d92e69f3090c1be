package gen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the committed generated files (rules/, dashboards/, jsonnet/)")

// repoRoot is where the committed outputs live.
const repoRoot = ".."

func buildDefault(t *testing.T) *Model {
	t.Helper()
	m, err := Build(Default())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func files(t *testing.T, m *Model) map[string][]byte {
	t.Helper()
	fs, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range fs {
		out[f.Path] = f.Content
	}
	return out
}

// The committed rules/, dashboards/ and jsonnet/ are exactly what the generator writes.
func TestGoldenOutputs(t *testing.T) {
	got := files(t, buildDefault(t))
	if *update {
		var fs []File
		for p, c := range got {
			fs = append(fs, File{p, c})
		}
		if err := WriteFiles(repoRoot, fs); err != nil {
			t.Fatal(err)
		}
	}
	for path, content := range got {
		want, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Errorf("%s: %v (run make generate)", path, err)
			continue
		}
		if !bytes.Equal(content, want) {
			t.Errorf("%s is stale: run make generate", path)
		}
	}
	for _, dir := range []string{"rules", "dashboards", "jsonnet"} {
		filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, p)
			if _, ok := got[filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s is committed but not generated: remove it", rel)
			}
			return nil
		})
	}
}

func TestOutputIsDeterministic(t *testing.T) {
	a, b := files(t, buildDefault(t)), files(t, buildDefault(t))
	for p := range a {
		if !bytes.Equal(a[p], b[p]) {
			t.Errorf("%s differs between two runs", p)
		}
	}
}

func TestGeneratedFilesCarryHeader(t *testing.T) {
	for p, c := range files(t, buildDefault(t)) {
		if !bytes.Contains(c[:min(len(c), 200)], []byte(Header)) {
			t.Errorf("%s: no %q header near the top", p, Header)
		}
	}
}

// The rules file passes Prometheus' own parser and validation (rulefmt, as promtool and the
// rule manager load it).
func TestRulesFileValidatesWithRulefmt(t *testing.T) {
	for _, cfgFile := range []string{"", "testdata/config/custom.good.yaml"} {
		cfg, err := Load(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		content := files(t, m)[RulesFile]
		groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promqlParser, promslog.NewNopLogger())
		if len(errs) > 0 {
			t.Fatalf("config %q: rulefmt: %v", cfgFile, errs)
		}
		if len(groups.Groups) == 0 {
			t.Fatal("no groups")
		}
	}
}

// Every alert says where to look and how to fix it.
func TestAlertsHaveLabelsAndAnnotations(t *testing.T) {
	m := buildDefault(t)
	groups, err := m.RuleGroups()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !strings.HasPrefix(r.Alert, alertPrefix) {
				t.Errorf("%s: name lacks prefix %q", r.Alert, alertPrefix)
			}
			switch Severity(r.Labels["severity"]) {
			case SeverityCritical, SeverityWarning, SeverityInfo:
			default:
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			if s := r.Annotations["summary"]; s == "" || !strings.HasSuffix(s, ".") || strings.Contains(s, "{{") {
				t.Errorf("%s: summary %q must be a static sentence", r.Alert, s)
			}
			if d := r.Annotations["description"]; !strings.Contains(d, "$labels.") {
				t.Errorf("%s: description %q names no label", r.Alert, d)
			}
			if u := r.Annotations["runbook_url"]; u != m.Config.RunbookBaseURL+r.Alert+".md" {
				t.Errorf("%s: runbook_url %q", r.Alert, u)
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d alerts", n)
	}
}

// Every rule and dashboard expression parses, reads only catalogued metrics, never rate()s a
// gauge, and (rules) keeps the cluster label in every aggregation.
func TestLintPassesOnDefaultAndCustomConfigs(t *testing.T) {
	for _, cfgFile := range []string{"", "testdata/config/custom.good.yaml"} {
		cfg, err := Load(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Lint(); err != nil {
			t.Errorf("config %q: %v", cfgFile, err)
		}
	}
}

func TestExprCheckerCatchesMistakes(t *testing.T) {
	c := buildDefault(t).NewExprChecker()
	tests := []struct {
		name, expr, want string
	}{
		{"rate over a gauge", `sum by (cluster) (rate(workqueue_unfinished_work_seconds[5m]))`, `rate() over gauge "workqueue_unfinished_work_seconds"`},
		{"unknown metric", `sum by (cluster) (workqueue_dept)`, `metric "workqueue_dept" is not in the catalogue`},
		{"aggregation dropping the cluster label", `sum by (controller) (workqueue_depth)`, `drops the cluster label`},
		{"without instead of by", `sum without (priority) (workqueue_depth)`, `sum without (...)`},
		{"syntax error", `sum by (cluster (workqueue_depth)`, `parse:`},
		{"histogram bucket of an unknown histogram", `sum by (cluster) (rate(foo_bucket[5m]))`, `metric "foo_bucket"`},
		{"a divisor that is NaN when absent", `sum by (cluster) (workqueue_depth) / scalar(count(workqueue_depth))`, `scalar() is NaN`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Check(tt.expr, true)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check(%q) = %v, want error containing %q", tt.expr, err, tt.want)
			}
		})
	}
	for _, ok := range []string{
		`sum by (cluster, le) (rate(workqueue_queue_duration_seconds_bucket[5m]))`,
		`max by (cluster) (workqueue_longest_running_processor_seconds)`,
		`sum by (cluster) (changes(leader_election_master_status[1h]))`,
		`sum by (cluster) (workqueue_depth) / on () group_left () count(workqueue_depth)`,
	} {
		if err := c.Check(ok, true); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
}

// A custom config changes selectors, the cluster label and thresholds in both rules and
// dashboards.
func TestCustomConfigReachesRulesAndDashboards(t *testing.T) {
	cfg, err := Load("testdata/config/custom.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs := files(t, m)
	rules := string(fs[RulesFile])
	for _, want := range []string{
		`workqueue_depth{job="backup-operator", namespace="backup-system", controller!=""}`,
		`sum by (k8s_cluster, namespace, job, controller)`,
		`cluster_namespace_job_controller:workqueue_depth:sum > 500`,
		`for: 30m`,
		`le=~"10(\\.0)?"`,
		`> 0.05`,
		`{method="PATCH"} > 5`,
		`severity: critical`,
		`interval: 30s`,
		`https://runbooks.example.com/loopwatch/LoopwatchQueueBacklog.md`,
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("rules lack %q", want)
		}
	}
	for _, gone := range []string{"LoopwatchHotLoop", "loopwatch.audit", `job!=""`, "sum by (cluster,"} {
		if strings.Contains(rules, gone) {
			t.Errorf("rules still contain %q", gone)
		}
	}
	dash := string(fs["dashboards/loopwatch-controller.json"])
	for _, want := range []string{`job=\"backup-operator\", namespace=\"backup-system\", k8s_cluster=~\"$cluster\"`, `"uid": "backup-controller"`, "label_values(controller_runtime_reconcile_total{job=\\\"backup-operator\\\", namespace=\\\"backup-system\\\"}, k8s_cluster)"} {
		if !strings.Contains(dash, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
}

func TestPrometheusRuleManifestHoldsTheSameGroups(t *testing.T) {
	fs := files(t, buildDefault(t))
	pr := string(fs[PrometheusRuleFile])
	for _, want := range []string{"apiVersion: monitoring.coreos.com/v1", "kind: PrometheusRule", "name: loopwatch", "namespace: monitoring", "role: alert-rules"} {
		if !strings.Contains(pr, want) {
			t.Errorf("manifest lacks %q", want)
		}
	}
	// spec.groups is the rule file's groups, indented under spec.
	rules := strings.TrimPrefix(string(fs[RulesFile]), "# "+Header+"\n")
	indented := strings.ReplaceAll(strings.TrimSuffix(rules, "\n"), "\n", "\n  ")
	if !strings.Contains(pr, "spec:\n  "+indented) {
		t.Error("spec.groups differs from the rule file's groups")
	}
}

// prometheusRule.labels in a config reaches the manifest next to the default labels: the one
// setting kube-prometheus-stack's rule selector needs.
func TestPrometheusRuleLabelsFromConfig(t *testing.T) {
	cfg, err := Parse("kube-prometheus-stack", []byte("prometheusRule:\n  labels: {release: kube-prometheus-stack}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Metadata struct {
			Namespace string            `yaml:"namespace"`
			Labels    map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
	}
	if err := yaml.Unmarshal(files(t, mustBuild(t, cfg))[PrometheusRuleFile], &manifest); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"release": "kube-prometheus-stack", "app.kubernetes.io/name": "loopwatch", "role": "alert-rules"}
	if !reflect.DeepEqual(manifest.Metadata.Labels, want) {
		t.Errorf("labels %v, want %v", manifest.Metadata.Labels, want)
	}
	if manifest.Metadata.Namespace != "monitoring" {
		t.Errorf("namespace %q, want the default monitoring", manifest.Metadata.Namespace)
	}
}

func mustBuild(t *testing.T, cfg Config) *Model {
	t.Helper()
	m, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A rule reads only recordings that an earlier group, or an earlier rule of its own group,
// writes: promtool evaluates the groups in file order at one timestamp, and a rule of the
// same group sees this evaluation's value only when it comes after the rule it reads.
// ruleSelections parses a generated rules file and calls f for each rule, in file order, with
// the metric names its expression selects.
func ruleSelections(t *testing.T, content []byte, f func(group string, r rulefmt.Rule, names []string)) {
	t.Helper()
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promqlParser, promslog.NewNopLogger())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, vs := range parser.ExtractSelectors(expr) {
				for _, mt := range vs {
					if mt.Name == model.MetricNameLabel {
						names = append(names, mt.Value)
					}
				}
			}
			f(g.Name, rulefmt.Rule{Record: r.Record, Alert: r.Alert, Expr: r.Expr}, names)
		}
	}
}

func TestRulesReadOnlyEarlierRecordings(t *testing.T) {
	rules := files(t, buildDefault(t))[RulesFile]
	all := map[string]bool{}
	ruleSelections(t, rules, func(_ string, r rulefmt.Rule, _ []string) {
		if r.Record != "" {
			all[r.Record] = true
		}
	})
	defined := map[string]bool{}
	reads := 0
	ruleSelections(t, rules, func(group string, r rulefmt.Rule, names []string) {
		for _, name := range names {
			// A rule reading its own series reads the values its earlier evaluations recorded
			// (a latch, such as the last time a job exported controller metrics).
			if !all[name] || name == r.Record {
				continue
			}
			reads++
			if !defined[name] {
				t.Errorf("group %s: %s%s reads %s, which no earlier rule records", group, r.Record, r.Alert, name)
			}
		}
		if r.Record != "" {
			defined[r.Record] = true
		}
	})
	if reads == 0 {
		t.Fatal("no rule reads a recording: the check compared nothing")
	}
}

// A recording made for one alert goes with that alert: disabling the alert drops the recording,
// and the rest still passes the lint.
func TestDisabledAlertDropsItsRecordings(t *testing.T) {
	own := []string{recQueueWaitLong.Name, recQueueDepthNormal.Name}
	rules := string(files(t, buildDefault(t))[RulesFile])
	for _, name := range own {
		if !strings.Contains(rules, "record: "+name) {
			t.Fatalf("default rules lack %s", name)
		}
	}
	cfg := Default()
	s := cfg.Alerts[QueueWaitHigh.Key]
	s.Disabled = true
	cfg.Alerts[QueueWaitHigh.Key] = s
	m, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rules = string(files(t, m)[RulesFile])
	for _, gone := range append(own, QueueWaitHigh.FullName()) {
		if strings.Contains(rules, gone) {
			t.Errorf("rules still contain %s with %s disabled", gone, QueueWaitHigh.FullName())
		}
	}
	if !strings.Contains(rules, "record: "+recQueueDepth.Name) {
		t.Errorf("rules lost %s, which other alerts read", recQueueDepth.Name)
	}
	if err := m.Lint(); err != nil {
		t.Error(err)
	}
}

// A recording that several alerts read stays while one of them is enabled, and goes with the
// last of them.
func TestRecordingOfSeveralAlertsGoesWithTheLast(t *testing.T) {
	readers := []*Alert{WriteFight, HotObject, ReplicaRace}
	for n := 0; n <= len(readers); n++ {
		cfg := Default()
		for _, a := range readers[:n] {
			s := cfg.Alerts[a.Key]
			s.Disabled = true
			cfg.Alerts[a.Key] = s
		}
		m, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rules := string(files(t, m)[RulesFile])
		if got, want := strings.Contains(rules, "record: "+recAuditWriterJobs.Name), n < len(readers); got != want {
			t.Errorf("with %d of its %d readers disabled, rules hold %s: %v, want %v", n, len(readers), recAuditWriterJobs.Name, got, want)
		}
		if err := m.Lint(); err != nil {
			t.Errorf("with %d of its %d readers disabled: %v", n, len(readers), err)
		}
	}
}

// A recording made for some alerts is read by those alerts and by nothing else: no other rule,
// no dashboard. Otherwise disabling the alerts would break its other readers.
func TestRecordingsForSomeAlertsHaveNoOtherReader(t *testing.T) {
	m := buildDefault(t)
	owners := map[string][]string{}
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if r.Recording == nil {
				continue
			}
			for _, a := range r.Recording.owners() {
				owners[r.Record] = append(owners[r.Record], a.FullName())
			}
		}
	}
	if len(owners) == 0 {
		t.Fatal("no recording is made for some alerts: the check compared nothing")
	}
	fs := files(t, m)
	read := map[string]map[string]bool{}
	ruleSelections(t, fs[RulesFile], func(_ string, r rulefmt.Rule, names []string) {
		for _, name := range names {
			if o, ok := owners[name]; ok {
				if !slices.Contains(o, r.Alert) && r.Record != name {
					t.Errorf("%s%s reads %s, which is recorded for %v only", r.Record, r.Alert, name, o)
				}
				if read[name] == nil {
					read[name] = map[string]bool{}
				}
				read[name][r.Alert] = true
			}
		}
	})
	for name, o := range owners {
		for _, a := range o {
			if !read[name][a] {
				t.Errorf("%s is recorded for %s, which does not read it", name, a)
			}
		}
		for path, content := range fs {
			if strings.HasPrefix(path, "dashboards/") && strings.Contains(string(content), name) {
				t.Errorf("dashboard %s reads %s, which is recorded for %v only", path, name, o)
			}
		}
	}
}

// A recording named as a share (its operations start with ratio_ or share_) is declared Share,
// and only such a recording is: the end-to-end scenes check the values of exactly those.
func TestShareRecordingsAreDeclared(t *testing.T) {
	m := buildDefault(t)
	shares := m.ShareRecordings()
	if len(shares) == 0 {
		t.Fatal("no recording is declared a share: the check compared nothing")
	}
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if r.Recording == nil {
				continue
			}
			ops := r.Record[strings.LastIndex(r.Record, ":")+1:]
			named := strings.HasPrefix(ops, "ratio_") || strings.HasPrefix(ops, "share_")
			if named != r.Recording.Share {
				t.Errorf("%s: named as a share %v, declared Share %v", r.Record, named, r.Recording.Share)
			}
			if named != slices.Contains(shares, r.Record) {
				t.Errorf("%s: ShareRecordings lists it %v", r.Record, !named)
			}
		}
	}
}
