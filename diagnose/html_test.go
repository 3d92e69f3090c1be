package diagnose

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/browser"
)

var screenshot = flag.Bool("screenshot", false, "rewrite "+diagnoseShot+" from the fixture report")

// diagnoseShot is the screenshot docs/post-mortem.md shows, relative to this package.
const diagnoseShot = "../docs/img/diagnose.png"

// evidenceCharts makes the charts a range query of each evidence series would give for the
// fixture report: each series rises to its evidence value while the finding held and stays
// near a tenth of it before, at the report's step.
func evidenceCharts(r Report) Charts {
	ch := Charts{series: map[string][]series{}}
	step := time.Duration(r.Window.StepSeconds * float64(time.Second))
	add := func(c Cause) {
		for _, e := range c.Evidence {
			if e.Query == "" || e.Value == nil {
				continue
			}
			s := series{labels: map[string]string{"__name__": "x"}}
			for k, v := range e.Labels {
				s.labels[k] = v
			}
			for t := r.Window.Start; !t.After(r.Window.End); t = t.Add(step) {
				v := *e.Value / 10
				if !t.Before(c.FirstSeen) && !t.After(c.LastSeen) {
					v = *e.Value
				}
				s.points = append(s.points, point{t, v})
			}
			ch.series[e.Query] = append(ch.series[e.Query], s)
		}
	}
	for _, c := range r.Controllers {
		for _, cause := range c.Causes {
			add(cause)
		}
	}
	for _, cause := range r.Unattributed {
		add(cause)
	}
	return ch
}

// links finds every address in a page.
var links = regexp.MustCompile(`https?://[^"<\s]*`)

func renderFixture(t *testing.T) (Report, []byte) {
	t.Helper()
	r := fixtureReport(t)
	var b bytes.Buffer
	if err := r.WriteHTML(&b, evidenceCharts(r)); err != nil {
		t.Fatal(err)
	}
	return r, b.Bytes()
}

// TestHTMLReportLinksOnlyToRunbooks: the page is self-contained: the only addresses in it are
// the runbook links of its findings (the Prometheus URL is shown without its scheme).
func TestHTMLReportLinksOnlyToRunbooks(t *testing.T) {
	r, page := renderFixture(t)
	runbooks := map[string]bool{}
	for _, c := range r.Controllers {
		for _, cause := range c.Causes {
			runbooks[cause.Runbook] = true
		}
	}
	for _, cause := range r.Unattributed {
		runbooks[cause.Runbook] = true
	}
	found := links.FindAll(page, -1)
	if len(found) == 0 {
		t.Fatal("no runbook link in the page")
	}
	for _, l := range found {
		if !runbooks[string(l)] {
			t.Errorf("the page refers to %s, which is no runbook of its findings", l)
		}
	}
	for _, bad := range []string{" src=", "url(", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the page loads something: %q", bad)
		}
	}
}

