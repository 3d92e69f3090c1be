package gen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// The SLO rules record each controller's reconcile error ratio over the burn-rate windows
// (alert_error_budget.go) without reading the raw counters over long ranges, which costs
// Prometheus (or a Thanos or Mimir ruler) tens of millions of samples per evaluation for a few
// hundred controllers, the 3-day window alone two thirds of it.
//
//   - 5m: the controller's 5m error and reconcile rates (recReconcileErrors, recReconciles),
//     recorded every evaluation interval.
//   - The sample group copies those two rates once per sloSampleInterval (recReconcileErrorsSampled,
//     recReconcilesSampled), whatever the evaluation interval: every longer window reads the
//     copies, so that a shorter rule interval does not multiply the samples they read (at 15s
//     the 2h window read 480 samples per controller and rate, 492,000 per evaluation of its
//     group at 500 controllers). At the default 1m interval the copies only repeat the rates.
//   - 30m, 1h, 2h (fine windows): sum_over_time of the two sampled rates over the window,
//     divided. The 2h window reads 120 samples per controller and rate.
//   - 6h, 1d, 3d (coarse windows): the two sampled rates averaged over sloCoarseInterval by the
//     coarse group, once per sloCoarseInterval; sum_over_time of those over the window, divided.
//     The 3d window reads 144 samples per controller and rate whatever the evaluation interval.
//   - 1d and 3d are divided by the coarse group itself, once per sloCoarseInterval, not every
//     evaluation interval: their ratios cannot change between two coarse samples anyway, and
//     they were the two most expensive rules of the SLO group at 500 controllers (a long range
//     over every block of the window, for every controller). The alerts read their last value
//     (sloRatioRef).
//   - The coarse group sums each rate's coarse averages over one day (the day sums,
//     recReconcileErrorsDay and recReconcilesDay): the 1d ratio divides the two, and the 3d ratio,
//     in a group of its own, adds the last day sum and the ones recorded one and two days before
//     it (sloDaysSum; the past day sums are rules of their own, recReconcileErrorsPastDays). The coarse group's evaluations are one sloCoarseInterval apart, so a
//     left-open sloCoarseInterval window holds exactly one day sum, and the three days tile the 3d
//     window: the same sum as sum_over_time over 3d, read from 3 samples per controller and rate
//     instead of 144 (at 500 controllers the 3d ratio alone read 144,000 samples from persisted
//     blocks). A day the group did not record (Prometheus was down at that moment) counts as no
//     reconciles: the ratio is then over the days it has.
//
// A ratio of sums of rates sampled at one cadence weights every moment of the window alike, like
// rate()'s increase over the window. What changes: a fine window reaches 5m further back than
// the window (the oldest 5m rate) and follows the rates up to sloSampleInterval late, and a
// coarse window ends at the coarse group's last evaluation, up to sloCoarseInterval ago, so the
// 6h, 1d and 3d ratios follow an incident up to 30 minutes late. The long windows only make a burn significant (the SRE workbook's multiwindow alerts):
// the short window paired with each still says whether it is burning now, and the fastest page
// (5m and 1h) reads no coarse series.
//
// sloCoarseInterval is 30m, not 1h: at 1h the 6h window would lag by up to a sixth of itself and
// hold only 6 samples; at 30m it lags by at most a twelfth, and 3d holds 144 samples (a 15m
// cadence would double the samples of every coarse read for a lag nobody pages on).

// sloSampleInterval is the evaluation interval of the group that samples the 5m rates for every
// window longer than 5m.
const sloSampleInterval = time.Minute

// recReconcileErrorsSampled and recReconcilesSampled are the 5m error and reconcile rates as the
// sample group records them, once per sloSampleInterval. The error rate is the one without the
// workload's conflicts (recording_conflicts.go): the SLO counts a reconcile as failed when it
// returned an error other than an optimistic-concurrency conflict. promtool evaluates every
// group at the test's interval, so the tests sample at that interval.
var (
	recReconcileErrorsSampled = sampledRate(recReconcileErrorsExceptConflicts, "controller_runtime_reconcile_error", 1.5)
	recReconcilesSampled      = sampledRate(recReconciles, "controller_runtime_reconcile_total", 7.5)
)

