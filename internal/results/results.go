// Package results keeps the measured tables of the docs/ pages: each is written by the command
// that measures it, never by hand. A page holds a table between two markers,
//
//	<!-- results:NAME: written by `COMMAND`, do not edit -->
//	…
//	<!-- /results:NAME -->
//
// and the command saves what it measured as JSON in docs/results/NAME.json beside it. The
// command writes both; `make generate` renders every table again from its JSON (internal/refdocs)
// and `make check-generated` fails when a page differs, so a hand edit or a stale table cannot
// land. Refreshing a table is a rerun of its command.
package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir is where the measured data of every table lives, relative to the repository root.
const Dir = "docs/results"

// Table names a measured table: the page that shows it, the command that measures it and how
// it renders from its data.
type Table struct {
	// Name is the marker's name and the data file's: docs/results/<Name>.json.
	Name string
	// Page is the docs page that shows the table, relative to the repository root.
	Page string
	// Command is what a reader runs to measure it again.
	Command string
}

// DataPath is the table's data file, relative to the repository root.
func (t Table) DataPath() string { return filepath.Join(Dir, t.Name+".json") }

func (t Table) begin() string {
	return fmt.Sprintf("<!-- results:%s: written by `%s`, do not edit -->", t.Name, t.Command)
}

func (t Table) end() string { return fmt.Sprintf("<!-- /results:%s -->", t.Name) }

// ErrNoMarkers is returned when a page has no block for the table.
var ErrNoMarkers = errors.New("no results markers")

// Replace returns page with the table's block holding body. The page must already hold the
// block's markers once, the opening one in any earlier wording of the command.
func (t Table) Replace(page []byte, body string) ([]byte, error) {
	s := string(page)
	prefix := fmt.Sprintf("<!-- results:%s:", t.Name)
	i := strings.Index(s, prefix)
	if i < 0 || strings.Count(s, prefix) > 1 {
		return nil, fmt.Errorf("%s: want one %q: %w", t.Page, prefix, ErrNoMarkers)
	}
	eol := strings.Index(s[i:], "\n")
	j := strings.Index(s, t.end())
	if eol < 0 || j < i+eol {
		return nil, fmt.Errorf("%s: %q must follow %q on a line of its own: %w", t.Page, t.end(), prefix, ErrNoMarkers)
	}
	body = strings.TrimRight(body, "\n")
	var b bytes.Buffer
	b.WriteString(s[:i])
	b.WriteString(t.begin())
	b.WriteString("\n\n")
	b.WriteString(body)
	b.WriteString("\n\n")
	b.WriteString(s[j:])
	return b.Bytes(), nil
}

// Write saves data as the table's JSON and body as its block in the page, both under root (the
// repository root). Measuring commands call it.
func (t Table) Write(root string, data any, body string) error {
	raw, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return fmt.Errorf("results %s: %w", t.Name, err)
	}
	if err := os.MkdirAll(filepath.Join(root, Dir), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, t.DataPath()), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	return t.WriteBody(root, body)
}

// WriteBody puts body into the table's block of its page under root.
func (t Table) WriteBody(root, body string) error {
	path := filepath.Join(root, t.Page)
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := t.Replace(page, body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// Load reads the table's JSON under root into v.
func (t Table) Load(root string, v any) error {
	raw, err := os.ReadFile(filepath.Join(root, t.DataPath()))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", t.DataPath(), err)
	}
	return nil
}

// CPUModel reads the first processor's model name from /proc/cpuinfo ("" when unavailable): the
// same measurement costs one machine of a kind more than another, so every table names it.
func CPUModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return parseCPUModel(string(raw))
}

func parseCPUModel(cpuinfo string) string {
	for line := range strings.Lines(cpuinfo) {
		if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// Check reports whether the table's block in its page under root holds body, the rendering of
// its data: a test of each measuring package calls it, so that a table edited by hand, or data
// without its table, fails `make unit`.
func (t Table) Check(root, body string) error {
	path := filepath.Join(root, t.Page)
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	want, err := t.Replace(page, body)
	if err != nil {
		return err
	}
	if !bytes.Equal(page, want) {
		return fmt.Errorf("%s: the %s table is not what its data in %s renders to: rerun `%s` (or, when the renderer changed, render it again from the data)", t.Page, t.Name, t.DataPath(), t.Command)
	}
	return nil
}
