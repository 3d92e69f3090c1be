package gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Config is everything a user can change about the generated rules, dashboards and mixin. Every
// field is optional: Default returns values that serve any controller-runtime controller scraped
// by Prometheus, and a config file only overrides what it names.
type Config struct {
	// ClusterLabel is the label that tells clusters apart (multi-cluster setups, Thanos, Mimir).
	// Every aggregation keeps it.
	ClusterLabel string `json:"clusterLabel"`
	// Selectors are PromQL label matchers (without braces) that pick the series each part reads.
	Selectors Selectors `json:"selectors"`
	// RunbookBaseURL is prefixed to "<AlertName>.md" in every alert's runbook_url annotation.
	RunbookBaseURL string `json:"runbookBaseURL"`
	// RuleInterval is the evaluation interval of every rule group without one of its own: the coarse SLO groups (every 30m: the 30-minute averages and day sums the long error ratios add up), the groups that sample, every 1m, the 5-minute reconcile and error rates (which the SLO windows longer than 5 minutes add up) and the leader status (for LoopwatchLeaderFlapping), and the alert groups whose interval the Alerts section below names keep theirs.
	RuleInterval Duration `json:"ruleInterval"`
	// Groups chooses which rule groups (and their dashboards) are emitted.
	Groups Groups `json:"groups"`
	// SLO sets the objective of the error-budget alerts.
	SLO SLOConfig `json:"slo"`
	// Alerts holds the settings of every alert, by alert key: severity, `for`, thresholds.
	Alerts AlertsConfig `json:"alerts"`
	// PrometheusRule is the metadata of the generated PrometheusRule manifest.
	PrometheusRule ManifestMeta `json:"prometheusRule"`
	// Dashboards configures the generated Grafana dashboards.
	Dashboards DashboardsConfig `json:"dashboards"`
	// APF names the controllers that get their own API Priority and Fairness FlowSchema.
	APF APFConfig `json:"apf"`
}

// Selectors are PromQL label matchers, written without braces, e.g. `job="my-operator"`.
type Selectors struct {
	// Controller selects the controller-runtime metrics (controller_runtime_*, workqueue_*,
	// rest_client_*, leader_election_*, loopwatch_controller_*).
	Controller string `json:"controller"`
	// ControllerTargets selects the `up` series of scrape targets that the absent-metrics alert
	// watches: a selected target is expected to expose controller-runtime metrics once its job
	// has (see alerts.controllerMetricsMissing.rememberDays).
	ControllerTargets string `json:"controllerTargets"`
	// Exporter selects the loopwatch audit exporter's metrics.
	Exporter string `json:"exporter"`
	// APIServer selects the kube-apiserver's own metrics (apiserver_audit_*,
	// apiserver_flowcontrol_*).
	APIServer string `json:"apiserver"`
}

// Groups switches rule groups on or off.
type Groups struct {
	// Controller: queue, latency, errors, writes and absent-metrics rules.
	Controller bool `json:"controller"`
	// LeaderElection: no leader, several leaders, flapping leadership.
	LeaderElection bool `json:"leaderElection"`
	// SLO: multi-window, multi-burn-rate alerts on the reconcile success ratio.
	SLO bool `json:"slo"`
	// Audit: fights, hot objects, replica races, conflicts and relists from the audit exporter.
	// Turn it off when the exporter does not run.
	Audit bool `json:"audit"`
	// APF: request rate, queue wait and rejections of each controller that has its own FlowSchema
	// (apf.controllers), from the API server's API Priority and Fairness metrics. Turn it off when
	// Prometheus cannot scrape the API server's /metrics.
	APF bool `json:"apf"`
}

// APFConfig names the controllers that get their own API Priority and Fairness FlowSchema.
type APFConfig struct {
	// Controllers are the controllers that get a FlowSchema each, written to apf/ beside the
	// rules: it matches the controller's ServiceAccount and sends its requests to the priority
	// level the default FlowSchemas give it today, so fairness stays as it is and the API server's
	// APF metrics label the controller's requests with its own flow_schema. None by default: then
	// apf/ is not written.
	Controllers []APFController `json:"controllers"`
}

// APFController is one controller that gets its own FlowSchema, loopwatch-<name>.
type APFController struct {
	// Name is the controller's name, a DNS label: its FlowSchema is called loopwatch-<name>.
	Name string `json:"name"`
	// ServiceAccount is the ServiceAccount the controller runs as, "namespace/name".
	ServiceAccount string `json:"serviceAccount"`
	// PriorityLevel is the priority level the FlowSchema sends the requests to. Empty: the one
	// the default FlowSchemas give the ServiceAccount today, workload-high in kube-system
	// (kube-system-service-accounts) and workload-low elsewhere (service-accounts). Set it when
	// your cluster classifies the ServiceAccount with a FlowSchema of its own.
	PriorityLevel string `json:"priorityLevel"`
	// MatchingPrecedence is the FlowSchema's matchingPrecedence: of the FlowSchemas that match a
	// request, the one with the lowest classifies it. 0: one less than the default FlowSchema
	// that matches the ServiceAccount today (899 in kube-system, 8999 elsewhere), so every
	// FlowSchema that wins over that one today (probes, system-leader-election, your own) still
	// wins. A set value must lie strictly between those.
	MatchingPrecedence int32 `json:"matchingPrecedence"`
}

