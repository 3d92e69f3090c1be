package gen

import (
	"fmt"
	"math"
	"slices"
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

// minFailedKey is the page's setting of the failed reconciles the long window of a condition must
// hold. An error ratio over few reconciles is not significant: a controller that reconciles four
// times an hour reaches 40% over 1h and 75% over 5m when a dependency fails three reconciles in a
// row for a minute, which is no burn worth waking anyone for; a failing object, retried with
// controller-runtime's backoff, fails a dozen times within its first minute.
const minFailedKey = "minFailedReconciles"

// FailureCountLag is how late the failed reconciles a burn-rate alert counts (sloFailedRef) can
// be: the count sums 5-minute error rates, and a failure is counted in full once the 5-minute rate
// has held it for its whole window. An error storm that starts from nothing reaches the alert's
// minimum up to that long after it has really failed that many times; a running Prometheus and
// a new one alike.
const FailureCountLag = 5 * time.Minute

// CountsFailures reports whether a needs a least number of failed reconciles (minFailedKey) and
// so fires up to FailureCountLag after an error storm's ratios cross its thresholds.
func (a *Alert) CountsFailures() bool {
	_, ok := a.param(minFailedKey)
	return ok
}

// burnExpr is the expression of a burn-rate alert: any of its conditions. minFailed, when not
// empty, is the least number of failed reconciles over a condition's long window.
func burnExpr(e *exprEnv, conds []burnCondition, minFailed string) string {
	budget := "(1 - " + e.b.p.G("errorBudgetBurnObjective", e.b.cfg.SLO.Objective) + ")"
	var parts []string
	for i, c := range conds {
		factor := "(" + formatG(c.rate) + " * " + budget + ")"
		if i > 0 {
			parts = append(parts, "or")
		}
		parts = append(parts, "(", "  "+sloRatioRef(c.short)+" > "+factor, "  and", "  "+sloRatioRef(c.long)+" > "+factor)
		if minFailed != "" {
			parts = append(parts, "  and", "  "+sloFailedRef(c.long)+" >= "+minFailed)
		}
		parts = append(parts, ")")
	}
	return lines(parts...)
}

// ErrorBudgetBurnFast pages when the reconcile error budget burns fast.
var ErrorBudgetBurnFast = &Alert{
	Key: "errorBudgetBurnPage", Name: "ErrorBudgetBurnFast",
	Severity: SeverityCritical, For: 2 * time.Minute,
	Params: []Param{
		{Key: minFailedKey, Default: 5, Check: positive,
			Doc: "Failed reconciles the long window of a condition (1h, 6h) must hold before the error ratio pages: below it, a controller that reconciles a few times an hour would page on one transient failure."},
	},
	Level:       levelController,
	Expr:        func(e *exprEnv) string { return burnExpr(e, pageBurns, e.P(minFailedKey)) },
	Summary:     "A controller burns its reconcile error budget fast.",
	Description: "The reconciles of " + whereController + " fail at {{ $value | humanizePercentage }}: at this rate the error budget of the reconcile success objective is gone within days.",
	NextStep:    "The reconcile success objective will be missed within days: find and fix the failing call (kubectl -n <namespace> logs deploy/<job> | grep -i error).",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases:       func(c *caseEnv) []Case { return burnCases(c, pageBurns) },
}

// ErrorBudgetBurnSlow opens a ticket when the reconcile error budget will not last the month. It
// needs failed reconciles over its long windows as the page does: a new controller's first
// minutes are the whole of its 1d and 3d windows, and one failure among its first reconciles
// would make both ratios look like a burn.
var ErrorBudgetBurnSlow = &Alert{
	Key: "errorBudgetBurnTicket", Name: "ErrorBudgetBurnSlow",
	Severity: SeverityWarning, For: 15 * time.Minute,
	Params: []Param{
		{Key: minFailedKey, Default: 5, Check: positive,
			Doc: "Failed reconciles the long window of a condition (1d, 3d) must hold before the error ratio opens a ticket: below it, a new controller's first failures, the whole of both windows, would open one."},
	},
	Level:       levelController,
	Expr:        func(e *exprEnv) string { return burnExpr(e, ticketBurns, e.P(minFailedKey)) },
	Summary:     "A controller burns its reconcile error budget.",
	Description: "The reconciles of " + whereController + " fail at {{ $value | humanizePercentage }} over hours: the error budget of the reconcile success objective will not last the month.",
	NextStep:    "A steady share of reconciles fails: find the failing call before the month's error budget is gone (kubectl -n <namespace> logs deploy/<job> | grep -i error).",
	Panel:       PanelRef{"controller", "Reconciles by result"},
	Cases:       func(c *caseEnv) []Case { return burnCases(c, ticketBurns) },
}

// history is how long the SLO cases run healthy before their incident: the 6h windows are full.
const history = 6 * time.Hour

func parseWindow(w string) time.Duration {
	d, err := model.ParseDuration(w)
	if err != nil {
		panic(err)
	}
	return time.Duration(d)
}

// burnState is what a burn-rate alert's expression gives at one evaluation of a case, computed
// through the recording chain (sloTrace).
type burnState struct {
	holds bool
	// value is the alert's value: the short ratio of the first condition that holds.
	value float64
	// tooClose names what is within the float margin of its threshold (a ratio, or the failed
	// reconciles over a long window) while the rest of its condition holds: the evaluation at
	// which the condition starts is not pinned.
	tooClose string
}

// burnAt is the state of a burn-rate alert with conditions conds at time t; minFailed is its
// least number of failed reconciles over a long window (0: none).
func burnAt(tr *sloTrace, conds []burnCondition, budget, minFailed float64, t time.Duration) burnState {
	var st burnState
	for _, cond := range conds {
		th := cond.rate * budget
		eps := margin * th
		s, l := tr.ratio(cond.short, t), tr.ratio(cond.long, t)
		enough := true
		if minFailed > 0 {
			f := tr.failed(cond.long, t)
			enough = f >= minFailed
			if math.Abs(f-minFailed) < margin*minFailed && s > th && l > th {
				st.tooClose = "failed reconciles over " + cond.long
			}
		}
		switch {
		case math.Abs(s-th) < eps && l > th && enough:
			st.tooClose = cond.short + " error ratio"
		case math.Abs(l-th) < eps && s > th && enough:
			st.tooClose = cond.long + " error ratio"
		}
		if s > th && l > th && enough && !st.holds {
			st.holds, st.value = true, s
		}
	}
	return st
}

// unguarded are the evaluations from `from` to until at which a burn-rate alert would fire on its
// error ratios alone (its conditions, without the failed reconciles, held for its `for:`): where
// a case checks that the failed reconciles keep it silent.
func unguarded(c *caseEnv, tr *sloTrace, conds []burnCondition, budget float64, from, until time.Duration) []time.Duration {
	return firingAt(c, tr, conds, budget, 0, from, until)
}

// firingAt are the evaluations from `from` to until at which a burn-rate alert with conditions
// conds and least failed reconciles minFailed fires on trace tr (its condition held for `for:`).
func firingAt(c *caseEnv, tr *sloTrace, conds []burnCondition, budget, minFailed float64, from, until time.Duration) []time.Duration {
	eval := c.Interval()
	var out []time.Duration
	held := time.Duration(-1)
	for t := ceilTo(from, eval); t <= until; t += eval {
		switch {
		case !burnAt(tr, conds, budget, minFailed, t).holds:
			held = -1
		case held < 0:
			held = t
		}
		if held >= 0 && t-held >= c.For() {
			out = append(out, t)
		}
	}
	return out
}

// withoutConflicts returns series without the client's conflict series: the input as rules that
// count every error would read it.
func withoutConflicts(series []*Series) []*Series {
	var out []*Series
	for _, s := range series {
		if !isConflictSeries(s) {
			out = append(out, s)
		}
	}
	return out
}

// conflictSeries is the conflict answers (PUT 409) of the controller's process, growing by
// perSecond.
func conflictSeries(c *caseEnv, perSecond float64) *Series {
	return Counter("rest_client_requests_total", c.Target("controller").With("host", "10.96.0.1:443", "method", "PUT", "code", "409"), perSecond)
}

// burnConflictCases are the cases of a burn-rate alert on conflicts: a controller whose failed
// reconciles are all optimistic-concurrency conflicts, at the incident's share of its reconciles
// (one a second: fewer conflicts a second than a conflict storm), stays silent where rules that
// count every error would page; one whose real errors come beside conflicts pages when its real
// errors alone do (holds: when the incident pages).
func burnConflictCases(c *caseEnv, conds []burnCondition, budget, minFailed, failing float64, l Labels, holds time.Duration) []Case {
	eval := c.Interval()
	conflicting := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(history, failing),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 1).Rate(history, 1-failing),
		Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
		conflictSeries(c, 0).Rate(history, failing),
	}
	limit := history + 3*24*time.Hour
	raw := newSLOTrace(withoutConflicts(conflicting), eval, limit)
	pages := firstHold(c, raw, conds, budget, minFailed, history, limit)
	if pages < 0 {
		c.errs = append(c.errs, fmt.Errorf("alert %s: a conflict-only error rate would not page even counted as errors: its case proves nothing", c.a.Key))
		pages = history
	}
	until := pages + c.For() + 10*time.Minute
	tr := newSLOTrace(conflicting, eval, until)
	if t := firstHold(c, tr, conds, budget, minFailed, history, until); t >= 0 {
		c.errs = append(c.errs, fmt.Errorf("alert %s: a conflict-only error rate burns the budget at %s", c.a.Key, fmtDuration(t)))
	}
	// Real errors at the incident's share, beside conflicts at up to half that share from the start.
	share := math.Min(failing/2, (1-failing)/2)
	mixed := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 10*share).Rate(history, 10*(share+failing)),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10*(1-share)).Rate(history, 10*(1-share-failing)),
		Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
		conflictSeries(c, 10*share),
	}
	mtr := newSLOTrace(mixed, eval, history+3*24*time.Hour)
	fires := firstHold(c, mtr, conds, budget, minFailed, history, history+3*24*time.Hour)
	if fires != holds {
		c.errs = append(c.errs, fmt.Errorf("alert %s: real errors beside conflicts burn the budget at %s, the same errors alone at %s", c.a.Key, fmtDuration(fires), fmtDuration(holds)))
	}
	return []Case{
		{
			Name:   "stays silent when the failed reconciles are optimistic-concurrency conflicts",
			Series: conflicting,
			Until:  until,
			Checks: firingAt(c, raw, conds, budget, minFailed, history, until),
		},
		{
			Name:   "fires when real errors come beside conflicts, as the real errors alone do",
			Series: mixed,
			Fires:  &Firing{At: fires, Labels: c.Instance(l), Value: func(t time.Duration) float64 { return burnAt(mtr, conds, budget, minFailed, t).value }},
		},
	}
}

