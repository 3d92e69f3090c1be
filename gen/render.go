package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"
)

// File is one generated file, its path relative to the output directory.
type File struct {
	Path    string
	Content []byte
}

// Output paths, relative to the output directory.
const (
	RulesFile          = "rules/loopwatch.rules.yaml"
	PrometheusRuleFile = "rules/loopwatch.prometheusrule.yaml"
	DashboardConfigMap = "dashboards/loopwatch-dashboards.configmap.yaml"
)

// Files renders every output of the model, deterministically, in a stable order.
func (m *Model) Files() ([]File, error) {
	if err := m.Lint(); err != nil {
		return nil, fmt.Errorf("generated output fails the checks: %w", err)
	}
	groups, err := m.RuleGroups()
	if err != nil {
		return nil, err
	}
	rules, err := yamlFile(groups)
	if err != nil {
		return nil, err
	}
	promRule, err := yamlFile(m.prometheusRule(groups))
	if err != nil {
		return nil, err
	}
	files := []File{{RulesFile, rules}, {PrometheusRuleFile, promRule}, kustomization("rules", PrometheusRuleFile)}
	flowSchemas, err := m.Config.flowSchemaFiles()
	if err != nil {
		return nil, err
	}
	files = append(files, flowSchemas...)

	var configMaps []any
	for _, d := range m.Dashboards {
		v, err := m.DashboardJSON(d)
		if err != nil {
			return nil, err
		}
		b, err := jsonFile(v)
		if err != nil {
			return nil, err
		}
		files = append(files, File{"dashboards/" + d.FileName(), b})
		configMaps = append(configMaps, m.dashboardConfigMap(d, b))
	}
	if len(configMaps) > 0 {
		b, err := yamlDocs(configMaps)
		if err != nil {
			return nil, err
		}
		files = append(files, File{DashboardConfigMap, b}, kustomization("dashboards", DashboardConfigMap))
	}
	am, err := m.alertmanagerFiles()
	if err != nil {
		return nil, err
	}
	files = append(files, am...)
	mixin, err := m.mixinFiles()
	if err != nil {
		return nil, err
	}
	tests, err := m.testFiles()
	if err != nil {
		return nil, err
	}
	return append(append(files, mixin...), tests...), nil
}

// kustomization lets kustomize overlays use a generated directory as a base (the operator's
// config/default does: `resources: [../../../rules, ../../../dashboards]`).
func kustomization(dir, resource string) File {
	return File{dir + "/kustomization.yaml", []byte("# " + Header + "\n" +
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + strings.TrimPrefix(resource, dir+"/") + "\n")}
}

// WriteFiles writes files under dir, creating directories as needed.
func WriteFiles(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create directory for %q: %w", f.Path, err)
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return fmt.Errorf("write %q: %w", f.Path, err)
		}
	}
	return nil
}

// prometheusRule is the PrometheusRule manifest (monitoring.coreos.com/v1). Its spec.groups have
// the shape of a rule file's groups.
type prometheusRule struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   manifestMeta `yaml:"metadata"`
	Spec       struct {
		Groups []rulefmt.RuleGroup `yaml:"groups"`
	} `yaml:"spec"`
}

type manifestMeta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

func (m *Model) prometheusRule(groups rulefmt.RuleGroups) prometheusRule {
	meta := m.Config.PrometheusRule
	pr := prometheusRule{
		APIVersion: "monitoring.coreos.com/v1",
		Kind:       "PrometheusRule",
		Metadata:   manifestMeta(meta),
	}
	pr.Spec.Groups = groups.Groups
	return pr
}

type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   manifestMeta      `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

// dashboardConfigMap wraps a dashboard for the Grafana sidecar, which loads every ConfigMap
// carrying its label (grafana_dashboard: "1" by default).
func (m *Model) dashboardConfigMap(d Dashboard, dashboardJSON []byte) configMap {
	meta := m.Config.Dashboards.ConfigMap
	return configMap{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		Metadata:   manifestMeta{Name: meta.Name + "-" + d.Key, Namespace: meta.Namespace, Labels: meta.Labels},
		Data:       map[string]string{d.FileName(): string(dashboardJSON)},
	}
}

// DashboardJSON returns the dashboard as Grafana's JSON model with every reference resolved. The
// same JSON serves import and file provisioning (the Grafana sidecar): its datasource variable
// resolves to the default Prometheus data source by itself, so it has no import inputs
// (`__inputs`), which file provisioning would not substitute.
func (m *Model) DashboardJSON(d Dashboard) (any, error) {
	v, err := dashboardTemplate(d)
	if err != nil {
		return nil, err
	}
	return resolveTree(m.Params, v), nil
}

// dashboardTemplate returns the dashboard's JSON model with references unresolved, its keys
// sorted (a map) so the output is deterministic.
func dashboardTemplate(d Dashboard) (map[string]any, error) {
	b, err := json.Marshal(d.Board)
	if err != nil {
		return nil, fmt.Errorf("dashboard %q: %w", d.Key, err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("dashboard %q: %w", d.Key, err)
	}
	return v, nil
}

// resolveTree resolves every string in a JSON tree.
func resolveTree(p *Params, v any) any {
	switch t := v.(type) {
	case string:
		return p.Resolve(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = resolveTree(p, e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = resolveTree(p, e)
		}
		return out
	default:
		return v
	}
}

func jsonFile(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func yamlFile(v any) ([]byte, error) { return yamlDocs([]any{v}) }

func yamlDocs(docs []any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# " + Header + "\n")
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}
