package gen

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"go.yaml.in/yaml/v3"
)

// configsUnderTest are the default config ("") and every good config fixture.
func configsUnderTest(t *testing.T) []string {
	t.Helper()
	fixtures, err := filepath.Glob("testdata/config/*.good.yaml")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no good config fixtures under testdata/config: %v", err)
	}
	return append([]string{""}, fixtures...)
}

// Every dashboard, as the import JSON and as the ConfigMap the Grafana sidecar loads, decodes
// strictly with Grafana's schema types and validates, for the default config and every good
// fixture; the ConfigMap form needs no import-time substitution.
func TestDashboardsPassGrafanaSchema(t *testing.T) {
	for _, cfgFile := range configsUnderTest(t) {
		name := cfgFile
		if name == "" {
			name = "default"
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			cfg, err := Load(cfgFile)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fs := files(t, m)
			if len(m.Dashboards) == 0 {
				t.Fatal("the config generates no dashboard")
			}
			for _, d := range m.Dashboards {
				raw, ok := fs["dashboards/"+d.FileName()]
				if !ok {
					t.Errorf("%s: not written", d.FileName())
					continue
				}
				board, err := DecodeDashboard(raw)
				if err != nil {
					t.Errorf("%s (import JSON): %v", d.FileName(), err)
					continue
				}
				checkResolvesOnItsOwn(t, d.FileName(), raw, board)
			}
			checkSidecarConfigMaps(t, fs, m.Dashboards)
		})
	}
}

// checkSidecarConfigMaps checks the ConfigMap form: one ConfigMap per dashboard with the Grafana
// sidecar's label, holding the import JSON as it is, which decodes with the schema.
func checkSidecarConfigMaps(t *testing.T, fs map[string][]byte, boards []Dashboard) {
	t.Helper()
	raw, ok := fs[DashboardConfigMap]
	if !ok {
		t.Fatalf("%s: not written", DashboardConfigMap)
	}
	if bytes.Contains(raw, []byte("${DS_")) {
		t.Errorf("%s: holds a ${DS_...} import input, which the sidecar's file provisioning does not substitute", DashboardConfigMap)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	seen := map[string]bool{}
	for {
		var cm configMap
		if err := dec.Decode(&cm); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", DashboardConfigMap, err)
		}
		if cm.Kind != "ConfigMap" {
			t.Errorf("%s: a %q, want ConfigMaps only", DashboardConfigMap, cm.Kind)
			continue
		}
		// kube-prometheus-stack's Grafana sidecar loads ConfigMaps labelled grafana_dashboard: "1".
		if got := cm.Metadata.Labels["grafana_dashboard"]; got != "1" {
			t.Errorf("ConfigMap %s: label grafana_dashboard=%q, want \"1\" (the sidecar's default)", cm.Metadata.Name, got)
		}
		if len(cm.Data) != 1 {
			t.Errorf("ConfigMap %s: %d data keys, want one dashboard", cm.Metadata.Name, len(cm.Data))
		}
		for key, content := range cm.Data {
			seen[key] = true
			if !bytes.Equal([]byte(content), fs["dashboards/"+key]) {
				t.Errorf("ConfigMap %s: %s differs from dashboards/%s", cm.Metadata.Name, key, key)
			}
			board, err := DecodeDashboard([]byte(content))
			if err != nil {
				t.Errorf("ConfigMap %s: %s: %v", cm.Metadata.Name, key, err)
				continue
			}
			checkResolvesOnItsOwn(t, "ConfigMap "+cm.Metadata.Name+": "+key, []byte(content), board)
		}
	}
	for _, d := range boards {
		if !seen[d.FileName()] {
			t.Errorf("%s: no ConfigMap holds %s", DashboardConfigMap, d.FileName())
		}
	}
}

// checkResolvesOnItsOwn checks what the schema leaves open: the dashboard names its data source
// through a datasource variable that Grafana resolves to its default Prometheus data source
// without any input, every panel and query uses that variable, and time series show a legend
// and a tooltip.
func checkResolvesOnItsOwn(t *testing.T, name string, raw []byte, board *dashboard.Dashboard) {
	t.Helper()
	if bytes.Contains(raw, []byte("${DS_")) {
		t.Errorf("%s: holds a ${DS_...} import input", name)
	}
	vars := board.Templating.List
	if len(vars) == 0 || vars[0].Type != dashboard.VariableTypeDatasource || vars[0].Name != "datasource" {
		t.Fatalf("%s: the first variable is not the datasource variable", name)
	}
	ds := vars[0]
	if q := ds.Query; q == nil || deref(q.String) != "prometheus" {
		t.Errorf("%s: datasource variable's query (plugin type) is not prometheus", name)
	}
	// Grafana adds a "default" option, the default data source, when current is default/default.
	if c := ds.Current; c == nil || deref(c.Text.String) != defaultDatasource || deref(c.Value.String) != defaultDatasource {
		t.Errorf("%s: datasource variable's current is not text and value %q", name, defaultDatasource)
	}
	checkRef := func(what string, uid *string) {
		if deref(uid) != datasourceVar {
			t.Errorf("%s: %s uses data source %q, want %q", name, what, deref(uid), datasourceVar)
		}
	}
	for _, v := range vars[1:] {
		if v.Datasource == nil {
			t.Errorf("%s: variable %q has no data source", name, v.Name)
			continue
		}
		checkRef("variable "+v.Name, v.Datasource.Uid)
	}
	for _, pr := range board.Panels {
		p := pr.Panel
		if p == nil || p.Type == "text" {
			continue
		}
		title := deref(p.Title)
		if p.Datasource == nil {
			t.Errorf("%s: panel %q has no data source", name, title)
		} else {
			checkRef("panel "+title, p.Datasource.Uid)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", name, title)
		}
		if p.Type == "timeseries" {
			o, ok := p.Options.(*timeseries.Options)
			if !ok {
				t.Errorf("%s: panel %q: options are %T, not the time series schema's", name, title, p.Options)
				continue
			}
			if !o.Legend.ShowLegend || o.Legend.DisplayMode == "" || o.Legend.Placement == "" {
				t.Errorf("%s: panel %q: legend %+v not shown with a display mode and placement", name, title, o.Legend)
			}
			if o.Tooltip.Mode == "" || o.Tooltip.Sort == "" {
				t.Errorf("%s: panel %q: tooltip %+v without a mode and sort", name, title, o.Tooltip)
			}
		}
	}
}