// sampledRate records a 5m-rate recording of metric as it is; want is its value in
// reconcileRateCase.
func sampledRate(of *Recording, metric string, want float64) *Recording {
	every := model.Duration(sloSampleInterval).String()
	return &Recording{
		Name: levelController.record(metric, "rate5m_sampled"+every),
		Expr: func(e *exprEnv) string { return of.Name },
		Cases: func(c *caseEnv) []ExprCase {
			return reconcileRateCase(c, "samples the 5m rate every "+every, want)
		},
	}
}

// sloCoarseInterval is the evaluation interval of the coarse SLO group and the span each of its
// samples averages.
const sloCoarseInterval = 30 * time.Minute

// sloCoarseWindow is sloCoarseInterval as a PromQL duration.
const sloCoarseWindow = "30m"

// The windows of the error ratios, by where they are read from.
var (
	sloFineWindows   = []string{"30m", "1h", "2h"}
	sloCoarseWindows = []string{"6h", "1d", "3d"}
	// The windows whose ratio each SLO group records, every window once. The ratios recorded
	// every evaluation interval are split over two groups, so that neither group reads every
	// range one after another: the short windows of the fast burn, and the longer ones.
	sloShortGroupWindows = []string{"30m", "1h"}
	sloLongGroupWindows  = []string{"2h", "6h"}
	// sloCoarseGroupWindows are the coarse windows whose ratio the coarse group records.
	sloCoarseGroupWindows = []string{"1d"}
	// sloDaysGroupWindows are the windows of several days, whose ratio a group of its own
	// records from the day sums, every sloCoarseInterval: Prometheus opens every persisted block
	// from the oldest day read to now for each selector of a query, and the past days' sums
	// cost as much as the rest of the coarse group (27 ms at 500 controllers).
	sloDaysGroupWindows = []string{"3d"}
)

// sloFromDaySums reports whether the ratio over window divides day sums (a group evaluated
// every sloCoarseInterval records it).
func sloFromDaySums(window string) bool {
	return slices.Contains(sloCoarseGroupWindows, window) || slices.Contains(sloDaysGroupWindows, window)
}

// sloRatioLookback is how far back an alert looks for the last ratio the coarse group recorded:
// two coarse intervals, so that one missed or late coarse evaluation does not silence it.
var sloRatioLookback = model.Duration(2 * sloCoarseInterval).String()

// sloRatioRef is how an alert reads the error ratio over window: the recorded series, or for a
// ratio the coarse group records, its last value.
func sloRatioRef(window string) string {
	if sloFromDaySums(window) {
		return "last_over_time(" + recErrorRatioName(window) + "[" + sloRatioLookback + "])"
	}
	return recErrorRatioName(window)
}

// sloFailedRef is how an alert reads the failed reconciles over window. Over a fine window: the
// sampled error rates summed over the window, times the time between two samples of the group that
// recorded them (sloSpacing of the sample clock). Over a coarse window: the count the coarse or days
// group recorded (recFailedCoarse, the coarse averages summed the same way), its last value.
//
// A sum of rates times their spacing counts what happened in the window, whatever the age of the
// controller or of Prometheus: three failures in a new controller's first minute are three, not
// the 36 that their mean rate times an hour would make, and a Prometheus started ten minutes ago
// (every controller new to it) counts ten minutes.
func sloFailedRef(window string) string {
	if sloSource(window) == sloCoarse {
		return "last_over_time(" + recFailedName(window) + "[" + sloRatioLookback + "])"
	}
	return "sum_over_time(" + recReconcileErrorsSampled.Name + "[" + window + "]) * on () group_left () " + sloSpacing(recSampleClock, window)
}

// recFailedName is the name of the failed reconciles recorded over a coarse window.
func recFailedName(window string) string {
	return levelController.record("controller_runtime_reconcile_error", "increase"+window)
}

// recSampleClock and recCoarseClock record, at each evaluation of the sample group (the coarse
// group), its time: one series without labels. Over a window they give the time between two of
// the group's evaluations (sloSpacing), which production's group intervals, a test Prometheus that
// evaluates every group at one interval, and promtool all set differently.
var (
	recSampleClock = groupClock("rate5m_sampled" + model.Duration(sloSampleInterval).String())
	recCoarseClock = groupClock("rate" + sloCoarseWindow)
)

