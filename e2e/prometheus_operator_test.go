package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// kube-prometheus-stack's Prometheus, for a Helm release named kube-prometheus-stack: with the
// chart's defaults (ruleSelectorNilUsesHelmValues: true) it selects the PrometheusRules labelled
// release: <release name> in every namespace.
const (
	kpsReleaseLabel = "release"
	kpsRelease      = "kube-prometheus-stack"
	kpsPrometheus   = "kube-prometheus-stack-prometheus"
	kpsNamespace    = "monitoring"
)

var (
	prometheusGVR     = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}
	prometheusRuleGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}
)

// operatorCase is one config's generated PrometheusRule, in a namespace of its own.
type operatorCase struct {
	name      string // "default" or the config fixture's file name
	namespace string
	manifest  []byte             // the generated rules/loopwatch.prometheusrule.yaml
	want      rulefmt.RuleGroups // the generated rules/loopwatch.rules.yaml
	uid       string             // of the created PrometheusRule: the operator's rule file key has it
}

// ruleFileKey is the key of the case's rules in the operator's rule ConfigMaps:
// <namespace>-<name>-<uid>.yaml.
func (c operatorCase) ruleFileKey() string {
	return fmt.Sprintf("%s-%s-%s.yaml", c.namespace, "loopwatch", c.uid)
}