// firstHold is the first evaluation from `from` to limit at which a burn-rate alert's condition
// holds on series, or -1; an evaluation too close to a threshold to pin is an error.
func firstHold(c *caseEnv, tr *sloTrace, conds []burnCondition, budget, minFailed float64, from, limit time.Duration) time.Duration {
	eval := c.Interval()
	for t := ceilTo(from, eval); t <= limit; t += eval {
		st := burnAt(tr, conds, budget, minFailed, t)
		if st.tooClose != "" {
			c.errs = append(c.errs, fmt.Errorf("alert %s: the %s at %s is too close to its threshold to pin the boundary", c.a.Key, st.tooClose, fmtDuration(t)))
			return -1
		}
		if st.holds {
			return t
		}
	}
	return -1
}

// burnCases are the cases of a burn-rate alert with conditions conds.
func burnCases(c *caseEnv, conds []burnCondition) []Case {
	budget := 1 - c.Objective()
	eval := c.Interval()
	l := c.Controller().With("name", "")
	minFailed := 0.0
	if _, ok := c.a.param(minFailedKey); ok {
		minFailed = c.P(minFailedKey)
	}
	// 10 reconciles a second throughout; from `history` on, a share `failing` of them fail.
	failing := conds[0].rate * budget * above
	if failing >= 1 {
		failing = conds[0].rate*budget + (1-conds[0].rate*budget)/2
	}
	// The total stays at 10 reconciles a second: errors replace successes.
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
	limit := history + 3*24*time.Hour
	tr := newSLOTrace(incident, eval, limit)
	holds := firstHold(c, tr, conds, budget, minFailed, history, limit)
	if holds < 0 {
		c.errs = append(c.errs, fmt.Errorf("alert %s: the incident never burns the budget before %s", c.a.Key, fmtDuration(limit)))
		holds = history
	}
	// The ratios only grow while the incident lasts: the condition holds from then on.
	cases := []Case{
		{
			Name:   "fires when the error ratio burns the budget over both windows of a condition",
			Series: incident,
			Fires:  &Firing{At: holds, Labels: c.Instance(l), Value: func(t time.Duration) float64 { return burnAt(tr, conds, budget, minFailed, t).value }},
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
	// An outage (every reconcile failing) too short for any condition: the longest one whose
	// error ratios never make a condition hold, found by bisection (a longer outage gives every
	// ratio at least the values of a shorter one).
	outageSeries := func(d time.Duration) []*Series {
		return []*Series{
			Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(history, 10).Rate(history+d, 0),
			Counter("controller_runtime_reconcile_total", l.With("result", "success"), 10).Rate(history, 0).Rate(history+d, 10),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
		}
	}
	until := func(d time.Duration) time.Duration { return history + d + c.For() + time.Hour }
	silent := func(d time.Duration) bool {
		otr := newSLOTrace(outageSeries(d), eval, until(d))
		for t := ceilTo(history, eval); t <= until(d); t += eval {
			if st := burnAt(otr, conds, budget, minFailed, t); st.holds || st.tooClose != "" {
				return false
			}
		}
		return true
	}
	lo, hi := time.Duration(0), 24*time.Hour/sampleInterval // outage lengths in samples
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if silent(mid * sampleInterval) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if outage := lo * sampleInterval; outage > 0 {
		cases = append(cases, Case{
			Name:   "stays silent on a short outage",
			Series: outageSeries(outage),
			Until:  until(outage),
		})
	}
	cases = append(cases, burnConflictCases(c, conds, budget, minFailed, failing, l, holds)...)
	if minFailed > 0 {
		cases = append(cases, quietControllerCases(c, conds, budget, minFailed, l)...)
	}
	return cases
}

// quietControllerCases are the cases of a controller that reconciles a few times an hour (four,
// or fewer where the objective's thresholds need it): a transient failure (fewer failed
// reconciles within a minute than minFailed), whose error ratios alone would page, and failures
// that keep coming, which page once the long window holds minFailed of them. Where the config
// leaves no transient that pages on its ratios alone (a minimum of 1, a long `for:`), the first
// case is left out.
func quietControllerCases(c *caseEnv, conds []burnCondition, budget, minFailed float64, l Labels) []Case {
	eval := c.Interval()
	th := conds[0].rate * budget // the highest ratio threshold: the first condition's
	odds := th / (1 - th)        // failed per successful reconcile at the threshold
	burst := math.Floor(0.6 * minFailed)
	perHour := math.Min(4, burst/odds/2) // successful reconciles an hour: the burst's ratio twice the threshold's odds
	if burst < 1 {
		perHour = math.Min(4, minFailed/odds/2)
	}
	quiet := func(errors *Series) []*Series {
		return []*Series{
			errors,
			Counter("controller_runtime_reconcile_total", l.With("result", "success"), perHour/3600),
			Counter("controller_runtime_reconcile_total", l.With("result", "requeue"), 0),
		}
	}
	var cases []Case
	if burst >= 1 {
		// burst failed reconciles in the sample minute after `history`.
		transient := func() []*Series {
			return quiet(Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(history, burst/sampleInterval.Seconds()).Rate(history+sampleInterval, 0))
		}
		until := history + c.For() + time.Hour
		once := transient()
		tr := newSLOTrace(once, eval, until)
		if t := firstHold(c, tr, conds, budget, minFailed, history, until); t >= 0 {
			c.errs = append(c.errs, fmt.Errorf("alert %s: a transient failure of a quiet controller pages at %s", c.a.Key, fmtDuration(t)))
		}
		if checks := unguarded(c, tr, conds, budget, history, until); len(checks) > 0 {
			cases = append(cases, Case{
				Name:   fmt.Sprintf("stays silent when a controller that reconciles %s times an hour fails %s times in a minute", formatG(perHour), formatG(burst)),
				Series: once,
				Until:  until,
				Checks: checks,
			})
		}
		// The same controller new at `history`, the burst in its first minute, beside another
		// that reconciles without failing throughout: the long window holds minutes of the new
		// one, and a mean over them times the whole window would count the burst many times over
		// (the case is there because that would page).
		fresh := transient()
		for _, s := range fresh {
			s.From(history)
		}
		other := l.With("controller", "snapshot")
		others := []*Series{
			Counter("controller_runtime_reconcile_total", other.With("result", "success"), perHour/3600),
			Counter("controller_runtime_reconcile_total", other.With("result", "error"), 0),
		}
		ftr := newSLOTraceAmong(fresh, others, eval, until)
		if t := firstHold(c, ftr, conds, budget, minFailed, history, until); t >= 0 {
			c.errs = append(c.errs, fmt.Errorf("alert %s: a new quiet controller's first failures page at %s", c.a.Key, fmtDuration(t)))
		}
		checks := unguarded(c, ftr, conds, budget, history, until)
		if !slices.ContainsFunc(checks, func(t time.Duration) bool { return ftr.failedOverWholeWindow(conds, t) >= minFailed }) {
			c.errs = append(c.errs, fmt.Errorf("alert %s: the new controller's case would stay silent without counting from its first sample: it proves nothing", c.a.Key))
		}
		// Each condition on its own pages on the new controller's ratios: the case is silent
		// for every pair of windows, not only the first.
		for _, cond := range conds {
			if len(unguarded(c, ftr, []burnCondition{cond}, budget, history, until)) == 0 {
				c.errs = append(c.errs, fmt.Errorf("alert %s: the new controller's ratios over %s and %s never page: its case proves nothing for them", c.a.Key, cond.short, cond.long))
			}
		}
		cases = append(cases, Case{
			Name:   fmt.Sprintf("stays silent when a new controller that reconciles %s times an hour fails %s times in its first minute", formatG(perHour), formatG(burst)),
			Series: append(fresh, others...),
			Until:  until,
			Checks: checks,
		})
	}
	// Failures that keep coming, well above the threshold's odds: the error ratios pass their
	// thresholds within minutes, the failed reconciles over 1h reach minFailed later. (An
	// irrational rate: at no evaluation is the count exactly minFailed.)
	failing := quiet(Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(history, 2.5*above*perHour*math.Max(1, odds)/3600))
	limit := history + 6*time.Hour
	ftr := newSLOTrace(failing, eval, limit)
	holds := firstHold(c, ftr, conds, budget, minFailed, history, limit)
	if holds < 0 {
		c.errs = append(c.errs, fmt.Errorf("alert %s: a quiet controller that keeps failing never pages before %s", c.a.Key, fmtDuration(limit)))
		holds = history
	}
	return append(cases, Case{
		Name:   fmt.Sprintf("fires when a controller that reconciles %s times an hour keeps failing, once the long window holds enough failed reconciles", formatG(perHour)),
		Series: failing,
		Fires:  &Firing{At: holds, Labels: c.Instance(l), Value: func(t time.Duration) float64 { return burnAt(ftr, conds, budget, minFailed, t).value }},
	})
}
