package diagnose

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	hr "github.com/loopwatch/loopwatch/internal/htmlreport"
)

// Bounds of the HTML report.
const (
	// maxChartsPerCause bounds the charts of one finding: its evidence queries, in order.
	maxChartsPerCause = 6
	// maxCharts bounds the charts of the page; findings past it show their numbers only.
	maxCharts = 240
	// linesPerChart bounds the series of one chart (the evidence rows, largest first).
	linesPerChart = 4
)

// htmlPage carries the page's state while it is written.
type htmlPage struct {
	*hr.Writer
	charts Charts
	drawn  int
	tables int
	r      Report
}

// WriteHTML writes the report as one self-contained HTML page: the verdict per controller and,
// for each finding, its evidence series over the window drawn on one time axis (the condition's
// stretch shaded, the threshold dashed), the PromQL under each chart, the next step and the
// runbook link. charts come from FetchCharts; without them (the zero Charts) the page shows the
// numbers without charts. The only addresses in the page are the runbooks'.
func (r Report) WriteHTML(w io.Writer, charts Charts) error {
	r.normalize()
	p := &htmlPage{Writer: hr.NewWriter(w), charts: charts, r: r}
	step := time.Duration(r.Window.StepSeconds * float64(time.Second))
	p.Begin("Controller diagnosis", fmt.Sprintf("Prometheus %s · %s to %s UTC (%s, every %s)", promHost(r.Prometheus),
		hr.Stamp(r.Window.Start), hr.Stamp(r.Window.End), hr.Duration(r.Window.End.Sub(r.Window.Start)), hr.Duration(step)))
	counts := map[Verdict]int{}
	for _, c := range r.Controllers {
		counts[c.Verdict]++
	}
	p.Raw("<section id=\"summary\" aria-labelledby=\"summary-h\">\n<h2 id=\"summary-h\">Summary</h2>\n")
	p.Cards([]hr.Card{
		{Value: fmt.Sprint(len(r.Controllers)), Label: "controllers"},
		{Value: fmt.Sprint(counts[Unhealthy]), Label: "unhealthy"},
		{Value: fmt.Sprint(counts[InsufficientData]), Label: "insufficient data"},
		{Value: fmt.Sprint(counts[Healthy]), Label: "healthy"},
		{Value: fmt.Sprint(len(r.Unattributed)), Label: "findings tied to no controller"},
		{Value: fmt.Sprintf("%d / %d", len(r.RecordingRules.Recorded), len(r.RecordingRules.Recorded)+len(r.RecordingRules.Inlined)), Label: "recording rules read as recorded"},
	})
	rows := make([][]hr.Cell, 0, len(r.Controllers))
	for _, c := range r.Controllers {
		rows = append(rows, []hr.Cell{{Text: c.identity(), HTML: "<a href=\"#" + controllerID(c) + "\">" + hr.Esc(c.identity()) + "</a>"},
			{Text: verdictWord(c.Verdict), HTML: verdictBadge(c.Verdict)}, hr.N(len(c.Causes)), hr.T(orDash(c.FirstCause())), hr.T(c.Headline)})
	}
	if len(rows) > 0 {
		p.Table("controllers-table", "Controllers", []hr.Column{{Name: "Controller"}, {Name: "Verdict"}, {Name: "Findings", Numeric: true},
			{Name: "Most likely cause"}, {Name: "Headline"}}, rows, 1000)
	}
	for _, n := range r.Notes {
		p.Note(n)
	}
	if len(p.charts.Skipped) > 0 {
		p.Note(fmt.Sprintf("%d evidence queries were not drawn: %s", len(p.charts.Skipped), strings.Join(p.charts.Skipped, "; ")))
	}
	p.Raw("</section>\n")
	for _, c := range r.Controllers {
		p.controller(c)
	}
	if len(r.Unattributed) > 0 {
		p.Rawf("<section id=\"unattributed\" aria-labelledby=\"unattributed-h\">\n<h2 id=\"unattributed-h\">Not tied to a controller found (%d)</h2>\n", len(r.Unattributed))
		for i, c := range r.Unattributed {
			p.cause(fmt.Sprintf("unattributed-%d", i+1), i+1, c, "finding")
		}
		p.Raw("</section>\n")
	}
	if p.drawn >= maxCharts {
		p.Note(fmt.Sprintf("Charts are drawn for the first %d evidence queries of the page; the findings after them show their numbers only.", maxCharts))
	}
	return p.End()
}

