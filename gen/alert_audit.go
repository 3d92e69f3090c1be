package gen

import (
	"math"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
)

// The audit alerts read the loopwatch audit exporter's metrics: who writes what, who overwrites
// whom, and whether the audit pipeline itself delivers.

const whereObject = "{{ $labels.resource }}{{ if $labels.group }}.{{ $labels.group }}{{ end }} {{ if $labels.object_namespace }}{{ $labels.object_namespace }}/{{ end }}{{ $labels.object_name }}{{ if $labels.subresource }} ({{ $labels.subresource }}){{ end }}"

// The actors of the audit cases: two controllers' service accounts.
const (
	operatorActor = "system:serviceaccount:backup-system:backup-operator"
	rivalActor    = "system:serviceaccount:kube-system:tier-controller"
)

// The alerts on the exporter's top-offender gauges tie each offender to the workload of the actor
// behind it: the namespace of its service account, and the job of the scraped target whose pod
// wrote (the pod behind the actor's bound token, joined with `up` by namespace and pod). An
// offender whose writer is no scraped target keeps its namespace and has no job; one whose actor
// is no service account has neither. The pod itself is left out of the alert's labels: a rollout
// or replicas taking turns would change it and restart the alert's `for`.
//
// workloadLabels are the labels the join adds to an audit alert.
var workloadLabels = []string{"namespace", "job"}

// levelPod: one pod of one namespace, whatever job scrapes it.
var levelPod = level{"cluster_namespace_pod", []string{clusterRef, "namespace", "pod"}}

// asTarget renames the actor labels of one side (suffix "", "_a" or "_b") of an offender series to
// the labels a scrape target has: namespace and pod. A label_replace of an empty source removes
// the target label.
func asTarget(expr, suffix string) string {
	return `label_replace(label_replace(` + expr + `, "namespace", "$1", "` + catalogue.LabelActorNamespace + suffix + `", "(.*)"), "pod", "$1", "` + catalogue.LabelActorPod + suffix + `", "(.*)")`
}

// withJob adds the job of the scrape target of each series' pod to expr (whose series carry
// namespace and pod, see asTarget), and drops the series whose pod is no target. The jobs come
// from recAuditWriterJobs, which holds one per pod; the topk keeps the join many-to-one even
// where the recording's earlier series linger (a ruler restarted without marking them stale).
// The recorded value (the target's up) is multiplied by 0: a target that is down still names the
// pod's job.
func withJob(expr string) string {
	targets := "topk by (" + levelPod.by() + ") (1, " + auditWriterJobs + ")"
	return expr + " + on (" + levelPod.by() + ") group_left (job) (0 * " + targets + ")"
}

// auditWriterJobs is the series of recAuditWriterJobs (declared apart: the alerts' expressions
// read it, and the recording names the alerts).
var auditWriterJobs = levelTarget.record("up", "audit_writers")

