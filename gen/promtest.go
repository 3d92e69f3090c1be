package gen

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
)

// promtool unit tests are generated for the rules of whatever config is given: every alert's
// cases and every recording rule's cases (declared with them, in terms of their settings) are
// rendered as `promtool test rules` files beside the rules. A firing case says when, by
// construction of its input, the alert's condition starts to hold; the test then expects the
// alert to be silent one evaluation before its `for:` boundary and to fire at it, with its full
// labels and rendered annotations. A healthy case expects silence all along.

// TestsDir is where the generated promtool tests go, relative to the output directory. Each file
// loads the rule file from ../rules.
const TestsDir = "testrules"

// Case is one promtool case of an alert.
type Case struct {
	// Name says in a sentence what happens, e.g. "fires when the queue is deep and growing".
	Name string
	// Series are the input series.
	Series []*Series
	// Fires is set for a case in which the alert must fire; nil for a healthy case.
	Fires *Firing
	// Until is how long a healthy case runs; it is checked for silence all along. Zero means
	// half an hour past the alert's `for`.
	Until time.Duration
	// Checks are evaluation times a healthy case is checked at besides its evenly spaced
	// ones: where the alert would fire but for what the case is about, which may be a few
	// minutes that the even spacing steps over.
	Checks []time.Duration
}

// Firing is what a firing case expects.
type Firing struct {
	// At is the first sample time at which the alert's condition holds, and it holds from then
	// on; the input is built so that this follows from the alert's settings.
	At time.Duration
	// Labels are the labels of the alert instance, besides severity.
	Labels Labels
	// Value is the expression's value at time t (from At on), which the annotations render.
	Value func(t time.Duration) float64
}

// ExprCase is one promql_expr_test of a recording rule: the rule's output at one time.
type ExprCase struct {
	Name   string
	Series []*Series
	// At is the evaluation time; Want the samples the rule's series then has.
	At   time.Duration
	Want []Sample
}

// Sample is one expected sample of a recorded series.
type Sample struct {
	Labels Labels
	Value  float64
}

// Constant is a Firing.Value that does not change once the condition holds.
func Constant(v float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return v }
}

// caseEnv is what cases are written with: the settings of the config the tests are generated for,
// and input label sets that its selectors accept.
type caseEnv struct {
	cfg  Config
	a    *Alert
	errs []error
}

// P is the configured value of the alert's parameter key.
func (c *caseEnv) P(key string) float64 {
	if _, ok := c.a.param(key); !ok {
		panic("alert " + c.a.Key + " has no parameter " + key)
	}
	return c.cfg.Alerts[c.a.Key].Values[key]
}

// For is the configured `for` of the alert.
func (c *caseEnv) For() time.Duration { return time.Duration(c.cfg.Alerts[c.a.Key].For) }

// Objective is the configured reconcile success objective.
func (c *caseEnv) Objective() float64 { return c.cfg.SLO.Objective }

// Target returns the labels of one scraped pod that the named selector (see builder.selector)
// accepts, with the cluster label.
func (c *caseEnv) Target(selector string) Labels {
	var base Labels
	switch selector {
	case "exporter":
		base = exporterTarget
	case "apiserver":
		base = apiserverTarget
	default:
		base = controllerTarget
	}
	l, err := satisfy(c.cfg.selectorValue(selector), base.With(c.cfg.ClusterLabel, testCluster))
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("selectors.%s: %w", selector, err))
		return base
	}
	return l
}

// Controller returns the labels of controller "backup" of the controller target: controller-runtime
// labels workqueue series with both name and controller.
func (c *caseEnv) Controller() Labels {
	return c.Target("controller").With("controller", "backup", "name", "backup")
}

// secondJob returns l as a second scrape job of the same targets labels it, and whether the named
// selector accepts a second job at all (one that names a single job does not).
func (c *caseEnv) secondJob(selector string, l Labels) (Labels, bool) {
	twin, err := satisfy(c.cfg.selectorValue(selector), l.With("job", l["job"]+"-native"))
	if err != nil || twin["job"] == l["job"] {
		return nil, false
	}
	return twin, true
}

// Instance returns the labels of l the alert keeps: those of its aggregation level.
func (c *caseEnv) Instance(l Labels) Labels { return l.Only(c.a.LabelNames(c.cfg)...) }