func groupClock(operations string) *Recording {
	return &Recording{
		Name: level{}.record("controller_runtime_reconcile_total", operations+"_timestamp"),
		Expr: func(*exprEnv) string { return "vector(time())" },
		Cases: func(c *caseEnv) []ExprCase {
			at := sloCoarseInterval + 10*time.Minute
			return []ExprCase{{
				Name: "records the time of the evaluation",
				At:   at,
				Want: []Sample{{Labels{}, at.Seconds()}},
			}}
		},
	}
}

// sloSpacing is the mean time between two evaluations of a clock's group over window, as a
// one-series vector to match with on () group_left (): the span between its first and last
// evaluation in the window divided by the intervals between them. With one evaluation in the
// window (a group that has just started) it is nothing, never NaN: a NaN multiplied into a
// recorded count would be read as one.
func sloSpacing(clock *Recording, window string) string {
	c := clock.Name + "[" + window + "]"
	return "((max_over_time(" + c + ") - min_over_time(" + c + ")) / (count_over_time(" + c + ") - 1 > 0))"
}

// recFailedCoarse records the failed reconciles over a coarse window, in the group that records
// the window's ratio, or the coarse group for the fast burn's 6h: the coarse averages summed over
// the window times the coarse group's spacing. A window of days sums the day sums, as its ratio
// does.
func recFailedCoarse(window string) *Recording {
	return &Recording{
		Name: recFailedName(window),
		Expr: func(e *exprEnv) string {
			sum := "sum_over_time(" + recReconcileErrorsCoarse.Name + "[" + window + "])"
			if sloFromDaySums(window) {
				sum = sloDaysSum(recReconcileErrorsDay.Name, recReconcileErrorsPastDays, int(parseWindow(window)/sloDay))
			}
			return sum + " * on () group_left () " + sloSpacing(recCoarseClock, window)
		},
		Cases: func(c *caseEnv) []ExprCase { return failedCases(c, window) },
	}
}

// failedCases check a failed-reconciles recording over a coarse window: a controller that fails
// three times in its first minute, new beside another that reconciles throughout, counts three,
// not its mean rate times the window; the other counts what it failed.
func failedCases(c *caseEnv, window string) []ExprCase {
	l := c.Controller().With("name", "")
	other := l.With("controller", "snapshot")
	appears := sloCoarseInterval + 10*time.Minute
	fresh := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0).Rate(appears, 3/sampleInterval.Seconds()).Rate(appears+sampleInterval, 0).From(appears),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 1/sampleInterval.Seconds()).From(appears),
	}
	others := steadyReconciles(other)
	at := appears + 50*time.Minute
	at -= at % c.Interval()
	tr := newSLOTraceAmong(fresh, others, c.Interval(), at)
	otr := newSLOTrace(others, c.Interval(), at)
	want := tr.failed(window, at)
	// rate() extrapolates the failures' increase over its window, by up to a quarter at a rule
	// interval that does not divide the scrape interval; a mean times the window would be tens.
	if math.IsNaN(want) || want < 2 || want > 6 {
		c.errs = append(c.errs, fmt.Errorf("recording %s: a new controller's 3 failed reconciles count as %g", recFailedName(window), want))
	}
	return []ExprCase{{
		Name:   "counts a new controller's failed reconciles, not its mean rate times the window",
		At:     at,
		Series: append(fresh, others...),
		Want: []Sample{
			{c.AtLevel(levelController, l), want},
			{c.AtLevel(levelController, other), otr.failed(window, at)},
		},
	}}
}

// recSampledControllers counts the controllers whose rate the sample group recorded, at each of
// its evaluations: one series without labels. Its samples over a window are the samples a
// controller's sampled rates would have there had it been there throughout.
var recSampledControllers = controllersCounted(recReconcilesSampled, "rate5m_sampled"+model.Duration(sloSampleInterval).String())

func controllersCounted(rate *Recording, operations string) *Recording {
	return &Recording{
		Name: level{}.record("controller_runtime_reconcile_total", operations+"_controllers"),
		Expr: func(*exprEnv) string { return "count(" + rate.Name + ")" },
		Cases: func(c *caseEnv) []ExprCase {
			l := c.Controller().With("name", "")
			other := l.With("controller", "snapshot")
			return []ExprCase{{
				Name:   "counts the controllers whose rate is recorded",
				At:     sloCoarseInterval + 10*time.Minute,
				Series: append(steadyReconciles(l), steadyReconciles(other)...),
				Want:   []Sample{{Labels{}, 2}},
			}}
		},
	}
}

