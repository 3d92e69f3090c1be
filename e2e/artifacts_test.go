package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the directory of the go.mod above the test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ruleFile is a Prometheus rule file, reduced to what the tests look at.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Record string `json:"record"`
	Alert  string `json:"alert"`
	Expr   string `json:"expr"`
}

// generatedYAML sorts the YAML files under rules/ into Prometheus rule files and PrometheusRule
// manifests (by their kind), reading each file once.
func generatedYAML(t *testing.T) (ruleFiles map[string]ruleFile, manifests map[string][]byte) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot(t), "rules", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ruleFiles, manifests = map[string]ruleFile{}, map[string][]byte{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch head.Kind {
		case "PrometheusRule":
			manifests[path] = data
		case "":
			var rf ruleFile
			if err := yaml.Unmarshal(data, &rf); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			ruleFiles[path] = rf
		default:
			t.Logf("%s: kind %s is neither a rule file nor a PrometheusRule; not tested here", path, head.Kind)
		}
	}
	if len(ruleFiles) == 0 || len(manifests) == 0 {
		t.Fatalf("rules/ holds %d rule files and %d PrometheusRule manifests; want at least one of each (run `make generate`)", len(ruleFiles), len(manifests))
	}
	return ruleFiles, manifests
}

// dashboard is a Grafana dashboard, reduced to panels, their queries and template variables.
type dashboard struct {
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"` // a collapsed row's panels
}

type target struct {
	Expr  string `json:"expr"`
	RefID string `json:"refId"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Query      json.RawMessage `json:"query"`
}

// query is the variable's query text, which Grafana stores as a string or as {query: "..."}.
func (v variable) query() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &q)
	return q.Query
}

// panelQuery is one query of one panel, named for test output and the allow-list.
type panelQuery struct {
	Dashboard string
	Panel     string
	// Query is the target's refId, or its 1-based position when it has none.
	Query string
	Expr  string
}

// String is "<dashboard file>/<panel title>/<refId or position>".
func (q panelQuery) String() string { return q.Dashboard + "/" + q.Panel + "/" + q.Query }

// dashboards reads every dashboards/*.json.
func dashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot(t), "dashboards", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("dashboards/ holds no *.json (run `make generate`)")
	}
	out := map[string]dashboard{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[filepath.Base(path)] = d
	}
	return out
}

// queries lists every panel query of d, rows' nested panels included.
func (d dashboard) queries(file string) []panelQuery {
	var out []panelQuery
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					continue
				}
				id := tg.RefID
				if id == "" {
					id = fmt.Sprint(i + 1)
				}
				out = append(out, panelQuery{Dashboard: file, Panel: p.Title, Query: id, Expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}
