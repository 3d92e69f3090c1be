package gen

import (
	"fmt"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
)

// Rule is one recording or alerting rule of the model. Expr, For and the annotations are
// templates (see template.go).
type Rule struct {
	Record      string
	Alert       string
	Expr        string
	For         string
	Severity    Severity
	Summary     string
	Description string
}

// Group is one rule group of the model.
type Group struct {
	Name     string
	Interval string
	Rules    []Rule
}

// Model is everything loopwatch generates, built once from a Config: rule groups and dashboards,
// whose strings may refer to Params.
type Model struct {
	Config     Config
	Params     *Params
	Groups     []Group
	Dashboards []Dashboard
}

// builder collects the model while the rule and dashboard builders run.
type builder struct {
	cfg Config
	p   *Params
}

// Build turns a validated config into the model.
func Build(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &builder{cfg: cfg, p: newParams()}
	b.p.S("clusterLabel", cfg.ClusterLabel)
	m := &Model{Config: cfg, Params: b.p}
	interval := b.p.S("ruleInterval", cfg.RuleInterval.String())
	add := func(on bool, name string, rules []Rule) {
		if on && len(rules) > 0 {
			m.Groups = append(m.Groups, Group{Name: name, Interval: interval, Rules: rules})
		}
	}
	g := cfg.Groups
	add(g.Controller, groupControllerRules, b.controllerRecordingRules())
	add(g.SLO, groupSLORules, b.sloRecordingRules())
	add(g.Audit, groupAuditRules, b.auditRecordingRules())
	add(g.Controller, groupControllerAlerts, b.controllerAlerts())
	add(g.LeaderElection, groupLeaderAlerts, b.leaderElectionAlerts())
	add(g.SLO, groupSLOAlerts, b.sloAlerts())
	add(g.Audit, groupAuditAlerts, b.auditAlerts())
	m.Dashboards = b.dashboards()
	return m, nil
}

// selector references a configured selector; names: controller, controllerTargets, exporter, apiserver.
func (b *builder) selector(name string) string {
	s := b.cfg.Selectors
	values := map[string]string{
		"controller":        s.Controller,
		"controllerTargets": s.ControllerTargets,
		"exporter":          s.Exporter,
		"apiserver":         s.APIServer,
	}
	v, ok := values[name]
	if !ok {
		panic("unknown selector " + name)
	}
	return b.p.S(name+"Selector", v)
}

// alert builds an alert rule from its config: it is dropped (nil) when disabled.
func (b *builder) alert(key, short string, c Common, expr, summary, description string) []Rule {
	if c.Disabled {
		return nil
	}
	return []Rule{{
		Alert:       alertName(short),
		Expr:        expr,
		For:         b.p.S(key+"For", c.For.String()),
		Severity:    c.Severity,
		Summary:     summary,
		Description: description,
	}}
}

// record builds a recording rule.
func record(name, expr string) Rule { return Rule{Record: name, Expr: expr} }

// RuleGroups resolves the model's rule groups into typed rulefmt values.
func (m *Model) RuleGroups() (rulefmt.RuleGroups, error) {
	var out rulefmt.RuleGroups
	for _, g := range m.Groups {
		interval, err := model.ParseDuration(m.Params.Resolve(g.Interval))
		if err != nil {
			return out, fmt.Errorf("group %q: interval: %w", g.Name, err)
		}
		rg := rulefmt.RuleGroup{Name: g.Name, Interval: interval}
		for _, r := range g.Rules {
			rule, err := m.resolveRule(r)
			if err != nil {
				return out, fmt.Errorf("group %q: %w", g.Name, err)
			}
			rg.Rules = append(rg.Rules, rule)
		}
		out.Groups = append(out.Groups, rg)
	}
	return out, nil
}

func (m *Model) resolveRule(r Rule) (rulefmt.Rule, error) {
	out := rulefmt.Rule{Record: r.Record, Alert: r.Alert, Expr: m.Params.Resolve(r.Expr)}
	if r.Alert == "" {
		return out, nil
	}
	d, err := model.ParseDuration(m.Params.Resolve(r.For))
	if err != nil {
		return out, fmt.Errorf("alert %q: for: %w", r.Alert, err)
	}
	out.For = d
	out.Labels = map[string]string{"severity": string(r.Severity)}
	out.Annotations = m.annotations(r)
	return out, nil
}

// annotations returns the resolved annotations of an alert.
func (m *Model) annotations(r Rule) map[string]string {
	a := map[string]string{}
	for k, v := range m.annotationTemplates(r) {
		a[k] = m.Params.Resolve(v)
	}
	return a
}

// annotationTemplates returns the annotations of an alert as templates.
func (m *Model) annotationTemplates(r Rule) map[string]string {
	return map[string]string{
		"summary":     r.Summary,
		"description": r.Description,
		"runbook_url": m.Params.S("runbookBaseURL", m.Config.RunbookBaseURL) + r.Alert + ".md",
	}
}

// Alerts returns the names of every alert in the model, sorted.
func (m *Model) Alerts() []string {
	var names []string
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	sort.Strings(names)
	return names
}