// evaluationsIn is how many times sampled was recorded over window, as a divisor: one series
// without labels, matched with on() group_left(). Where sampled has no sample in the window the
// division yields nothing. A scalar() of nothing would be NaN, and the coarse group can run
// between the sample group's rates and its count (groups run apart, each rule committing on its
// own): one NaN in a 30-minute average would stay in every day sum over it for a day, and no
// slow burn could fire on the controller's day ratios meanwhile.
func evaluationsIn(sampled *Recording, window string) string {
	return "on () group_left () max(count_over_time(" + sampled.Name + "[" + window + "]))"
}

// sloSourceKind says which recorded series an error ratio over a window is built from.
type sloSourceKind int

const (
	sloInstant sloSourceKind = iota // the 5m ratio, from the 5m rates at one instant
	sloFine                         // from the sampled 5m rates over the window
	sloCoarse                       // from the coarse averages over the window
)

func sloSource(window string) sloSourceKind {
	switch {
	case window == "5m":
		return sloInstant
	case slices.Contains(sloFineWindows, window):
		return sloFine
	case slices.Contains(sloCoarseWindows, window):
		return sloCoarse
	}
	panic("no error ratio is recorded over " + window)
}

// recReconcileErrorsCoarse and recReconcilesCoarse are the 5m error and reconcile rates averaged
// over the coarse interval, recorded once per coarse interval.
var (
	recReconcileErrorsCoarse = coarseAverage(recReconcileErrorsSampled, "controller_runtime_reconcile_error", 1, traceErrors30)
	recReconcilesCoarse      = coarseAverage(recReconcilesSampled, "controller_runtime_reconcile_total", 4, traceReconciles30)
)

// steadyReconciles are the input of the coarse recordings' cases: controller l's reconciles, errors
// at 1/s and successes at 3/s.
func steadyReconciles(l Labels) []*Series {
	return []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 3),
	}
}

// coarseAverage records the mean of a 5m-rate recording of metric over the coarse interval, a
// sample the group did not record for this controller counting as 0: the sum over the interval
// divided by the sample group's evaluations in it that recorded any controller
// (recSampledControllers). A controller that appeared ten minutes ago has ten minutes of the
// interval's thirty, not the mean of its ten spread over thirty. want is its value when errors
// come at 1/s and successes at 3/s; of picks it out of an SLO trace.
func coarseAverage(rate *Recording, metric string, want float64, of func(*sloTrace) (prefix, values []float64)) *Recording {
	return &Recording{
		Name: levelController.record(metric, "rate"+sloCoarseWindow),
		Expr: func(e *exprEnv) string {
			return "sum_over_time(" + rate.Name + "[" + sloCoarseWindow + "]) / " + evaluationsIn(recSampledControllers, sloCoarseWindow)
		},
		Cases: func(c *caseEnv) []ExprCase {
			l := c.Controller().With("name", "")
			other := l.With("controller", "snapshot")
			// l appears at `appears`; other is there throughout.
			appears := sloCoarseInterval + 10*time.Minute
			fresh := steadyReconciles(l)
			for _, s := range fresh {
				s.From(appears)
			}
			at := appears + 10*time.Minute
			tr := newSLOTraceAmong(fresh, steadyReconciles(other), c.Interval(), at)
			_, values := of(tr)
			return []ExprCase{
				{
					Name:   "averages the 5m rate over " + sloCoarseWindow,
					At:     sloCoarseInterval + 10*time.Minute,
					Series: steadyReconciles(l),
					Want:   []Sample{{c.AtLevel(levelController, l), want}},
				},
				{
					Name:   "counts the part of " + sloCoarseWindow + " before a new controller appeared as no reconciles",
					At:     at,
					Series: append(fresh, steadyReconciles(other)...),
					Want: []Sample{
						{c.AtLevel(levelController, l), values[int(at/c.Interval())]},
						{c.AtLevel(levelController, other), want},
					},
				},
			}
		},
	}
}

