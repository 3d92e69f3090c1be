package diagnose

import (
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// check is one step of the playbook: the failure one of loopwatch's alerts catches, read the
// way the alert reads it (its own expression, see conditions), with what the playbook adds: the
// names of the numbers, context the alert does not compare, how a finding is tied to a
// controller and which other failures it explains. What to do next is the alert's own
// (gen.Alert.NextStep), the text its annotation and runbook carry too.
type check struct {
	alert *gen.Alert
	// signals name the signals of the alert's conditions, in the order conditions finds them.
	signals []signalSpec
	// extras are context signals the alert does not compare but the reader needs.
	extras func(q queries) []signalSpec
	// scope says how a finding without a controller label and without an audit actor is tied to
	// controllers.
	scope attribution
	// gap marks a monitoring gap (metrics missing, audit pipeline broken) rather than a failure of
	// the controller: it is listed (role gap), the checks it blinds say so, and the verdict comes
	// from the checks that ran.
	gap bool
	// blinds are the checks a gap keeps from running for the controllers it holds for, and
	// reason says why in a few words.
	blinds []*gen.Alert
	reason string
	// needs are the metric families the check reads: without them it cannot run for a
	// controller (no-data), or has nothing to look at when optional (not-applicable).
	needs    []catalogue.Metric
	optional bool
}

// signalSpec names one signal.
type signalSpec struct {
	name string
	unit Unit
	// headline signals are shown among a controller's key numbers whatever its verdict.
	headline bool
	// query is set for extra signals; the alert's own signals come from its expression.
	query string
}

// attribution is how a finding is tied to controllers.
type attribution string

const (
	// byController: the series names the controller.
	byController attribution = "controller"
	// byProcess: a per-pod signal (client-go's metrics have no controller label), given to the
	// busiest controller of the workload.
	byProcess attribution = "process"
	// byWorkload: every controller of the workload (a leader election affects them all).
	byWorkload attribution = "workload"
	// byActor: an audit actor (a service account) matched to a workload, and the object's
	// resource to the controller that reconciles it.
	byActor attribution = "actor"
	// byNone: report-level (the audit pipeline, a target without controller metrics).
	byNone attribution = "none"
)

// checks is the playbook: one check per loopwatch alert (TestEveryAlertHasOneCheck), the
// hand-written ones (playbook) and a derived one for every other alert (derivedCheck), so that
// adding an alert needs nothing here for diagnose to judge it.
func checks() []*check { return withDerived(handWritten(), gen.Alerts()) }

// handWritten returns the playbook's hand-written checks; tests replace it to try an alert
// without one.
var handWritten = playbook

// withDerived returns the hand-written checks followed by a derived check for every alert of
// alerts that has none.
func withDerived(hand []*check, alerts []*gen.Alert) []*check {
	out := hand
	for _, a := range alerts {
		if !slices.ContainsFunc(hand, func(c *check) bool { return c.alert == a }) {
			out = append(out, derivedCheck(a))
		}
	}
	return out
}

// derivedCheck is the check of an alert without a hand-written one, derived from its
// declaration: its signals are named from its expression's comparisons (derivedSignals), its
// scope from the labels of its level, and it needs the catalogued families its expression reads
// through the recording rules (gen.Model.Families). It is optional: a controller without those
// series is not applicable rather than unchecked, since nothing says the alert concerns every
// controller. A hand-written check adds context signals, headline numbers, gaps and better names.
func derivedCheck(a *gen.Alert) *check {
	c := &check{alert: a, scope: scopeOf(a.LabelNames(gen.Default())), optional: true}
	if m, err := defaultModel(); err == nil {
		if fams, ok, err := m.Families(a); ok && err == nil {
			c.needs = fams
		}
	}
	return c
}

// defaultModel is the model of the default config, built once: what an alert reads does not
// depend on the config (only its selectors and thresholds do).
var defaultModel = sync.OnceValues(func() (*gen.Model, error) { return gen.Build(gen.Default()) })

// scopeOf ties a derived check's findings to controllers by the labels its alert carries.
func scopeOf(labels []string) attribution {
	switch {
	case slices.Contains(labels, "controller"):
		return byController
	case slices.Contains(labels, "actor"), slices.Contains(labels, "actor_a"):
		return byActor
	case slices.Contains(labels, "pod"):
		return byProcess
	case slices.Contains(labels, "job") && slices.Contains(labels, "namespace"):
		return byWorkload
	}
	return byNone
}

// derivedSignals names the signals of a check that names none: each compared expression by the
// metric or recording rule it reads when it reads one, else by its PromQL (the evidence shows
// the query either way), with a unit guessed from that name.
func derivedSignals(conds []condition) []signalSpec {
	var out []signalSpec
	for _, cond := range conds {
		for _, s := range cond.signals {
			name := oneLine(s)
			if e, err := promqlParser.ParseExpr(s); err == nil {
				var read []string
				parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(read, vs.Name) {
						read = append(read, vs.Name)
					}
					return nil
				})
				if len(read) == 1 {
					name = read[0]
				}
			}
			if len(name) > 120 {
				name = name[:117] + "..."
			}
			out = append(out, signalSpec{name: name, unit: guessUnit(name)})
		}
	}
	return out
}

