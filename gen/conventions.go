package gen

import "strings"

// Naming conventions live here and nowhere else: alert names, rule-group names, recording-rule
// names (`level:metric:operations`, prometheus/docs practices/rules.md) and the label sets that
// each aggregation level keeps.

// alertPrefix starts every alert name, so that loopwatch's alerts sort and route together.
const alertPrefix = "Loopwatch"

// Rule-group names. Recording groups come before the alert groups that read them. The
// controller's rules are split by the raw metric family they read (kubernetes-mixin does the same
// for its k8s.rules): Prometheus evaluates groups side by side but the rules of one group one
// after another, and a Thanos or Mimir ruler shards by group, so a small group keeps each
// evaluation short and lets the work spread over cores and ruler replicas. An alert that can have
// an instance per controller at once (LoopwatchQueueBacklog, LoopwatchQueueWaitHigh) reads only
// recordings and keeps a group of its own: Prometheus expands its label and annotation templates
// for every instance on every evaluation, and that, not its query, is its cost.
const (
	groupQueueDepthRules      = "loopwatch.controller.queue-depth.rules"
	groupWorkqueueRules       = "loopwatch.controller.workqueue.rules"
	groupQueueWaitRules       = "loopwatch.controller.queue-wait.rules"
	groupReconcileRules       = "loopwatch.controller.reconcile.rules"
	groupReconcileErrorRules  = "loopwatch.controller.reconcile-errors.rules"
	groupLatencyRules         = "loopwatch.controller.latency.rules"
	groupClientRules          = "loopwatch.controller.client.rules"
	groupAPIRequestRules      = "loopwatch.controller.api-requests.rules"
	groupQueueAlerts          = "loopwatch.controller.queue.alerts"
	groupProcessorAlerts      = "loopwatch.controller.processor.alerts"
	groupQueueWaitAlerts      = "loopwatch.controller.queue-wait.alerts"
	groupLatencyAlerts        = "loopwatch.controller.latency.alerts"
	groupReconcileAlerts      = "loopwatch.controller.reconcile.alerts"
	groupAPIAlerts            = "loopwatch.controller.api.alerts"
	groupAPICallsAlerts       = "loopwatch.controller.api-calls.alerts"
	groupSetupAlerts          = "loopwatch.controller.setup.alerts"
	groupWorkqueueLabelAlerts = "loopwatch.controller.workqueue-labels.alerts"
	groupHistogramAlerts      = "loopwatch.controller.histograms.alerts"
	groupStartedAlerts        = "loopwatch.controller.started.alerts"
	groupTargetRules          = "loopwatch.controller.target.rules"
	groupTargetAlerts         = "loopwatch.controller.target.alerts"
	groupLeaderRules          = "loopwatch.leader-election.rules"
	groupLeaderAlerts         = "loopwatch.leader-election.alerts"
	groupLeaderMultiple       = "loopwatch.leader-election.multiple.alerts"
	groupLeaderTrend          = "loopwatch.leader-election.trend.alerts"
	groupSLORules             = "loopwatch.slo.rules"
	groupSLOLongRules         = "loopwatch.slo.long.rules"
	groupSLOSampleRules       = "loopwatch.slo.sample.rules"
	groupSLOCoarseRules       = "loopwatch.slo.coarse.rules"
	groupSLODaysRules         = "loopwatch.slo.days.rules"
	groupSLOAlerts            = "loopwatch.slo.alerts"
	groupAuditRules           = "loopwatch.audit.rules"
	groupAuditAlerts          = "loopwatch.audit.alerts"
	groupAPFRules             = "loopwatch.apf.rules"
	groupAPFAlerts            = "loopwatch.apf.alerts"
)

// level is an aggregation level: the labels an aggregated series keeps. Its name is the first
// part of a recording-rule name.
type level struct {
	name   string
	labels []string
}

// clusterRef is the reference to the configurable cluster label inside label lists.
const clusterRef = "⟦clusterLabel⟧"

