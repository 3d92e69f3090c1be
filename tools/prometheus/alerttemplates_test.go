package tools

// What an alerting rule's instances cost the pinned Prometheus beyond its query. Prometheus
// expands every label and annotation of an alerting rule as a Go template, for every instance
// (pending or firing), at every evaluation, static text included (rules/alerting.go: Eval); the
// rule's query result is the same whatever the rule's labels and annotations. So an alert with
// many instances costs its group a fixed amount per instance and per field, which no expression
// can lower. BenchmarkAlertInstances measures that on the generated rule file, in one run:
//
//   - as-generated: the rule as loopwatch generates it;
//   - templated-only: only the fields that hold a template (what Prometheus would expand if it
//     left static text alone);
//   - no-fields: the rule without labels and annotations, the baseline.
//
// make bench-alert-instances runs it; make test runs each case once so that it keeps compiling
// and running against the pinned Prometheus.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
)

// defaultInstances is the number of LoopwatchQueueBacklog instances make bench-rules' fleet of
// 500 controllers holds pending (internal/benchrules: 59 % of the controllers with a backlog).
const defaultInstances = 295

// instanceLabels are the labels an instance carries: those most of loopwatch's controller alerts
// keep (LoopwatchQueueBacklog's); a template reading another label reads an empty value, at the
// same cost.
var instanceLabels = []string{"cluster", "namespace", "job", "controller"}

func alertingRules(tb testing.TB) []rulefmt.Rule {
	tb.Helper()
	path := os.Getenv("LOOPWATCH_RULES")
	if path == "" {
		path = "../../rules/loopwatch.rules.yaml"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		tb.Fatalf("%s: %v", path, errs)
	}
	var alerts []rulefmt.Rule
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	if len(alerts) == 0 {
		tb.Fatalf("%s holds no alerting rule", path)
	}
	return alerts
}

func instances(tb testing.TB) int {
	tb.Helper()
	s := os.Getenv("LOOPWATCH_ALERT_INSTANCES")
	if s == "" {
		return defaultInstances
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		tb.Fatalf("LOOPWATCH_ALERT_INSTANCES=%q: want a positive number", s)
	}
	return n
}

// templated keeps the fields whose value holds a template.
func templated(fields map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range fields {
		if strings.Contains(v, "{{") {
			out[k] = v
		}
	}
	return out
}

// evaluator evaluates one alerting rule whose query returns n instances, each time one
// evaluation interval later, as Prometheus' rule group does.
type evaluator struct {
	rule   *rules.AlertingRule
	result promql.Vector
	ts     time.Time
}

func newEvaluator(tb testing.TB, r rulefmt.Rule, lbls, anns map[string]string, n int) *evaluator {
	tb.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
	if err != nil {
		tb.Fatalf("%s: %v", r.Alert, err)
	}
	result := make(promql.Vector, n)
	for i := range result {
		b := labels.NewScratchBuilder(len(instanceLabels))
		for _, name := range instanceLabels {
			b.Add(name, fmt.Sprintf("%s-%d", name, i))
		}
		b.Sort()
		result[i] = promql.Sample{Metric: b.Labels(), F: 150 + float64(i)}
	}
	rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
		labels.FromMap(lbls), labels.FromMap(anns), labels.EmptyLabels(), "", true, slog.New(slog.DiscardHandler))
	return &evaluator{rule: rule, result: result, ts: time.Unix(1_800_000_000, 0)}
}

func (e *evaluator) eval(tb testing.TB) {
	e.ts = e.ts.Add(time.Minute)
	query := func(context.Context, string, time.Time) (promql.Vector, error) { return e.result, nil }
	if _, err := e.rule.Eval(context.Background(), 0, e.ts, query, nil, 0); err != nil {
		tb.Fatalf("%s: %v", e.rule.Name(), err)
	}
}

func BenchmarkAlertInstances(b *testing.B) {
	n := instances(b)
	for _, r := range alertingRules(b) {
		cases := []struct {
			name       string
			lbls, anns map[string]string
		}{
			{"as-generated", r.Labels, r.Annotations},
			{"templated-only", templated(r.Labels), templated(r.Annotations)},
			{"no-fields", nil, nil},
		}
		for _, c := range cases {
			b.Run(r.Alert+"/"+c.name, func(b *testing.B) {
				e := newEvaluator(b, r, c.lbls, c.anns, n)
				e.eval(b) // the instances become active, as after the group's first evaluation
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					e.eval(b)
				}
				b.ReportMetric(float64(len(c.lbls)+len(c.anns)), "fields")
			})
		}
	}
}

// TestAlertInstancesExpandEveryField pins what the benchmark's reading rests on: the pinned
// Prometheus expands each label and annotation of each instance at each evaluation, static text
// included. If it fails, Prometheus has learnt to skip or cache them, and make bench-rules'
// alert groups must be measured again.
func TestAlertInstancesExpandEveryField(t *testing.T) {
	static := rulefmt.Rule{Alert: "Static", Expr: "vector(1)"}
	e := newEvaluator(t, static, map[string]string{"severity": "warning"}, map[string]string{"summary": "static text"}, 50)
	e.eval(t)
	base := newEvaluator(t, static, nil, nil, 50)
	base.eval(t)
	with := testing.AllocsPerRun(5, func() { e.eval(t) })
	without := testing.AllocsPerRun(5, func() { base.eval(t) })
	t.Logf("allocations per evaluation of 50 instances: %.0f with two static fields, %.0f without", with, without)
	// Expanding one field allocates about a hundred objects (a function map, a parsed template);
	// two static fields on 50 instances are 100 expansions.
	if perExpansion := (with - without) / 100; perExpansion < 20 {
		t.Fatalf("two static fields on 50 instances add %.0f allocations per evaluation (%.1f per field and instance): Prometheus no longer expands static text per instance", with-without, perExpansion)
	}
}