// guessUnit reads a signal's unit from the conventions of its name: ratios and shares, rates
// (a recording rule's :rate5m, a rate() call), seconds; anything else is a count.
func guessUnit(name string) Unit {
	switch {
	case strings.Contains(name, "ratio"), strings.Contains(name, "share"):
		return UnitRatio
	case strings.Contains(name, ":rate"), strings.Contains(name, "rate("):
		return UnitPerSecond
	case strings.Contains(name, "seconds"):
		return UnitSeconds
	}
	return UnitCount
}

// playbook returns the hand-written checks.
func playbook() []*check {
	return []*check{
		{
			alert: gen.QueueBacklog,
			signals: []signalSpec{
				{name: "queue depth (ready items)", unit: UnitCount, headline: true},
				{name: "adds", unit: UnitPerSecond, headline: true},
				{name: "completions", unit: UnitPerSecond, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.depthByPriority(), q.workersBusy()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.WorkqueueDepth, catalogue.WorkqueueAddsTotal, catalogue.WorkqueueWorkDurationSeconds},
		},
		{
			alert: gen.QueueWaitHigh,
			signals: []signalSpec{
				{name: "share of items that waited longer than the bucket", unit: UnitRatio},
				{name: "normal-priority queue depth", unit: UnitCount},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.depthByPriority(), q.workersBusy()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.WorkqueueQueueDurationSeconds, catalogue.WorkqueueDepth},
		},
		{
			alert: gen.ReconcileSlow,
			signals: []signalSpec{
				{name: "share of reconciles slower than the bucket", unit: UnitRatio, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.meanReconcile(), q.workersBusy()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTimeSeconds},
		},
		{
			alert: gen.ProcessorStuck,
			signals: []signalSpec{
				{name: "longest running reconcile", unit: UnitSeconds, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.unfinishedWork(), q.workersBusy()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.WorkqueueLongestRunningProcessorSeconds},
		},
		{
			alert: gen.ReconcileErrors,
			signals: []signalSpec{
				{name: "share of reconciles returning an error", unit: UnitRatio, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.reconcilesByResult(), q.retries()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.ReconcilePanics,
			signals: []signalSpec{
				{name: "panics in 10 minutes", unit: UnitCount, headline: true},
			},
			extras:   func(q queries) []signalSpec { return []signalSpec{q.reconcilesByResult()} },
			scope:    byController,
			needs:    []catalogue.Metric{catalogue.ControllerRuntimeReconcilePanicsTotal},
			optional: true,
		},
		{
			alert: gen.PatchRateHigh,
			signals: []signalSpec{
				{name: "PATCH requests of the pod", unit: UnitPerSecond, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.reconcileRate()} },
			scope:  byProcess,
			needs:  []catalogue.Metric{catalogue.RESTClientRequestsTotal},
		},
		{
			alert: gen.HotLoop,
			signals: []signalSpec{
				// Without the audit exporter: a self-triggered loop is also a high write rate.
				{name: "reconciles", unit: UnitPerSecond, headline: true},
				{name: "writes per reconcile", unit: UnitCount, headline: true},
				{name: "writes (the controller's where instrumented, else its whole pod's)", unit: UnitPerSecond, headline: true},
				// With the audit exporter: a hot object written by the controller's namespace.
				{name: "reconciles", unit: UnitPerSecond},
				{name: "writes per reconcile", unit: UnitCount},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.writesByVerb()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal, catalogue.ControllerRuntimeReconcileTimeSeconds, catalogue.RESTClientRequestsTotal},
		},
		{
			alert: gen.APICallsPerReconcileHigh,
			signals: []signalSpec{
				{name: "API calls per reconcile (instrumented)", unit: UnitCount, headline: true},
				{name: "client requests per reconcile (whole pod)", unit: UnitCount, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.callsPerReconcileByVerb(), q.requestsByMethod()} },
			scope:  byProcess,
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal, catalogue.RESTClientRequestsTotal},
		},
		{
			alert: gen.FinalizerStuck,
			signals: []signalSpec{
				{name: "oldest object waiting on the finalizer", unit: UnitSeconds},
			},
			scope:    byController,
			needs:    []catalogue.Metric{catalogue.ControllerFinalizerOldestPendingSeconds},
			optional: true,
		},
		{
			alert: gen.WorkqueueMetricsMissing,
			signals: []signalSpec{
				{name: "reconcile series of the pod without any workqueue series", unit: UnitCount},
			},
			scope:  byController,
			gap:    true,
			blinds: []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck},
			reason: "its process serves no workqueue series: another workqueue metrics provider registered first",
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.WorkqueueControllerLabelMissing,
			signals: []signalSpec{
				{name: "controllers of the job whose workqueue series lack the controller label", unit: UnitCount},
			},
			scope:  byWorkload,
			gap:    true,
			blinds: []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.ProcessorStuck},
			reason: "its workqueue series carry no controller label, as with controller-runtime v0.18 or older",
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.ClassicHistogramsMissing,
			signals: []signalSpec{
				{name: "native reconcile-time histograms of the job without classic series", unit: UnitCount},
			},
			scope:  byWorkload,
			gap:    true,
			blinds: []*gen.Alert{gen.ReconcileSlow, gen.QueueWaitHigh, gen.QueueBacklog},
			reason: "Prometheus keeps its histograms as native histograms only, without the classic series",
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.MaxConcurrentReconcilesMissing,
			signals: []signalSpec{
				{name: "controllers of the job with reconcile series and no controller_runtime_max_concurrent_reconciles", unit: UnitCount},
			},
			scope:  byWorkload,
			gap:    true,
			blinds: []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh, gen.WorkqueueMetricsMissing, gen.WorkqueueControllerLabelMissing},
			reason: "its scrape drops controller_runtime_max_concurrent_reconciles",
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.ControllerMetricsMissing,
			signals: []signalSpec{
				{name: "target up", unit: UnitCount},
				{name: "time since its job last exported controller metrics", unit: UnitSeconds},
			},
			scope: byNone,
			gap:   true,
		},
		{
			alert: gen.LeaderMissing,
			signals: []signalSpec{
				{name: "replicas holding the lease", unit: UnitCount},
			},
			scope:    byWorkload,
			needs:    []catalogue.Metric{catalogue.LeaderElectionMasterStatus},
			optional: true,
		},
		{
			alert: gen.LeaderMultiple,
			signals: []signalSpec{
				{name: "replicas holding the lease", unit: UnitCount},
			},
			scope:    byWorkload,
			needs:    []catalogue.Metric{catalogue.LeaderElectionMasterStatus},
			optional: true,
		},
		{
			alert: gen.LeaderFlapping,
			signals: []signalSpec{
				{name: "leader changes in the last hour", unit: UnitCount},
			},
			scope:    byWorkload,
			needs:    []catalogue.Metric{catalogue.LeaderElectionMasterStatus},
			optional: true,
		},
		{
			alert: gen.ErrorBudgetBurnFast,
			signals: []signalSpec{
				{name: "error ratio over 5m", unit: UnitRatio}, {name: "error ratio over 1h", unit: UnitRatio},
				{name: "failed reconciles over 1h", unit: UnitCount},
				{name: "error ratio over 30m", unit: UnitRatio}, {name: "error ratio over 6h", unit: UnitRatio},
				{name: "failed reconciles over 6h", unit: UnitCount},
			},
			scope: byController,
			needs: []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.ErrorBudgetBurnSlow,
			signals: []signalSpec{
				{name: "error ratio over 2h", unit: UnitRatio}, {name: "error ratio over 1d", unit: UnitRatio},
				{name: "failed reconciles over 1d", unit: UnitCount},
				{name: "error ratio over 6h", unit: UnitRatio}, {name: "error ratio over 3d", unit: UnitRatio},
				{name: "failed reconciles over 3d", unit: UnitCount},
			},
			scope: byController,
			needs: []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
		},
		{
			alert: gen.WriteFight,
			signals: []signalSpec{
				{name: "handoffs between the two actors in the fight window", unit: UnitCount},
			},
			extras:   func(q queries) []signalSpec { return []signalSpec{q.handoffs(), q.writesByActor()} },
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
		},
		{
			alert: gen.HotObject,
			signals: []signalSpec{
				{name: "writes of the actor to the object", unit: UnitPerSecond},
			},
			extras:   func(q queries) []signalSpec { return []signalSpec{q.writesByActor()} },
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
		},
		{
			alert: gen.ReplicaRace,
			signals: []signalSpec{
				{name: "pods of the actor writing the object", unit: UnitCount},
			},
			extras:   func(q queries) []signalSpec { return []signalSpec{q.conflicts()} },
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
		},
		{
			alert: gen.ConflictStorm,
			signals: []signalSpec{
				{name: "409 Conflict answers", unit: UnitPerSecond},
			},
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
		},
		{
			alert: gen.RelistStorm,
			signals: []signalSpec{
				{name: "lists", unit: UnitPerSecond},
			},
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
		},
		{
			alert: gen.AuditExporterNotReceiving,
			signals: []signalSpec{
				{name: "audit batches received", unit: UnitPerSecond},
				{name: "exporter up", unit: UnitCount},
			},
			scope: byNone,
			gap:   true,
		},
		{
			alert: gen.AuditExporterDropping,
			signals: []signalSpec{
				{name: "rejected webhook requests", unit: UnitPerSecond},
				{name: "dropped events", unit: UnitPerSecond},
				{name: "rejected managed-cluster source deliveries", unit: UnitPerSecond},
				{name: "managed-cluster source records lost", unit: UnitPerSecond},
			},
			scope: byNone,
			gap:   true,
		},
		{
			alert: gen.AuditWebhookErrors,
			signals: []signalSpec{
				{name: "audit events the API server failed to deliver", unit: UnitPerSecond},
			},
			scope: byNone,
			gap:   true,
		},
		{
			alert: gen.APFRequestsRejected,
			signals: []signalSpec{
				{name: "share of the FlowSchema's requests rejected with 429", unit: UnitRatio},
			},
			scope:    byNone,
			needs:    []catalogue.Metric{catalogue.APIServerFlowcontrolDispatchedRequestsTotal},
			optional: true,
		},
		{
			alert: gen.APFQueueWaitHigh,
			signals: []signalSpec{
				{name: "share of the FlowSchema's requests that waited longer than the bucket", unit: UnitRatio},
			},
			scope:    byNone,
			needs:    []catalogue.Metric{catalogue.APIServerFlowcontrolRequestWaitDurationSeconds},
			optional: true,
		},
		{
			alert: gen.APFRequestRateHigh,
			signals: []signalSpec{
				{name: "requests executed for the FlowSchema", unit: UnitPerSecond},
			},
			scope:    byNone,
			needs:    []catalogue.Metric{catalogue.APIServerFlowcontrolDispatchedRequestsTotal},
			optional: true,
		},
	}
}

// nextStep is the alert's next step filled with a finding's labels.
func (c *check) nextStep(labels map[string]string) string { return c.alert.FillNextStep(labels) }

// Symptoms are the failures that alert a causes when both hold, as diagnose ranks them (the
// relation is gen's, declared once: see gen.Symptoms).
func Symptoms(a *gen.Alert) []*gen.Alert { return gen.Symptoms(a) }

// explainsAlert reports whether c's failure explains a's (gen.Symptoms).
func (c *check) explainsAlert(a *gen.Alert) bool { return slices.Contains(gen.Symptoms(c.alert), a) }