// sloDay is the span of the coarse group's day sums.
const sloDay = 24 * time.Hour

// recReconcileErrorsDay and recReconcilesDay are the coarse averages summed over the last day,
// recorded once per coarse interval.
var (
	recReconcileErrorsDay = daySum(recReconcileErrorsCoarse, "controller_runtime_reconcile_error", traceErrors30)
	recReconcilesDay      = daySum(recReconcilesCoarse, "controller_runtime_reconcile_total", traceReconciles30)
)

// traceErrors30 and traceReconciles30 pick the coarse averages (prefix sums and values) out of
// an SLO trace.
func traceErrors30(tr *sloTrace) ([]float64, []float64)     { return tr.sErr30, tr.err30 }
func traceReconciles30(tr *sloTrace) ([]float64, []float64) { return tr.sTot30, tr.tot30 }

// sloPastDays is how many past day sums the days group records: enough for its longest window.
var sloPastDays = func() int {
	n := 0
	for _, w := range sloDaysGroupWindows {
		n = max(n, int(parseWindow(w)/sloDay)-1)
	}
	return n
}()

// recReconcileErrorsPastDays and recReconcilesPastDays are the day sums the coarse group recorded
// 1, 2, ... sloPastDays days before its last one, recorded by the days group. Each is a rule of
// its own so that its query reaches back only to its day: Prometheus reads every persisted block
// from a query's oldest selector to now for each selector of the query, and one query adding
// every past day read each block back to the oldest day for each of its terms (27 ms at 500
// controllers, for 2,000 samples).
var (
	recReconcileErrorsPastDays = pastDaySums(recReconcileErrorsDay, "controller_runtime_reconcile_error", traceErrors30)
	recReconcilesPastDays      = pastDaySums(recReconcilesDay, "controller_runtime_reconcile_total", traceReconciles30)
)

// pastDaySums records last_over_time of a day sum over sloCoarseInterval, d days back, for every
// d up to sloPastDays: the day sum the coarse group recorded d days before its last one.
func pastDaySums(day *Recording, metric string, of func(*sloTrace) (prefix, values []float64)) []*Recording {
	var out []*Recording
	for d := 1; d <= sloPastDays; d++ {
		back := model.Duration(time.Duration(d) * sloDay).String()
		out = append(out, &Recording{
			Name: levelController.record(metric, "rate"+sloCoarseWindow+"_sum1d_offset"+back),
			Expr: func(e *exprEnv) string {
				return "last_over_time(" + day.Name + "[" + sloCoarseWindow + "] offset " + back + ")"
			},
			Cases: func(c *caseEnv) []ExprCase {
				l := c.Controller().With("name", "")
				series := steadyReconciles(l)
				at := time.Duration(d)*sloDay + sloCoarseInterval + 10*time.Minute
				tr := newSLOTrace(series, c.Interval(), at)
				prefix, values := of(tr)
				return []ExprCase{{
					Name:   "the day sum of " + back + " before",
					At:     at,
					Series: series,
					Want:   []Sample{{c.AtLevel(levelController, l), tr.windowSum(prefix, values, int((at-time.Duration(d)*sloDay)/c.Interval()), sloDay)}},
				}}
			},
		})
	}
	return out
}

// daySum records sum_over_time of a coarse average over sloDay; of picks the average (prefix
// sums and values) out of the SLO trace, which computes the case's expectation.
func daySum(avg *Recording, metric string, of func(*sloTrace) (prefix, values []float64)) *Recording {
	day := model.Duration(sloDay).String()
	return &Recording{
		Name: levelController.record(metric, "rate"+sloCoarseWindow+"_sum"+day),
		Expr: func(e *exprEnv) string { return "sum_over_time(" + avg.Name + "[" + day + "])" },
		Cases: func(c *caseEnv) []ExprCase {
			l := c.Controller().With("name", "")
			series := steadyReconciles(l)
			at := sloCoarseInterval + 10*time.Minute
			tr := newSLOTrace(series, c.Interval(), at)
			prefix, values := of(tr)
			return []ExprCase{{
				Name:   "sums the coarse averages over " + day,
				At:     at,
				Series: series,
				Want:   []Sample{{c.AtLevel(levelController, l), tr.windowSum(prefix, values, int(at/c.Interval()), sloDay)}},
			}}
		},
	}
}

