package gen

import (
	"fmt"
	"slices"
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
//   - 30m, 1h, 2h (fine windows): sum_over_time of those two 5m rates over the window, divided.
//     At a 1m interval the 2h window reads 120 samples per controller and rate.
//   - 6h, 1d, 3d (coarse windows): the two rates averaged over sloCoarseInterval by the coarse
//     group, once per sloCoarseInterval; sum_over_time of those over the window, divided. The 3d
//     window reads 144 samples per controller and rate whatever the evaluation interval.
//   - 1d and 3d are divided by the coarse group itself, once per sloCoarseInterval, not every
//     evaluation interval: their ratios cannot change between two coarse samples anyway, and
//     they were the two most expensive rules of the SLO group at 500 controllers (a long range
//     over every block of the window, for every controller). The alerts read their last value
//     (sloRatioRef).
//
// A ratio of sums of rates sampled at one cadence weights every moment of the window alike, like
// rate()'s increase over the window. What changes: a fine window reaches 5m further back than
// the window (the oldest 5m rate), and a coarse window ends at the coarse group's last evaluation,
// up to sloCoarseInterval ago, so the 6h, 1d and 3d ratios follow an incident up to 30 minutes
// late. The long windows only make a burn significant (the SRE workbook's multiwindow alerts):
// the short window paired with each still says whether it is burning now, and the fastest page
// (5m and 1h) reads no coarse series.
//
// sloCoarseInterval is 30m, not 1h: at 1h the 6h window would lag by up to a sixth of itself and
// hold only 6 samples; at 30m it lags by at most a twelfth, and 3d holds 144 samples (a 15m
// cadence would double the samples of every coarse read for a lag nobody pages on).

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
	sloCoarseGroupWindows = []string{"1d", "3d"}
)

// sloRatioLookback is how far back an alert looks for the last ratio the coarse group recorded:
// two coarse intervals, so that one missed or late coarse evaluation does not silence it.
var sloRatioLookback = model.Duration(2 * sloCoarseInterval).String()

// sloRatioRef is how an alert reads the error ratio over window: the recorded series, or for a
// ratio the coarse group records, its last value.
func sloRatioRef(window string) string {
	if slices.Contains(sloCoarseGroupWindows, window) {
		return "last_over_time(" + recErrorRatioName(window) + "[" + sloRatioLookback + "])"
	}
	return recErrorRatioName(window)
}

// sloSourceKind says which recorded series an error ratio over a window is built from.
type sloSourceKind int

const (
	sloInstant sloSourceKind = iota // the 5m ratio, from the 5m rates at one instant
	sloFine                         // from the 5m rates over the window
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
	recReconcileErrorsCoarse = coarseAverage(recReconcileErrors, "controller_runtime_reconcile_error", 1)
	recReconcilesCoarse      = coarseAverage(recReconciles, "controller_runtime_reconcile_total", 4)
)

// coarseAverage records avg_over_time of a 5m-rate recording of metric over the coarse interval;
// want is its value when errors come at 1/s and successes at 3/s.
func coarseAverage(of *Recording, metric string, want float64) *Recording {
	return &Recording{
		Name: levelController.record(metric, "rate"+sloCoarseWindow),
		Expr: func(e *exprEnv) string { return "avg_over_time(" + of.Name + "[" + sloCoarseWindow + "])" },
		Cases: func(c *caseEnv) []ExprCase {
			l := c.Controller().With("name", "")
			return []ExprCase{{
				Name: "averages the 5m rate over " + sloCoarseWindow,
				At:   sloCoarseInterval + 10*time.Minute,
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1),
					Counter("controller_runtime_reconcile_total", l.With("result", "success"), 3),
				},
				Want: []Sample{{c.AtLevel(levelController, l), want}},
			}}
		},
	}
}

// sloCoarseRecordings are the coarse group's rules: the averages, then the ratios over the
// windows in sloCoarseGroupWindows.
var sloCoarseRecordings = append([]*Recording{recReconcileErrorsCoarse, recReconcilesCoarse}, sloRatioRecordings(sloCoarseGroupWindows)...)

// sloRatioRecordings record the error ratio over each of windows.
func sloRatioRecordings(windows []string) []*Recording {
	var out []*Recording
	for _, w := range windows {
		errs, all := recReconcileErrors, recReconciles
		if sloSource(w) == sloCoarse {
			errs, all = recReconcileErrorsCoarse, recReconcilesCoarse
		}
		out = append(out, &Recording{
			Name: recErrorRatioName(w),
			Expr: func(e *exprEnv) string {
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
