package gen

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Alert declares one alert, everything about it in one place: its settings with their defaults,
// documentation and bounds, its expression, labels and annotations, the dashboard panel that shows
// its signal, and its promtool cases. The config (alerts.<Key>), its validation and reference
// documentation, the mixin's `_config`, the runbook index, the generated promtool tests and the
// e2e expectations are all derived from the declarations (see ruleGroups for the list).
type Alert struct {
	// Key names the alert in the config (alerts.<Key>) and starts the names of its parameters in
	// the mixin's `_config` (<Key>For, <Key>Threshold, ...).
	Key string
	// Name is the alert's name without the common prefix (see alertPrefix).
	Name string
	// Severity and For are the defaults of the alert's severity label and `for` duration.
	Severity Severity
	For      time.Duration
	// Params are the alert's numeric settings.
	Params []Param
	// Level is the aggregation level of the expression: every instance of the alert carries these
	// labels (plus severity), and they tell the reader where to look.
	Level level
	// Expr returns the alert's expression, with references to its parameters (see exprEnv).
	Expr func(e *exprEnv) string
	// Summary is a static sentence; Description a template naming the labels that locate the
	// failure. Both describe the failure itself.
	Summary, Description string
	// NextStep is what to do when the alert fires, in one or two sentences. It is written once and
	// read in three places: the alert's next_step annotation, loopwatch diagnose's next step and
	// the generated header of the alert's runbook. A placeholder <label> names a label of the
	// alert's Level (not the cluster label, whose name is configurable): the annotation turns it
	// into {{ $labels.label }}, diagnose fills it with the finding's value, the runbook keeps it.
	NextStep string
	// Panel is the dashboard panel that shows the alert's signal.
	Panel PanelRef
	// Cases are the alert's promtool cases, written in terms of its settings: at least one that
	// fires (pinned at the `for:` boundary) and one healthy case that must stay silent.
	Cases func(c *caseEnv) []Case
}

// Param is one numeric setting of an alert.
type Param struct {
	// Key names the setting in the config (alerts.<alert>.<Key>).
	Key string
	// Default is the value used when the config does not name the setting.
	Default float64
	// Doc says what the setting means, for the config reference.
	Doc string
	// Check is the setting's valid range.
	Check bound
}

// PanelRef names a panel of a generated dashboard.
type PanelRef struct {
	// Dashboard is the dashboard's key (controller, audit, exporter).
	Dashboard string
	// Title is the panel's title.
	Title string
}

// FullName is the alert's name as Prometheus and Alertmanager see it, e.g. LoopwatchQueueBacklog.
func (a *Alert) FullName() string { return alertPrefix + a.Name }

// param returns the declaration of the parameter key.
func (a *Alert) param(key string) (Param, bool) {
	for _, p := range a.Params {
		if p.Key == key {
			return p, true
		}
	}
	return Param{}, false
}

// mixinName is the name of one of the alert's settings in the mixin's `_config`.
func (a *Alert) mixinName(setting string) string {
	r := []rune(setting)
	r[0] = unicode.ToUpper(r[0])
	return a.Key + string(r)
}

// LabelNames are the labels every instance of the alert carries besides severity, with the
// cluster label named as in cfg.
func (a *Alert) LabelNames(cfg Config) []string { return a.Level.resolve(cfg) }

// exprEnv is what an alert's expression is built from: references to the alert's own settings
// and to the configured selectors.
type exprEnv struct {
	b *builder
	a *Alert
}

// P returns a reference to the alert's parameter key.
func (e *exprEnv) P(key string) string {
	if _, ok := e.a.param(key); !ok {
		panic("alert " + e.a.Key + " has no parameter " + key)
	}
	return e.b.p.G(e.a.mixinName(key), e.b.cfg.Alerts[e.a.Key].Values[key])
}

// Selector returns a reference to a configured selector (see builder.selector).
func (e *exprEnv) Selector(name string) string { return e.b.selector(name) }

// Group is the name of the rule group the alert belongs to.
func (a *Alert) Group() string { return a.group().Name }

// GroupInterval is the evaluation interval of the alert's group when the group has its own, 0
// when it follows the config's ruleInterval.
func (a *Alert) GroupInterval() time.Duration { return a.group().Interval }

func (a *Alert) group() ruleGroup {
	for _, g := range ruleGroups() {
		if slices.Contains(g.Alerts, a) {
			return g
		}
	}
	return ruleGroup{}
}

// Range says which values the parameter accepts, e.g. "must be positive".
func (p Param) Range() string { return p.Check.want }

// placeholder matches a <label> placeholder of a next step.
var placeholder = regexp.MustCompile(`<([a-z][a-z0-9_]*)>`)

// Placeholders returns the labels the <label> placeholders of text name, in order of appearance.
func Placeholders(text string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// FillNextStep returns the alert's next step with each placeholder replaced by the label's value
// in labels; a placeholder whose label is missing or empty stays as it is, so the reader still
// sees what to fill in.
func (a *Alert) FillNextStep(labels map[string]string) string {
	return placeholder.ReplaceAllStringFunc(a.NextStep, func(m string) string {
		if v := labels[m[1:len(m)-1]]; v != "" {
			return v
		}
		return m
	})
}

// nextStepTemplate is the next step as an alert template: each placeholder becomes a reference
// to the instance's label, which Prometheus renders.
func nextStepTemplate(text string) string {
	return placeholder.ReplaceAllString(text, "{{ $$labels.$1 }}")
}

// levelLabels are the labels a placeholder of the alert's next step may name: its Level's, the
// cluster label left out.
func (a *Alert) levelLabels() []string {
	var out []string
	for _, l := range a.Level.labels {
		if !strings.Contains(l, clusterRef) {
			out = append(out, l)
		}
	}
	return out
}
