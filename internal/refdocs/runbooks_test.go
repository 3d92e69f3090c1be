package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/gen"
)

const repoRoot = "../.."

func defaultModel(t *testing.T) *gen.Model {
	t.Helper()
	m, err := gen.Build(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The committed runbooks carry exactly the headers make generate writes: a hand edit of a
// header, or a declaration changed without make generate, fails here as in check-generated.
func TestRunbookHeadersAreFresh(t *testing.T) {
	pages, err := runbookPages(repoRoot, defaultModel(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != len(gen.Alerts()) {
		t.Fatalf("%d runbook pages for %d alerts", len(pages), len(gen.Alerts()))
	}
	for path, want := range pages {
		got, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: generated header is stale: run make generate", path)
		}
	}
}

// Every runbook has one generated header, right under its title, stating the alert's facts.
func TestEveryRunbookHasOneHeader(t *testing.T) {
	m := defaultModel(t)
	for _, a := range gen.Alerts() {
		path := filepath.Join(repoRoot, runbookDir, a.FullName()+".md")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		page := string(raw)
		if n, e := strings.Count(page, headerBegin), strings.Count(page, headerEnd); n != 1 || e != 1 {
			t.Errorf("%s: %d header openings and %d ends, want one each", path, n, e)
			continue
		}
		if !strings.HasPrefix(page, "# "+a.FullName()+"\n\n"+headerBegin+"\n") {
			t.Errorf("%s: the generated header must follow the title", path)
		}
		rule, _ := m.AlertRule(a)
		for _, fact := range []string{
			"`alerts." + a.Key + ".severity`", "`alerts." + a.Key + ".for`",
			"**Next step:** " + markdownText(a.NextStep), a.Panel.Title, "```promql\n" + rule.Expr,
		} {
			if !strings.Contains(page, fact) {
				t.Errorf("%s: header lacks %q", path, fact)
			}
		}
		for _, p := range a.Params {
			if !strings.Contains(page, "`alerts."+a.Key+"."+p.Key+"`") {
				t.Errorf("%s: header lacks the setting %s", path, p.Key)
			}
		}
	}
}

// A header edited by hand (a threshold changed in the runbook, not in the declaration) is
// rewritten by make generate, so check-generated's diff reports it.
func TestHandEditedHeaderIsStale(t *testing.T) {
	m := defaultModel(t)
	body, err := runbookHeader(m, gen.QueueBacklog)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := withHeader([]byte("# LoopwatchQueueBacklog\n\nProse.\n\n## Meaning\n"), body)
	if err != nil {
		t.Fatal(err)
	}
	again, err := withHeader(fresh, body)
	if err != nil || !bytes.Equal(again, fresh) {
		t.Fatalf("rendering a fresh page again changed it (err %v):\n%s", err, again)
	}
	edited := bytes.Replace(fresh, []byte("| `100` |"), []byte("| `500` |"), 1)
	if bytes.Equal(edited, fresh) {
		t.Fatal("the header does not state the depth default 100")
	}
	out, err := withHeader(edited, body)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, edited) || !bytes.Equal(out, fresh) {
		t.Errorf("a hand-edited header is not rewritten:\n%s", out)
	}
	if !strings.Contains(string(out), "\nProse.\n\n## Meaning\n") {
		t.Errorf("the hand-written prose was not kept:\n%s", out)
	}
}

func TestWithHeaderRefusesBrokenMarkers(t *testing.T) {
	for name, page := range map[string]string{
		"two openings":       "# A\n\n" + headerBegin + "\n" + headerBegin + "\n" + headerEnd + "\n",
		"end without open":   "# A\n\n" + headerEnd + "\n",
		"end before opening": "# A\n\n" + headerEnd + "\n" + headerBegin + "\n",
		"no title":           "Prose.\n",
	} {
		if _, err := withHeader([]byte(page), "body"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// forClause matches a `for:` duration stated in prose: "for 15 minutes", "for 2 more minutes".
var forClause = regexp.MustCompile(`\bfor (\d+) (?:more )?(minute|hour)s?\b`)

// The hand-written paragraph under the header that says in words when the alert fires states
// its `for:` duration, the fact most often changed in a declaration: it must be the declared one.
func TestFiresWhenProseStatesTheDeclaredFor(t *testing.T) {
	checked := 0
	for _, a := range gen.Alerts() {
		path := filepath.Join(repoRoot, runbookDir, a.FullName()+".md")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(raw), headerEnd)
		if !ok {
			continue // Reported by TestEveryRunbookHasOneHeader.
		}
		para, _, _ := strings.Cut(strings.TrimLeft(after, "\n"), "\n\n")
		if !strings.HasPrefix(para, "It fires when") {
			continue
		}
		for _, m := range forClause.FindAllStringSubmatch(para, -1) {
			n, _ := strconv.Atoi(m[1])
			d := time.Duration(n) * time.Minute
			if m[2] == "hour" {
				d = time.Duration(n) * time.Hour
			}
			checked++
			if want := time.Duration(gen.Default().Alerts[a.Key].For); d != want {
				t.Errorf("%s: the prose says %q, the declaration's for: is %s", path, m[0], want)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d for: clauses found in the runbooks' prose", checked)
	}
}