// The schema check fails on each form Grafana's schema no longer has: the ones grafana-tools/sdk
// wrote into every dashboard before, and today's dashboards would fail it the same way.
func TestDecodeDashboardRefusesLegacyForms(t *testing.T) {
	m := buildDefault(t)
	var controller Dashboard
	for _, d := range m.Dashboards {
		if d.Key == "controller" {
			controller = d
		}
	}
	v, err := m.DashboardJSON(controller)
	if err != nil {
		t.Fatal(err)
	}
	good, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeDashboard(good); err != nil {
		t.Fatalf("the generated dashboard itself fails: %v", err)
	}
	// panelOfType returns the first panel of the type.
	panelOfType := func(d map[string]any, typ string) map[string]any {
		for _, p := range d["panels"].([]any) {
			if p := p.(map[string]any); p["type"] == typ {
				return p
			}
		}
		t.Fatalf("the controller dashboard has no %s panel", typ)
		return nil
	}
	tests := []struct {
		name   string
		mutate func(d map[string]any)
		want   string
	}{
		{"legacy rows", func(d map[string]any) { d["rows"] = []any{} }, "unexpected field 'rows'"},
		{"legacy style", func(d map[string]any) { d["style"] = "dark" }, "unexpected field 'style'"},
		{"legacy slug", func(d map[string]any) { d["slug"] = "" }, "unexpected field 'slug'"},
		{"import inputs", func(d map[string]any) { d["__inputs"] = []any{} }, "unexpected field '__inputs'"},
		{"panel span", func(d map[string]any) { panelOfType(d, "timeseries")["span"] = 0 }, "unexpected field 'span'"},
		{"panel isNew", func(d map[string]any) { panelOfType(d, "timeseries")["isNew"] = false }, "unexpected field 'isNew'"},
		{"panel error", func(d map[string]any) { panelOfType(d, "timeseries")["error"] = false }, "unexpected field 'error'"},
		{"row span", func(d map[string]any) { panelOfType(d, "row")["span"] = 0 }, "unexpected field 'span'"},
		{"pre-9 heatmap cards", func(d map[string]any) { panelOfType(d, "heatmap")["cards"] = map[string]any{} }, "unexpected field 'cards'"},
		{"pre-9 heatmap dataFormat", func(d map[string]any) { panelOfType(d, "heatmap")["dataFormat"] = "tsbuckets" }, "unexpected field 'dataFormat'"},
		{"pre-9 heatmap yAxis", func(d map[string]any) { panelOfType(d, "heatmap")["yAxis"] = map[string]any{"format": "s"} }, "unexpected field 'yAxis'"},
		{"old table transform", func(d map[string]any) { panelOfType(d, "timeseries")["transform"] = "table" }, "unexpected field 'transform'"},
		{"old table styles", func(d map[string]any) { panelOfType(d, "timeseries")["styles"] = []any{} }, "unexpected field 'styles'"},
		{"old table columns", func(d map[string]any) { panelOfType(d, "timeseries")["columns"] = []any{} }, "unexpected field 'columns'"},
		{"datasource variable refresh false", func(d map[string]any) {
			d["templating"].(map[string]any)["list"].([]any)[0].(map[string]any)["refresh"] = false
		}, "refresh"},
		{"legend without showLegend", func(d map[string]any) {
			delete(panelOfType(d, "timeseries")["options"].(map[string]any)["legend"].(map[string]any), "showLegend")
		}, "showLegend: required field is missing"},
		{"unknown option of a time series", func(d map[string]any) {
			panelOfType(d, "timeseries")["options"].(map[string]any)["legendFormat"] = "x"
		}, "unexpected field 'legendFormat'"},
		{"the old graph panel", func(d map[string]any) { panelOfType(d, "timeseries")["type"] = "graph" }, `panel type "graph" has no schema`},
		{"a panel wider than the grid", func(d map[string]any) {
			panelOfType(d, "timeseries")["gridPos"].(map[string]any)["w"] = 25
		}, "gridPos.w"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(good, &d); err != nil {
				t.Fatal(err)
			}
			tc.mutate(d)
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeDashboard(raw)
			if err == nil {
				t.Fatalf("accepted, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
