package catalogue

// The families every controller-runtime manager serves from its metrics.Registry, as of
// controller-runtime v0.25.2 (pkg/internal/controller/metrics/metrics.go,
// pkg/internal/metrics/workqueue.go, pkg/metrics/client_go_adapter.go,
// pkg/metrics/leaderelection.go). controller_runtime_test.go checks every declaration here
// against what that version really registers. go_* and process_* families, also in that registry,
// are left out: no rule reads them.

// Reconciler families. A controller pre-creates all of them at zero when it starts (the four
// result values of controller_runtime_reconcile_total included), so their absence means the
// controller is not running or not scraped.
var (
	// ControllerRuntimeReconcileTotal has result success, error, requeue or requeue_after.
	ControllerRuntimeReconcileTotal = Metric{
		Name: "controller_runtime_reconcile_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of reconciliations per controller",
		Labels: []string{LabelController, "result"},
	}
	// ControllerRuntimeReconcileErrorsTotal also counts terminal errors: the same branch
	// increments it and result="error".
	ControllerRuntimeReconcileErrorsTotal = Metric{
		Name: "controller_runtime_reconcile_errors_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of reconciliation errors per controller",
		Labels: []string{LabelController},
	}
	// ControllerRuntimeTerminalReconcileErrorsTotal counts errors wrapping
	// reconcile.TerminalError: their requests are not requeued.
	ControllerRuntimeTerminalReconcileErrorsTotal = Metric{
		Name: "controller_runtime_terminal_reconcile_errors_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of terminal reconciliation errors per controller",
		Labels: []string{LabelController},
	}
	ControllerRuntimeReconcilePanicsTotal = Metric{
		Name: "controller_runtime_reconcile_panics_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of reconciliation panics per controller",
		Labels: []string{LabelController},
	}
	// ControllerRuntimeReconcileTimeoutsTotal exists since v0.23.0 and only counts when the
	// ReconciliationTimeout wrapper's deadline fires.
	ControllerRuntimeReconcileTimeoutsTotal = Metric{
		Name: "controller_runtime_reconcile_timeouts_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of reconciliation timeouts per controller",
		Labels: []string{LabelController},
	}
	// ControllerRuntimeReconcileTimeSeconds is observed for every reconcile, whatever its result.
	// It is also a native histogram (factor 1.1); the classic buckets are what the rules read,
	// and an alert on a share above a bound must use one of them.
	ControllerRuntimeReconcileTimeSeconds = Metric{
		Name: "controller_runtime_reconcile_time_seconds", Type: Histogram, Source: SourceControllerRuntime,
		Help:   "Length of time per reconciliation per controller",
		Labels: []string{LabelController},
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
			1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
	}
	// ControllerRuntimeMaxConcurrentReconciles is MaxConcurrentReconciles (default 1).
	ControllerRuntimeMaxConcurrentReconciles = Metric{
		Name: "controller_runtime_max_concurrent_reconciles", Type: Gauge, Source: SourceControllerRuntime,
		Help:   "Maximum number of concurrent reconciles per controller",
		Labels: []string{LabelController},
	}
	ControllerRuntimeActiveWorkers = Metric{
		Name: "controller_runtime_active_workers", Type: Gauge, Source: SourceControllerRuntime,
		Help:   "Number of currently used workers per controller",
		Labels: []string{LabelController},
	}
)

// workqueueLabels: controller-runtime sets both name and controller to the controller's name on
// every workqueue series (kube-controller-manager's queues have name only).
var workqueueLabels = []string{"name", LabelController}

// workqueueDurationBuckets are prometheus.ExponentialBuckets(10e-9, 10, 12), computed the way
// client_golang computes them: by repeated multiplication, so the fourth and fifth bounds are
// 9.999999999999999e-06 and 9.999999999999999e-05, not 1e-05 and 1e-04, and that is the `le`
// a scrape carries.
var workqueueDurationBuckets = exponentialBuckets(10e-9, 10, 12)