// promHost is the Prometheus URL without its scheme: the page links to nothing but runbooks.
func promHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.Host + u.Path
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func controllerID(c Controller) string {
	return "c-" + hr.Slug(c.Cluster+" "+c.Namespace+" "+c.Job+" "+c.Name)
}

// verdictBadge is the verdict as a word in a bordered badge: readable without its colour.
func verdictBadge(v Verdict) string {
	return "<span class=\"verdict v-" + hr.Esc(string(v)) + "\">" + hr.Esc(verdictWord(v)) + "</span>"
}

func (p *htmlPage) controller(c Controller) {
	id := controllerID(c)
	p.Rawf("<section id=\"%s\" class=\"controller\" data-verdict=\"%s\" data-causes=\"%d\" aria-labelledby=\"%s-h\">\n<h2 id=\"%s-h\">%s %s</h2>\n<p>%s</p>\n",
		id, hr.Esc(string(c.Verdict)), len(c.Causes), id, id, verdictBadge(c.Verdict), hr.Esc(c.identity()), hr.Esc(c.Headline))
	for i, cause := range c.Causes {
		role := string(cause.Role)
		if cause.Role == RoleSymptom {
			role = "symptom of " + cause.ExplainedBy
		}
		p.cause(fmt.Sprintf("%s-%d", id, i+1), i+1, cause, role)
	}
	if len(c.Signals) > 0 {
		p.Raw("<h3>Key numbers at the end of the window</h3>\n")
		p.evidenceTable(id+"-signals", c.Signals)
	}
	rows := make([][]hr.Cell, 0, len(c.Checks))
	for _, ch := range c.Checks {
		rows = append(rows, []hr.Cell{hr.T(ch.Alert), hr.T(string(ch.Result)), hr.T(orDash(ch.Detail))})
	}
	if len(rows) > 0 {
		p.Raw("<details><summary>Every check of the playbook</summary>\n")
		p.Table(id+"-checks", "Checks", []hr.Column{{Name: "Check (alert)"}, {Name: "Result"}, {Name: "Detail"}}, rows, 1000)
		p.Raw("</details>\n")
	}
	p.Raw("</section>\n")
}

