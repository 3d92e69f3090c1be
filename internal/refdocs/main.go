// Command refdocs writes the reference documents derived from the declarations:
// docs/configuration.md (every config field and every alert setting with its default and
// meaning, and the mixin's `_config` keys), docs/runbooks/README.md (the runbook index), the
// generated header of every runbook (severity, `for`, settings, panel, next step and expression,
// from the alert's declaration) and the exporter's metric table in docs/exporter.md (from the
// metrics catalogue).
// `make generate` runs it from the repository root; `make check-generated` fails when the
// committed copies are stale.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/results"
	"github.com/prometheus/common/model"
)

const (
	configSource = "gen/config.go"
	configDoc    = "docs/configuration.md"
	runbookIndex = "docs/runbooks/README.md"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "refdocs:", err)
		os.Exit(1)
	}
}

func run() error {
	fields, err := fieldDocs(configSource)
	if err != nil {
		return err
	}
	m, err := gen.Build(gen.Default())
	if err != nil {
		return err
	}
	pages, err := runbookPages(".", m)
	if err != nil {
		return err
	}
	pages[configDoc] = configuration(fields, m)
	pages[runbookIndex] = runbooks()
	for path, content := range pages {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return exporterMetrics.WriteBody(".", exporterMetricTable())
}

// exporterMetrics is the metric table of docs/exporter.md.
var exporterMetrics = results.Table{Name: "exporter-metrics", Page: "docs/exporter.md", Command: "make generate"}

// exporterMetricTable lists every family the audit exporter serves, from the catalogue.
func exporterMetricTable() string {
	var b strings.Builder
	b.WriteString("| metric | type | labels | meaning |\n|---|---|---|---|\n")
	for _, m := range catalogue.FromSource(catalogue.SourceExporter) {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, m.Type, strings.Join(m.Labels, ", "), cell(m.Help))
	}
	return b.String()
}

const header = "<!-- " + gen.Header + " (go run ./internal/refdocs) -->\n"

// field is one documented config field: its path, default and doc comment.
type field struct {
	path, def, doc string
}

// fieldDocs reads the doc comments of Config's fields, and of the fields of the struct types it
// holds, from the source: the comments are the one description of each field.
func fieldDocs(path string) ([]field, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	structs := map[string]*ast.StructType{}
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if st, ok := ts.Type.(*ast.StructType); ok {
				structs[ts.Name.Name] = st
			}
		}
		return true
	})
	defaults, err := flatten(gen.Default())
	if err != nil {
		return nil, err
	}
	var out []field
	var walk func(typeName, prefix string)
	walk = func(typeName, prefix string) {
		for _, fl := range structs[typeName].Fields.List {
			if fl.Tag == nil || len(fl.Names) == 0 {
				continue
			}
			tag, _ := strconv.Unquote(fl.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name == "" || name == "alerts" {
				continue
			}
			p := prefix + name
			if id, ok := fl.Type.(*ast.Ident); ok && structs[id.Name] != nil {
				walk(id.Name, p+".")
				continue
			}
			out = append(out, field{path: p, def: defaults[p], doc: sentence(fl.Names[0].Name, fl.Doc.Text())})
			// A list of structs: its elements' fields follow, as <list>[].<field>, with no
			// default of their own.
			if arr, ok := fl.Type.(*ast.ArrayType); ok {
				if id, ok := arr.Elt.(*ast.Ident); ok && structs[id.Name] != nil {
					walk(id.Name, p+"[].")
				}
			}
		}
	}
	walk("Config", "")
	return out, nil
}

// sentence turns a field's doc comment into a table cell: one line, without the Go name it
// starts with ("ClusterLabel is the label ..." becomes "The label ...").
func sentence(goName, doc string) string {
	s := strings.Join(strings.Fields(doc), " ")
	for _, prefix := range []string{goName + " is ", goName + " are ", goName + ": "} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			s = rest
			break
		}
	}
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// flatten returns the default of every leaf field of the config, by path, as YAML would show it.
func flatten(cfg gen.Config) (map[string]string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok && prefix != "" && !strings.HasSuffix(prefix, "labels") && !strings.HasSuffix(prefix, "uids") {
			for k, e := range m {
				walk(prefix+"."+k, e)
			}
			return
		}
		if m, ok := v.(map[string]any); ok && prefix == "" {
			for k, e := range m {
				walk(k, e)
			}
			return
		}
		j, _ := json.Marshal(v)
		out[prefix] = string(j)
	}
	walk("", tree)
	return out, nil
}

