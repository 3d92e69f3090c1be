package gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/loopwatch/loopwatch/catalogue"
)

// The project's own checks of generated PromQL and dashboards, used by the tests and by
// `loopwatch gen` before it writes anything: every expression parses, reads only known metrics,
// never applies a counter function to a gauge, and keeps the cluster label in aggregations.

// counterFuncs are the functions that only make sense on counters.
var counterFuncs = []string{"rate", "irate", "increase", "resets"}

// ExprChecker checks PromQL expressions against the metric catalogue.
type ExprChecker struct {
	// Known are the metric families that exist, by name.
	Known map[string]catalogue.Metric
	// Recorded are the recording rules' names: they exist once the rules run.
	Recorded map[string]bool
	// ClusterLabel must appear in every `by` clause.
	ClusterLabel string
}

// NewExprChecker returns a checker for the model's expressions.
func (m *Model) NewExprChecker() *ExprChecker {
	rec := map[string]bool{}
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				rec[r.Record] = true
			}
		}
	}
	return &ExprChecker{Known: knownMetrics(), Recorded: rec, ClusterLabel: m.Config.ClusterLabel}
}

// histogramSuffixes are the series suffixes of a classic histogram.
var histogramSuffixes = []string{"_bucket", "_count", "_sum"}

// family returns the catalogue entry a series name belongs to.
func (c *ExprChecker) family(name string) (catalogue.Metric, bool) {
	if m, ok := c.Known[name]; ok {
		// A histogram's own name selects it where Prometheus stores it as a native histogram.
		return m, true
	}
	for _, s := range histogramSuffixes {
		if base, ok := strings.CutSuffix(name, s); ok {
			if m, ok := c.Known[base]; ok && m.Type == catalogue.Histogram {
				return m, true
			}
		}
	}
	return catalogue.Metric{}, false
}