// recAuditWriterJobs records the job of every scraped pod that an offender gauge names as a
// writer: the actor of a hot object or a race, either side of a fight. HotObject, WriteFight and
// ReplicaRace join their offenders with it to name the writing workload, so that `up` (a series
// per scrape target, thousands in a large fleet) is read once per evaluation rather than once per
// alert and per side of a fight; the recording itself holds a few series, one per writing pod.
// One job per pod: a pod that two jobs scrape keeps one of them, the one whose target is up when
// only one is (a many-to-one join would fail the alerts' evaluation otherwise).
//
// It is the first rule of the audit alert group, not of a recording group: rules of one group run
// one after another at the same evaluation time, so each alert joins the offenders it reads with
// the pods of that same evaluation (only a scrape of the exporter that lands in the milliseconds
// between the two queries can tell them apart). A recording of another group lags the gauges by
// up to an interval, and a race's pod is that of its latest write: each time another replica
// writes, the alert would find no job for an evaluation, resolve, and start its `for` again.
var recAuditWriterJobs = &Recording{
	Name:      auditWriterJobs,
	ForAlerts: []string{"writeFight", "hotObject", "replicaRace"},
	Expr: func(e *exprEnv) string {
		writers := func(metric, suffix string) string {
			pod := catalogue.LabelActorPod + suffix
			return asTarget(maxBy(levelCluster.with(catalogue.LabelActorNamespace+suffix, pod), sel(metric, e.Selector("exporter"), pod+`!=""`)), suffix)
		}
		return lines(
			"topk by ("+levelPod.by()+") (1,",
			"  max by ("+levelTarget.by()+") (",
			"    "+sel("up", e.Selector("controller"), `pod!=""`),
			"    and on ("+levelPod.by()+") (",
			"      "+writers("loopwatch_audit_hot_object_writes_per_second", ""),
			"      or",
			"      "+writers("loopwatch_audit_replica_race_pods", ""),
			"      or",
			"      "+writers("loopwatch_audit_fight_handoffs", "_a"),
			"      or",
			"      "+writers("loopwatch_audit_fight_handoffs", "_b"),
			"    )",
			"  )",
			")")
	},
	Cases: func(c *caseEnv) []ExprCase {
		op, rival := c.Target("controller"), rivalTarget(c)
		replica := otherReplica(op)
		exporter := c.Target("exporter")
		hot := func(pod string) *Series {
			return Gauge("loopwatch_audit_hot_object_writes_per_second", offender(c, actorOf(operatorActor, pod, "")...), 2)
		}
		race := func(pod string) *Series {
			return Gauge("loopwatch_audit_replica_race_pods", offender(c, actorOf(operatorActor, pod, "")...), 2)
		}
		fight := func(a, podA, b, podB string) *Series {
			return Gauge("loopwatch_audit_fight_handoffs", offender(c, append(actorOf(a, podA, "_a"), actorOf(b, podB, "_b")...)...), 4)
		}
		at := func(l Labels) Labels { return c.AtLevel(levelTarget, l) }
		return []ExprCase{
			{
				Name: "records the job of each pod an offender names, both sides of a fight included, and of no other target",
				At:   10 * time.Minute,
				Series: []*Series{
					hot(op["pod"]), race(replica["pod"]), fight(operatorActor, op["pod"], rivalActor, rival["pod"]),
					Gauge("up", op, 1), Gauge("up", replica, 1), Gauge("up", rival, 1), Gauge("up", exporter, 1),
					Gauge("up", op.With("pod", "backup-operator-idle", "instance", "10.244.1.19:8443"), 1),
				},
				Want: []Sample{{at(op), 1}, {at(replica), 1}, {at(rival), 1}},
			},
			{
				Name: "records the first side of a fight alone when the second has no pod",
				At:   10 * time.Minute,
				Series: []*Series{
					fight(rivalActor, rival["pod"], "alice@example.com", ""),
					Gauge("up", op, 1), Gauge("up", rival, 1),
				},
				Want: []Sample{{at(rival), 1}},
			},
			{
				Name: "keeps one job for a pod that two jobs scrape, the one whose target is up",
				At:   10 * time.Minute,
				Series: []*Series{
					hot(op["pod"]),
					Gauge("up", op, 1), Gauge("up", op.With("job", "backup-controller-debug", "instance", "10.244.1.17:6060"), 0),
				},
				Want: []Sample{{at(op), 1}},
			},
			{
				Name:   "records the job of a writer whose target is down, valued 0",
				At:     10 * time.Minute,
				Series: []*Series{race(op["pod"]), Gauge("up", op, 0)},
				Want:   []Sample{{at(op), 0}},
			},
			{
				Name: "records nothing for writers without a pod, with a pod that is no target, or that are no service account",
				At:   10 * time.Minute,
				Series: []*Series{
					hot(""), race(op["pod"] + "-gone"), fight("alice@example.com", "", rivalActor, ""),
					Gauge("up", op, 1), Gauge("up", rival, 1), Gauge("up", exporter, 1),
				},
				Want: []Sample{},
			},
		}
	},
}

// offenderCases returns the cases of an alert on a top-offender gauge: the gauge appears when the
// exporter finds an offender, at firing (at or above the threshold) or healthy (under it). l are
// the gauge's labels, want the alert's; up are the scrape targets in the cluster.
func offenderCases(c *caseEnv, metric string, firing, healthy float64, l, want Labels, up ...Labels) []Case {
	var ups []*Series
	for _, u := range up {
		ups = append(ups, Gauge("up", u, 1))
	}
	return []Case{
		{
			Name:   "fires when the exporter reports an offender at the threshold, naming the job of the pod that writes",
			Series: append([]*Series{Gauge(metric, l, firing).From(incidentAt)}, ups...),
			Fires:  &Firing{At: incidentAt, Labels: want, Value: Constant(firing)},
		},
		{
			Name:   "stays silent on an offender under the threshold",
			Series: append([]*Series{Gauge(metric, l, healthy).From(incidentAt)}, ups...),
		},
	}
}