func (p *htmlPage) cause(id string, n int, c Cause, role string) {
	when := fmt.Sprintf("held %s until %s", humanDuration(c.HeldSeconds), hr.Stamp(c.LastSeen))
	if c.Status == StatusActive {
		when = fmt.Sprintf("active for %s", humanDuration(c.HeldSeconds))
	}
	firing := fmt.Sprintf("the alert fires once it holds %s", humanDuration(c.ForSeconds))
	if c.HeldSeconds >= c.ForSeconds {
		firing = fmt.Sprintf("past the alert's for of %s", humanDuration(c.ForSeconds))
	}
	p.Rawf("<section class=\"finding\" id=\"%s\" data-alert=\"%s\" data-role=\"%s\">\n<h3>%d. %s %s <span class=\"muted\">[%s] %s (%s)</span></h3>\n",
		id, hr.Esc(c.Alert), hr.Esc(string(c.Role)), n, hr.Esc(strings.ToUpper(role)), hr.Esc(c.Alert), hr.Esc(c.Severity), hr.Esc(when), hr.Esc(firing))
	p.Rawf("<p>%s</p>\n", hr.Esc(c.Description))
	if c.Instances > 1 {
		p.Rawf("<p>%d instances; the strongest: <code>%s</code></p>\n", c.Instances, hr.Esc(labelText(c.Labels, nil)))
	}
	if len(c.Actors) > 0 {
		p.Rawf("<p>Actors: %s</p>\n", hr.Esc(strings.Join(c.Actors, " ⇄ ")))
	}
	if c.Attribution == string(byProcess) || c.Attribution == string(byActor) {
		p.Rawf("<p class=\"muted\">Tied to this controller by %s (%s).</p>\n", hr.Esc(c.Attribution), hr.Esc(attributionText(c.Attribution)))
	}
	// One chart per evidence query, all on the window's time axis, each with its PromQL.
	charts := 0
	for i := 0; i < len(c.Evidence); {
		j := i
		for j < len(c.Evidence) && c.Evidence[j].Query == c.Evidence[i].Query {
			j++
		}
		rows := c.Evidence[i:j]
		i = j
		p.Rawf("<div class=\"evidence\" data-signal=\"%s\">\n<h4>%s</h4>\n", hr.Esc(rows[0].Signal), hr.Esc(rows[0].Signal))
		if charts < maxChartsPerCause && p.drawn < maxCharts && rows[0].Query != "" && p.chart(fmt.Sprintf("%s-e%d", id, charts+1), c, rows) {
			charts++
			p.drawn++
		}
		p.evidenceTable("", rows)
		if rows[0].Query != "" {
			p.Rawf("<pre class=\"promql\" aria-label=\"PromQL\">%s</pre>\n", hr.Esc(rows[0].Query))
		}
		p.Raw("</div>\n")
	}
	p.Raw("<details><summary>Condition evaluated (the alert's expression)</summary>\n")
	p.Rawf("<pre class=\"promql\">%s</pre>\n</details>\n", hr.Esc(c.Query))
	p.Rawf("<p><b>Next step:</b> %s</p>\n", hr.Esc(c.NextStep))
	if c.Runbook != "" {
		p.Rawf("<p><b>Runbook:</b> <a class=\"runbook\" href=\"%s\">%s</a> · <b>Panel:</b> %s</p>\n", hr.Esc(c.Runbook), hr.Esc(c.Alert), hr.Esc(c.Panel))
	} else {
		p.Rawf("<p><b>Panel:</b> %s</p>\n", hr.Esc(c.Panel))
	}
	p.Raw("</section>\n")
}

// chart draws the series of one evidence query; false when there is nothing to draw.
func (p *htmlPage) chart(id string, c Cause, rows []Evidence) bool {
	series := p.charts.lines(rows[0].Query, rows, linesPerChart)
	if len(series) == 0 {
		return false
	}
	unit := rows[0].Unit
	lc := hr.LineChart{
		ID: id, Caption: rows[0].Signal + " over the window", From: p.r.Window.Start, To: p.r.Window.End,
		HeldFrom: c.FirstSeen, HeldTo: c.LastSeen,
		Format: func(v float64) string { return formatValue(&v, unit) },
	}
	if rows[0].Compare != "" && rows[0].Threshold != nil {
		lc.Threshold = rows[0].Threshold
		lc.Caption += fmt.Sprintf(" (condition: %s %s)", rows[0].Compare, formatValue(rows[0].Threshold, unit))
	}
	for _, s := range series {
		label := labelText(s.labels, identityLabels)
		if label == "" {
			label = rows[0].Signal
		}
		l := hr.Line{Label: label}
		for _, pt := range s.points {
			l.Points = append(l.Points, hr.Point{T: pt.t, V: pt.v})
		}
		lc.Lines = append(lc.Lines, l)
	}
	p.LineChart(lc)
	return true
}

func (p *htmlPage) evidenceTable(id string, rows []Evidence) {
	cells := make([][]hr.Cell, 0, len(rows))
	for _, e := range rows {
		cond := "-"
		if e.Compare != "" && e.Threshold != nil {
			cond = e.Compare + " " + formatValue(e.Threshold, e.Unit)
		} else if e.Compare != "" {
			cond = e.Compare + " the next signal"
		}
		v := 0.0
		if e.Value != nil {
			v = *e.Value
		}
		cells = append(cells, []hr.Cell{hr.T(e.Signal), hr.F(formatValue(e.Value, e.Unit), v), hr.T(cond), hr.T(orDash(labelText(e.Labels, identityLabels)))})
	}
	if id == "" {
		p.tables++
		id = fmt.Sprintf("evidence-%d", p.tables)
	}
	p.Table(id, "Evidence", []hr.Column{{Name: "Signal"}, {Name: "Value", Numeric: true}, {Name: "Condition"}, {Name: "Labels"}}, cells, 100)
}
