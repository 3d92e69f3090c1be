package gen

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The jsonnet mixin (monitoring-mixins layout, as kubernetes-mixin): `_config` holds every
// parameter of the model, and the rules and dashboards are the model's templates rendered as
// jsonnet format strings applied to `$._config`. With the default `_config` it evaluates to
// exactly rules/ and dashboards/ (gen's mixin tests prove it with go-jsonnet); with overrides it
// evaluates to what `loopwatch gen` writes for the same overrides.

// Mixin file paths, relative to the output directory.
const (
	MixinDir   = "jsonnet"
	MixinEntry = "jsonnet/mixin.libsonnet"
)

const jsonnetHeader = "// " + Header + "\n"

func (m *Model) mixinFiles() ([]File, error) {
	var recording, alerting []string
	for _, g := range m.Groups {
		src := m.jsonnetGroup(g)
		if groupIsRecording(g) {
			recording = append(recording, src)
		} else {
			alerting = append(alerting, src)
		}
	}
	var dashboards []string
	for _, d := range m.Dashboards {
		v, err := dashboardTemplate(d)
		if err != nil {
			return nil, err
		}
		dashboards = append(dashboards, fmt.Sprintf("    %s: %s,\n", jsonnetQuote(d.FileName()), jsonnetValue(v, "    ")))
	}
	files := []File{
		{MixinEntry, []byte(jsonnetHeader +
			"// The loopwatch monitoring mixin. Override `_config` to change selectors, thresholds,\n" +
			"// `for` durations, the cluster label, the runbook URL and dashboard UIDs.\n" +
			"(import 'config.libsonnet') +\n(import 'rules.libsonnet') +\n(import 'alerts.libsonnet') +\n(import 'dashboards.libsonnet')\n")},
		{"jsonnet/config.libsonnet", []byte(jsonnetHeader + m.jsonnetConfig())},
		{"jsonnet/rules.libsonnet", []byte(jsonnetHeader + "{\n  prometheusRules+:: {\n    groups+: [\n" + strings.Join(recording, "") + "    ],\n  },\n}\n")},
		{"jsonnet/alerts.libsonnet", []byte(jsonnetHeader + "{\n  prometheusAlerts+:: {\n    groups+: [\n" + strings.Join(alerting, "") + "    ],\n  },\n}\n")},
		{"jsonnet/dashboards.libsonnet", []byte(jsonnetHeader + "{\n  grafanaDashboards+:: {\n" + strings.Join(dashboards, "") + "  },\n}\n")},
		{"jsonnet/lib/rules.jsonnet", []byte(jsonnetHeader + "std.manifestYamlDoc((import '../mixin.libsonnet').prometheusRules)\n")},
		{"jsonnet/lib/alerts.jsonnet", []byte(jsonnetHeader + "std.manifestYamlDoc((import '../mixin.libsonnet').prometheusAlerts)\n")},
		{"jsonnet/lib/dashboards.jsonnet", []byte(jsonnetHeader + "// Render with: jsonnet -J . -m out/ lib/dashboards.jsonnet\nlocal dashboards = (import '../mixin.libsonnet').grafanaDashboards;\n{ [name]: dashboards[name] for name in std.objectFields(dashboards) }\n")},
	}
	return files, nil
}

func groupIsRecording(g Group) bool {
	for _, r := range g.Rules {
		if r.Alert != "" {
			return false
		}
	}
	return true
}

// jsonnetConfig renders `_config` with every parameter at its configured value.
func (m *Model) jsonnetConfig() string {
	var b strings.Builder
	b.WriteString("{\n  _config+:: {\n")
	for _, p := range m.Params.Sorted() {
		var v string
		switch t := p.Value.(type) {
		case string:
			v = jsonnetQuote(t)
		case float64:
			v = strconv.FormatFloat(t, 'g', -1, 64)
		}
		fmt.Fprintf(&b, "    %s: %s,\n", p.Name, v)
	}
	b.WriteString("  },\n}\n")
	return b.String()
}

// jsonnetGroup renders a rule group as a jsonnet object, keys in the order of the YAML output.
func (m *Model) jsonnetGroup(g Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "      {\n        name: %s,\n        interval: %s,\n        rules: [\n", jsonnetQuote(g.Name), jsonnetString(g.Interval))
	for _, r := range g.Rules {
		b.WriteString("          {\n")
		if r.Record != "" {
			fmt.Fprintf(&b, "            record: %s,\n", jsonnetQuote(r.Record))
			fmt.Fprintf(&b, "            expr: %s,\n", jsonnetString(r.Expr))
		} else {
			fmt.Fprintf(&b, "            alert: %s,\n", jsonnetQuote(r.Alert))
			fmt.Fprintf(&b, "            expr: %s,\n", jsonnetString(r.Expr))
			// The YAML leaves out a `for` of 0s (rulefmt's omitempty); so does the mixin.
			f := jsonnetString(r.For)
			fmt.Fprintf(&b, "            [if %s != '0s' then 'for']: %s,\n", f, f)
			fmt.Fprintf(&b, "            labels: { severity: %s },\n", jsonnetQuote(string(r.Severity)))
			b.WriteString("            annotations: {\n")
			ann := m.annotationTemplates(r)
			for _, k := range sortedKeys(ann) {
				fmt.Fprintf(&b, "              %s: %s,\n", k, jsonnetString(ann[k]))
			}
			b.WriteString("            },\n")
		}
		b.WriteString("          },\n")
	}
	b.WriteString("        ],\n      },\n")
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonnetValue renders a JSON tree (from encoding/json) as jsonnet source, strings as templates.
func jsonnetValue(v any, indent string) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case string:
		return jsonnetString(t)
	case []any:
		if len(t) == 0 {
			return "[]"
		}
		inner := indent + "  "
		var b strings.Builder
		b.WriteString("[\n")
		for _, e := range t {
			b.WriteString(inner + jsonnetValue(e, inner) + ",\n")
		}
		return b.String() + indent + "]"
	case map[string]any:
		if len(t) == 0 {
			return "{}"
		}
		inner := indent + "  "
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range sortedKeys(t) {
			b.WriteString(inner + jsonnetQuote(k) + ": " + jsonnetValue(t[k], inner) + ",\n")
		}
		return b.String() + indent + "}"
	default:
		panic(fmt.Sprintf("unexpected JSON value %T", v))
	}
}