// actorOf returns the offender labels that describe one actor (suffix "" or "_a"/"_b"): its name,
// namespace, service account and pod (empty: none).
func actorOf(actor, pod, suffix string) []string {
	ns, sa, _ := catalogue.SplitServiceAccount(actor)
	name := "actor" + suffix
	return []string{name, actor, catalogue.LabelActorNamespace + suffix, ns, catalogue.LabelActorServiceAccount + suffix, sa, catalogue.LabelActorPod + suffix, pod}
}

// offender returns the labels of a top-offender gauge about one Backup, as the exporter exposes
// them (its own target labels included).
func offender(c *caseEnv, labels ...string) Labels {
	return c.Target("exporter").With(append([]string{"group", "backup.loopwatch.dev", "resource", "backups", "object_namespace", "backup-system", "object_name", "nightly"}, labels...)...)
}

// alertOf returns the labels of an audit alert's instance about offender l, tied to the workload
// (namespace, job; empty: none).
func alertOf(c *caseEnv, l Labels, namespace, job string) Labels {
	return c.Instance(l.With("namespace", "", "job", "")).With("namespace", namespace, "job", job)
}

// rivalTarget is the scrape target of the rival controller's pod.
func rivalTarget(c *caseEnv) Labels {
	return c.Target("controller").With("namespace", "kube-system", "job", "tier-controller-metrics", "pod", "tier-controller-5b7f-qv8mn", "instance", "10.244.3.4:8080")
}

// WriteFight fires when two actors take turns writing one object, each undoing the other: two
// controllers that disagree about one field of a ServiceAccount, say.
var WriteFight = &Alert{
	Key: "writeFight", Name: "WriteFight",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 4, Check: positive,
			Doc: "Handoffs between the same two actors on one object within the exporter's fight window at which the alert fires."},
	},
	Level: levelAuditObject.with("actor_a", "actor_b", "mutating_webhook", "namespace", "job"),
	Expr: func(e *exprEnv) string {
		fight := levelAuditObject.with("actor_a", "actor_b", "mutating_webhook")
		sides := maxBy(fight.with(catalogue.LabelActorNamespace+"_a", catalogue.LabelActorPod+"_a", catalogue.LabelActorNamespace+"_b", catalogue.LabelActorPod+"_b"),
			sel("loopwatch_audit_fight_handoffs", e.Selector("exporter")))
		// The first actor whose pod is a scraped target names the workload; when neither is,
		// the first actor's namespace.
		return lines(
			"max by ("+fight.with(workloadLabels...).by()+") (",
			"  "+withJob(asTarget(sides, "_a")),
			"  or on ("+fight.by()+")",
			"  "+withJob(asTarget(sides, "_b")),
			"  or on ("+fight.by()+")",
			"  "+asTarget(sides, "_a"),
			") >= "+e.P("threshold"))
	},
	Summary:     "Two actors keep overwriting each other's writes to one object.",
	Description: "{{ $labels.actor_a }} and {{ $labels.actor_b }} took turns writing " + whereObject + " ({{ $value }} handoffs in the exporter's fight window){{ if $labels.job }}; {{ $labels.namespace }}/{{ $labels.job }} is one of them{{ end }}. Each undoes the other: two controllers that disagree about one field{{ if $labels.mutating_webhook }}, or a mutating admission webhook, {{ $labels.mutating_webhook }}, that rewrites what one of them writes{{ end }}.",
	NextStep:    "Find the field both set: kubectl get <resource> -n <object_namespace> <object_name> -o yaml --show-managed-fields (the audit dashboard's Active fights table names each actor's field manager). Then make one of <actor_a> and <actor_b> stop writing it, or agree on one owner.",
	Panel:       PanelRef{"audit", "Active fights"},
	Cases: func(c *caseEnv) []Case {
		th := math.Ceil(c.P("threshold"))
		op, rival := c.Target("controller"), rivalTarget(c)
		fight := func(opPod, rivalPod string, more ...string) Labels {
			l := offender(c, append(append(actorOf(operatorActor, opPod, "_a"), actorOf(rivalActor, rivalPod, "_b")...),
				"field_manager_a", "backup-operator", "field_manager_b", "tier-controller")...)
			return l.With(more...)
		}
		both := fight(op["pod"], rival["pod"])
		cases := offenderCases(c, "loopwatch_audit_fight_handoffs", th, th-1, both, alertOf(c, both, op["namespace"], op["job"]), op, rival)
		onlyRival := fight("", rival["pod"])
		neither := fight(op["pod"]+"-gone", "")
		l := fight(op["pod"], rival["pod"], "mutating_webhook", webhookName)
		return append(cases,
			Case{
				Name:   "names the second actor's workload when only its pod is a scraped target",
				Series: []*Series{Gauge("loopwatch_audit_fight_handoffs", onlyRival, th).From(incidentAt), Gauge("up", op, 1), Gauge("up", rival, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, onlyRival, rival["namespace"], rival["job"]), Value: Constant(th)},
			},
			Case{
				Name:   "keeps a fight whose actors' pods are no scraped target, in the first actor's namespace without a job",
				Series: []*Series{Gauge("loopwatch_audit_fight_handoffs", neither, th).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, neither, op["namespace"], ""), Value: Constant(th)},
			},
			Case{
				Name:   "names the mutating webhook that rewrites one actor's writes",
				Series: []*Series{Gauge("loopwatch_audit_fight_handoffs", l, th).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, l, op["namespace"], op["job"]), Value: Constant(th)},
			})
	},
}