// sloDaysSum is the sum of a day sum's last days. One day, in the coarse group that records the
// day sum: the day sum itself. More, in the days group: the last day sum the coarse group
// recorded (within the last sloCoarseInterval) plus the past day sums of the days before it
// (0 for a day that has none).
func sloDaysSum(daySum string, past []*Recording, days int) string {
	if days == 1 {
		return daySum
	}
	last := "last_over_time(" + daySum + "[" + sloCoarseWindow + "])"
	terms := []string{last}
	for _, p := range past[:days-1] {
		terms = append(terms, "("+p.Name+" or "+last+" * 0)")
	}
	return "(\n    " + strings.Join(terms, "\n    + ") + "\n  )"
}

// sloCoarseRecordings are the coarse group's rules: the averages, the day sums, then the ratios
// over the windows in sloCoarseGroupWindows.
var sloCoarseRecordings = append(append([]*Recording{recReconcileErrorsCoarse, recReconcilesCoarse, recCoarseClock, recReconcileErrorsDay, recReconcilesDay},
	sloRatioRecordings(sloCoarseGroupWindows)...), failedRecordings(sloCoarseGroupWindows, "6h")...)

// sloDaysRecordings are the days group's rules: the past day sums, then the ratios over the
// windows in sloDaysGroupWindows.
var sloDaysRecordings = append(append(append(slices.Clone(recReconcileErrorsPastDays), recReconcilesPastDays...),
	sloRatioRecordings(sloDaysGroupWindows)...), failedRecordings(sloDaysGroupWindows)...)

// failedRecordings record the failed reconciles over each of windows.
func failedRecordings(windows []string, more ...string) []*Recording {
	var out []*Recording
	for _, w := range append(slices.Clone(windows), more...) {
		out = append(out, recFailedCoarse(w))
	}
	return out
}

// sloRatioRecordings record the error ratio over each of windows.
func sloRatioRecordings(windows []string) []*Recording {
	var out []*Recording
	for _, w := range windows {
		errs, all := recReconcileErrorsSampled, recReconcilesSampled
		if sloSource(w) == sloCoarse {
			errs, all = recReconcileErrorsCoarse, recReconcilesCoarse
		}
		out = append(out, &Recording{
			Name: recErrorRatioName(w),
			Expr: func(e *exprEnv) string {
				if sloFromDaySums(w) {
					days := int(parseWindow(w) / sloDay)
					return errorShare(sloDaysSum(recReconcileErrorsDay.Name, recReconcileErrorsPastDays, days),
						sloDaysSum(recReconcilesDay.Name, recReconcilesPastDays, days))
				}
				return errorShare("sum_over_time("+errs.Name+"["+w+"])", "sum_over_time("+all.Name+"["+w+"])")
			},
			Cases: func(c *caseEnv) []ExprCase { return windowRatioCases(c, w) },
			Share: true,
		})
	}
	return out
}

// windowRatioCases check an error ratio over a window: the share of errors while they last, and
// errors older than the window forgotten.
func windowRatioCases(c *caseEnv, window string) []ExprCase {
	cases := errorRatioCase(c, 10*time.Minute)
	l := c.Controller().With("name", "")
	w := parseWindow(window)
	// Errors stop at 10m; once the window, the 5m rate's reach and the coarse average's span
	// have passed, the ratio is 0.
	at := 10*time.Minute + w + 5*time.Minute + sampleInterval
	if sloSource(window) == sloCoarse {
		at += sloCoarseInterval
	}
	series := []*Series{
		Counter("controller_runtime_reconcile_total", l.With("result", "error"), 2).Rate(10*time.Minute, 0),
		Counter("controller_runtime_reconcile_total", l.With("result", "success"), 2),
	}
	tr := newSLOTrace(series, c.Interval(), at)
	want := tr.ratio(window, at-at%c.Interval())
	if want != 0 {
		c.errs = append(c.errs, fmt.Errorf("recording %s: errors older than the window still count (%g at %s)", recErrorRatioName(window), want, fmtDuration(at)))
	}
	cases = append(cases, ExprCase{
		Name:   "forgets errors older than the window",
		At:     at,
		Series: series,
		Want:   []Sample{{c.AtLevel(levelController, l), 0}},
	})
	return cases
}