// ManifestMeta is the metadata of a generated Kubernetes manifest.
type ManifestMeta struct {
	// Name of the object.
	Name string `json:"name"`
	// Namespace of the object.
	Namespace string `json:"namespace"`
	// Labels of the object. Labels set in a config are added to the default ones (a default's
	// value can be changed, not removed). The PrometheusRule's must match the Prometheus'
	// ruleSelector: kube-prometheus-stack selects release: <its Helm release name>, e.g.
	// {release: kube-prometheus-stack}. The ConfigMaps' must match the Grafana sidecar's label
	// (grafana_dashboard: "1" in kube-prometheus-stack).
	Labels map[string]string `json:"labels"`
}

// DashboardsConfig configures the generated dashboards.
type DashboardsConfig struct {
	// UIDs of the dashboards, by dashboard key (controller, audit, exporter, apf).
	UIDs map[string]string `json:"uids"`
	// Tags put on every dashboard.
	Tags []string `json:"tags"`
	// Refresh is the default refresh interval, e.g. "30s".
	Refresh string `json:"refresh"`
	// ConfigMap is the metadata of the ConfigMaps for the Grafana sidecar (one per dashboard;
	// the name gets the dashboard key appended).
	ConfigMap ManifestMeta `json:"configMap"`
}

// Severity of an alert: critical pages, warning opens a ticket, info is context.
type Severity string

// The severities an alert may have.
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Duration is a Prometheus duration ("15m", "1h30m") in YAML.
type Duration model.Duration

// String formats d as Prometheus does.
func (d Duration) String() string { return model.Duration(d).String() }

// MarshalJSON writes d as a Prometheus duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a Prometheus duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"15m\": %w", err)
	}
	v, err := model.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// SLOConfig sets the reconcile success objective the error-budget alerts measure against.
type SLOConfig struct {
	// Objective is the target share of reconciles that do not return an error, e.g. 0.99.
	Objective float64 `json:"objective"`
}

// Default returns the configuration used when no config file is given.
func Default() Config {
	return Config{
		ClusterLabel: "cluster",
		Selectors: Selectors{
			Controller:        `job!=""`,
			ControllerTargets: `job=~".*(controller|operator|manager).*"`,
			Exporter:          `job=~".*loopwatch-exporter.*"`,
			APIServer:         `job="apiserver"`,
		},
		RunbookBaseURL: "https://github.com/loopwatch/loopwatch/blob/main/docs/runbooks/",
		RuleInterval:   Duration(model.Duration(60e9)),
		Groups:         Groups{Controller: true, LeaderElection: true, SLO: true, Audit: true, APF: true},
		SLO:            SLOConfig{Objective: 0.99},
		Alerts:         defaultAlerts(),
		APF:            APFConfig{Controllers: []APFController{}},
		PrometheusRule: ManifestMeta{
			Name:      "loopwatch",
			Namespace: "monitoring",
			Labels:    map[string]string{"app.kubernetes.io/name": "loopwatch", "role": "alert-rules"},
		},
		Dashboards: DashboardsConfig{
			UIDs: map[string]string{
				"controller": "loopwatch-controller",
				"audit":      "loopwatch-audit",
				"exporter":   "loopwatch-exporter",
				"apf":        "loopwatch-apf",
			},
			Tags:    []string{"loopwatch", "kubernetes-controllers"},
			Refresh: "30s",
			ConfigMap: ManifestMeta{
				Name:      "loopwatch-dashboard",
				Namespace: "monitoring",
				Labels:    map[string]string{"grafana_dashboard": "1"},
			},
		},
	}
}

// Load reads a config file over the defaults: fields the file does not name keep their default.
// Unknown fields are errors. The result is validated.
func Load(path string) (Config, error) {
	cfg := Default()
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, b)
}

// Parse reads config YAML over the defaults and validates it. name is used in error messages.
func Parse(name string, b []byte) (Config, error) {
	cfg := Default()
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	if doc != nil {
		var v validator
		checkFields(&v, doc, reflect.TypeFor[Config](), "")
		if err := v.err(); err != nil {
			return cfg, fmt.Errorf("%s: invalid config:\n%w", name, err)
		}
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: invalid config:\n%w", name, err)
	}
	return cfg, nil
}

