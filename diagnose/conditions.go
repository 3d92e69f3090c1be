package diagnose

import (
	"fmt"

	"github.com/prometheus/prometheus/promql/parser"
)

// condition is one comparison of an alert's expression: a signal against a threshold
// (`depth > 100`) or against another signal (`adds > completions`). An alert's conditions are
// read from its expression, so diagnose shows the very numbers and thresholds the alert uses.
type condition struct {
	// signals are the compared expressions: one when the other side is a constant, two
	// otherwise.
	signals []string
	// op is the comparison operator, as PromQL writes it.
	op string
	// threshold is the constant side, when there is one.
	threshold *float64
}

// conditions returns the comparisons that decide whether expr holds, left to right: through
// parentheses, both sides of `and` and `or`, and the left side of `unless` (its right side
// filters, it is not a condition). A comparison's operands are not searched further: a filter
// inside a signal (`reconciles > 0.1` as a denominator) belongs to the signal.
func conditions(expr string) ([]condition, error) {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", oneLine(expr), err)
	}
	var out []condition
	var walk func(parser.Expr)
	walk = func(e parser.Expr) {
		switch n := e.(type) {
		case *parser.ParenExpr:
			walk(n.Expr)
		case *parser.BinaryExpr:
			switch {
			case n.Op == parser.LAND || n.Op == parser.LOR:
				walk(n.LHS)
				walk(n.RHS)
			case n.Op == parser.LUNLESS:
				walk(n.LHS)
			case n.Op.IsComparisonOperator() && !n.ReturnBool:
				out = append(out, comparison(n))
			}
		}
	}
	walk(e)
	return out, nil
}

// comparison turns one comparison node into a condition, with the constant (if any) on the right.
func comparison(n *parser.BinaryExpr) condition {
	op := n.Op.String()
	if v, ok := constant(n.RHS); ok {
		return condition{signals: []string{n.LHS.String()}, op: op, threshold: &v}
	}
	if v, ok := constant(n.LHS); ok {
		return condition{signals: []string{n.RHS.String()}, op: mirror(op), threshold: &v}
	}
	return condition{signals: []string{n.LHS.String(), n.RHS.String()}, op: op}
}

// constant evaluates e when it is arithmetic over number literals, such as (14.4 * (1 - 0.99)).
func constant(e parser.Expr) (float64, bool) {
	switch n := e.(type) {
	case *parser.NumberLiteral:
		return n.Val, true
	case *parser.ParenExpr:
		return constant(n.Expr)
	case *parser.StepInvariantExpr:
		return constant(n.Expr)
	case *parser.UnaryExpr:
		v, ok := constant(n.Expr)
		if n.Op == parser.SUB {
			v = -v
		}
		return v, ok
	case *parser.BinaryExpr:
		l, okL := constant(n.LHS)
		r, okR := constant(n.RHS)
		if !okL || !okR {
			return 0, false
		}
		switch n.Op {
		case parser.ADD:
			return l + r, true
		case parser.SUB:
			return l - r, true
		case parser.MUL:
			return l * r, true
		case parser.DIV:
			return l / r, true
		}
	}
	return 0, false
}

// mirror returns the operator that compares the same operands swapped.
func mirror(op string) string {
	switch op {
	case ">":
		return "<"
	case "<":
		return ">"
	case ">=":
		return "<="
	case "<=":
		return ">="
	}
	return op
}