var (
	// levelController: one controller of one workload (all its replicas together).
	levelController = level{"cluster_namespace_job_controller", []string{clusterRef, "namespace", "job", "controller"}}
	// levelTarget: one scraped process. client-go's metrics have no controller label, so
	// process-wide signals (PATCH rate) live here.
	levelTarget = level{"cluster_namespace_job_pod", []string{clusterRef, "namespace", "job", "pod"}}
	// levelCluster: everything of one cluster.
	levelCluster = level{"cluster", []string{clusterRef}}
	// levelNamespace: one namespace, where a team deploys a controller and its service account.
	levelNamespace = level{"cluster_namespace", []string{clusterRef, "namespace"}}
	// levelJob: one workload, all replicas.
	levelJob = level{"cluster_namespace_job", []string{clusterRef, "namespace", "job"}}
	// levelUp: one scrape target, as `up` labels it.
	levelUp = level{"cluster_namespace_job_pod_instance", []string{clusterRef, "namespace", "job", "pod", "instance"}}
	// levelEndpoint: one scraped address, whichever jobs scrape it.
	levelEndpoint = level{"cluster_instance", []string{clusterRef, "instance"}}
	// levelScrapeJob: one scrape job, whatever the namespaces of its targets.
	levelScrapeJob = level{"cluster_job", []string{clusterRef, "job"}}
	// levelLease: one leader-election lease of one workload.
	levelLease = level{"cluster_namespace_job_name", []string{clusterRef, "namespace", "job", "name"}}
)

// with returns the level extended by more labels, e.g. levelController.with("result").
func (l level) with(labels ...string) level {
	return level{
		name:   l.name + "_" + strings.Join(labels, "_"),
		labels: append(append([]string{}, l.labels...), labels...),
	}
}

// resolve returns the level's labels with the cluster label named as in cfg.
func (l level) resolve(cfg Config) []string {
	out := make([]string, len(l.labels))
	for i, n := range l.labels {
		out[i] = strings.ReplaceAll(n, clusterRef, cfg.ClusterLabel)
	}
	return out
}

// ControllerLabels are the labels that identify one controller of one workload, with the
// cluster label named as in cfg: what every per-controller rule keeps.
func ControllerLabels(cfg Config) []string { return levelController.resolve(cfg) }

// JobLabels are the labels that identify one workload (all its replicas), with the cluster label
// named as in cfg.
func JobLabels(cfg Config) []string { return levelJob.resolve(cfg) }

// by renders the level's labels for `by (...)` and `on (...)` clauses.
func (l level) by() string { return strings.Join(l.labels, ", ") }

// record returns a recording-rule name at this level: level:metric:operations.
func (l level) record(metric, operations string) string {
	return l.name + ":" + strings.TrimSuffix(metric, "_total") + ":" + operations
}

// flowSchemaPrefix starts the name of every FlowSchema loopwatch generates (loopwatch-<controller>).
const flowSchemaPrefix = "loopwatch-"

// ownFlowSchema restricts apiserver_flowcontrol_* series to the FlowSchemas loopwatch generates,
// one per named controller: the APF alerts are about controllers, not about the default schemas
// that many clients share (service-accounts, global-default).
const ownFlowSchema = `flow_schema=~"` + flowSchemaPrefix + `.+"`

// hasController restricts workqueue_* series to controller-runtime's queues: kube-apiserver and
// kube-controller-manager export workqueue_* too, with a `name` label but no `controller`.
const hasController = `controller!=""`

// dashboardKeys are the dashboards loopwatch generates, by key.
var dashboardKeys = []string{"controller", "audit", "exporter", "apf"}

// Header starts every generated file.
const Header = "Code generated by loopwatch. DO NOT EDIT."

// Description fragments naming where to look.
const (
	whereController = "controller {{ $labels.controller }} of {{ $labels.namespace }}/{{ $labels.job }}"
	whereTarget     = "pod {{ $labels.namespace }}/{{ $labels.pod }} (job {{ $labels.job }})"
)
