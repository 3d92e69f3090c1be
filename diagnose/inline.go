package diagnose

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// promqlParser parses PromQL with Prometheus' default options, as gen does.
var promqlParser = parser.NewParser(parser.Options{})

// maxSubquerySteps bounds the resolution of a subquery that replaces a range over a recorded
// series (avg_over_time(rule[1d])). The subquery is evaluated again at every step of the
// window, over the raw samples: a day at 1,440 points (the rule's own minute) times 60 steps
// reads every sample of a day 60 times over. At 144 points (every 10 minutes of a day) the
// average of a 5-minute rate barely moves, and the query stays cheap.
const maxSubquerySteps = 144

// inliner rewrites expressions written against loopwatch's recording rules so that they run
// where Prometheus does not have the recorded series: each reference to a missing recording is
// replaced by the rule's own expression. The alerts' expressions then run unchanged on the raw
// metrics, and diagnose agrees with the alerts whether or not the recording rules are loaded.
type inliner struct {
	// missing maps the name of each recording Prometheus does not have to its expression.
	missing map[string]string
	// interval is the recording rules' evaluation interval: the resolution of subqueries.
	interval time.Duration
	// inlining are the recordings being inlined, outermost first.
	inlining []string
}

// nothing is an expression without any series: what a recording's read of its own past values
// becomes when it is inlined (see replace).
const nothing = "vector(0) < 0"

// rewrite returns query with every missing recording inlined, or query itself when it reads none.
func (in *inliner) rewrite(query string) (string, error) {
	e, err := promqlParser.ParseExpr(query)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", oneLine(query), err)
	}
	if !in.reads(e) {
		return query, nil
	}
	out, err := in.expr(e)
	if err != nil {
		return "", err
	}
	return out.String(), nil
}

// reads reports whether e refers to a missing recording.
func (in *inliner) reads(e parser.Expr) bool {
	found := false
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if _, ok := in.missing[vs.Name]; ok {
				found = true
			}
		}
		return nil
	})
	return found
}

// expr rewrites e in place where it can and returns the (possibly new) node.
func (in *inliner) expr(e parser.Expr) (parser.Expr, error) {
	var err error
	switch n := e.(type) {
	case *parser.VectorSelector:
		if _, ok := in.missing[n.Name]; ok {
			return in.replace(n)
		}
	case *parser.MatrixSelector:
		vs, ok := n.VectorSelector.(*parser.VectorSelector)
		if !ok {
			return e, nil
		}
		if _, ok := in.missing[vs.Name]; !ok {
			return e, nil
		}
		// A range some time back (the SLO rules' past day sums read a day sum one day back)
		// becomes a subquery that far back.
		back := vs.OriginalOffset
		at := *vs
		at.OriginalOffset = 0
		inner, err := in.replace(&at)
		if err != nil {
			return nil, err
		}
		return &parser.SubqueryExpr{Expr: inner, Range: n.Range, Step: in.step(n.Range), OriginalOffset: back}, nil
	case *parser.AggregateExpr:
		if n.Expr, err = in.expr(n.Expr); err != nil {
			return nil, err
		}
		if n.Param != nil {
			n.Param, err = in.expr(n.Param)
		}
	case *parser.BinaryExpr:
		if n.LHS, err = in.expr(n.LHS); err != nil {
			return nil, err
		}
		n.RHS, err = in.expr(n.RHS)
	case *parser.Call:
		for i := range n.Args {
			if n.Args[i], err = in.expr(n.Args[i]); err != nil {
				return nil, err
			}
		}
	case *parser.ParenExpr:
		n.Expr, err = in.expr(n.Expr)
	case *parser.UnaryExpr:
		n.Expr, err = in.expr(n.Expr)
	case *parser.SubqueryExpr:
		n.Expr, err = in.expr(n.Expr)
	case *parser.StepInvariantExpr:
		n.Expr, err = in.expr(n.Expr)
	}
	return e, err
}

// replace returns the expression of the recording vs reads, restricted by vs's own matchers, with
// the recordings it reads inlined too.
// A recording rule aggregates `by` its level's labels, so a matcher on one of those labels
// selects the same series when it is applied to the rule's inputs instead of its output.
func (in *inliner) replace(vs *parser.VectorSelector) (parser.Expr, error) {
	if vs.OriginalOffset != 0 || vs.OriginalOffsetExpr != nil || vs.Timestamp != nil || vs.StartOrEnd != 0 {
		return nil, fmt.Errorf("inline recording %q: offset and @ modifiers are not supported", vs.Name)
	}
	if slices.Contains(in.inlining, vs.Name) {
		// A recording that reads its own past values (a latch: the last time a job exported
		// controller metrics) has none where the rule does not run, and rebuilding them from
		// the raw metrics would inline it without end. Its self-read reads nothing: the inlined
		// rule remembers only what its other ranges reach.
		e, err := promqlParser.ParseExpr(nothing)
		return &parser.ParenExpr{Expr: e}, err
	}
	inner, err := promqlParser.ParseExpr(in.missing[vs.Name])
	if err != nil {
		return nil, fmt.Errorf("parse recording %q: %w", vs.Name, err)
	}
	var extra []*labels.Matcher
	for _, m := range vs.LabelMatchers {
		if m.Name != model.MetricNameLabel {
			extra = append(extra, m)
		}
	}
	if len(extra) > 0 {
		parser.Inspect(inner, func(n parser.Node, _ []parser.Node) error {
			if s, ok := n.(*parser.VectorSelector); ok {
				s.LabelMatchers = append(s.LabelMatchers, extra...)
			}
			return nil
		})
	}
	// A recording may read other recordings (the 5m error ratio reads the per-controller rates,
	// which read the per-pod rate): those are inlined in turn, with the matchers carried down.
	in.inlining = append(in.inlining, vs.Name)
	inner, err = in.expr(inner)
	in.inlining = in.inlining[:len(in.inlining)-1]
	if err != nil {
		return nil, err
	}
	return &parser.ParenExpr{Expr: inner}, nil
}

// step is the resolution of a subquery over window: the rule interval, coarser when that would
// exceed maxSubquerySteps.
func (in *inliner) step(window time.Duration) time.Duration {
	step := max(in.interval, time.Second)
	if window/step > maxSubquerySteps {
		step = (window/maxSubquerySteps + time.Second - 1).Truncate(time.Second)
	}
	return step
}
