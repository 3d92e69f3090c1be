package gen

import (
	"slices"
	"time"
)

// Recording declares one recording rule with its promtool cases.
type Recording struct {
	// Name is the recorded series' name, level:metric:operations (see level.record).
	Name string
	// Expr returns the rule's expression (see exprEnv).
	Expr func(e *exprEnv) string
	// Cases check the recorded series on known input.
	Cases func(c *caseEnv) []ExprCase
	// ForAlerts are the keys of the alerts that read this recording, when only they do: the
	// recording is generated only while one of them is. A recording of a part of one alert's
	// expression (ForAlerts holds that alert alone) may read the alert's parameters in Expr and
	// Cases (e.P, c.P). Empty for a shared recording.
	ForAlerts []string
	// Share: the recorded value is a share of events, within [0, 1] whatever the evaluation
	// timing (the end-to-end scenes check every recorded value of such a rule).
	Share bool
}

// owners are the alerts named by ForAlerts, none for a shared recording.
func (r *Recording) owners() []*Alert {
	var out []*Alert
	for _, key := range r.ForAlerts {
		a, ok := alertByKey(key)
		if !ok {
			panic("recording " + r.Name + " is for unknown alert " + key)
		}
		out = append(out, a)
	}
	return out
}

// forAlert is the one alert whose parameters the recording may read: its only owner, nil for a
// shared recording or one that several alerts read.
func (r *Recording) forAlert() *Alert {
	if o := r.owners(); len(o) == 1 {
		return o[0]
	}
	return nil
}

// readByEnabled reports whether the config generates the recording: it is shared, or one of the
// alerts that read it is enabled.
func (r *Recording) readByEnabled(cfg Config) bool {
	owners := r.owners()
	return len(owners) == 0 || slices.ContainsFunc(owners, func(a *Alert) bool { return !cfg.Alerts[a.Key].Disabled })
}

// ruleGroup is one rule group of the output, switched on by a config group.
type ruleGroup struct {
	Name string
	// Interval is the group's own evaluation interval; 0 means the config's rule interval.
	Interval time.Duration
	// On reports whether the config's groups switch this group on.
	On         func(Groups) bool
	Recordings []*Recording
	Alerts     []*Alert
}

// slowAlertInterval is the evaluation interval of the groups whose alerts watch conditions that
// change over tens of minutes (a target's metric families, leadership changes over an hour): at
// 500 controllers their queries read every replica's series, and a 1m cadence would only repeat
// that work for an answer that cannot change faster than their `for`. An alert of such a group
// fires up to slowAlertInterval after its `for` has passed.
const slowAlertInterval = 5 * time.Minute

