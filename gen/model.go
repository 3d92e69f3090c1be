package gen

import (
	"errors"
	"fmt"
	"sort"
	"strings"

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
	NextStep    string
	// Decl and Recording are the declarations the rule comes from.
	Decl      *Alert
	Recording *Recording
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
	// errs are the dashboard builders' errors (see fail).
	errs []error
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
	for _, g := range ruleGroups() {
		if !g.On(cfg.Groups) {
			continue
		}
		var rules []Rule
		for _, r := range g.Recordings {
			if !r.readByEnabled(cfg) {
				continue
			}
			rules = append(rules, Rule{Record: r.Name, Expr: r.Expr(&exprEnv{b: b, a: r.forAlert()}), Recording: r})
		}
		for _, a := range g.Alerts {
			if s := cfg.Alerts[a.Key]; !s.Disabled {
				rules = append(rules, Rule{
					Alert:       a.FullName(),
					Expr:        a.Expr(&exprEnv{b: b, a: a}),
					For:         b.p.S(a.mixinName(settingFor), s.For.String()),
					Severity:    s.Severity,
					Summary:     a.Summary,
					Description: localRefs(&exprEnv{b: b, a: a}, a.Description),
					NextStep:    nextStepTemplate(localRefs(&exprEnv{b: b, a: a}, a.NextStep)),
					Decl:        a,
				})
			}
		}
		if len(rules) > 0 {
			gi := interval
			if g.Interval > 0 {
				gi = model.Duration(g.Interval).String()
			}
			m.Groups = append(m.Groups, Group{Name: g.Name, Interval: gi, Rules: rules})
		}
	}
	m.Dashboards = b.dashboards()
	if err := errors.Join(b.errs...); err != nil {
		return nil, fmt.Errorf("build dashboards: %w", err)
	}
	return m, nil
}

// selectorValue returns the configured selector name refers to: controller,
// controllerTargets, exporter or apiserver.
func (c Config) selectorValue(name string) string {
	s := c.Selectors
	switch name {
	case "controller":
		return s.Controller
	case "controllerTargets":
		return s.ControllerTargets
	case "exporter":
		return s.Exporter
	case "apiserver":
		return s.APIServer
	}
	panic("unknown selector " + name)
}

// selector references a configured selector (see Config.selectorValue).
func (b *builder) selector(name string) string {
	return b.p.S(name+"Selector", b.cfg.selectorValue(name))
}

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
		"next_step":   r.NextStep,
		"runbook_url": m.Params.S("runbookBaseURL", m.Config.RunbookBaseURL) + r.Alert + ".md",
	}
}

// AlertRule returns the rule of alert declaration a as the rule file has it: its resolved
// expression, `for`, labels and annotation templates. It is false when the config leaves a out
// (its group is off or the alert disabled). loopwatch diagnose evaluates these expressions, so
// that it and the alerts agree on every threshold.
func (m *Model) AlertRule(a *Alert) (rulefmt.Rule, bool) {
	r, ok := m.rule(a)
	if !ok {
		return rulefmt.Rule{}, false
	}
	out, err := m.resolveRule(r)
	return out, err == nil
}

// Annotations renders the annotations of alert a (summary, description, next_step,
// runbook_url) for one instance with these labels and value, as Prometheus renders them. It is
// false when the config leaves a out.
func (m *Model) Annotations(a *Alert, labels map[string]string, value float64) (map[string]string, bool, error) {
	r, ok := m.rule(a)
	if !ok {
		return nil, false, nil
	}
	out, err := m.expandAnnotations(r, labels, value)
	return out, true, err
}

// rule finds the model's rule built from declaration a.
func (m *Model) rule(a *Alert) (Rule, bool) {
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if r.Decl == a {
				return r, true
			}
		}
	}
	return Rule{}, false
}

// ShareRecordings returns the names of the model's recording rules whose value is a share
// (Recording.Share), sorted.
func (m *Model) ShareRecordings() []string {
	return m.ruleNames(func(r Rule) string {
		if r.Recording != nil && r.Recording.Share {
			return r.Record
		}
		return ""
	})
}

// Alerts returns the names of every alert in the model, sorted.
func (m *Model) Alerts() []string {
	return m.ruleNames(func(r Rule) string { return r.Alert })
}

// ruleNames returns the non-empty names that name gives the model's rules, sorted.
func (m *Model) ruleNames(name func(Rule) string) []string {
	var names []string
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if n := name(r); n != "" {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

// localRefs turns the alert's own parameters, written ⟦@key⟧ or ⟦@key:g⟧ in its texts, into
// references to their parameters.
func localRefs(e *exprEnv, text string) string {
	for {
		i := strings.Index(text, refOpen+"@")
		if i < 0 {
			return text
		}
		rest := text[i+len(refOpen)+1:]
		j := strings.Index(rest, refClose)
		key, _, _ := strings.Cut(rest[:j], ":")
		text = text[:i] + e.P(key) + rest[j+len(refClose):]
	}
}
