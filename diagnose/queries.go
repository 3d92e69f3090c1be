package diagnose

import (
	"strings"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// rateWindow is the window of every rate the playbook computes itself, the one the recording
// rules use.
const rateWindow = "5m"

// queries builds the playbook's own PromQL, for context the alerts do not compare, from the same
// config as the rules (selectors, cluster label) and the catalogue's metric names.
type queries struct{ cfg gen.Config }

// controllerLevel returns the labels of one controller, plus extra.
func (q queries) controllerLevel(extra ...string) []string {
	return append(gen.ControllerLabels(q.cfg), extra...)
}

// sel returns metric{selector, matchers...}.
func sel(metric, selector string, matchers ...string) string {
	ms := append([]string{selector}, matchers...)
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

func aggregate(op string, by []string, expr string) string {
	return op + " by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

func rate(series string) string { return "rate(" + series + "[" + rateWindow + "])" }

// hasController keeps controller-runtime's queues: other components' workqueue_* series have a
// name label but no controller.
const hasController = catalogue.LabelController + `!=""`

func (q queries) controllerSeries(m catalogue.Metric, suffix string, matchers ...string) string {
	return sel(m.Name+suffix, q.cfg.Selectors.Controller, matchers...)
}

func (q queries) depthByPriority() signalSpec {
	return signalSpec{name: "queue depth by priority", unit: UnitCount,
		query: aggregate("sum", q.controllerLevel("priority"), q.controllerSeries(catalogue.WorkqueueDepth, "", hasController))}
}

func (q queries) workersBusy() signalSpec {
	l := q.controllerLevel()
	return signalSpec{name: "share of workers busy", unit: UnitRatio,
		query: aggregate("sum", l, q.controllerSeries(catalogue.ControllerRuntimeActiveWorkers, "")) + " / " +
			aggregate("sum", l, q.controllerSeries(catalogue.ControllerRuntimeMaxConcurrentReconciles, ""))}
}

func (q queries) meanReconcile() signalSpec {
	l := q.controllerLevel()
	m := catalogue.ControllerRuntimeReconcileTimeSeconds
	return signalSpec{name: "mean reconcile time", unit: UnitSeconds,
		query: aggregate("sum", l, rate(q.controllerSeries(m, "_sum"))) + " / (" +
			aggregate("sum", l, rate(q.controllerSeries(m, "_count"))) + " > 0)"}
}

func (q queries) unfinishedWork() signalSpec {
	return signalSpec{name: "work in progress not yet finished", unit: UnitSeconds,
		query: aggregate("max", q.controllerLevel(), q.controllerSeries(catalogue.WorkqueueUnfinishedWorkSeconds, "", hasController))}
}

func (q queries) reconcileRate() signalSpec {
	return signalSpec{name: "reconciles of the controller", unit: UnitPerSecond,
		query: aggregate("sum", q.controllerLevel(), rate(q.controllerSeries(catalogue.ControllerRuntimeReconcileTotal, "")))}
}

func (q queries) reconcilesByResult() signalSpec {
	return signalSpec{name: "reconciles by result", unit: UnitPerSecond,
		query: aggregate("sum", q.controllerLevel("result"), rate(q.controllerSeries(catalogue.ControllerRuntimeReconcileTotal, "")))}
}

// retries counts every delayed add: the back-off after an error and every RequeueAfter alike, so
// it is shown beside the results, never read as an error rate.
func (q queries) retries() signalSpec {
	return signalSpec{name: "delayed requeues (error back-off and RequeueAfter)", unit: UnitPerSecond,
		query: aggregate("sum", q.controllerLevel(), rate(q.controllerSeries(catalogue.WorkqueueRetriesTotal, "", hasController)))}
}

func (q queries) writesByVerb() signalSpec {
	return signalSpec{name: "writes by verb (instrumented)", unit: UnitPerSecond,
		query: aggregate("sum", q.controllerLevel(catalogue.LabelVerb), rate(q.controllerSeries(catalogue.ControllerAPIRequestsTotal, "", catalogue.LabelAccess+`="write"`)))}
}

func (q queries) callsPerReconcileByVerb() signalSpec {
	l := q.controllerLevel()
	return signalSpec{name: "API calls per reconcile by verb (instrumented)", unit: UnitCount,
		query: aggregate("sum", q.controllerLevel(catalogue.LabelVerb), rate(q.controllerSeries(catalogue.ControllerAPIRequestsTotal, ""))) +
			" / on (" + strings.Join(l, ", ") + ") group_left () (" +
			aggregate("sum", l, rate(q.controllerSeries(catalogue.ControllerRuntimeReconcileTotal, ""))) + " > 0)"}
}

func (q queries) requestsByMethod() signalSpec {
	return signalSpec{name: "client requests of the pod by method", unit: UnitPerSecond,
		query: aggregate("sum", append(gen.JobLabels(q.cfg), "pod", "method"), rate(q.controllerSeries(catalogue.RESTClientRequestsTotal, "")))}
}

func (q queries) auditLevel(labels ...string) []string {
	return append([]string{q.cfg.ClusterLabel}, labels...)
}

func (q queries) handoffs() signalSpec {
	return signalSpec{name: "handoffs between actors", unit: UnitPerSecond,
		query: aggregate("sum", q.auditLevel("from_actor", "to_actor", catalogue.LabelGroup, catalogue.LabelResource),
			rate(sel(catalogue.AuditHandoffsTotal.Name, q.cfg.Selectors.Exporter)))}
}

func (q queries) writesByActor() signalSpec {
	return signalSpec{name: "writes by actor", unit: UnitPerSecond,
		query: aggregate("sum", q.auditLevel(catalogue.LabelActor, catalogue.LabelGroup, catalogue.LabelResource),
			rate(sel(catalogue.AuditWritesTotal.Name, q.cfg.Selectors.Exporter)))}
}

func (q queries) conflicts() signalSpec {
	return signalSpec{name: "409 Conflict answers to the actor", unit: UnitPerSecond,
		query: aggregate("sum", q.auditLevel(catalogue.LabelActor, catalogue.LabelGroup, catalogue.LabelResource),
			rate(sel(catalogue.AuditConflictsTotal.Name, q.cfg.Selectors.Exporter)))}
}

// activity is what makes one controller of a workload "the busiest": the API calls its
// instrumented client makes where it is instrumented, its reconciles otherwise.
func (q queries) activity() (calls, reconciles string) {
	l := q.controllerLevel()
	return aggregate("sum", l, rate(q.controllerSeries(catalogue.ControllerAPIRequestsTotal, ""))),
		aggregate("sum", l, rate(q.controllerSeries(catalogue.ControllerRuntimeReconcileTotal, "")))
}

// coverage returns the query counting, per level, the samples of family m in the window: a
// family with fewer than two samples for a controller cannot give it a rate.
func (q queries) coverage(m catalogue.Metric, window string) string {
	name := m.Name
	if m.Type == catalogue.Histogram {
		name += "_count"
	}
	var s string
	var by []string
	switch {
	case m.Source == catalogue.SourceExporter:
		s, by = sel(name, q.cfg.Selectors.Exporter), []string{q.cfg.ClusterLabel}
	case hasLabel(m, catalogue.LabelController):
		matchers := []string{}
		if strings.HasPrefix(m.Name, "workqueue_") {
			matchers = append(matchers, hasController)
		}
		s, by = sel(name, q.cfg.Selectors.Controller, matchers...), q.controllerLevel()
	default:
		s, by = sel(name, q.cfg.Selectors.Controller), gen.JobLabels(q.cfg)
	}
	return aggregate("max", by, "count_over_time("+s+"["+window+"])")
}

// reporting is the controllers whose reconcile counter Prometheus has at the query's instant:
// a target that stopped answering, or went away, has its series marked stale at its next scrape
// and drops out.
func (q queries) reporting() string {
	return aggregate("count", q.controllerLevel(), sel(catalogue.ControllerRuntimeReconcileTotal.Name, q.cfg.Selectors.Controller))
}

// podJobs is, per pod that runs controllers in the window, the workload that scrapes it: what an
// audit actor's pod is joined with.
func (q queries) podJobs(window string) string {
	return aggregate("count", append(gen.JobLabels(q.cfg), "pod"),
		"count_over_time("+sel(catalogue.ControllerRuntimeReconcileTotal.Name, q.cfg.Selectors.Controller, `pod!=""`)+"["+window+"])")
}

// actorPods is, per audit actor, the pods its offending writes came from in the window: the
// actor_pod of the hot-object and replica-race gauges, and of each side of the fight gauge.
func (q queries) actorPods(window string) string {
	by := []string{q.cfg.ClusterLabel, catalogue.LabelActor, catalogue.LabelActorPod}
	over := func(m catalogue.Metric, podLabel string) string {
		return "count_over_time(" + sel(m.Name, q.cfg.Selectors.Exporter, podLabel+`!=""`) + "[" + window + "])"
	}
	side := func(suffix string) string {
		return aggregate("count", by, `label_replace(label_replace(`+over(catalogue.AuditFightHandoffs, catalogue.LabelActorPod+suffix)+
			`, "`+catalogue.LabelActor+`", "$1", "actor`+suffix+`", "(.*)"), "`+catalogue.LabelActorPod+`", "$1", "`+catalogue.LabelActorPod+suffix+`", "(.*)")`)
	}
	return strings.Join([]string{
		aggregate("count", by, over(catalogue.AuditHotObjectWritesPerSecond, catalogue.LabelActorPod)),
		aggregate("count", by, over(catalogue.AuditReplicaRacePods, catalogue.LabelActorPod)),
		side("_a"), side("_b"),
	}, " or ")
}

// serviceAccountPods is, per service account, the pods kube-state-metrics says run as it in the
// window. Any job's: kube-state-metrics is scraped under a job of its own.
func (q queries) serviceAccountPods(window string) string {
	return aggregate("count", []string{q.cfg.ClusterLabel, "namespace", "service_account", "pod"},
		"count_over_time("+catalogue.KubePodServiceAccount.Name+`{pod!=""}[`+window+"])")
}

func hasLabel(m catalogue.Metric, label string) bool {
	for _, l := range m.Labels {
		if l == label {
			return true
		}
	}
	return false
}