// Interval is the rule evaluation interval.
func (c *caseEnv) Interval() time.Duration { return time.Duration(c.cfg.RuleInterval) }

// ceilTo rounds d up to a multiple of step.
func ceilTo(d, step time.Duration) time.Duration {
	if r := d % step; r != 0 {
		return d + step - r
	}
	return d
}

// The YAML shape of promtool's unit test files (cmd/promtool/unittest.go).
type (
	testFile struct {
		RuleFiles          []string    `yaml:"rule_files"`
		EvaluationInterval string      `yaml:"evaluation_interval"`
		FuzzyCompare       bool        `yaml:"fuzzy_compare"`
		GroupEvalOrder     []string    `yaml:"group_eval_order"`
		Tests              []testGroup `yaml:"tests"`
	}
	testGroup struct {
		Name           string        `yaml:"name"`
		Interval       string        `yaml:"interval"`
		InputSeries    []inputSeries `yaml:"input_series"`
		AlertRuleTests []alertTest   `yaml:"alert_rule_test,omitempty"`
		PromqlExprTest []exprTest    `yaml:"promql_expr_test,omitempty"`
	}
	inputSeries struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	alertTest struct {
		EvalTime  string     `yaml:"eval_time"`
		Alertname string     `yaml:"alertname"`
		ExpAlerts []expAlert `yaml:"exp_alerts"`
	}
	expAlert struct {
		ExpLabels      map[string]string `yaml:"exp_labels"`
		ExpAnnotations map[string]string `yaml:"exp_annotations"`
	}
	exprTest struct {
		Expr       string      `yaml:"expr"`
		EvalTime   string      `yaml:"eval_time"`
		ExpSamples []expSample `yaml:"exp_samples"`
	}
	expSample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
)

// healthyChecks is how many evaluation times a healthy case is checked at, spread over its run.
const healthyChecks = 8

// testFiles renders one promtool test file per rule group of the model.
func (m *Model) testFiles() ([]File, error) {
	var order []string
	for _, g := range m.Groups {
		order = append(order, g.Name)
	}
	interval := time.Duration(m.Config.RuleInterval)
	var files []File
	var errs []error
	for _, g := range m.Groups {
		f := testFile{
			RuleFiles:          []string{"../" + RulesFile},
			EvaluationInterval: model.Duration(interval).String(),
			FuzzyCompare:       true,
			GroupEvalOrder:     order,
		}
		for _, r := range g.Rules {
			var tgs []testGroup
			var err error
			if r.Decl != nil {
				tgs, err = m.alertTests(r)
			} else {
				tgs, err = m.recordingTests(r)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("tests of %s: %w", r.Record+r.Alert, err))
				continue
			}
			f.Tests = append(f.Tests, tgs...)
		}
		b, err := yamlDocs([]any{f})
		if err != nil {
			return nil, err
		}
		header := "# " + Header + "\n# promtool unit tests of group " + g.Name + " for this config. Run: promtool test rules " + TestsDir + "/*.test.yaml\n"
		files = append(files, File{TestsDir + "/" + g.Name + ".test.yaml", []byte(header + strings.TrimPrefix(string(b), "# "+Header+"\n"))})
	}
	return files, errors.Join(errs...)
}