// webhookName is the mutating admission webhook of the audit cases.
const webhookName = "tier-defaults/tier.defaults.example.com"

// HotObject fires when one actor rewrites one object at a high rate: a controller that writes on
// every reconcile (a timestamp, a status that always changes) re-triggers itself.
//
// The threshold is one write per second, sustained. A healthy controller writes an object's
// status a few times per event it handles: the reference operator, taking a snapshot every 20s
// (taken, completed, the oldest pruned) while a user edits the spec, rewrites a Backup's status
// 15 to 17 times a minute (0.25 to 0.28 per second, measured on the real API server), and one on
// a 10s schedule twice that. A loop rewrites the object at the speed of a round trip, many times
// a second; one throttled by its client's rate limiter across many objects is the business of
// LoopwatchHotLoop and LoopwatchPatchRateHigh.
var HotObject = &Alert{
	Key: "hotObject", Name: "HotObject",
	Severity: SeverityWarning, For: 10 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 1, Check: positive,
			Doc: "Writes per second by one actor to one object above which the alert fires."},
	},
	Level: levelAuditObject.with("actor", "mutating_webhook", "namespace", "job"),
	Expr: func(e *exprEnv) string {
		hot := levelAuditObject.with("actor", "mutating_webhook")
		x := asTarget(maxBy(hot.with(catalogue.LabelActorNamespace, catalogue.LabelActorPod), sel("loopwatch_audit_hot_object_writes_per_second", e.Selector("exporter"))), "")
		return lines(
			"max by ("+hot.with(workloadLabels...).by()+") (",
			"  "+withJob(x),
			"  or on ("+levelPod.by()+")",
			"  "+x,
			") > "+e.P("threshold"))
	},
	Summary:     "One actor rewrites one object at a high rate.",
	Description: "{{ $labels.actor }}{{ if $labels.job }} ({{ $labels.namespace }}/{{ $labels.job }}){{ end }} writes " + whereObject + " {{ $value | printf \"%.2f\" }} times per second. {{ if $labels.mutating_webhook }}The mutating admission webhook {{ $labels.mutating_webhook }} changes these writes: a controller that keeps writing back what the webhook rewrites loops with it.{{ else }}A controller that writes on every reconcile (a timestamp, a status that always changes) re-triggers itself.{{ end }}",
	NextStep:    "<actor> rewrites <resource> <object_namespace>/<object_name> again and again: write only when the object differs from what it should be, and keep its own writes from waking it.",
	Panel:       PanelRef{"audit", "Hot objects"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		op := c.Target("controller")
		hot := func(actor, pod string, more ...string) Labels {
			return offender(c, append(actorOf(actor, pod, ""), "field_manager", "backup-operator")...).With(more...)
		}
		l := hot(operatorActor, op["pod"])
		cases := offenderCases(c, "loopwatch_audit_hot_object_writes_per_second", th*above, th/2, l, alertOf(c, l, op["namespace"], op["job"]), op)
		gone := hot(operatorActor, op["pod"]+"-gone")
		unbound := hot(operatorActor, "")
		user := hot("alice@example.com", "")
		hook := hot(operatorActor, op["pod"], "mutating_webhook", webhookName)
		down := op.With("job", "backup-controller-debug", "instance", "10.244.1.17:6060")
		return append(cases,
			Case{
				Name:   "keeps an offender whose pod is no scraped target, in the actor's namespace without a job",
				Series: []*Series{Gauge("loopwatch_audit_hot_object_writes_per_second", gone, th*above).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, gone, op["namespace"], ""), Value: Constant(th * above)},
			},
			Case{
				Name:   "keeps an offender whose token is bound to no pod, in the actor's namespace",
				Series: []*Series{Gauge("loopwatch_audit_hot_object_writes_per_second", unbound, th*above).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, unbound, op["namespace"], ""), Value: Constant(th * above)},
			},
			Case{
				Name:   "keeps an offender that is no service account, without a namespace or a job",
				Series: []*Series{Gauge("loopwatch_audit_hot_object_writes_per_second", user, th*above).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, user, "", ""), Value: Constant(th * above)},
			},
			Case{
				Name: "names one job when two jobs scrape the writing pod, the one whose target is up",
				Series: []*Series{Gauge("loopwatch_audit_hot_object_writes_per_second", l, th*above).From(incidentAt),
					Gauge("up", op, 1), Gauge("up", down, 0)},
				Fires: &Firing{At: incidentAt, Labels: alertOf(c, l, op["namespace"], op["job"]), Value: Constant(th * above)},
			},
			Case{
				Name:   "names the mutating webhook the actor loops with",
				Series: []*Series{Gauge("loopwatch_audit_hot_object_writes_per_second", hook, th*above).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, hook, op["namespace"], op["job"]), Value: Constant(th * above)},
			})
	},
}

