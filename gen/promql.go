package gen

import (
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Small PromQL builders. They only assemble text; every expression they produce is parsed by the
// tests (promql/parser) and evaluated by promtool and a real Prometheus.

// sel returns metric{matchers...}, skipping empty matchers.
func sel(metric string, matchers ...string) string {
	var ms []string
	for _, m := range matchers {
		if m != "" {
			ms = append(ms, m)
		}
	}
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

// rate returns rate(series[window]).
func rate(series, window string) string { return "rate(" + series + "[" + window + "])" }

// aggregate returns op by (labels) (expr): every aggregation names the labels it keeps.
func aggregate(op string, labels []string, expr string) string {
	return op + " by (" + strings.Join(labels, ", ") + ") (" + expr + ")"
}

// sumBy returns sum by (level) (expr).
func sumBy(l level, expr string) string { return aggregate("sum", l.labels, expr) }

// maxBy returns max by (level) (expr).
func maxBy(l level, expr string) string { return aggregate("max", l.labels, expr) }

// countBy returns count by (level) (expr).
func countBy(l level, expr string) string { return aggregate("count", l.labels, expr) }

// sumByLabels returns sum by (labels) (expr), for dashboard queries that aggregate per panel.
func sumByLabels(labels []string, expr string) string { return aggregate("sum", labels, expr) }

// paren wraps expr in parentheses.
func paren(expr string) string { return "(" + expr + ")" }

// leMatcher matches one bucket bound of a classic histogram. Prometheus 3 normalises `le` on
// ingestion ("10" becomes "10.0"), Prometheus 2 and the text format do not, so both spellings
// match.
func leMatcher(bound string) string { return `le=~"` + bound + `(\\.0)?"` }

// shareAbove returns the exact share of a histogram's observations above one of its bucket
// bounds, per level, over window. No interpolation: bound must be a bucket bound.
func shareAbove(l level, histogram, selector, bound, window string) string {
	return "1 - " + paren(
		"\n  "+sumBy(l, rate(sel(histogram+"_bucket", selector, leMatcher(bound)), window))+
			"\n  /\n  "+sumBy(l, rate(sel(histogram+"_count", selector), window))+"\n")
}

// lines joins expression lines with newlines, for readable multi-line expressions.
func lines(parts ...string) string { return strings.Join(parts, "\n") }

// promqlParser parses PromQL with Prometheus' default options (no experimental functions), so
// the rules also run on Thanos and Mimir rulers.
var promqlParser = parser.NewParser(parser.Options{})
