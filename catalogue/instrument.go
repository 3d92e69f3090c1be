package catalogue

// Package instrument's families: what controller-runtime does not say per controller.
var (
	// ControllerAPIRequestsTotal is pre-created at zero for every verb when a controller is
	// instrumented, so an absent series means "not instrumented" rather than "no calls".
	ControllerAPIRequestsTotal = Metric{
		Name: "loopwatch_controller_api_requests_total", Type: Counter, Source: SourceInstrument,
		Help: "API calls made by a controller's reconciler through the instrumented client, by verb " +
			"(get, list, create, update, patch, delete, deletecollection, status_update, status_patch) and access " +
			"(read or write). Cached reads count too: the ratio to controller_runtime_reconcile_total is the calls per reconcile.",
		Labels: []string{LabelController, LabelVerb, LabelAccess},
	}
	ControllerFinalizerOldestPendingSeconds = Metric{
		Name: "loopwatch_controller_finalizer_oldest_pending_seconds", Type: Gauge, Source: SourceInstrument,
		Help: "Age in seconds of the oldest object that has a deletionTimestamp and still carries the " +
			"controller's finalizer; 0 when no object is waiting.",
		Labels: []string{LabelController, LabelFinalizer},
	}
)

var instrumentMetrics = []Metric{ControllerAPIRequestsTotal, ControllerFinalizerOldestPendingSeconds}
