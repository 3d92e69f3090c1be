package testrules

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runbookDir holds one Markdown runbook per alert, named after the alert.
const runbookDir = "../docs/runbooks"

// runbookSections are the headings every runbook has, in this order.
var runbookSections = []string{"## Meaning", "## Impact", "## Diagnosis", "## Mitigation", "## False positives"}

// runbookLink matches a relative Markdown link to another runbook.
var runbookLink = regexp.MustCompile(`\]\(([A-Za-z0-9]+\.md)\)`)

// TestEveryAlertHasARunbook fails when an alert has no runbook file, when its runbook_url does not
// point at that file, or when a runbook file names no alert of the rule file.
func TestEveryAlertHasARunbook(t *testing.T) {
	groups := loadRules(t)
	alerts := alertNames(groups.Groups)

	for _, name := range alerts {
		path := filepath.Join(runbookDir, name+".md")
		if _, err := os.Stat(path); err != nil {
			t.Errorf("alert %s has no runbook: %v", name, err)
		}
		rule, _ := findAlert(groups.Groups, name)
		if url := rule.Annotations["runbook_url"]; !strings.HasSuffix(url, "/docs/runbooks/"+name+".md") {
			t.Errorf("alert %s: runbook_url %q does not point at docs/runbooks/%s.md", name, url, name)
		}
	}

	files, err := filepath.Glob(filepath.Join(runbookDir, "*.md"))
	if err != nil {
		t.Fatalf("list runbooks: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		if name == "README" {
			continue
		}
		if !slices.Contains(alerts, name) {
			t.Errorf("runbook %s names no alert of %s: remove it or fix its name", f, rulesFile)
		}
	}
}

// TestRunbooksAreComplete fails when a runbook lacks a title, one of the standard sections, a
// PromQL or shell block for the diagnosis, or links to a runbook that does not exist.
func TestRunbooksAreComplete(t *testing.T) {
	groups := loadRules(t)
	for _, name := range alertNames(groups.Groups) {
		path := filepath.Join(runbookDir, name+".md")
		data, err := os.ReadFile(path)
		if err != nil {
			continue // Reported by TestEveryAlertHasARunbook.
		}
		text := string(data)
		if !strings.HasPrefix(text, "# "+name+"\n") {
			t.Errorf("%s: first line must be the title %q", path, "# "+name)
		}
		last := -1
		for _, s := range runbookSections {
			i := strings.Index(text, "\n"+s+"\n")
			switch {
			case i < 0:
				t.Errorf("%s: section %q is missing", path, s)
			case i < last:
				t.Errorf("%s: section %q is out of order (want %v)", path, s, runbookSections)
			default:
				last = i
			}
		}
		for _, block := range []string{"```promql\n", "```sh\n"} {
			if !strings.Contains(text, block) {
				t.Errorf("%s: the diagnosis needs a %s block", path, strings.TrimSpace(block))
			}
		}
		for _, m := range runbookLink.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.Join(runbookDir, m[1])); err != nil {
				t.Errorf("%s: link to %s is broken: %v", path, m[1], err)
			}
		}
	}
}

// TestRunbookIndexListsEveryAlert fails when docs/runbooks/README.md does not link every alert's
// runbook, or links one that no alert has.
func TestRunbookIndexListsEveryAlert(t *testing.T) {
	groups := loadRules(t)
	alerts := alertNames(groups.Groups)
	path := filepath.Join(runbookDir, "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read runbook index: %v", err)
	}
	var linked []string
	for _, m := range runbookLink.FindAllStringSubmatch(string(data), -1) {
		linked = append(linked, strings.TrimSuffix(m[1], ".md"))
	}
	for _, a := range alerts {
		if !slices.Contains(linked, a) {
			t.Errorf("%s does not link the runbook of %s", path, a)
		}
	}
	for _, l := range linked {
		if !slices.Contains(alerts, l) {
			t.Errorf("%s links %s.md, which no alert has", path, l)
		}
	}
}
