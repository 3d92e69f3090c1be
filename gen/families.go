package gen

import (
	"fmt"
	"sort"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Families returns the catalogued metric families alert a reads, through the recording rules
// its expression reads, sorted by name. It is false when the config leaves a out. loopwatch
// diagnose derives what a check needs from it: a controller without these series cannot be
// judged by the alert.
func (m *Model) Families(a *Alert) ([]catalogue.Metric, bool, error) {
	r, ok := m.rule(a)
	if !ok {
		return nil, false, nil
	}
	recorded := map[string]string{}
	for _, g := range m.Groups {
		for _, rr := range g.Rules {
			if rr.Record != "" {
				recorded[rr.Record] = m.Params.Resolve(rr.Expr)
			}
		}
	}
	c := &ExprChecker{Known: knownMetrics()}
	found := map[string]catalogue.Metric{}
	seen := map[string]bool{}
	var walk func(expr string) error
	walk = func(expr string) error {
		e, err := promqlParser.ParseExpr(expr)
		if err != nil {
			return fmt.Errorf("alert %s: parse: %w", a.FullName(), err)
		}
		var names []string
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				names = append(names, vs.Name)
			}
			return nil
		})
		for _, n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			if f, ok := c.family(n); ok {
				found[f.Name] = f
			} else if rec, ok := recorded[n]; ok {
				if err := walk(rec); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(m.Params.Resolve(r.Expr)); err != nil {
		return nil, true, err
	}
	out := make([]catalogue.Metric, 0, len(found))
	for _, f := range found {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, true, nil
}
