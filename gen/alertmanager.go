package gen

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// One notification per incident: an incident fires its cause and, from other signals, its
// symptoms (gen.Symptoms). gen writes an Alertmanager configuration fragment that inhibits each
// symptom while its cause fires for the same controller, workload or object, and a route that
// groups loopwatch's alerts by cluster, namespace, job and controller. An inhibit rule is scoped by
// the labels the two alerts share (equal:), and written only where that scope is narrower than a
// namespace: one controller's or one object's alert never silences another's.

// Output paths of the Alertmanager configuration, relative to the output directory.
const (
	// AlertmanagerInhibitFile holds the inhibit rules, to merge under inhibit_rules: of an existing
	// Alertmanager configuration.
	AlertmanagerInhibitFile = "alertmanager/loopwatch.inhibit.yaml"
	// AlertmanagerExampleFile is a whole Alertmanager configuration that routes loopwatch's alerts
	// with the grouping and the inhibit rules: valid as it is, and the example the docs merge from.
	AlertmanagerExampleFile = "alertmanager/alertmanager.example.yaml"
	// AlertmanagerReceiver is the receiver the example routes loopwatch's alerts to.
	AlertmanagerReceiver = "loopwatch"
)

// Timings of the example route: a group's first notification waits groupWait for the rest of an
// incident (its cause, when a symptom fires first) to arrive.
const (
	amGroupWait      = 30 * time.Second
	amGroupInterval  = 5 * time.Minute
	amRepeatInterval = 4 * time.Hour
)

// scopeLabels are the labels an inhibit rule may require equal on both alerts, in order: what
// places an alert (workload, controller, pod, object, FlowSchema, actor). The cluster label comes
// first.
var scopeLabels = []string{"namespace", "job", "controller", "pod", "flow_schema",
	"group", "resource", "subresource", "object_namespace", "object_name", "actor"}

// narrowLabels are the scope labels of which an inhibit rule needs at least one: a namespace alone
// may hold several controllers.
var narrowLabels = []string{"job", "controller", "pod", "flow_schema", "object_name"}

// InhibitRule is one Alertmanager inhibit rule (config.InhibitRule's YAML shape).
type InhibitRule struct {
	SourceMatchers []string `yaml:"source_matchers"`
	TargetMatchers []string `yaml:"target_matchers"`
	Equal          []string `yaml:"equal"`
}

// AlertRoute is one Alertmanager route (config.Route's YAML shape, the fields used here).
type AlertRoute struct {
	Receiver       string        `yaml:"receiver"`
	Matchers       []string      `yaml:"matchers,omitempty"`
	GroupBy        []string      `yaml:"group_by,omitempty"`
	GroupWait      string        `yaml:"group_wait,omitempty"`
	GroupInterval  string        `yaml:"group_interval,omitempty"`
	RepeatInterval string        `yaml:"repeat_interval,omitempty"`
	Routes         []*AlertRoute `yaml:"routes,omitempty"`
}

// AlertmanagerConfig is the part of an Alertmanager configuration gen writes: the example's root
// route, its receivers and the inhibit rules.
type AlertmanagerConfig struct {
	Route        *AlertRoute           `yaml:"route,omitempty"`
	Receivers    []AlertmanagerReceive `yaml:"receivers,omitempty"`
	InhibitRules []InhibitRule         `yaml:"inhibit_rules"`
}

// AlertmanagerReceive is a receiver of the example: a webhook to replace with the team's own.
type AlertmanagerReceive struct {
	Name           string           `yaml:"name"`
	WebhookConfigs []map[string]any `yaml:"webhook_configs,omitempty"`
}

// InhibitRules derives the inhibit rules from the cause/symptom relation for the alerts the model
// emits: for each cause, its symptoms grouped by the labels both share, in declaration order. A
// pair is left out when
//   - the symptom's severity outranks the cause's (a page is never turned into a ticket);
//   - the two share no label narrower than a namespace (no job, controller, pod, object, FlowSchema);
//   - the symptom names a controller and the cause names none but is narrower than the workload (a
//     fight over one object says nothing about the workload's other controllers).
//
// Each rule requires the shared labels that place the alerts (job, controller, pod, object name,
// FlowSchema, actor) to be set on the cause: Alertmanager takes a label both alerts lack as equal,
// and a cause without a job must not silence every symptom without one. Group, subresource and
// object namespace may be empty on both (core group, the object itself, a cluster-scoped object).
func (m *Model) InhibitRules() []InhibitRule {
	emitted := m.emittedAlerts()
	cluster := m.Config.ClusterLabel
	var out []InhibitRule
	for _, e := range explanations() {
		if !emitted[e.cause] {
			continue
		}
		causeLabels := e.cause.LabelNames(m.Config)
		var keys []string
		targets := map[string][]string{}
		for _, s := range e.symptoms {
			if !emitted[s] || severityRank(m.Config.Alerts[s.Key].Severity) > severityRank(m.Config.Alerts[e.cause.Key].Severity) {
				continue
			}
			equal, ok := inhibitScope(causeLabels, s.LabelNames(m.Config), cluster)
			if !ok {
				continue
			}
			k := strings.Join(equal, ",")
			if _, seen := targets[k]; !seen {
				keys = append(keys, k)
			}
			targets[k] = append(targets[k], s.FullName())
		}
		for _, k := range keys {
			equal := strings.Split(k, ",")
			source := []string{"alertname=" + strconv.Quote(e.cause.FullName())}
			for _, l := range equal {
				if slices.Contains(narrowLabels, l) || l == "actor" {
					source = append(source, l+`!=""`)
				}
			}
			target := "alertname=" + strconv.Quote(targets[k][0])
			if len(targets[k]) > 1 {
				target = "alertname=~" + strconv.Quote(strings.Join(targets[k], "|"))
			}
			out = append(out, InhibitRule{SourceMatchers: source, TargetMatchers: []string{target}, Equal: equal})
		}
	}
	return out
}

