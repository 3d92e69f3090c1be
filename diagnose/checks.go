package diagnose

import (
	"slices"
	"strings"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// check is one step of the playbook: the failure one of loopwatch's alerts catches, read the
// way the alert reads it (its own expression, see conditions), with what the playbook adds: the
// names of the numbers, context the alert does not compare, how a finding is tied to a
// controller, which other failures it explains, and what to do next.
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
	// next is the next step; <label> is replaced by the finding's label value.
	next string
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

// checks is the playbook: one check per loopwatch alert (TestEveryAlertHasACheck).
func checks() []*check {
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
			next:   "Find why completions lag behind adds: the causes listed with this one, else saturated workers (raise MaxConcurrentReconciles when reconciles wait on I/O) or a burst of adds (predicates such as GenerationChangedPredicate keep metadata churn out).",
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
			next:   "Items wait behind others: when priority -100 items (initial list, resync) fill the queue this is a startup or resync storm; otherwise add workers or make reconciles faster.",
		},
		{
			alert: gen.ReconcileSlow,
			signals: []signalSpec{
				{name: "share of reconciles slower than the bucket", unit: UnitRatio, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.meanReconcile(), q.workersBusy()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTimeSeconds},
			next:   "Find the slow call: put timeouts on calls to external systems, read from the informer cache with field indexes instead of the API server, and compare with the API calls per reconcile.",
		},
		{
			alert: gen.ProcessorStuck,
			signals: []signalSpec{
				{name: "longest running reconcile", unit: UnitSeconds, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.unfinishedWork(), q.workersBusy()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.WorkqueueLongestRunningProcessorSeconds},
			next:   "A worker is blocked on one item: take a goroutine dump (SIGQUIT, or /debug/pprof/goroutine?debug=2) of a pod of <namespace>/<job> and put a timeout (context.WithTimeout) on the call it waits on.",
		},
		{
			alert: gen.ReconcileErrors,
			signals: []signalSpec{
				{name: "share of reconciles returning an error", unit: UnitRatio, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.reconcilesByResult(), q.retries()} },
			scope:  byController,
			needs:  []catalogue.Metric{catalogue.ControllerRuntimeReconcileTotal},
			next:   "Read the errors: kubectl -n <namespace> logs deploy/<job> --since=15m | grep -i error. Expected waits should return ctrl.Result{RequeueAfter: d} with a nil error: those count as requeue_after, not as errors.",
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
			next:     "Read the stack trace: kubectl -n <namespace> logs deploy/<job> --since=15m | grep -A 30 -i panic. Guard the nil pointer or index the trace points at; controller-runtime retries the object with backoff until then.",
		},
		{
			alert: gen.PatchRateHigh,
			signals: []signalSpec{
				{name: "PATCH requests of the pod", unit: UnitPerSecond, headline: true},
			},
			extras: func(q queries) []signalSpec { return []signalSpec{q.reconcileRate()} },
			scope:  byProcess,
			needs:  []catalogue.Metric{catalogue.RESTClientRequestsTotal},
			next:   "Find what pod <namespace>/<pod> patches and why: the audit exporter's writes by actor name the objects. Patch only when the object differs from what it should be, and keep the controller's own writes from waking it (predicates).",
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
			next:   "Stop the controller re-triggering itself: do not write what changes on every pass (timestamps, counters, a status rebuilt each time), patch status only when it changed, and filter its own updates with GenerationChangedPredicate.",
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
			next:   "Read through the manager's cached client instead of the API server, look objects up by a field index instead of listing and filtering, and never GET per object in a loop.",
		},
		{
			alert: gen.FinalizerStuck,
			signals: []signalSpec{
				{name: "oldest object waiting on the finalizer", unit: UnitSeconds},
			},
			scope:    byController,
			needs:    []catalogue.Metric{catalogue.ControllerFinalizerOldestPendingSeconds},
			optional: true,
			next:     "Bound the clean-up finalizer <finalizer> guards with a timeout and remove the finalizer when it gives up (an orphan sweep can finish later); list the stuck objects: those with a deletionTimestamp that still carry <finalizer>.",
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
			next:   "Another workqueue metrics provider was registered before controller-runtime's (client-go's workqueue.SetProvider: the first caller wins). Remove it or let controller-runtime register first; until then queue depth, growth and wait cannot be checked.",
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
			next:   "The job's controllers are built with controller-runtime v0.18 or older, whose workqueue series carry the queue's name but no controller label. Upgrade controller-runtime to v0.19 or later, or copy name into controller for the job's workqueue_* series in its metric relabeling (the alert's runbook has the rule); until then queue depth, growth, wait and stuck workers cannot be checked.",
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
			next:   "Prometheus ingests this job's histograms as native histograms only (scrape_native_histograms or convert_classic_histograms_to_nhcb without always_scrape_classic_histograms). Set always_scrape_classic_histograms: true on its scrape configuration (scrapeClassicHistograms: true on its ServiceMonitor or PodMonitor); until then reconcile latency, queue wait and queue backlog cannot be checked.",
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
			next:   "The job's metric relabeling drops controller_runtime_max_concurrent_reconciles (a keep-list that leaves it out). Keep it (the alert's runbook has a keep-list with every metric loopwatch reads); until then queue depth, growth and wait, and the workqueue setup checks, cannot be checked.",
		},
		{
			alert: gen.ControllerMetricsMissing,
			signals: []signalSpec{
				{name: "target up", unit: UnitCount},
				{name: "time since its job last exported controller metrics", unit: UnitSeconds},
			},
			scope: byNone,
			gap:   true,
			next:  "Fetch the target's /metrics and look for controller_runtime_reconcile_total: its controllers did not start, or their metrics go to a registry the manager does not serve.",
		},
		{
			alert: gen.LeaderMissing,
			signals: []signalSpec{
				{name: "replicas holding the lease", unit: UnitCount},
			},
			scope:    byWorkload,
			needs:    []catalogue.Metric{catalogue.LeaderElectionMasterStatus},
			optional: true,
			next:     "Nothing reconciles: read the replicas' logs for lease errors and check the lease: kubectl -n <namespace> get lease <name> -o yaml.",
		},
		{
			alert: gen.LeaderMultiple,
			signals: []signalSpec{
				{name: "replicas holding the lease", unit: UnitCount},
			},
			scope:    byWorkload,
			needs:    []catalogue.Metric{catalogue.LeaderElectionMasterStatus},
			optional: true,
			next:     "Make every replica use the same lease (LeaderElectionID and LeaderElectionNamespace) and check that their clocks agree.",
		},
		{
			alert: gen.LeaderFlapping,
			signals: []signalSpec{
				{name: "leader changes in the last hour", unit: UnitCount},
			},
			scope:    byWorkload,
			needs:    []catalogue.Metric{catalogue.LeaderElectionMasterStatus},
			optional: true,
			next:     "Replicas hand the lease back and forth: look for restarts (kubectl -n <namespace> get pods), CPU throttling and slow API calls; a longer lease duration and renew deadline ride them out.",
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
			next:  "The reconcile success objective will be missed within days: find and fix the failing call (kubectl -n <namespace> logs deploy/<job> | grep -i error).",
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
			next:  "A steady share of reconciles fails: find the failing call before the month's error budget is gone (kubectl -n <namespace> logs deploy/<job> | grep -i error).",
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
			next:     "Find the field both set: kubectl get <resource> -n <object_namespace> <object_name> -o yaml --show-managed-fields. Then make one of <actor_a> and <actor_b> stop writing it, or agree on one owner.",
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
			next:     "<actor> rewrites <resource> <object_namespace>/<object_name> again and again: write only when the object differs from what it should be, and keep its own writes from waking it.",
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
			next:     "Replicas of <actor> reconcile the same objects at once: turn leader election on (all replicas sharing one lease), or run one replica.",
		},
		{
			alert: gen.ConflictStorm,
			signals: []signalSpec{
				{name: "409 Conflict answers", unit: UnitPerSecond},
			},
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
			next:     "<actor> updates <resource> from stale reads or races another writer: patch (or server-side apply) instead of update, and look for another writer of the same objects.",
		},
		{
			alert: gen.RelistStorm,
			signals: []signalSpec{
				{name: "lists", unit: UnitPerSecond},
			},
			scope:    byActor,
			needs:    []catalogue.Metric{catalogue.AuditBatchesTotal},
			optional: true,
			next:     "Find why <actor> lists <resource> so often: restarts in a loop (kubectl get pods), watches expiring with 410 Gone, or a client listing per reconcile instead of reading the cache.",
		},
		{
			alert: gen.AuditExporterNotReceiving,
			signals: []signalSpec{
				{name: "audit batches received", unit: UnitPerSecond},
				{name: "exporter up", unit: UnitCount},
			},
			scope: byNone,
			gap:   true,
			next:  "Check the API server's --audit-webhook-config-file, the webhook's client certificate and apiserver_audit_error_total: until batches arrive, write fights and replica races go unseen.",
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
			next:  "See loopwatch_audit_requests_total and loopwatch_audit_source_deliveries_total by reason: the exporter refuses or drops part of the audit stream, so fights and races may go unseen.",
		},
		{
			alert: gen.AuditWebhookErrors,
			signals: []signalSpec{
				{name: "audit events the API server failed to deliver", unit: UnitPerSecond},
			},
			scope: byNone,
			gap:   true,
			next:  "The API server drops audit events: check that the exporter is reachable from it and answers quickly.",
		},
		{
			alert: gen.APFRequestsRejected,
			signals: []signalSpec{
				{name: "share of the FlowSchema's requests rejected with 429", unit: UnitRatio},
			},
			scope:    byNone,
			needs:    []catalogue.Metric{catalogue.APIServerFlowcontrolDispatchedRequestsTotal},
			optional: true,
			next:     "The controller of FlowSchema <flow_schema> is throttled: find what it sends (its API calls per reconcile, relists, writes that re-trigger it) before giving priority level <priority_level> more seats.",
		},
		{
			alert: gen.APFQueueWaitHigh,
			signals: []signalSpec{
				{name: "share of the FlowSchema's requests that waited longer than the bucket", unit: UnitRatio},
			},
			scope:    byNone,
			needs:    []catalogue.Metric{catalogue.APIServerFlowcontrolRequestWaitDurationSeconds},
			optional: true,
			next:     "Every seat of priority level <priority_level> is busy: see which FlowSchemas fill it (apiserver_flowcontrol_dispatched_requests_total by flow_schema) and what makes <flow_schema> send more than usual.",
		},
		{
			alert: gen.APFRequestRateHigh,
			signals: []signalSpec{
				{name: "requests executed for the FlowSchema", unit: UnitPerSecond},
			},
			scope:    byNone,
			needs:    []catalogue.Metric{catalogue.APIServerFlowcontrolDispatchedRequestsTotal},
			optional: true,
			next:     "The controller of FlowSchema <flow_schema> sends many requests: read from its cache, look objects up by field index, and stop writes that re-trigger its reconciles.",
		},
	}
}

// nextStep fills a check's next step with a finding's labels.
func (c *check) nextStep(labels map[string]string) string {
	s := c.next
	for k, v := range labels {
		if v != "" {
			s = strings.ReplaceAll(s, "<"+k+">", v)
		}
	}
	return s
}

// Symptoms are the failures that alert a causes when both hold, as diagnose ranks them (the
// relation is gen's, declared once: see gen.Symptoms).
func Symptoms(a *gen.Alert) []*gen.Alert { return gen.Symptoms(a) }

// explainsAlert reports whether c's failure explains a's (gen.Symptoms).
func (c *check) explainsAlert(a *gen.Alert) bool { return slices.Contains(gen.Symptoms(c.alert), a) }