// ReplicaRace fires when several pods of one actor write one object within the race window:
// replicas reconciling the same objects at once, without leader election.
var ReplicaRace = &Alert{
	Key: "replicaRace", Name: "ReplicaRace",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 2, Check: atLeastTwo,
			Doc: "Pods of one actor writing one object within the exporter's race window at which the alert fires."},
	},
	Level: levelAuditObject.with("actor", "namespace", "job"),
	Expr: func(e *exprEnv) string {
		race := levelAuditObject.with("actor")
		x := asTarget(maxBy(race.with(catalogue.LabelActorNamespace, catalogue.LabelActorPod), sel("loopwatch_audit_replica_race_pods", e.Selector("exporter"))), "")
		return lines(
			"max by ("+race.with(workloadLabels...).by()+") (",
			"  "+withJob(x),
			"  or on ("+levelPod.by()+")",
			"  "+x,
			") >= "+e.P("threshold"))
	},
	Summary:     "Several replicas of one controller write the same object.",
	Description: "{{ $value }} pods of {{ $labels.actor }}{{ if $labels.job }} ({{ $labels.namespace }}/{{ $labels.job }}){{ end }} wrote " + whereObject + " within the race window: the replicas reconcile the same objects at once.",
	NextStep:    "Replicas of <actor> reconcile the same objects at once: turn leader election on (all replicas sharing one lease), or run one replica.",
	Panel:       PanelRef{"audit", "Replica races"},
	Cases: func(c *caseEnv) []Case {
		th := math.Ceil(c.P("threshold"))
		op := c.Target("controller")
		l := offender(c, actorOf(operatorActor, otherReplica(op)["pod"], "")...)
		gone := offender(c, actorOf(operatorActor, op["pod"]+"-gone", "")...)
		return append(offenderCases(c, "loopwatch_audit_replica_race_pods", th, th-1, l, alertOf(c, l, op["namespace"], op["job"]), op, otherReplica(op)),
			Case{
				Name:   "keeps a race whose pods are no scraped target, in the actor's namespace without a job",
				Series: []*Series{Gauge("loopwatch_audit_replica_race_pods", gone, th).From(incidentAt), Gauge("up", op, 1)},
				Fires:  &Firing{At: incidentAt, Labels: alertOf(c, gone, op["namespace"], ""), Value: Constant(th)},
			})
	},
}