// inhibitScope returns the labels a cause with labels cause must share with a symptom with labels
// symptom for the one to inhibit the other, and whether it may at all (see InhibitRules).
func inhibitScope(cause, symptom []string, cluster string) ([]string, bool) {
	var equal []string
	if cluster != "" && slices.Contains(cause, cluster) && slices.Contains(symptom, cluster) {
		equal = append(equal, cluster)
	}
	narrow := false
	for _, l := range scopeLabels {
		if slices.Contains(cause, l) && slices.Contains(symptom, l) {
			equal = append(equal, l)
			narrow = narrow || slices.Contains(narrowLabels, l)
		}
	}
	if !narrow {
		return nil, false
	}
	if slices.Contains(symptom, "controller") && !slices.Contains(cause, "controller") && !workloadWide(cause) {
		return nil, false
	}
	return equal, true
}

// workloadWide reports whether an alert with these labels is about a whole workload: it names a
// job and nothing narrower (a leader election concerns every controller of the workload).
func workloadWide(labels []string) bool {
	if !slices.Contains(labels, "job") {
		return false
	}
	for _, l := range narrowLabels {
		if l != "job" && slices.Contains(labels, l) {
			return false
		}
	}
	return true
}

// severityRank orders severities: a page outranks a ticket, which outranks context.
func severityRank(s Severity) int {
	switch s {
	case SeverityCritical:
		return 2
	case SeverityWarning:
		return 1
	}
	return 0
}

// emittedAlerts are the alerts the model's rule file holds.
func (m *Model) emittedAlerts() map[*Alert]bool {
	out := map[*Alert]bool{}
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if r.Decl != nil {
				out[r.Decl] = true
			}
		}
	}
	return out
}

// AlertmanagerRoute is the route for loopwatch's alerts: one notification per group of alerts
// with the same cluster, namespace, job and controller.
func (m *Model) AlertmanagerRoute() *AlertRoute {
	var groupBy []string
	if m.Config.ClusterLabel != "" {
		groupBy = append(groupBy, m.Config.ClusterLabel)
	}
	return &AlertRoute{
		Receiver:       AlertmanagerReceiver,
		Matchers:       []string{`alertname=~"` + alertPrefix + `.+"`},
		GroupBy:        append(groupBy, "namespace", "job", "controller"),
		GroupWait:      model.Duration(amGroupWait).String(),
		GroupInterval:  model.Duration(amGroupInterval).String(),
		RepeatInterval: model.Duration(amRepeatInterval).String(),
	}
}

// alertmanagerFiles renders the inhibit fragment and the example configuration.
func (m *Model) alertmanagerFiles() ([]File, error) {
	rules := m.InhibitRules()
	inhibit, err := yamlFile(AlertmanagerConfig{InhibitRules: rules})
	if err != nil {
		return nil, err
	}
	head := "# Inhibit rules for loopwatch's alerts: while the alert that causes an incident fires, its\n" +
		"# symptoms from other signals are not notified, for the same controller, workload or object only.\n" +
		"# Append these rules to the inhibit_rules: of your Alertmanager configuration (docs/alertmanager.md).\n"
	example := AlertmanagerConfig{
		Route: &AlertRoute{Receiver: "default", Routes: []*AlertRoute{m.AlertmanagerRoute()}},
		Receivers: []AlertmanagerReceive{
			{Name: "default"},
			{Name: AlertmanagerReceiver, WebhookConfigs: []map[string]any{{"url": "http://loopwatch-receiver.example/alerts"}}},
		},
		InhibitRules: rules,
	}
	ex, err := yamlFile(example)
	if err != nil {
		return nil, err
	}
	exHead := "# An Alertmanager configuration that routes loopwatch's alerts, grouped by cluster, namespace,\n" +
		"# job and controller, to receiver " + strconv.Quote(AlertmanagerReceiver) + " (a placeholder webhook), with the inhibit rules of\n" +
		"# " + strings.TrimPrefix(AlertmanagerInhibitFile, "alertmanager/") + ". Merge its route and rules into your own (docs/alertmanager.md).\n"
	return []File{
		{AlertmanagerInhibitFile, withHead(inhibit, head)},
		{AlertmanagerExampleFile, withHead(ex, exHead)},
	}, nil
}

// withHead inserts comment lines after a generated file's header line.
func withHead(b []byte, head string) []byte {
	first := "# " + Header + "\n"
	return []byte(first + head + strings.TrimPrefix(string(b), first))
}