// Workqueue families. With the priority queue (the default since v0.23.0) depth and adds count
// only items that are ready: an item waiting on RequeueAfter or on backoff is not in them.
var (
	// WorkqueueDepth has a priority label since v0.21.0: "" with the legacy client-go queue
	// (Prometheus treats an empty value as no label), the item priority with the priority queue
	// ("0" by default, "-100" for handler.LowPriority, "exceeded_cardinality_limit" past 25
	// distinct values).
	WorkqueueDepth = Metric{
		Name: "workqueue_depth", Type: Gauge, Source: SourceControllerRuntime,
		Help:   "Current depth of workqueue by workqueue and priority",
		Labels: []string{"name", LabelController, "priority"},
	}
	WorkqueueAddsTotal = Metric{
		Name: "workqueue_adds_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of adds handled by workqueue",
		Labels: workqueueLabels,
	}
	WorkqueueQueueDurationSeconds = Metric{
		Name: "workqueue_queue_duration_seconds", Type: Histogram, Source: SourceControllerRuntime,
		Help:    "How long in seconds an item stays in workqueue before being requested",
		Labels:  workqueueLabels,
		Buckets: workqueueDurationBuckets,
	}
	WorkqueueWorkDurationSeconds = Metric{
		Name: "workqueue_work_duration_seconds", Type: Histogram, Source: SourceControllerRuntime,
		Help:    "How long in seconds processing an item from workqueue takes.",
		Labels:  workqueueLabels,
		Buckets: workqueueDurationBuckets,
	}
	// WorkqueueUnfinishedWorkSeconds and WorkqueueLongestRunningProcessorSeconds are refreshed
	// every 500 ms.
	WorkqueueUnfinishedWorkSeconds = Metric{
		Name: "workqueue_unfinished_work_seconds", Type: Gauge, Source: SourceControllerRuntime,
		Help:   "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		Labels: workqueueLabels,
	}
	WorkqueueLongestRunningProcessorSeconds = Metric{
		Name: "workqueue_longest_running_processor_seconds", Type: Gauge, Source: SourceControllerRuntime,
		Help:   "How many seconds has the longest running processor for workqueue been running.",
		Labels: workqueueLabels,
	}
	// WorkqueueRetriesTotal counts every add with a delay, RequeueAfter included: it is not an
	// error counter.
	WorkqueueRetriesTotal = Metric{
		Name: "workqueue_retries_total", Type: Counter, Source: SourceControllerRuntime,
		Help:   "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
		Labels: workqueueLabels,
	}
)

// RESTClientRequestsTotal is the only client-go REST family controller-runtime registers by
// default. It has no controller, resource or namespace label: a rate from it is per process.
// method is the upper-case HTTP method; code is the status code, or "<error>" when there was no
// response.
var RESTClientRequestsTotal = Metric{
	Name: "rest_client_requests_total", Type: Counter, Source: SourceClientGo,
	Help:   "Number of HTTP requests, partitioned by status code, method, and host.",
	Labels: []string{"code", "method", "host"},
}

// LeaderElectionMasterStatus is 1 on the leader and 0 on the others; name is the manager's
// LeaderElectionID. It exists only when leader election is enabled.
var LeaderElectionMasterStatus = Metric{
	Name: "leader_election_master_status", Type: Gauge, Source: SourceControllerRuntime,
	Help:   "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
	Labels: []string{"name"},
}

var controllerRuntimeMetrics = []Metric{
	ControllerRuntimeReconcileTotal, ControllerRuntimeReconcileErrorsTotal,
	ControllerRuntimeTerminalReconcileErrorsTotal, ControllerRuntimeReconcilePanicsTotal,
	ControllerRuntimeReconcileTimeoutsTotal, ControllerRuntimeReconcileTimeSeconds,
	ControllerRuntimeMaxConcurrentReconciles, ControllerRuntimeActiveWorkers,
	WorkqueueDepth, WorkqueueAddsTotal, WorkqueueQueueDurationSeconds, WorkqueueWorkDurationSeconds,
	WorkqueueUnfinishedWorkSeconds, WorkqueueLongestRunningProcessorSeconds, WorkqueueRetriesTotal,
	RESTClientRequestsTotal, LeaderElectionMasterStatus,
}

// exponentialBuckets returns count bounds starting at start, each factor times the previous one,
// with client_golang's arithmetic so the bounds are bit for bit the ones it exposes.
func exponentialBuckets(start, factor float64, count int) []float64 {
	out := make([]float64, count)
	for i := range out {
		out[i] = start
		start *= factor
	}
	return out
}