// Validate reports every problem of c at once, each with its field path.
func (c Config) Validate() error {
	var v validator
	if !model.LegacyValidation.IsValidLabelName(c.ClusterLabel) {
		v.add("clusterLabel", "%q is not a valid label name", c.ClusterLabel)
	}
	v.selector("selectors.controller", c.Selectors.Controller)
	v.selector("selectors.controllerTargets", c.Selectors.ControllerTargets)
	v.selector("selectors.exporter", c.Selectors.Exporter)
	v.selector("selectors.apiserver", c.Selectors.APIServer)
	if u, err := url.Parse(c.RunbookBaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		v.add("runbookBaseURL", "%q is not an absolute URL", c.RunbookBaseURL)
	}
	if c.RuleInterval <= 0 {
		v.add("ruleInterval", "must be positive")
	}
	if o := c.SLO.Objective; !(o < 1 && pageBurnRate*(1-o) <= 1) {
		v.add("slo.objective", "must be in (%g, 1): the fastest burn rate (14.4) must fit in the error budget, got %g", 1-1/14.4, o)
	} else {
		v.written("slo.objective", o)
	}
	c.Alerts.validate(&v, "alerts")
	c.APF.validate(&v, "apf")
	v.meta("prometheusRule", c.PrometheusRule)
	v.meta("dashboards.configMap", c.Dashboards.ConfigMap)
	for _, key := range dashboardKeys {
		if c.Dashboards.UIDs[key] == "" {
			v.add("dashboards.uids."+key, "must be set")
		} else if len(c.Dashboards.UIDs[key]) > 40 {
			v.add("dashboards.uids."+key, "%q is longer than Grafana's 40 characters", c.Dashboards.UIDs[key])
		}
	}
	for key := range c.Dashboards.UIDs {
		if !slices.Contains(dashboardKeys, key) {
			v.add("dashboards.uids."+key, "unknown dashboard (known: %v)", dashboardKeys)
		}
	}
	if _, err := model.ParseDuration(c.Dashboards.Refresh); err != nil {
		v.add("dashboards.refresh", "%v", err)
	}
	return v.err()
}

type validator struct{ errs []error }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) selector(path, s string) {
	if s == "" {
		v.add(path, `must not be empty (use job!="" to match every target)`)
		return
	}
	if _, err := promqlParser.ParseMetricSelector("{" + s + "}"); err != nil {
		v.add(path, "%q is not a list of label matchers: %v", s, err)
	}
}

type bound struct {
	ok   func(float64) bool
	want string
}

var (
	positive    = bound{func(f float64) bool { return f > 0 }, "must be positive"}
	nonNegative = bound{func(f float64) bool { return f >= 0 }, "must not be negative"}
	ratio       = bound{func(f float64) bool { return f > 0 && f < 1 }, "must be a ratio in (0, 1)"}
	atLeastTwo  = bound{func(f float64) bool { return f >= 2 }, "must be at least 2"}
	// seconds is a window written into a range selector as [<n>s].
	seconds = bound{func(f float64) bool { return f >= 1 && f <= 86400 && f == math.Trunc(f) }, "must be a whole number of seconds from 1 to 86400"}
)

// bucketOf accepts the bucket bounds of a histogram: a share of observations above one of them
// is exact, unlike a quantile interpolated inside a wide bucket.
func bucketOf(histogram string, bounds []float64) bound {
	return bound{func(f float64) bool { return slices.Contains(bounds, f) }, fmt.Sprintf("must be a bucket bound of %s (bounds: %v)", histogram, bounds)}
}

func (v *validator) number(path string, f float64, b bound) {
	if !b.ok(f) {
		v.add(path, "%s, got %s", b.want, strconv.FormatFloat(f, 'g', -1, 64))
		return
	}
	v.written(path, f)
}

// written reports a number the rules would not hold as given: they write numbers with 6
// significant digits (as jsonnet's "%g" does, so that the mixin renders the same rules), and
// 0.9999995 would be written 1.
func (v *validator) written(path string, f float64) {
	if g, _ := strconv.ParseFloat(formatG(f), 64); g != f {
		v.add(path, "has more than 6 significant digits: the rules would hold %s, got %s", formatG(f), strconv.FormatFloat(f, 'g', -1, 64))
	}
}

func (v *validator) meta(path string, m ManifestMeta) {
	if m.Name == "" {
		v.add(path+".name", "must be set")
	} else if errs := validation.IsDNS1123Subdomain(m.Name); len(errs) > 0 {
		v.add(path+".name", "%q is not a valid object name: %s", m.Name, strings.Join(errs, "; "))
	}
	if m.Namespace == "" {
		v.add(path+".namespace", "must be set")
	} else if errs := validation.IsDNS1123Label(m.Namespace); len(errs) > 0 {
		v.add(path+".namespace", "%q is not a valid namespace: %s", m.Namespace, strings.Join(errs, "; "))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.add(path+".labels", "%q is not a valid label name: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(m.Labels[k]); len(errs) > 0 {
			v.add(path+".labels."+k, "%q is not a valid label value: %s", m.Labels[k], strings.Join(errs, "; "))
		}
	}
}