// ConflictStorm fires when an actor's writes are rejected with 409 Conflict at a high rate.
var ConflictStorm = &Alert{
	Key: "conflictStorm", Name: "ConflictStorm",
	Severity: SeverityWarning, For: 10 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 1, Check: positive,
			Doc: "409 Conflict answers per second to one actor's writes of one resource above which the alert fires."},
	},
	Level:       levelActor,
	Expr:        func(e *exprEnv) string { return recAuditConflicts.Name + " > " + e.P("threshold") },
	Summary:     "An actor's writes are rejected with 409 Conflict at a high rate.",
	Description: "{{ $labels.actor }} gets {{ $value | printf \"%.2f\" }} conflicts per second writing {{ $labels.resource }}{{ if $labels.group }}.{{ $labels.group }}{{ end }}: it updates from stale reads, or races another writer (another replica, another controller) for the same objects.",
	NextStep:    "<actor> updates <resource> from stale reads or races another writer: patch (or server-side apply) instead of update, and look for another writer of the same objects.",
	Panel:       PanelRef{"audit", "Conflicts (409) by actor"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Target("exporter").With("actor", operatorActor, "group", "backup.loopwatch.dev", "resource", "backups")
		after, fires := c.rateFiring(th/20, th, 5*time.Minute, c.Instance(l))
		return []Case{
			{
				Name:   "fires when an actor's writes keep conflicting",
				Series: []*Series{Counter("loopwatch_audit_conflicts_total", l, th/20).Rate(incidentAt, after)},
				Fires:  fires,
			},
			{
				Name:   "stays silent on occasional conflicts",
				Series: []*Series{Counter("loopwatch_audit_conflicts_total", l, th/2)},
			},
		}
	},
}

// RelistStorm fires when an actor loads a resource's whole collection at a high rate: informers
// relisting after 410 Gone, restarts in a loop, or a client listing per reconcile. An initial list
// is a LIST, or for clients with WatchList on (client-go from 1.35) a WATCH with
// sendInitialEvents=true: the exporter counts both in loopwatch_audit_initial_lists_total.
var RelistStorm = &Alert{
	Key: "relistStorm", Name: "RelistStorm",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 5, Check: positive,
			Doc: "Initial lists per second (LISTs, and WATCHes with sendInitialEvents=true) of one resource by one actor above which the alert fires."},
	},
	Level: levelActor,
	Expr: func(e *exprEnv) string {
		return sumBy(levelActor, recAuditInitialLists.Name) + " > " + e.P("threshold")
	},
	Summary:     "An actor relists a resource at a high rate.",
	Description: "{{ $labels.actor }} loads the whole of {{ $labels.resource }}{{ if $labels.group }}.{{ $labels.group }}{{ end }} {{ $value | printf \"%.2f\" }} times per second: LISTs, or WATCHes that send the initial state (WatchList, how client-go from 1.35 lists). Needs an audit policy that records list and watch at Metadata level.",
	NextStep:    "Find why <actor> lists <resource> so often: restarts in a loop (kubectl get pods), watches expiring with 410 Gone, or a client listing per reconcile instead of reading the cache.",
	Panel:       PanelRef{"audit", "Initial lists (relists) by actor"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Target("exporter").With("actor", operatorActor, "group", "", "resource", "configmaps")
		after, fires := c.rateFiring(th/20, th, 5*time.Minute, c.Instance(l))
		return []Case{
			{
				Name:   "fires when an actor keeps listing",
				Series: []*Series{Counter("loopwatch_audit_initial_lists_total", l.With("verb", "list"), th/20).Rate(incidentAt, after)},
				Fires:  fires,
			},
			{
				Name: "fires when a WatchList client keeps relisting with watches that send the initial state",
				Series: []*Series{
					Counter("loopwatch_audit_initial_lists_total", l.With("verb", "watch"), th/20).Rate(incidentAt, after),
					Counter("loopwatch_audit_reads_total", l.With("verb", "watch"), th/20).Rate(incidentAt, after),
				},
				Fires: fires,
			},
			{
				Name: "fires when an actor's lists and initial-state watches together pass the line",
				Series: []*Series{
					Counter("loopwatch_audit_initial_lists_total", l.With("verb", "list"), th/40).Rate(incidentAt, after/2),
					Counter("loopwatch_audit_initial_lists_total", l.With("verb", "watch"), th/40).Rate(incidentAt, after/2),
				},
				Fires: fires,
			},
			{
				Name: "stays silent on occasional lists and many ordinary long-running watches",
				Series: []*Series{
					Counter("loopwatch_audit_initial_lists_total", l.With("verb", "list"), th/2),
					Counter("loopwatch_audit_initial_lists_total", l.With("verb", "watch"), th/100),
					Counter("loopwatch_audit_reads_total", l.With("verb", "list"), th/2),
					Counter("loopwatch_audit_reads_total", l.With("verb", "watch"), th*10),
				},
			},
		}
	},
}