// TestHTMLReportInChromium loads the fixture report's page from file:// in a real headless
// Chromium and checks the DOM: a section per controller with its verdict in words, a section per
// finding, a chart with its text alternative and its PromQL per evidence query, every table row.
func TestHTMLReportInChromium(t *testing.T) {
	c := browser.ForTest(t)
	r, page := renderFixture(t)
	dir := t.TempDir()
	file := dir + "/diagnose.html"
	if err := writeFile(file, page); err != nil {
		t.Fatal(err)
	}
	shot := dir + "/diagnose.png"
	dom, err := c.Load(context.Background(), file, browser.Capture{Screenshot: shot, Width: 1100, Height: 1400, PDF: dir + "/diagnose.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := browser.ParseDOM(dom)
	if err != nil {
		t.Fatal(err)
	}
	if tb, ok := doc.ByID("controllers-table"); !ok || len(tb.Rows()) != len(r.Controllers) {
		t.Errorf("the controllers table does not have one row per controller (%d)", len(r.Controllers))
	}
	for _, ctl := range r.Controllers {
		sec, ok := doc.ByID(controllerID(ctl))
		if !ok {
			t.Errorf("no section for controller %s", ctl.identity())
			continue
		}
		if sec.Attr("data-verdict") != string(ctl.Verdict) || !strings.Contains(sec.Text(), verdictWord(ctl.Verdict)) {
			t.Errorf("controller %s: the verdict %s is not written out", ctl.identity(), ctl.Verdict)
		}
		findings := sec.All(browser.Tagged("section", "finding"))
		if len(findings) != len(ctl.Causes) {
			t.Errorf("controller %s: %d finding sections, want %d", ctl.identity(), len(findings), len(ctl.Causes))
		}
		for i, cause := range ctl.Causes {
			if i < len(findings) {
				checkFinding(t, doc, findings[i], cause)
			}
		}
	}
	if len(r.Unattributed) > 0 {
		sec, ok := doc.ByID("unattributed")
		if !ok || len(sec.All(browser.Tagged("section", "finding"))) != len(r.Unattributed) {
			t.Errorf("the findings tied to no controller are not all shown")
		}
	}
	if *screenshot {
		if _, err := c.Load(context.Background(), file, browser.Capture{Screenshot: shot, Width: 1000, Height: 1250}); err != nil {
			t.Fatal(err)
		}
		if err := browser.ShrinkPNG(shot, diagnoseShot); err != nil {
			t.Fatal(err)
		}
	}
}

// checkFinding checks one finding's section: a chart per evidence query that has data, each
// with a titled, described SVG whose line has the series' points, the PromQL, the runbook link.
func checkFinding(t *testing.T, doc, sec browser.Node, c Cause) {
	t.Helper()
	if sec.Attr("data-alert") != c.Alert {
		t.Errorf("finding section %s, want %s", sec.Attr("data-alert"), c.Alert)
		return
	}
	groups := sec.All(func(n browser.Node) bool { return n.Tag() == "div" && n.HasClass("evidence") })
	queries := 0
	withData := 0
	for i := 0; i < len(c.Evidence); {
		j := i
		for j < len(c.Evidence) && c.Evidence[j].Query == c.Evidence[i].Query {
			j++
		}
		queries++
		for _, e := range c.Evidence[i:j] {
			if e.Query != "" && e.Value != nil {
				withData++
				break
			}
		}
		i = j
	}
	if len(groups) != queries {
		t.Errorf("%s: %d evidence groups, want %d", c.Alert, len(groups), queries)
	}
	figs := sec.All(browser.Tagged("figure"))
	if want := min(withData, maxChartsPerCause); len(figs) != want {
		t.Errorf("%s: %d charts, want %d", c.Alert, len(figs), want)
	}
	for _, f := range figs {
		for _, path := range f.All(func(n browser.Node) bool { return n.Tag() == "path" && n.Has("data-points") }) {
			if n, _ := strconv.Atoi(path.Attr("data-points")); n == 0 || !strings.Contains(path.Attr("d"), "L") {
				t.Errorf("%s: chart line %q has no points", c.Alert, path.Attr("data-label"))
			}
		}
		svg := f.All(browser.Tagged("svg"))[0]
		for _, id := range strings.Fields(svg.Attr("aria-labelledby")) {
			if n, ok := doc.ByID(id); !ok || n.Text() == "" {
				t.Errorf("%s: chart text alternative %q missing", c.Alert, id)
			}
		}
	}
	if got := len(sec.All(browser.Tagged("pre", "promql"))); got < queries {
		t.Errorf("%s: %d PromQL blocks, want at least %d", c.Alert, got, queries)
	}
	runbooks := sec.All(browser.Tagged("a", "runbook"))
	if c.Runbook != "" && (len(runbooks) != 1 || runbooks[0].Attr("href") != c.Runbook) {
		t.Errorf("%s: no runbook link to %s", c.Alert, c.Runbook)
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
