package gen

import (
	"time"

	"github.com/prometheus/common/model"
)

// Multi-window, multi-burn-rate alerts on the reconcile success objective (The Site Reliability
// Workbook, "Alerting on SLOs"): a page when the error budget of a 30-day window would be gone in
// about 2 (14.4×) or 5 (6×) days, a ticket at 3× and 1×. Each pair of windows needs both the long
// window (significance) and the short one (still burning now).

// The burn rates of the four conditions.
const (
	pageBurnRate     = 14.4
	pageSlowBurnRate = 6
	ticketBurnRate   = 3
	ticketSlowRate   = 1
)

// burnCondition is one pair of windows: both error ratios above rate × the error budget.
type burnCondition struct {
	rate        float64
	short, long string
}

var (
	pageBurns   = []burnCondition{{pageBurnRate, "5m", "1h"}, {pageSlowBurnRate, "30m", "6h"}}
	ticketBurns = []burnCondition{{ticketBurnRate, "2h", "1d"}, {ticketSlowRate, "6h", "3d"}}
)

// burnExpr is the expression of a burn-rate alert: any of its conditions.
func burnExpr(e *exprEnv, conds []burnCondition) string {
	budget := "(1 - " + e.b.p.G("errorBudgetBurnObjective", e.b.cfg.SLO.Objective) + ")"
	var parts []string
	for i, c := range conds {
		factor := "(" + formatG(c.rate) + " * " + budget + ")"
		if i > 0 {
			parts = append(parts, "or")
		}
		parts = append(parts, "(", "  "+recErrorRatioName(c.short)+" > "+factor, "  and", "  "+recErrorRatioName(c.long)+" > "+factor, ")")
	}
	return lines(parts...)
}

// ErrorBudgetBurnFast pages when the reconcile error budget burns fast.
var ErrorBudgetBurnFast = &Alert{
	Key: "errorBudgetBurnPage", Name: "ErrorBudgetBurnFast",
	Severity: SeverityCritical, For: 2 * time.Minute,
	Level:       levelController,
	Expr:        func(e *exprEnv) string { return burnExpr(e, pageBurns) },
	Summary:     "A controller burns its reconcile error budget fast.",
	Description: "The reconciles of " + whereController + " fail at {{ $value | humanizePercentage }}: at this rate the error budget of the reconcile success objective is gone within days.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases:       func(c *caseEnv) []Case { return burnCases(c, pageBurns) },
}

// ErrorBudgetBurnSlow opens a ticket when the reconcile error budget will not last the month.
var ErrorBudgetBurnSlow = &Alert{
	Key: "errorBudgetBurnTicket", Name: "ErrorBudgetBurnSlow",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Level:       levelController,
	Expr:        func(e *exprEnv) string { return burnExpr(e, ticketBurns) },
	Summary:     "A controller burns its reconcile error budget.",
	Description: "The reconciles of " + whereController + " fail at {{ $value | humanizePercentage }} over hours: the error budget of the reconcile success objective will not last the month.",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases:       func(c *caseEnv) []Case { return burnCases(c, ticketBurns) },
}

// history is how long the SLO cases run healthy before their incident: the 6h windows are full.
const history = 6 * time.Hour

// errorShare is the error ratio over window at time t when a controller's reconciles, sampled
// from time 0, fail at share `before` until step and at `after` from then on. A window longer
// than the history holds all of it.
func errorShare(before, after float64, step, t, window time.Duration) float64 {
	intervals := min(int(window/sampleInterval)-1, int(t/sampleInterval))
	if intervals <= 0 {
		return 0
	}
	k := min(max(int((t-step)/sampleInterval), 0), intervals)
	return (before*float64(intervals-k) + after*float64(k)) / float64(intervals)
}

func parseWindow(w string) time.Duration {
	d, err := model.ParseDuration(w)
	if err != nil {
		panic(err)
	}
	return time.Duration(d)
}

// burnCases are the cases of a burn-rate alert with conditions conds.
func burnCases(c *caseEnv, conds []burnCondition) []Case {
	budget := 1 - c.Objective()
	l := c.Controller().With("name", "")
	// 10 reconciles a second throughout; from `history` on, a share `failing` of them fail.
	failing := conds[0].rate * budget * above
	if failing >= 1 {
		failing = conds[0].rate*budget + (1-conds[0].rate*budget)/2
	}
	share := func(w string) func(time.Duration) float64 {
		return func(t time.Duration) float64 { return errorShare(0, failing, history, t, parseWindow(w)) }
	}
	limit := history + 3*24*time.Hour
	holds := limit
	var first burnCondition
	for _, cond := range conds {
		th := cond.rate * budget
		at := max(c.crossing(history, limit, th, share(cond.short)), c.crossing(history, limit, th, share(cond.long)))
		if at < holds {
			holds, first = at, cond
		}
	}
	value := func(t time.Duration) float64 {
		for _, cond := range conds {
			th := cond.rate * budget
			if share(cond.short)(t) > th && share(cond.long)(t) > th {
				return share(cond.short)(t)
			}
		}
		return share(first.short)(t)
	}
	// The total stays at 10 reconciles a second, as errorShare assumes: errors replace successes.
	steady := func(share float64) []*Series {
		e := Counter("controller_runtime_reconcile_total", l.With("result", "error"), 10*share)
		s := Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10*(1-share))
		return []*Series{e, s, Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0)}
	}
	incident := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(history, 10*failing),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10).Rate(history, 10*(1-failing)),
		Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
	}
	cases := []Case{
		{
			Name:   "fires when the error ratio burns the budget over both windows of a condition",
			Series: incident,
			Fires:  &Firing{At: holds, Labels: c.Instance(l), Value: value},
		},
		{
			Name:   "stays silent on an error rate within the budget",
			Series: steady(budget / 2),
			Until:  history + c.For() + time.Hour,
		},
		{
			Name: "stays silent on a RequeueAfter steady state",
			Series: []*Series{
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), 1),
				Counter("controller_runtime_reconcile_total", l.With("result", "requeue_after"), 5),
				Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0),
			},
		},
	}
	// An outage (every reconcile failing) too short for any condition: the error ratios peak when
	// it ends.
	silent := func(d time.Duration) bool {
		for _, cond := range conds {
			th, t := cond.rate*budget, history+d
			if errorShare(0, 1, history, t, parseWindow(cond.short)) > th && errorShare(0, 1, history, t, parseWindow(cond.long)) > th {
				return false
			}
		}
		return true
	}
	var outage time.Duration
	for d := sampleInterval; d <= 24*time.Hour && silent(d); d += sampleInterval {
		outage = d
	}
	if outage > 0 {
		cases = append(cases, Case{
			Name: "stays silent on a short outage",
			Series: []*Series{
				Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(history, 10).Rate(history+outage, 0),
				Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10).Rate(history, 0).Rate(history+outage, 10),
				Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
			},
			Until: history + outage + c.For() + time.Hour,
		})
	}
	return cases
}