// Check parses expr and reports every problem. inRule is set for a rule's expression, as opposed
// to a dashboard panel's: it asks that every aggregation with a `by` clause keeps the cluster
// label (a panel aggregates for its view and need not), and refuses scalar(), whose NaN a rule
// would record (a panel only shows it).
func (c *ExprChecker) Check(expr string, inRule bool) error {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	var errs []error
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			if n.Name == "" {
				errs = append(errs, fmt.Errorf("selector %s has no metric name", n))
			} else if _, ok := c.family(n.Name); !ok && !c.Recorded[n.Name] {
				errs = append(errs, fmt.Errorf("metric %q is not in the catalogue of known metrics", n.Name))
			}
		case *parser.Call:
			if inRule && n.Func.Name == "scalar" {
				errs = append(errs, errors.New("scalar() is NaN where its argument has no series, and a NaN a rule records stays in every range read over it; divide by a one-series vector with on () group_left () instead"))
			}
			if !slices.Contains(counterFuncs, n.Func.Name) {
				return nil
			}
			for _, arg := range n.Args {
				ms, ok := arg.(*parser.MatrixSelector)
				if !ok {
					continue
				}
				vs, ok := ms.VectorSelector.(*parser.VectorSelector)
				if !ok {
					continue
				}
				if m, ok := c.family(vs.Name); ok && m.Type == catalogue.Gauge {
					errs = append(errs, fmt.Errorf("%s() over gauge %q", n.Func.Name, vs.Name))
				}
			}
		case *parser.AggregateExpr:
			if n.Without {
				errs = append(errs, fmt.Errorf("%s without (...): aggregate with by (...) so the kept labels are explicit", n.Op))
			}
			if inRule && len(n.Grouping) > 0 && !slices.Contains(n.Grouping, c.ClusterLabel) {
				errs = append(errs, fmt.Errorf("%s by (%s) drops the cluster label %q", n.Op, strings.Join(n.Grouping, ", "), c.ClusterLabel))
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

var grafanaVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

// GrafanaVars returns the names of the template variables a query uses, without the built-ins.
func GrafanaVars(query string) []string {
	var out []string
	for _, m := range grafanaVar.FindAllStringSubmatch(query, -1) {
		if !strings.HasPrefix(m[1], "__") && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// SubstituteGrafanaVars replaces Grafana variables by values that keep a query valid PromQL:
// built-in durations ($__rate_interval, $__interval, $__range) by 5m, everything else by the
// given value (".*" matches everything).
func SubstituteGrafanaVars(query, value string) string {
	return grafanaVar.ReplaceAllStringFunc(query, func(v string) string {
		name := strings.Trim(v, "${}")
		if strings.HasPrefix(name, "__") {
			return "5m"
		}
		return value
	})
}

// CheckDashboard decodes a dashboard's JSON with Grafana's schema (DecodeDashboard) and reports
// every problem: the schema's, duplicate panel ids, overlapping grid positions, queries that are
// not Prometheus queries, undefined variables, queries that do not parse or fail the expression
// checks.
func (c *ExprChecker) CheckDashboard(raw []byte) error {
	board, err := DecodeDashboard(raw)
	if err != nil {
		return err
	}
	var errs []error
	defined := map[string]bool{}
	for _, v := range board.Templating.List {
		defined[v.Name] = true
	}
	ids := map[uint32]string{}
	type rect struct{ x, y, w, h uint32 }
	var placed []rect
	var titles []string
	place := func(title string, id uint32, g *dashboard.GridPos) {
		if other, dup := ids[id]; dup {
			errs = append(errs, fmt.Errorf("panel %q: id %d already used by %q", title, id, other))
		}
		ids[id] = title
		if g == nil {
			errs = append(errs, fmt.Errorf("panel %q: no gridPos", title))
			return
		}
		r := rect{g.X, g.Y, g.W, g.H}
		if r.w == 0 || r.x+r.w > gridWidth {
			errs = append(errs, fmt.Errorf("panel %q: gridPos x=%d w=%d outside the 24-column grid", title, r.x, r.w))
		}
		for i, o := range placed {
			if r.x < o.x+o.w && o.x < r.x+r.w && r.y < o.y+o.h && o.y < r.y+r.h {
				errs = append(errs, fmt.Errorf("panel %q overlaps panel %q", title, titles[i]))
			}
		}
		placed = append(placed, r)
		titles = append(titles, title)
	}
	for _, pr := range board.Panels {
		if row := pr.RowPanel; row != nil {
			place(deref(row.Title), row.Id, row.GridPos)
			if len(row.Panels) > 0 {
				errs = append(errs, fmt.Errorf("row %q: holds panels (collapsed): the layout places panels after their row", deref(row.Title)))
			}
			continue
		}
		p := pr.Panel
		if p == nil {
			continue
		}
		title := deref(p.Title)
		if p.Id == nil {
			errs = append(errs, fmt.Errorf("panel %q: no id", title))
		} else {
			place(title, *p.Id, p.GridPos)
		}
		for i, t := range p.Targets {
			q, ok := t.(*prometheus.Dataquery)
			if !ok {
				errs = append(errs, fmt.Errorf("panel %q: query %d is a %T, not a Prometheus query", title, i+1, t))
				continue
			}
			for _, v := range GrafanaVars(q.Expr) {
				if !defined[v] {
					errs = append(errs, fmt.Errorf("panel %q: variable $%s is not defined", title, v))
				}
			}
			if err := c.Check(SubstituteGrafanaVars(q.Expr, ".*"), false); err != nil {
				errs = append(errs, fmt.Errorf("panel %q: query %q: %w", title, q.Expr, err))
			}
		}
	}
	for _, v := range board.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		var s string
		if v.Query != nil {
			s = deref(v.Query.String)
			if q, ok := v.Query.Map["query"].(string); ok {
				s = q
			}
		}
		inner, ok := strings.CutPrefix(s, "label_values(")
		if !ok {
			errs = append(errs, fmt.Errorf("variable %q: query %q is not label_values(...)", v.Name, s))
			continue
		}
		i := strings.LastIndex(inner, ",")
		if i < 0 {
			errs = append(errs, fmt.Errorf("variable %q: query %q has no label", v.Name, s))
			continue
		}
		for _, used := range GrafanaVars(inner) {
			if !defined[used] {
				errs = append(errs, fmt.Errorf("variable %q: uses undefined $%s", v.Name, used))
			}
		}
		if err := c.Check(SubstituteGrafanaVars(inner[:i], ".*"), false); err != nil {
			errs = append(errs, fmt.Errorf("variable %q: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Lint checks every expression of the model and every dashboard.
func (m *Model) Lint() error {
	c := m.NewExprChecker()
	groups, err := m.RuleGroups()
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if err := c.Check(r.Expr, true); err != nil {
				errs = append(errs, fmt.Errorf("group %q rule %q: %w", g.Name, r.Record+r.Alert, err))
			}
		}
	}
	errs = append(errs, m.checkAlertPanels()...)
	for _, d := range m.Dashboards {
		v, err := m.DashboardJSON(d)
		if err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := c.CheckDashboard(b); err != nil {
			errs = append(errs, fmt.Errorf("dashboard %q: %w", d.FileName(), err))
		}
	}
	return errors.Join(errs...)
}

// checkAlertPanels reports alerts whose declared panel is not on the generated dashboard.
func (m *Model) checkAlertPanels() []error {
	titles := map[PanelRef]bool{}
	generated := map[string]bool{}
	for _, d := range m.Dashboards {
		generated[d.Key] = true
		for _, title := range d.PanelTitles() {
			titles[PanelRef{d.Key, title}] = true
		}
	}
	var errs []error
	for _, g := range m.Groups {
		for _, r := range g.Rules {
			if a := r.Decl; a != nil && generated[a.Panel.Dashboard] && !titles[a.Panel] {
				errs = append(errs, fmt.Errorf("alert %s: dashboard %q has no panel %q", a.FullName(), a.Panel.Dashboard, a.Panel.Title))
			}
		}
	}
	return errs
}
