package gen

import (
	"math"
	"time"

	"github.com/prometheus/common/model"
)

// Optimistic-concurrency conflicts are how Kubernetes controllers work: a write from a read that
// another writer has overtaken is answered 409 Conflict, the reconcile returns the error and
// controller-runtime requeues the object, and the next reconcile, on a fresh read, succeeds.
// controller_runtime_reconcile_total counts each of those reconciles as result="error", like a
// real failure. The error ratio that ReconcileErrors and the SLO burn alerts read therefore leaves
// out the errors the controller's own client saw conflicts for: client-go counts every answer by
// status code (rest_client_requests_total{code="409"}), per process, with or without the audit
// exporter.
//
// client-go's metric has no controller label: a workload's conflicts are subtracted from the
// errors of each of its controllers, down to zero, not shared among them. A controller whose errors
// are all conflicts then counts none, whatever the other controllers of its process do; a
// controller with real errors in a process whose other controllers conflict loses at most the
// process's conflict rate from its error rate. A conflict storm is not an error storm any more:
// LoopwatchConflictStorm (the audit exporter's conflicts per actor) pages it.

// conflictMatchers select client-go's conflict answers: 409 to writes other than creates (a
// create answered 409 is AlreadyExists, not a conflict; the audit exporter counts the same way).
var conflictMatchers = []string{`code="409"`, `method!="POST"`}

// conflictWindow is the window of the conflict rate, the same as the error rate's.
const conflictWindow = 5 * time.Minute

// recConflicts is each workload's rate of optimistic-concurrency conflicts, over its pods.
// client-go creates a status code's series at the first answer with that code: a pod's first
// conflict starts its series at 1, and rate() does not count that first increase (the error it
// caused is counted: controller-runtime creates the reconcile counters at zero). A series that
// has no sample 5 minutes ago is therefore counted from zero: its value over the window. That is
// what makes the first 409 of a new controller a conflict rather than an error.
var recConflicts = &Recording{
	Name: levelJob.record("rest_client_conflicts", "rate5m"),
	Expr: func(e *exprEnv) string {
		s := sel("rest_client_requests_total", append([]string{e.Selector("controller")}, conflictMatchers...)...)
		w := model.Duration(conflictWindow).String()
		return sumBy(levelJob, lines(
			"",
			"  "+rate(s, w)+" and "+s+" offset "+w,
			"  or",
			"  "+s+" / "+formatG(conflictWindow.Seconds()),
			""))
	},
	Cases: func(c *caseEnv) []ExprCase {
		pod := c.Target("controller").With("host", "10.96.0.1:443")
		other := otherReplica(pod)
		at := 20 * time.Minute
		// A pod whose first conflict came 3 minutes before `at`: its series 1, 2, 3, 4.
		fresh := Gauge("rest_client_requests_total", other.With("method", "PATCH", "code", "409"), 0).
			From(at-3*sampleInterval).Ramp(at-3*sampleInterval, 1, 1)
		return []ExprCase{
			{
				Name: "records a workload's 409 answers to updates, patches and deletes over its pods, and not a create's AlreadyExists",
				At:   at,
				Series: []*Series{
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "409"), 0.5),
					Counter("rest_client_requests_total", pod.With("method", "PATCH", "code", "409"), 0.25),
					Counter("rest_client_requests_total", other.With("method", "PUT", "code", "409"), 0.125),
					Counter("rest_client_requests_total", pod.With("method", "POST", "code", "409"), 3),
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "200"), 7),
				},
				Want: []Sample{{c.AtLevel(levelJob, pod), 0.875}},
			},
			{
				Name: "counts the conflicts of a series that appeared within the window from zero",
				At:   at,
				Series: []*Series{
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "409"), 0.5),
					fresh,
				},
				Want: []Sample{{c.AtLevel(levelJob, pod), 0.5 + 4/conflictWindow.Seconds()}},
			},
		}
	},
}

