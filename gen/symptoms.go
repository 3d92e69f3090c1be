package gen

// The cause/symptom relation between alerts, declared once: `loopwatch diagnose` ranks a
// controller's findings by it (a symptom is listed after the failure that explains it), and the
// Alertmanager configuration gen writes inhibits a symptom's notification while its cause fires
// for the same controller or object (see alertmanager.go).

// explanation is one failure and the failures it causes when both hold: the alerts that may fire
// beside it and describe the same incident from another signal.
type explanation struct {
	cause    *Alert
	symptoms []*Alert
}

// explanations are every cause and its symptoms. A cause never explains itself, and the relation
// has no cycle (TestSymptomsHaveNoCycle): two alerts that explained each other would silence each
// other in Alertmanager.
func explanations() []explanation {
	return []explanation{
		// A backlog makes items wait.
		{QueueBacklog, []*Alert{QueueWaitHigh}},
		// Slow reconciles drain the queue slowly.
		{ReconcileSlow, []*Alert{QueueBacklog, QueueWaitHigh}},
		// A stuck worker holds the queue and its reconcile never ends.
		{ProcessorStuck, []*Alert{QueueBacklog, QueueWaitHigh, ReconcileSlow}},
		// Failing reconciles are retried, and burn the error budget.
		{ReconcileErrors, []*Alert{QueueBacklog, QueueWaitHigh, ErrorBudgetBurnFast, ErrorBudgetBurnSlow}},
		// A panic is a failed reconcile.
		{ReconcilePanics, []*Alert{ReconcileErrors, ErrorBudgetBurnFast, ErrorBudgetBurnSlow}},
		// A hot loop patches its objects over and over and keeps its workers busy.
		{HotLoop, []*Alert{PatchRateHigh, HotObject, QueueBacklog, QueueWaitHigh}},
		// N+1 calls make reconciles slow; a client listing per reconcile relists.
		{APICallsPerReconcileHigh, []*Alert{ReconcileSlow, QueueBacklog, QueueWaitHigh, RelistStorm}},
		// Without a leader nothing reconciles.
		{LeaderMissing, []*Alert{QueueBacklog, QueueWaitHigh}},
		// Two leaders race each other.
		{LeaderMultiple, []*Alert{ReplicaRace, ConflictStorm, ReconcileErrors, PatchRateHigh, HotObject}},
		// Each new leader starts with an empty queue and lists everything again.
		{LeaderFlapping, []*Alert{LeaderMissing, QueueBacklog, QueueWaitHigh, RelistStorm}},
		// The fast burn covers the slow one.
		{ErrorBudgetBurnFast, []*Alert{ErrorBudgetBurnSlow}},
		// Each side of a fight rewrites the object, and conflicts with the other.
		{WriteFight, []*Alert{PatchRateHigh, HotLoop, HotObject, ConflictStorm, ReconcileErrors}},
		// A hot object is patched over and over.
		{HotObject, []*Alert{PatchRateHigh}},
		// Replicas racing conflict and rewrite what the other wrote.
		{ReplicaRace, []*Alert{ConflictStorm, HotObject, PatchRateHigh, ReconcileErrors, HotLoop}},
		// A conflict is a failed reconcile.
		{ConflictStorm, []*Alert{ReconcileErrors}},
		// A throttled controller's requests fail or wait.
		{APFRequestsRejected, []*Alert{ReconcileErrors, APFQueueWaitHigh}},
		{APFQueueWaitHigh, []*Alert{ReconcileSlow}},
		{APFRequestRateHigh, []*Alert{APFRequestsRejected, APFQueueWaitHigh}},
	}
}

// Symptoms are the failures that alert a causes when both hold: the alerts that may fire beside
// a and describe the same incident from another signal (a hot loop keeps its workers busy, so
// items wait in the queue). A copy; nil for an alert that explains nothing.
func Symptoms(a *Alert) []*Alert {
	for _, e := range explanations() {
		if e.cause == a {
			return append([]*Alert(nil), e.symptoms...)
		}
	}
	return nil
}

// Causes are the alerts that list a among their symptoms, in declaration order.
func Causes(a *Alert) []*Alert {
	var out []*Alert
	for _, e := range explanations() {
		for _, s := range e.symptoms {
			if s == a {
				out = append(out, e.cause)
			}
		}
	}
	return out
}