// TestGeneratedRulesThroughPrometheusOperator puts the generated PrometheusRule in front of the
// real prometheus-operator as kube-prometheus-stack runs it: a Prometheus whose ruleSelector is
// the chart's default, and the rule labelled through the loopwatch config
// (prometheusRule.labels), for the default config and every good config fixture at once. The
// operator re-marshals every rule through its own types, validates it with the rule parser of
// its Prometheus (3.5 for v0.85.0), drops fields by Prometheus version and caps its ConfigMaps;
// a rule it refuses is skipped with a Warning event and a count in its own metrics only. So for
// each config: the operator selected it and rejected none (its metric, no InvalidConfiguration
// event), its rule ConfigMap holds every group, alert and recording rule of the generated rule
// file unchanged (names, expressions, for, labels, annotations), promtool accepts the file it
// wrote, and the real Prometheus loads all of them and evaluates them without a failure. Then a
// PrometheusRule the operator rejects must fail the same checks.
func TestGeneratedRulesThroughPrometheusOperator(t *testing.T) {
	stack.SkipShort(t)
	crds, err := stack.PrometheusOperatorCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	runCRDs, err := stack.PrometheusOperatorRunCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	promtool, err := stack.LookPath("promtool")
	if err != nil {
		t.Fatal(err)
	}
	cases := operatorCases(t)
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{CRDDirectories: []string{crds, runCRDs}})
	op := stack.NewTestPrometheusOperator(t, cp, stack.PrometheusOperatorOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	rules := dynamic.NewForConfigOrDie(cp.AdminConfig()).Resource(prometheusRuleGVR)

	createKPSPrometheus(ctx, t, cp)
	for i := range cases {
		createManifest(ctx, t, cp, cases[i].manifest)
		obj, err := rules.Namespace(cases[i].namespace).Get(ctx, "loopwatch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cases[i].uid = string(obj.GetUID())
	}

	files := waitForRuleFiles(ctx, t, admin, op, cases, len(cases))
	t.Run("the operator selects every config's rules and rejects none", func(t *testing.T) {
		if err := managedRules(ctx, op, len(cases), 0); err != nil {
			t.Error(err)
		}
		for _, c := range cases {
			if err := operatorVerdict(ctx, admin, files, c); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	})

	dir := t.TempDir()
	var paths []string
	t.Run("promtool accepts every rule file the operator wrote", func(t *testing.T) {
		for _, c := range cases {
			content, ok := files[c.ruleFileKey()]
			if !ok {
				t.Errorf("%s: no rule file", c.name)
				continue
			}
			path := filepath.Join(dir, c.ruleFileKey())
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, path)
			if out, err := exec.CommandContext(ctx, promtool, "check", "rules", path).CombinedOutput(); err != nil {
				t.Errorf("%s: promtool check rules: %v\n%s", c.name, err, out)
			}
		}
	})

	t.Run("Prometheus loads and evaluates every rule file the operator wrote", func(t *testing.T) {
		if len(paths) != len(cases) {
			t.Fatalf("%d rule files for %d configs", len(paths), len(cases))
		}
		// Every group at 1s (the files' own intervals go up to 30 minutes). No target: each
		// config's rules record the same series, which would collide; the generated rules are
		// evaluated on a real controller's data by TestGeneratedOutputsOnRealComponents, and the
		// operator's files hold the same rules (checked above).
		prom := stack.NewTestPrometheus(t, stack.PrometheusOptions{RuleFiles: paths, OneEvaluationInterval: true})
		if err := prom.WaitForRuleEvaluations(ctx, 3); err != nil {
			t.Fatal(err)
		}
		groups, err := prom.RuleGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, c := range cases {
			want += len(c.want.Groups)
		}
		if len(groups) != want {
			t.Errorf("Prometheus loaded %d rule groups, the configs generate %d", len(groups), want)
		}
		if err := prom.RuleHealth(ctx); err != nil {
			t.Error(err)
		}
	})

	// The negative control: a PrometheusRule the operator rejects (an expression its rule parser
	// refuses) must fail the checks above: no rule file, an InvalidConfiguration event and one
	// rejection in the operator's metric.
	t.Run("a PrometheusRule the operator rejects fails the checks", func(t *testing.T) {
		bad := rejectedCase(t, cases[0])
		createManifest(ctx, t, cp, bad.manifest)
		obj, err := rules.Namespace(bad.namespace).Get(ctx, "loopwatch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bad.uid = string(obj.GetUID())
		wait, cancelWait := context.WithTimeout(ctx, time.Minute)
		defer cancelWait()
		var last error
		for wait.Err() == nil {
			if last = managedRules(ctx, op, len(cases), 1); last == nil {
				if _, err := invalidConfigurationEvents(ctx, admin, bad); err == nil {
					break
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
		if last != nil {
			t.Fatalf("the operator did not count the rejection: %v", last)
		}
		if err := managedRules(ctx, op, len(cases), 0); err == nil {
			t.Error("the metric check passes with a rejected PrometheusRule")
		}
		files := readRuleFiles(ctx, t, admin)
		err = operatorVerdict(ctx, admin, files, bad)
		if err == nil {
			t.Fatal("the rejected PrometheusRule passes the checks")
		}
		for _, want := range []string{"no rule file", "InvalidConfiguration"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the verdict on the rejected rule does not say %q: %v", want, err)
			}
		}
		t.Logf("verdict on the rejected PrometheusRule: %v", err)
		for _, c := range cases {
			if err := operatorVerdict(ctx, admin, files, c); err != nil {
				t.Errorf("%s after the rejection: %v", c.name, err)
			}
		}
	})
}

// operatorCases generates the PrometheusRule and the rule file for the default config and each
// good config fixture, with the label kube-prometheus-stack selects by set through the config
// (prometheusRule.labels) and each in a namespace of its own (prometheusRule.namespace).
func operatorCases(t *testing.T) []operatorCase {
	t.Helper()
	fixtures, err := filepath.Glob(filepath.Join(repoRoot(t), "gen", "testdata", "config", "*.good.yaml"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no good config fixtures under gen/testdata/config: %v", err)
	}
	var out []operatorCase
	for _, path := range append([]string{""}, fixtures...) {
		name, doc := "default", map[string]any{}
		if path != "" {
			name = strings.TrimSuffix(filepath.Base(path), ".good.yaml")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if doc == nil {
				doc = map[string]any{}
			}
		}
		if _, set := doc["prometheusRule"]; set {
			t.Fatalf("%s sets prometheusRule: the test sets its namespace and labels", path)
		}
		ns := "loopwatch-" + name
		doc["prometheusRule"] = map[string]any{"namespace": ns, "labels": map[string]any{kpsReleaseLabel: kpsRelease}}
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := gen.Parse(name, data)
		if err != nil {
			t.Fatal(err)
		}
		files := generate(t, cfg)
		want, errs := parseRules(files[gen.RulesFile])
		if len(errs) > 0 {
			t.Fatalf("%s: the generated rule file: %v", name, errors.Join(errs...))
		}
		out = append(out, operatorCase{name: name, namespace: ns, manifest: files[gen.PrometheusRuleFile], want: *want})
	}
	return out
}

// rejectedCase is base's PrometheusRule in a namespace of its own with one more rule whose
// expression the operator's rule parser refuses.
func rejectedCase(t *testing.T, base operatorCase) operatorCase {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(base.manifest, &obj); err != nil {
		t.Fatal(err)
	}
	ns := "loopwatch-rejected"
	obj["metadata"].(map[string]any)["namespace"] = ns
	groups := obj["spec"].(map[string]any)["groups"].([]any)
	group := groups[0].(map[string]any)
	group["rules"] = append(group["rules"].([]any), map[string]any{
		"record": "loopwatch:unparsable:rate5m",
		"expr":   "sum(rate(controller_runtime_reconcile_total[5m])",
	})
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return operatorCase{name: "rejected", namespace: ns, manifest: data, want: base.want}
}

// createKPSPrometheus creates kube-prometheus-stack's Prometheus with the chart's default rule
// selection.
func createKPSPrometheus(ctx context.Context, t *testing.T, cp *stack.ControlPlane) {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kpsNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	prom := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "Prometheus",
		"metadata":   map[string]any{"name": kpsPrometheus, "namespace": kpsNamespace},
		"spec": map[string]any{
			"ruleSelector":          map[string]any{"matchLabels": map[string]any{kpsReleaseLabel: kpsRelease}},
			"ruleNamespaceSelector": map[string]any{},
		},
	}}
	res := dynamic.NewForConfigOrDie(cp.AdminConfig()).Resource(prometheusGVR).Namespace(kpsNamespace)
	if _, err := res.Create(ctx, prom, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("create Prometheus %s/%s: %v", kpsNamespace, kpsPrometheus, err)
	}
}

// readRuleFiles returns the rule files of the operator's ConfigMaps for kpsPrometheus
// (prometheus-<name>-rulefiles-<i>, more than one past 512 KiB), by key.
func readRuleFiles(ctx context.Context, t *testing.T, admin kubernetes.Interface) map[string]string {
	t.Helper()
	cms, err := admin.CoreV1().ConfigMaps(kpsNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	prefix := "prometheus-" + kpsPrometheus + "-rulefiles-"
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, prefix) {
			continue
		}
		for k, v := range cm.Data {
			files[k] = v
		}
	}
	return files
}

// waitForRuleFiles waits until the operator has selected n PrometheusRules and its ConfigMaps
// hold a rule file for every case, and returns the rule files. On timeout it fails with what the
// operator had done.
func waitForRuleFiles(ctx context.Context, t *testing.T, admin kubernetes.Interface, op *stack.PrometheusOperator, cases []operatorCase, n int) map[string]string {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		files := readRuleFiles(ctx, t, admin)
		state, err := op.ManagedResources(ctx, "PrometheusRule")
		missing := 0
		for _, c := range cases {
			if _, ok := files[c.ruleFileKey()]; !ok {
				missing++
			}
		}
		if err == nil && state["selected"] == float64(n) && missing == 0 {
			return files
		}
		select {
		case <-wait.Done():
			var msgs []string
			for _, c := range cases {
				if err := operatorVerdict(ctx, admin, files, c); err != nil {
					msgs = append(msgs, c.name+": "+err.Error())
				}
			}
			t.Fatalf("the operator has not written a rule file for every config after 2 minutes: managed PrometheusRules %v (%v), %d of %d rule files missing, rule files %v\n%s",
				state, err, missing, len(cases), sortedFileKeys(files), strings.Join(msgs, "\n"))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func sortedFileKeys(files map[string]string) []string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// managedRules checks the operator's own count of the PrometheusRules it manages: the ones it
// selected and took (a rejected one is not among them) and the ones it rejected.
func managedRules(ctx context.Context, op *stack.PrometheusOperator, selected, rejected int) error {
	state, err := op.ManagedResources(ctx, "PrometheusRule")
	if err != nil {
		return err
	}
	if state["selected"] != float64(selected) || state["rejected"] != float64(rejected) {
		return fmt.Errorf("prometheus_operator_managed_resources{resource=\"PrometheusRule\"}: %v selected and %v rejected, want %d and %d",
			state["selected"], state["rejected"], selected, rejected)
	}
	return nil
}

// invalidConfigurationEvents returns the operator's InvalidConfiguration events about the case's
// PrometheusRule, or an error when there is none.
func invalidConfigurationEvents(ctx context.Context, admin kubernetes.Interface, c operatorCase) ([]string, error) {
	events, err := admin.CoreV1().Events(c.namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=PrometheusRule,involvedObject.name=loopwatch,reason=InvalidConfiguration",
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Type+" "+e.Reason+": "+e.Message)
	}
	if len(out) == 0 {
		return nil, errors.New("no InvalidConfiguration event")
	}
	return out, nil
}

// operatorVerdict reports every sign that the operator did not take the case's rules as
// generated: no rule file for it, an InvalidConfiguration event about it, or a rule file whose
// groups and rules differ from the generated rule file's.
func operatorVerdict(ctx context.Context, admin kubernetes.Interface, files map[string]string, c operatorCase) error {
	var errs []error
	if events, err := invalidConfigurationEvents(ctx, admin, c); err == nil {
		errs = append(errs, fmt.Errorf("events: %s", strings.Join(events, "; ")))
	}
	content, ok := files[c.ruleFileKey()]
	if !ok {
		errs = append(errs, fmt.Errorf("no rule file %s in the operator's ConfigMaps", c.ruleFileKey()))
		return errors.Join(errs...)
	}
	got, parseErrs := parseRules([]byte(content))
	if len(parseErrs) > 0 {
		return errors.Join(append(errs, fmt.Errorf("the operator's rule file: %w", errors.Join(parseErrs...)))...)
	}
	return errors.Join(append(errs, diffRuleGroups(c.want, *got)...)...)
}

// parseRules parses a rule file as Prometheus does.
func parseRules(content []byte) (*rulefmt.RuleGroups, []error) {
	return rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), promslog.NewNopLogger())
}

// diffRuleGroups compares the groups and rules of two rule files field by field: group name,
// interval, limit, query offset and labels; each rule's name, expression, for, keep_firing_for, labels and
// annotations.
func diffRuleGroups(want, got rulefmt.RuleGroups) []error {
	var errs []error
	if len(got.Groups) != len(want.Groups) {
		errs = append(errs, fmt.Errorf("%d groups, want %d", len(got.Groups), len(want.Groups)))
	}
	for i := range min(len(got.Groups), len(want.Groups)) {
		w, g := want.Groups[i], got.Groups[i]
		if g.Name != w.Name || g.Interval != w.Interval || g.Limit != w.Limit || !reflect.DeepEqual(g.QueryOffset, w.QueryOffset) || !equalStrings(g.Labels, w.Labels) {
			errs = append(errs, fmt.Errorf("group %d: %q interval %v limit %d labels %v, want %q interval %v limit %d labels %v",
				i, g.Name, g.Interval, g.Limit, g.Labels, w.Name, w.Interval, w.Limit, w.Labels))
			continue
		}
		if len(g.Rules) != len(w.Rules) {
			errs = append(errs, fmt.Errorf("group %q: %d rules, want %d", w.Name, len(g.Rules), len(w.Rules)))
		}
		for j := range min(len(g.Rules), len(w.Rules)) {
			wr, gr := w.Rules[j], g.Rules[j]
			name := wr.Record + wr.Alert
			switch {
			case gr.Record != wr.Record || gr.Alert != wr.Alert:
				errs = append(errs, fmt.Errorf("group %q rule %d: %q, want %q", w.Name, j, gr.Record+gr.Alert, name))
			case gr.Expr != wr.Expr:
				errs = append(errs, fmt.Errorf("group %q rule %q: expression %q, want %q", w.Name, name, gr.Expr, wr.Expr))
			case gr.For != wr.For || gr.KeepFiringFor != wr.KeepFiringFor:
				errs = append(errs, fmt.Errorf("group %q rule %q: for %v keep_firing_for %v, want %v and %v", w.Name, name, gr.For, gr.KeepFiringFor, wr.For, wr.KeepFiringFor))
			case !equalStrings(gr.Labels, wr.Labels):
				errs = append(errs, fmt.Errorf("group %q rule %q: labels %v, want %v", w.Name, name, gr.Labels, wr.Labels))
			case !equalStrings(gr.Annotations, wr.Annotations):
				errs = append(errs, fmt.Errorf("group %q rule %q: annotations %v, want %v", w.Name, name, gr.Annotations, wr.Annotations))
			}
		}
	}
	return errs
}

// equalStrings compares two label or annotation maps, nil and empty alike.
func equalStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// The comparison of the operator's rule file with the generated one names every kind of change
// the operator could make, and none for the same file.
func TestDiffRuleGroupsNamesEachChange(t *testing.T) {
	want, errs := parseRules(generate(t, gen.Default())[gen.RulesFile])
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	// alert returns the indexes of the first group with an alerting rule that has labels and a
	// for: duration.
	alert := func(g rulefmt.RuleGroups) (int, int) {
		for i, grp := range g.Groups {
			for j, r := range grp.Rules {
				if r.Alert != "" && r.For > 0 && len(r.Labels) > 0 {
					return i, j
				}
			}
		}
		t.Fatal("no alert with labels and a for: duration")
		return 0, 0
	}
	tests := []struct {
		name   string
		change func(g *rulefmt.RuleGroups)
		want   string
	}{
		{"a changed expression", func(g *rulefmt.RuleGroups) { i, j := alert(*g); g.Groups[i].Rules[j].Expr += " > 1" }, "expression"},
		{"a dropped for", func(g *rulefmt.RuleGroups) { i, j := alert(*g); g.Groups[i].Rules[j].For = 0 }, "for 0s"},
		{"a dropped label", func(g *rulefmt.RuleGroups) {
			i, j := alert(*g)
			g.Groups[i].Rules[j].Labels = map[string]string{}
		}, "labels"},
		{"a changed annotation", func(g *rulefmt.RuleGroups) {
			i, j := alert(*g)
			g.Groups[i].Rules[j].Annotations = map[string]string{"summary": "changed"}
		}, "annotations"},
		{"a renamed rule", func(g *rulefmt.RuleGroups) { i, j := alert(*g); g.Groups[i].Rules[j].Alert += "Renamed" }, "Renamed"},
		{"a dropped rule", func(g *rulefmt.RuleGroups) { g.Groups[0].Rules = g.Groups[0].Rules[1:] }, "rules, want"},
		{"a dropped group", func(g *rulefmt.RuleGroups) { g.Groups = g.Groups[1:] }, "groups, want"},
		{"another interval", func(g *rulefmt.RuleGroups) { g.Groups[0].Interval *= 2 }, "interval"},
	}
	if errs := diffRuleGroups(*want, *copyRuleGroups(t, *want)); len(errs) > 0 {
		t.Fatalf("differences between a file and itself: %v", errors.Join(errs...))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := copyRuleGroups(t, *want)
			tc.change(got)
			err := errors.Join(diffRuleGroups(*want, *got)...)
			if err == nil {
				t.Fatal("no difference found")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("difference %q does not mention %q", err, tc.want)
			}
		})
	}
}

// copyRuleGroups returns a deep copy of g.
func copyRuleGroups(t *testing.T, g rulefmt.RuleGroups) *rulefmt.RuleGroups {
	t.Helper()
	data, err := yaml.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var out rulefmt.RuleGroups
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
