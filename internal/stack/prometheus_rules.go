package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// RuleGroups returns the loaded rule groups with each rule's health and last error
// (/api/v1/rules).
func (p *Prometheus) RuleGroups(ctx context.Context) ([]promv1.RuleGroup, error) {
	res, err := p.api.Rules(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return res.Groups, nil
}

// ruleGroupKey is how Prometheus' own metrics name a group: "<file>;<group>".
func ruleGroupKey(g promv1.RuleGroup) string { return g.File + ";" + g.Name }

// WaitForRuleEvaluations waits until every loaded rule group has been evaluated at least n times
// (prometheus_rule_group_iterations_total), so health and results reflect real evaluations.
func (p *Prometheus) WaitForRuleEvaluations(ctx context.Context, n int) error {
	var behind []string
	err := poll(ctx, func(ctx context.Context) bool {
		b, err := p.groupsBehind(ctx, n)
		if ctx.Err() != nil {
			// The deadline cut this attempt short: keep what the previous one saw.
			return false
		}
		if err != nil {
			behind = []string{err.Error()}
			return false
		}
		behind = b
		return len(behind) == 0
	})
	if err != nil {
		return fmt.Errorf("wait for %d evaluations of every rule group: %w (behind: %s)", n, err, strings.Join(behind, "; "))
	}
	return nil
}

// groupsBehind lists the groups evaluated fewer than n times, with their count.
func (p *Prometheus) groupsBehind(ctx context.Context, n int) ([]string, error) {
	groups, err := p.RuleGroups(ctx)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, errors.New("no rule groups loaded")
	}
	iterations, err := p.selfMetric(ctx, "prometheus_rule_group_iterations_total", "rule_group")
	if err != nil {
		return nil, err
	}
	var behind []string
	for _, g := range groups {
		if got := iterations[ruleGroupKey(g)]; got < float64(n) {
			behind = append(behind, fmt.Sprintf("%s: %v", ruleGroupKey(g), got))
		}
	}
	return behind, nil
}

// RuleHealth reports every problem in the loaded rules, joined: a rule whose health is not "ok"
// or that has a lastError, and a group with evaluation failures
// (prometheus_rule_evaluation_failures_total > 0). No loaded group at all is an error too.
func (p *Prometheus) RuleHealth(ctx context.Context) error {
	groups, err := p.RuleGroups(ctx)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return errors.New("no rule groups loaded")
	}
	failures, err := p.EvaluationFailures(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range groups {
		for _, r := range g.Rules {
			name, health, lastError := ruleStatus(r)
			if health != promv1.RuleHealthGood || lastError != "" {
				errs = append(errs, fmt.Errorf("group %q rule %q: health %q: %s", g.Name, name, health, lastError))
			}
		}
		if f := failures[ruleGroupKey(g)]; f > 0 {
			errs = append(errs, fmt.Errorf("group %q (%s): %v evaluation failures", g.Name, g.File, f))
		}
	}
	return errors.Join(errs...)
}

// ruleStatus extracts name, health and last error from a recording or alerting rule.
func ruleStatus(r any) (name string, health promv1.RuleHealth, lastError string) {
	switch r := r.(type) {
	case promv1.RecordingRule:
		return r.Name, r.Health, r.LastError
	case promv1.AlertingRule:
		return r.Name, r.Health, r.LastError
	default:
		return fmt.Sprintf("%v", r), promv1.RuleHealthUnknown, "unknown rule type"
	}
}

// EvaluationFailures returns prometheus_rule_evaluation_failures_total by rule group
// ("<file>;<group>"), read from Prometheus' own /metrics so no self-scrape is needed.
func (p *Prometheus) EvaluationFailures(ctx context.Context) (map[string]float64, error) {
	return p.selfMetric(ctx, "prometheus_rule_evaluation_failures_total", "rule_group")
}

// selfMetric reads the counter or gauge family name from Prometheus' /metrics and sums it by label.
func (p *Prometheus) selfMetric(ctx context.Context, name, label string) (map[string]float64, error) {
	families, err := p.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	mf, ok := families[name]
	if !ok {
		return out, nil
	}
	for _, m := range mf.GetMetric() {
		var key string
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				key = l.GetValue()
			}
		}
		switch {
		case m.Counter != nil:
			out[key] += m.GetCounter().GetValue()
		case m.Gauge != nil:
			out[key] += m.GetGauge().GetValue()
		case m.Untyped != nil:
			out[key] += m.GetUntyped().GetValue()
		}
	}
	return out, nil
}

// Metrics reads Prometheus' own /metrics, by family name, so no self-scrape is needed.
func (p *Prometheus) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	families, err := readMetrics(ctx, p.http, p.url+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	return families, nil
}

// readMetrics reads a component's /metrics at url in the text format, by family name.
func readMetrics(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// sortedKeys returns m's keys in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
