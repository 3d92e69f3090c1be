package gen

// Multi-window, multi-burn-rate alerts on the reconcile success ratio (The Site Reliability
// Workbook, "Alerting on SLOs"): a page when the error budget of a 30-day window would be gone in
// about 2 (14.4×) or 5 (6×) days, a ticket at 3× and 1×. Each pair of windows needs both the long
// window (significance) and the short one (still burning now).

// burnWindows lists the ratio windows the SLO rules record (5m is recorded by the controller
// group).
var burnWindows = []string{"30m", "1h", "2h", "6h", "1d", "3d"}

// The burn rates of the four conditions.
const (
	pageBurnRate     = 14.4
	pageSlowBurnRate = 6
	ticketBurnRate   = 3
	ticketSlowRate   = 1
)

func (b *builder) sloRecordingRules() []Rule {
	s := b.selector("controller")
	var rules []Rule
	for _, w := range burnWindows {
		rules = append(rules, record(recErrorRatio(w), errorRatio(s, w)))
	}
	return rules
}

func (b *builder) sloAlerts() []Rule {
	a := b.cfg.Alerts.ErrorBudgetBurn
	budget := "(1 - " + b.p.G("errorBudgetBurnObjective", a.Objective) + ")"
	burning := func(rate float64, short, long string) string {
		factor := "(" + formatG(rate) + " * " + budget + ")"
		return lines(
			"(",
			"  "+recErrorRatio(short)+" > "+factor,
			"  and",
			"  "+recErrorRatio(long)+" > "+factor,
			")")
	}
	var rules []Rule
	rules = append(rules, b.alert("errorBudgetBurnPage", "ErrorBudgetBurnFast", a.Page,
		lines(burning(pageBurnRate, "5m", "1h"), "or", burning(pageSlowBurnRate, "30m", "6h")),
		"A controller burns its reconcile error budget fast.",
		"The reconciles of "+whereController+" fail at {{ $value | humanizePercentage }}: at this rate the error budget of the reconcile success objective is gone within days.")...)
	rules = append(rules, b.alert("errorBudgetBurnTicket", "ErrorBudgetBurnSlow", a.Ticket,
		lines(burning(ticketBurnRate, "2h", "1d"), "or", burning(ticketSlowRate, "6h", "3d")),
		"A controller burns its reconcile error budget.",
		"The reconciles of "+whereController+" fail at {{ $value | humanizePercentage }} over hours: the error budget of the reconcile success objective will not last the month.")...)
	return rules
}