// recReconcileErrorsExceptConflicts is each controller's error rate less its workload's conflict
// rate (at least zero): the errors the error ratios count. A workload without any conflict series
// (none has happened) keeps its errors as they are.
var recReconcileErrorsExceptConflicts = &Recording{
	Name: levelController.record("controller_runtime_reconcile_error", "rate5m_except_conflicts"),
	Expr: func(e *exprEnv) string {
		return lines(
			"clamp_min(",
			"  "+recReconcileErrors.Name,
			"  - on ("+levelJob.by()+") group_left ()",
			"  "+recConflicts.Name,
			", 0)",
			"or",
			recReconcileErrors.Name)
	},
	Cases: func(c *caseEnv) []ExprCase {
		l := c.Controller().With("name", "")
		other := l.With("controller", "snapshot")
		pod := c.Target("controller").With("host", "10.96.0.1:443")
		at := 10 * time.Minute
		return []ExprCase{
			{
				Name: "leaves out the errors of the workload's conflicts",
				At:   at,
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1),
					Counter("controller_runtime_reconcile_total", l.With("result", "success"), 4),
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "409"), 0.25),
				},
				Want: []Sample{{c.AtLevel(levelController, l), 0.75}},
			},
			{
				Name: "records no less than zero, for each controller of a workload whose conflicts outnumber its errors",
				At:   at,
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "error"), 0.25),
					Counter("controller_runtime_reconcile_total", other.With("result", "error"), 0.5),
					Counter("rest_client_requests_total", pod.With("method", "PATCH", "code", "409"), 1),
				},
				Want: []Sample{{c.AtLevel(levelController, l), 0}, {c.AtLevel(levelController, other), 0}},
			},
			{
				Name: "keeps the errors of a workload without conflicts",
				At:   at,
				Series: []*Series{
					Counter("controller_runtime_reconcile_total", l.With("result", "error"), 1),
					Counter("rest_client_requests_total", pod.With("method", "PUT", "code", "200"), 3),
				},
				Want: []Sample{{c.AtLevel(levelController, l), 1}},
			},
		}
	},
}

// isConflictSeries reports whether s is a series recConflicts reads.
func isConflictSeries(s *Series) bool {
	return s.Metric == "rest_client_requests_total" && s.Labels["code"] == "409" && s.Labels["method"] != "POST"
}

// conflictRateAt is what recConflicts records at evaluation t over series (one workload's), and
// false where it records nothing: for each conflict series with a sample 5 minutes ago its rate,
// for each other one present now its value over the window.
func conflictRateAt(series []*Series, t time.Duration) (float64, bool) {
	sum, found := 0.0, false
	for _, s := range series {
		if !isConflictSeries(s) {
			continue
		}
		if _, ok := s.lastSample(t-conflictWindow, conflictWindow); ok {
			if r, ok := s.rateAt(t, conflictWindow); ok {
				sum, found = sum+r, true
				continue
			}
		}
		if v, ok := s.lastSample(t, conflictWindow); ok {
			sum, found = sum+v/conflictWindow.Seconds(), true
		}
	}
	return sum, found
}

// exceptConflicts is recReconcileErrorsExceptConflicts of an error rate errRate (NaN: none) and
// the workload's conflicts at t.
func exceptConflicts(errRate float64, series []*Series, t time.Duration) float64 {
	if math.IsNaN(errRate) {
		return errRate
	}
	if c, ok := conflictRateAt(series, t); ok {
		return math.Max(errRate-c, 0)
	}
	return errRate
}

// lastSample is the value an instant selector reads at t with a lookback of lookback: the last
// sample in (t-lookback, t].
func (s *Series) lastSample(t, lookback time.Duration) (float64, bool) {
	if t < 0 {
		return 0, false
	}
	for ts := t - t%sampleInterval; ts > t-lookback && ts >= 0; ts -= sampleInterval {
		if v, ok := s.sampleAt(ts); ok {
			return v, true
		}
	}
	return 0, false
}