// alertTests renders the cases of one alert rule.
func (m *Model) alertTests(r Rule) ([]testGroup, error) {
	a := r.Decl
	env := &caseEnv{cfg: m.Config, a: a}
	cases := a.Cases(env)
	if len(env.errs) > 0 {
		return nil, errors.Join(env.errs...)
	}
	var firing, healthy int
	var out []testGroup
	interval := env.Interval()
	severity := string(m.Config.Alerts[a.Key].Severity)
	for _, c := range cases {
		tg := testGroup{Name: r.Alert + ": " + c.Name, Interval: model.Duration(sampleInterval).String()}
		var end time.Duration
		if f := c.Fires; f != nil {
			firing++
			t0 := ceilTo(f.At, interval)
			tf := t0 + ceilTo(env.For(), interval)
			end = tf + sampleInterval
			labels := f.Labels.With("severity", severity)
			ann, err := m.expandAnnotations(r, f.Labels, f.Value(tf))
			if err != nil {
				return nil, fmt.Errorf("case %q: %w", c.Name, err)
			}
			if tf >= interval {
				tg.AlertRuleTests = append(tg.AlertRuleTests, alertTest{EvalTime: fmtDuration(tf - interval), Alertname: r.Alert, ExpAlerts: []expAlert{}})
			}
			tg.AlertRuleTests = append(tg.AlertRuleTests, alertTest{EvalTime: fmtDuration(tf), Alertname: r.Alert,
				ExpAlerts: []expAlert{{ExpLabels: labels, ExpAnnotations: ann}}})
		} else {
			healthy++
			end = c.Until
			if end == 0 {
				end = env.For() + 30*time.Minute
			}
			step := ceilTo(end/healthyChecks, interval)
			var times []time.Duration
			for t := step; t <= end; t += step {
				times = append(times, t)
			}
			times = append(times, c.Checks...)
			slices.Sort(times)
			for _, t := range slices.Compact(times) {
				tg.AlertRuleTests = append(tg.AlertRuleTests, alertTest{EvalTime: fmtDuration(t), Alertname: r.Alert, ExpAlerts: []expAlert{}})
			}
		}
		tg.InputSeries = renderSeries(c.Series, end)
		out = append(out, tg)
	}
	if firing == 0 || healthy == 0 {
		return nil, fmt.Errorf("alert %s declares %d firing and %d healthy cases: it needs at least one of each", a.Key, firing, healthy)
	}
	return out, nil
}

// recordingTests renders the cases of one recording rule.
func (m *Model) recordingTests(r Rule) ([]testGroup, error) {
	env := &caseEnv{cfg: m.Config, a: r.Recording.forAlert()}
	cases := r.Recording.Cases(env)
	if len(env.errs) > 0 {
		return nil, errors.Join(env.errs...)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("recording rule %s declares no case", r.Record)
	}
	var out []testGroup
	for _, c := range cases {
		et := exprTest{Expr: r.Record, EvalTime: fmtDuration(c.At), ExpSamples: []expSample{}}
		for _, s := range c.Want {
			et.ExpSamples = append(et.ExpSamples, expSample{Labels: s.Labels.selector(r.Record), Value: s.Value})
		}
		out = append(out, testGroup{
			Name:           r.Record + ": " + c.Name,
			Interval:       model.Duration(sampleInterval).String(),
			InputSeries:    renderSeries(c.Series, c.At),
			PromqlExprTest: []exprTest{et},
		})
	}
	return out, nil
}

func renderSeries(ss []*Series, end time.Duration) []inputSeries {
	out := make([]inputSeries, 0, len(ss))
	for _, s := range ss {
		out = append(out, inputSeries{Series: s.Labels.selector(s.Metric), Values: s.values(end)})
	}
	return out
}

func fmtDuration(d time.Duration) string { return model.Duration(d).String() }

// expandAnnotations renders an alert's annotations as Prometheus does for an instance with these
// labels and value.
func (m *Model) expandAnnotations(r Rule, l Labels, value float64) (map[string]string, error) {
	out := map[string]string{}
	for k, text := range m.annotations(r) {
		v, err := m.expandText(text, l, value)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// expandText renders one alert template as Prometheus does: the same template functions, the
// same variables, the same missing-key behaviour.
func (m *Model) expandText(text string, l Labels, value float64) (string, error) {
	data := struct {
		Labels map[string]string
		Value  float64
	}{l, value}
	t, err := template.New("alert").Funcs(alertTemplateFuncs).Option("missingkey=zero").
		Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// AtLevel returns the labels of l an aggregation at level lv keeps.
func (c *caseEnv) AtLevel(lv level, l Labels) Labels { return l.Only(lv.resolve(c.cfg)...) }

// FiringAlerts returns, for each firing case of alert a, the labels of the alert instance its
// promtool test expects, alertname and severity included: the labels the generated rule gives an
// instance, as Prometheus sends it to Alertmanager. Tests that feed Alertmanager take their
// alerts from here rather than writing label sets by hand.
func (m *Model) FiringAlerts(a *Alert) ([]map[string]string, error) {
	env := &caseEnv{cfg: m.Config, a: a}
	cases := a.Cases(env)
	if len(env.errs) > 0 {
		return nil, errors.Join(env.errs...)
	}
	var out []map[string]string
	for _, c := range cases {
		if c.Fires != nil {
			out = append(out, c.Fires.Labels.With("alertname", a.FullName(), "severity", string(m.Config.Alerts[a.Key].Severity)))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("alert %s declares no firing case", a.FullName())
	}
	return out, nil
}
