package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loopwatch/loopwatch/gen"
)

// runbookDir holds one runbook per alert, <AlertName>.md.
const runbookDir = "docs/runbooks"

// The generated header of a runbook sits between these markers, right under its title. The rest
// of the runbook is prose, written by hand.
const (
	headerBegin = "<!-- generated: header, from the alert's declaration by make generate; do not edit -->"
	headerEnd   = "<!-- /generated: header -->"
)

// runbookHeader renders the facts of alert a that its runbook states: severity, `for` and each
// parameter with its default and config key, the dashboard panel, the next step and the
// expression as the rule file has it with the default config (m).
func runbookHeader(m *gen.Model, a *gen.Alert) (string, error) {
	rule, ok := m.AlertRule(a)
	if !ok {
		return "", fmt.Errorf("%s: not in the default model", a.FullName())
	}
	def := gen.Default().Alerts[a.Key]
	key := "alerts." + a.Key
	var b strings.Builder
	b.WriteString("| setting | default | config key | meaning |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| severity | `%s` | `%s.severity` | Severity label. |\n", def.Severity, key)
	fmt.Fprintf(&b, "| for | `%s` | `%s.for` | How long the condition must hold before the alert fires. |\n", def.For, key)
	for _, p := range a.Params {
		fmt.Fprintf(&b, "| %s | `%s` | `%s.%s` | %s |\n", p.Key, strconv.FormatFloat(p.Default, 'g', -1, 64), key, p.Key, cell(p.Doc))
	}
	title, err := dashboardTitle(m, a.Panel.Dashboard)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.FullName(), err)
	}
	fmt.Fprintf(&b, "\n**Dashboard panel:** %s → %s\n", title, a.Panel.Title)
	// A placeholder such as <namespace> would be an HTML tag to Markdown: escaped, it shows.
	fmt.Fprintf(&b, "\n**Next step:** %s\n", markdownText(a.NextStep))
	fmt.Fprintf(&b, "\nExpression (rule group `%s`, default configuration):\n\n```promql\n%s\n```\n", a.Group(), strings.TrimRight(rule.Expr, "\n"))
	return b.String(), nil
}

// dashboardTitle is the title of the generated dashboard key.
func dashboardTitle(m *gen.Model, key string) (string, error) {
	for _, d := range m.Dashboards {
		if d.Key == key {
			return m.Params.Resolve(d.Title), nil
		}
	}
	return "", fmt.Errorf("no dashboard %q", key)
}

// withHeader returns the runbook page with its generated header holding body. A page without a
// header (a new runbook) gets one under its title; a page with a broken or repeated header is an
// error, never silently rewritten.
func withHeader(page []byte, body string) ([]byte, error) {
	s := string(page)
	block := headerBegin + "\n\n" + strings.TrimRight(body, "\n") + "\n\n" + headerEnd
	switch nb, ne := strings.Count(s, headerBegin), strings.Count(s, headerEnd); {
	case nb == 0 && ne == 0:
		title, rest, ok := strings.Cut(s, "\n")
		if !ok || !strings.HasPrefix(title, "# ") {
			return nil, fmt.Errorf("the first line must be the title")
		}
		return []byte(title + "\n\n" + block + "\n\n" + strings.TrimLeft(rest, "\n")), nil
	case nb != 1 || ne != 1:
		return nil, fmt.Errorf("want one generated header, found %d openings and %d ends", nb, ne)
	}
	i, j := strings.Index(s, headerBegin), strings.Index(s, headerEnd)
	if j < i {
		return nil, fmt.Errorf("the header's end comes before its opening")
	}
	var b bytes.Buffer
	b.WriteString(s[:i])
	b.WriteString(block)
	b.WriteString(s[j+len(headerEnd):])
	return b.Bytes(), nil
}

// runbookPages returns every runbook page with its header rendered from m, by path.
func runbookPages(root string, m *gen.Model) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, a := range gen.Alerts() {
		path := filepath.Join(runbookDir, a.FullName()+".md")
		page, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, fmt.Errorf("runbook of %s: %w", a.FullName(), err)
		}
		body, err := runbookHeader(m, a)
		if err != nil {
			return nil, err
		}
		if out[path], err = withHeader(page, body); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// markdownText escapes the characters of plain text that Markdown would take for markup: the <
// of a placeholder, which would open an HTML tag.
func markdownText(s string) string { return strings.ReplaceAll(s, "<", `\<`) }