// AuditExporterNotReceiving fires when the exporter receives no audit batch, or is down. "No batch
// for 10 minutes" needs 10 minutes of samples: a counter Prometheus has scraped twice, a second
// apart and with no batch in between, has a 10m rate of 0 too, so the exporter must have been
// scraped 10 minutes ago already (after a Prometheus or exporter restart, a quiet second is not a
// quiet 10 minutes).
var AuditExporterNotReceiving = &Alert{
	Key: "exporterNotReceiving", Name: "AuditExporterNotReceiving",
	Severity: SeverityWarning, For: 10 * time.Minute,
	Level: levelExporter,
	Expr: func(e *exprEnv) string {
		s := e.Selector("exporter")
		batches := sel("loopwatch_audit_batches_total", s)
		return lines(
			sumBy(levelExporter, rate(batches, "10m"))+" == 0",
			"and on ("+levelExporter.by()+")",
			sumBy(levelExporter, batches+" offset 10m"),
			"or",
			maxBy(levelExporter, sel("up", s))+" == 0")
	},
	Summary:     "The audit exporter receives no audit events.",
	Description: "The loopwatch exporter {{ $labels.namespace }}/{{ $labels.job }} received no audit batch for 10 minutes, or is down: fights, hot objects and races go unseen.",
	NextStep:    "Check the API server's --audit-webhook-config-file, the webhook's client certificate and apiserver_audit_error_total, and that the exporter <namespace>/<job> is up and reachable from the API server.",
	Panel:       PanelRef{"exporter", "Seconds since the last batch"},
	Cases: func(c *caseEnv) []Case {
		l := c.Target("exporter")
		return []Case{
			{
				Name: "fires when no batch arrives for 10 minutes",
				// The last batch arrives in the minute before incidentAt; the 10m rate reads 0
				// once every sample of its window is from after it.
				Series: []*Series{Counter("loopwatch_audit_batches_total", l, 1).Rate(incidentAt, 0), Gauge("up", l, 1)},
				Fires:  &Firing{At: incidentAt + 9*sampleInterval, Labels: c.Instance(l), Value: Constant(0)},
			},
			{
				Name:   "fires when the exporter is down",
				Series: []*Series{Counter("loopwatch_audit_batches_total", l, 1).Until(incidentAt), Gauge("up", l, 1).Set(incidentAt, 0)},
				Fires:  &Firing{At: incidentAt, Labels: c.Instance(l), Value: Constant(0)},
			},
			{
				Name:   "stays silent while batches arrive",
				Series: []*Series{Counter("loopwatch_audit_batches_total", l, 1), Gauge("up", l, 1)},
			},
			{
				Name: "stays silent on a newly scraped exporter whose first batches are minutes apart",
				Series: []*Series{
					Counter("loopwatch_audit_batches_total", l, 0).From(incidentAt).Rate(incidentAt+5*sampleInterval, 1),
					Gauge("up", l, 1).From(incidentAt),
				},
			},
		}
	},
}

// sourceRecordsLost are the reasons of loopwatch_audit_source_records_total that lose audit events
// (not_audit and control_message records are other logs' and health checks).
const sourceRecordsLost = "unmappable|truncated|malformed|too_large"