func configuration(fields []field, m *gen.Model) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString(`# Configuration reference

` + "`loopwatch gen --config loopwatch.yaml --out DIR`" + ` reads a YAML file in which every field is optional:
the defaults below serve any controller-runtime controller scraped by Prometheus, and a file names
only what it changes. An invalid file lists every problem with its field path. The same settings
are the jsonnet mixin's ` + "`_config`" + ` (last section).

## General settings

| field | default | meaning |
|---|---|---|
`)
	for _, f := range fields {
		def := ""
		if f.def != "" {
			def = "`" + cell(f.def) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.path, def, cell(f.doc))
	}
	b.WriteString(`
## Alerts

Every alert is set under ` + "`alerts.<key>`" + `: ` + "`disabled`" + ` (drop it), ` + "`severity`" + ` (critical pages,
warning opens a ticket, info is context), ` + "`for`" + ` (how long the condition must hold), and its own
parameters:

` + "```yaml" + `
alerts:
  queueBacklog: {depth: 500, for: 30m, severity: critical}
  hotLoop: {disabled: true}
` + "```" + `
`)
	group := ""
	for _, a := range gen.Alerts() {
		if g := a.Group(); g != group {
			group = g
			fmt.Fprintf(&b, "\n### Group `%s`\n", g)
			if iv := a.GroupInterval(); iv > 0 {
				fmt.Fprintf(&b, "\nEvaluated every %s whatever `ruleInterval` says: an alert of this group fires up to %s after its `for` has passed.\n", model.Duration(iv), model.Duration(iv))
			}
		}
		def := gen.Default().Alerts[a.Key]
		fmt.Fprintf(&b, "\n#### `%s`: %s\n\n%s Dashboard panel: %s / %s. Runbook: [%s](runbooks/%s.md).\n\n",
			a.Key, a.FullName(), a.Summary, a.Panel.Dashboard, a.Panel.Title, a.FullName(), a.FullName())
		b.WriteString("| setting | default | meaning |\n|---|---|---|\n")
		fmt.Fprintf(&b, "| `severity` | `%s` | Severity label. |\n| `for` | `%s` | How long the condition must hold before the alert fires. |\n", def.Severity, def.For)
		for _, p := range a.Params {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s Valid: %s. |\n", p.Key, strconv.FormatFloat(p.Default, 'g', -1, 64), cell(p.Doc), cell(p.Range()))
		}
	}
	b.WriteString(`
## The mixin's ` + "`_config`" + `

The jsonnet mixin (` + "`jsonnet/`" + `) takes the same settings as ` + "`_config`" + ` keys; with these defaults it
evaluates to exactly the generated rules and dashboards.

| key | default |
|---|---|
`)
	for _, p := range m.Params.Sorted() {
		v, _ := json.Marshal(p.Value)
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", p.Name, cell(string(v)))
	}
	return b.Bytes()
}

func runbooks() []byte {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString(`# Runbooks

One runbook per alert of ` + "`rules/loopwatch.rules.yaml`" + `; each alert's ` + "`runbook_url`" + ` points at its
file. Every runbook starts with a header that ` + "`make generate`" + ` writes from the alert's declaration
(severity, ` + "`for`" + `, its settings with their defaults and config keys, the dashboard panel, the next
step, which is also the alert's ` + "`next_step`" + ` annotation and ` + "`loopwatch diagnose`" + `'s advice, and the
expression); the rest is written by hand, in the same sections: Meaning, Impact (what the failure
costs), Diagnosis (the dashboard panel that shows the signal, PromQL, kubectl), Mitigation and
False positives.
` + "`go test ./testrules/`" + ` checks that every alert has a runbook here and every runbook an alert.

| group | alert | severity | summary | panel |
|---|---|---|---|---|
`)
	for _, a := range gen.Alerts() {
		fmt.Fprintf(&b, "| %s | [%s](%s.md) | %s | %s | %s / %s |\n", a.Group(), a.FullName(), a.FullName(), a.Severity, cell(a.Summary), a.Panel.Dashboard, a.Panel.Title)
	}
	return b.Bytes()
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