// ruleGroups lists every rule group in output order: recording groups before the alert groups
// that read them, and a group's recordings before its alerts. It is the one list of loopwatch's
// rules.
func ruleGroups() []ruleGroup {
	controller := func(g Groups) bool { return g.Controller }
	slo := func(g Groups) bool { return g.SLO }
	audit := func(g Groups) bool { return g.Audit }
	apf := func(g Groups) bool { return g.APF }
	leaderElection := func(g Groups) bool { return g.LeaderElection }
	return []ruleGroup{
		{Name: groupQueueDepthRules, On: controller, Recordings: []*Recording{recQueueDepthByPriority, recQueueDepth, recQueueDepthNormal}},
		{Name: groupWorkqueueRules, On: controller, Recordings: []*Recording{recQueueAdds, recQueueCompletions}},
		{Name: groupQueueWaitRules, On: controller, Recordings: []*Recording{recQueueWaitLong}},
		{Name: groupReconcileRules, On: controller, Recordings: []*Recording{recPodReconciles, recReconciles}},
		{Name: groupReconcileErrorRules, On: controller, Recordings: []*Recording{recConflicts, recReconcileErrors, recReconcileErrorsExceptConflicts, recErrorRatio5m}},
		{Name: groupLatencyRules, On: controller, Recordings: []*Recording{recReconcileMean}},
		{Name: groupClientRules, On: controller, Recordings: []*Recording{recClientRequests}},
		{Name: groupAPIRequestRules, On: controller, Recordings: []*Recording{recAPIRequests, recControllerWrites}},
		{Name: groupSLOSampleRules, Interval: sloSampleInterval, On: slo, Recordings: []*Recording{recReconcileErrorsSampled, recReconcilesSampled, recSampledControllers, recSampleClock}},
		{Name: groupSLOCoarseRules, Interval: sloCoarseInterval, On: slo, Recordings: sloCoarseRecordings},
		{Name: groupSLODaysRules, Interval: sloCoarseInterval, On: slo, Recordings: sloDaysRecordings},
		{Name: groupSLORules, On: slo, Recordings: sloRatioRecordings(sloShortGroupWindows)},
		{Name: groupSLOLongRules, On: slo, Recordings: sloRatioRecordings(sloLongGroupWindows)},
		{Name: groupAuditRules, On: audit, Recordings: []*Recording{recAuditWrites, recAuditHandoffs, recAuditConflicts, recAuditReads, recAuditInitialLists}},
		{Name: groupAPFRules, On: apf, Recordings: []*Recording{recAPFDispatched, recAPFRejected, recAPFWaitBuckets}},
		{Name: groupLeaderRules, Interval: leaderSampleInterval, On: leaderElection, Recordings: []*Recording{recLeaderStatus}},
		{Name: groupTargetRules, Interval: slowAlertInterval, On: controller, Recordings: []*Recording{recControllerJobSeen}},
		{Name: groupQueueAlerts, On: controller, Alerts: []*Alert{QueueBacklog}},
		{Name: groupProcessorAlerts, On: controller, Alerts: []*Alert{ProcessorStuck}},
		{Name: groupQueueWaitAlerts, On: controller, Alerts: []*Alert{QueueWaitHigh}},
		{Name: groupLatencyAlerts, On: controller, Alerts: []*Alert{ReconcileSlow}},
		{Name: groupReconcileAlerts, On: controller, Alerts: []*Alert{ReconcileErrors, ReconcilePanics, FinalizerStuck}},
		{Name: groupAPIAlerts, On: controller, Alerts: []*Alert{PatchRateHigh, HotLoop}},
		// A group of its own: its query reads every pod's client requests and reconciles (22 ms
		// at 500 controllers), as much as the two others together, and nothing orders them.
		{Name: groupAPICallsAlerts, On: controller, Alerts: []*Alert{APICallsPerReconcileHigh}},
		{Name: groupSetupAlerts, Interval: slowAlertInterval, On: controller, Alerts: []*Alert{WorkqueueMetricsMissing}},
		{Name: groupWorkqueueLabelAlerts, Interval: slowAlertInterval, On: controller, Alerts: []*Alert{WorkqueueControllerLabelMissing}},
		{Name: groupHistogramAlerts, Interval: slowAlertInterval, On: controller, Alerts: []*Alert{ClassicHistogramsMissing}},
		{Name: groupStartedAlerts, Interval: slowAlertInterval, On: controller, Alerts: []*Alert{MaxConcurrentReconcilesMissing}},
		{Name: groupTargetAlerts, Interval: slowAlertInterval, On: controller, Alerts: []*Alert{ControllerMetricsMissing}},
		{Name: groupLeaderAlerts, On: leaderElection, Alerts: []*Alert{LeaderMissing}},
		{Name: groupLeaderMultiple, On: leaderElection, Alerts: []*Alert{LeaderMultiple}},
		{Name: groupLeaderTrend, Interval: slowAlertInterval, On: leaderElection, Alerts: []*Alert{LeaderFlapping}},
		{Name: groupSLOAlerts, On: slo, Alerts: []*Alert{ErrorBudgetBurnFast, ErrorBudgetBurnSlow}},
		// The workload join's recording runs first in the alerts' own group: see recAuditWriterJobs.
		{Name: groupAuditAlerts, On: audit, Recordings: []*Recording{recAuditWriterJobs}, Alerts: []*Alert{
			WriteFight, HotObject, ReplicaRace, ConflictStorm, RelistStorm,
			AuditExporterNotReceiving, AuditExporterDropping, AuditWebhookErrors,
		}},
		{Name: groupAPFAlerts, On: apf, Alerts: []*Alert{APFRequestsRejected, APFQueueWaitHigh, APFRequestRateHigh}},
	}
}

// Alerts returns every declared alert, in output order.
func Alerts() []*Alert {
	var out []*Alert
	for _, g := range ruleGroups() {
		out = append(out, g.Alerts...)
	}
	return out
}

func alertByKey(key string) (*Alert, bool) {
	i := slices.IndexFunc(Alerts(), func(a *Alert) bool { return a.Key == key })
	if i < 0 {
		return nil, false
	}
	return Alerts()[i], true
}

func alertKeys() []string {
	var keys []string
	for _, a := range Alerts() {
		keys = append(keys, a.Key)
	}
	slices.Sort(keys)
	return keys
}

// enabledAlerts returns the alerts the config generates: their group is on and they are not
// disabled.
func (b *builder) enabledAlerts() []*Alert {
	var out []*Alert
	for _, g := range ruleGroups() {
		if !g.On(b.cfg.Groups) {
			continue
		}
		for _, a := range g.Alerts {
			if !b.cfg.Alerts[a.Key].Disabled {
				out = append(out, a)
			}
		}
	}
	return out
}