// AuditExporterDropping fires when the exporter rejects webhook requests or managed-cluster
// deliveries, or drops events.
var AuditExporterDropping = &Alert{
	Key: "exporterDropping", Name: "AuditExporterDropping",
	Severity: SeverityWarning, For: 10 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 0, Check: nonNegative,
			Doc: "Rejected requests or dropped events per second above which the alert fires."},
	},
	Level: levelExporter,
	Expr: func(e *exprEnv) string {
		s, threshold := e.Selector("exporter"), e.P("threshold")
		return lines(
			sumBy(levelExporter, rate(sel("loopwatch_audit_requests_total", s, `outcome="rejected"`), "5m"))+" > "+threshold,
			"or",
			sumBy(levelExporter, rate(sel("loopwatch_audit_dropped_events_total", s), "5m"))+" > "+threshold,
			"or",
			sumBy(levelExporter, rate(sel("loopwatch_audit_source_deliveries_total", s, `outcome="rejected"`), "5m"))+" > "+threshold,
			"or",
			sumBy(levelExporter, rate(sel("loopwatch_audit_source_records_total", s, `reason=~"`+sourceRecordsLost+`"`), "5m"))+" > "+threshold)
	},
	Summary:     "The audit exporter rejects or drops audit data.",
	Description: "The loopwatch exporter {{ $labels.namespace }}/{{ $labels.job }} rejects deliveries or drops events ({{ $value | printf \"%.2f\" }}/s): fights and races may go unseen. The API server retries a rejected batch 4 times, then drops it; Firehose and Pub/Sub retry for a while, then give up. too_large or too_many_events: batches over the exporter's limits (the API server's --audit-webhook-truncate-enabled with a small enough max event size keeps them below); slow_body, overloaded: a sender too slow or too many at once; unauthenticated, forbidden, plain_http: a sender without the right credentials or scheme.",
	NextStep:    "Read the reason of the refusals: loopwatch_audit_requests_total (webhook) and loopwatch_audit_source_deliveries_total (managed-cluster sources) by reason, and loopwatch_audit_source_records_total for records that could not be read.",
	Panel:       PanelRef{"exporter", "Webhook requests by outcome and reason"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Target("exporter")
		accepted := Counter("loopwatch_audit_requests_total", l.With("outcome", "accepted", "reason", "ok"), 10)
		after, fires := c.rateFiring(0, th, 5*time.Minute, c.Instance(l))
		return []Case{
			{
				Name: "fires when the exporter rejects requests",
				Series: []*Series{accepted,
					Counter("loopwatch_audit_requests_total", l.With("outcome", "rejected", "reason", "too_large"), 0).Rate(incidentAt, after)},
				Fires: fires,
			},
			{
				Name: "fires when a managed-cluster source's deliveries are rejected",
				Series: []*Series{accepted,
					Counter("loopwatch_audit_source_deliveries_total", l.With("source", "eks_firehose", "outcome", "rejected", "reason", "forbidden"), 0).Rate(incidentAt, after)},
				Fires: fires,
			},
			{
				Name: "fires when a managed-cluster source's records cannot be read",
				Series: []*Series{accepted,
					Counter("loopwatch_audit_source_records_total", l.With("source", "gke_pubsub", "reason", "unmappable"), 0).Rate(incidentAt, after)},
				Fires: fires,
			},
			{
				Name: "stays silent while a source's other-log records and control messages are skipped",
				Series: []*Series{accepted,
					Counter("loopwatch_audit_source_records_total", l.With("source", "eks_firehose", "reason", "not_audit"), 0).Rate(incidentAt, after),
					Counter("loopwatch_audit_source_records_total", l.With("source", "eks_firehose", "reason", "control_message"), 0).Rate(incidentAt, after)},
			},
			{
				Name: "fires when the exporter cuts off senders that send too slowly",
				Series: []*Series{accepted,
					Counter("loopwatch_audit_requests_total", l.With("outcome", "rejected", "reason", "slow_body"), 0).Rate(incidentAt, after)},
				Fires: fires,
			},
			{
				Name:   "stays silent while every request is accepted",
				Series: []*Series{accepted, Counter("loopwatch_audit_requests_total", l.With("outcome", "rejected", "reason", "too_large"), 0)},
			},
		}
	},
}

// AuditWebhookErrors fires when the API server fails to deliver audit events to the webhook, or
// its buffer overflows.
var AuditWebhookErrors = &Alert{
	Key: "auditWebhookErrors", Name: "AuditWebhookErrors",
	Severity: SeverityCritical, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 0, Check: nonNegative,
			Doc: "Audit events per second the API server fails to deliver above which the alert fires."},
	},
	Level: levelAPIServer,
	Expr: func(e *exprEnv) string {
		return sumBy(levelAPIServer, rate(sel("apiserver_audit_error_total", e.Selector("apiserver"), `plugin=~"webhook|buffered"`), "5m")) + " > " + e.P("threshold")
	},
	Summary:     "The API server fails to deliver audit events.",
	Description: "kube-apiserver {{ $labels.instance }} drops {{ $value | printf \"%.2f\" }} audit events per second (webhook delivery failed after its retries, or its buffer was full). The audit exporter's view, and any audit trail fed by the webhook, has gaps.",
	NextStep:    "The API server drops audit events: check that the exporter is reachable from it and answers quickly.",
	Panel:       PanelRef{"exporter", "API server audit errors"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		l := c.Target("apiserver")
		after, fires := c.rateFiring(0, th, 5*time.Minute, c.Instance(l))
		return []Case{
			{
				Name:   "fires when webhook deliveries fail",
				Series: []*Series{Counter("apiserver_audit_error_total", l.With("plugin", "webhook"), 0).Rate(incidentAt, after)},
				Fires:  fires,
			},
			{
				Name:   "stays silent on errors of the log backend",
				Series: []*Series{Counter("apiserver_audit_error_total", l.With("plugin", "log"), 10*th+1), Counter("apiserver_audit_error_total", l.With("plugin", "webhook"), 0)},
			},
		}
	},
}
