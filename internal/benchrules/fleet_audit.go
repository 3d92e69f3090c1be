package benchrules

import (
	"fmt"
	"slices"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Bounds of the audit exporter's series, from its defaults (exporter/track DefaultConfig and
// exporter/deploy/exporter.yaml): top-K actors with their own label plus "other", and three
// offender tables of 50 entries. The benchmark exposes them full.
const (
	exporterTopK         = 20
	exporterMaxOffenders = 50
	// resourcesPerActor is how many group/resource pairs each labelled actor writes.
	resourcesPerActor = 6
)

type groupResource struct{ group, resource string }

// auditResources is the pool of group/resource pairs the actors write: built-in kinds and the
// custom resources of the fleet's controllers.
func auditResources() []groupResource {
	out := []groupResource{
		{"", "configmaps"}, {"", "secrets"}, {"", "services"}, {"", "pods"}, {"", "serviceaccounts"},
		{"apps", "deployments"}, {"apps", "statefulsets"}, {"batch", "jobs"},
		{"networking.k8s.io", "ingresses"}, {"rbac.authorization.k8s.io", "roles"},
		{"rbac.authorization.k8s.io", "rolebindings"}, {"policy", "poddisruptionbudgets"},
	}
	for _, k := range kinds {
		out = append(out, groupResource{k + ".example.com", k + "s"})
	}
	return out
}

// nonServiceAccountActors are the first auditActors, which are no service account.
var nonServiceAccountActors = []string{"system:kube-controller-manager", "system:kube-scheduler", "kubernetes-admin"}

// auditActors are the top-K writers that own a label value, and "other". After the
// nonServiceAccountActors, actor n+i is the service account of controller manager i.
func auditActors() []string {
	out := slices.Clone(nonServiceAccountActors)
	for i := 0; len(out) < exporterTopK; i++ {
		kind, project, _ := controllerIdentity(FleetConfig{}, i)
		out = append(out, fmt.Sprintf("system:serviceaccount:%s-system:%s-controller-manager", project, kind))
	}
	return append(out, "other")
}

// actorWorkload returns the offender labels that tie actor ai of auditActors to its workload
// (namespace, service account, pod): for a controller manager's service account, the pod of its
// replica r, as a bound token names it (a scrape target, so the alerts' join finds its job), or
// with gone a pod that is no longer one (a rollout's old pod); none for the other actors.
func actorWorkload(cfg FleetConfig, actors []string, ai, r int, gone bool) []string {
	ns, sa, ok := catalogue.SplitServiceAccount(actors[ai])
	i := ai - len(nonServiceAccountActors)
	if !ok || i < 0 {
		return []string{"", "", ""}
	}
	pod := controllerPod(cfg, i, r)
	if gone || i >= cfg.Controllers {
		pod = controllerPod(cfg, i, r+cfg.Replicas)
	}
	return []string{ns, sa, pod}
}

// exporterTarget is the audit exporter at its bounds: every actor label in use, every offender
// table full, a few actors in a conflict or relist storm.
func exporterTarget(cfg FleetConfig, index int) *Target {
	const job = "loopwatch-exporter"
	t := newTarget(cfg, index, job, map[string]string{
		"namespace": "loopwatch-system",
		"service":   job,
		"endpoint":  "metrics",
		"container": "exporter",
		"pod":       "loopwatch-exporter-7c9d8f6b5-x2k4q",
		"instance":  "10.63.0.10:8080",
	})
	b := builder{t: t}
	start := float64(cfg.Start.Unix()) - 7200
	seed := mix(cfg.Seed, 0xa0d17)
	n := uint64(0)
	next := func() uint64 { n++; return mix(seed, n) }
	counter := func(rate float64) value { return counted(counterCurve(rate, start, next()), 1) }
	resources := auditResources()
	actors := auditActors()
	writers := map[groupResource][]string{}

	for ai, actor := range actors {
		h := mix(seed, uint64(ai)+1000)
		for j := range resourcesPerActor {
			gr := resources[int(mix(h, uint64(j))%uint64(len(resources)))]
			if slices.Contains(writers[gr], actor) {
				continue
			}
			writers[gr] = append(writers[gr], actor)
			verbs := []string{"patch", "update"}
			if j%2 == 0 {
				verbs = append(verbs, "create", "delete")
			}
			for _, verb := range verbs {
				b.add("loopwatch_audit_writes_total", counter(0.05+2*unit(next())), actor, verb, gr.group, gr.resource, "2xx")
				if j%3 == 0 && (verb == "patch" || verb == "update") {
					b.add("loopwatch_audit_writes_total", counter(0.01+0.1*unit(next())), actor, verb, gr.group, gr.resource, "4xx")
				}
			}
			if j%3 == 0 {
				rate := 0.01 + 0.2*unit(next())
				if ai < 2 && j == 0 {
					rate = 1.5 // a conflict storm
				}
				b.add("loopwatch_audit_conflicts_total", counter(rate), actor, gr.group, gr.resource)
			}
			if j < 3 {
				list := 0.01 + 0.1*unit(next())
				if ai >= 2 && ai < 4 && j == 0 {
					list = 8 // a relist storm
				}
				b.add("loopwatch_audit_reads_total", counter(list), actor, "list", gr.group, gr.resource)
				b.add("loopwatch_audit_reads_total", counter(0.001), actor, "watch", gr.group, gr.resource)
			}
		}
	}
	for _, gr := range resources {
		w := writers[gr]
		for i := 0; i+1 < len(w) && i < 4; i++ {
			b.add("loopwatch_audit_handoffs_total", counter(0.01+0.1*unit(next())), w[i], w[i+1], gr.group, gr.resource)
			b.add("loopwatch_audit_handoffs_total", counter(0.01+0.1*unit(next())), w[i+1], w[i], gr.group, gr.resource)
		}
	}
	for i := range exporterMaxOffenders {
		gr := resources[i%len(resources)]
		sub := []string{"", "status"}[i%2]
		ns, name := fmt.Sprintf("team-%02d", i%17), fmt.Sprintf("object-%03d", i)
		a, bb := actors[i%exporterTopK], actors[(i+1)%exporterTopK]
		// The leaders write; every fifth offender's writer has been rolled out since; a race
		// names the replica that wrote last.
		gone := i%5 == 4
		wa, wb := actorWorkload(cfg, actors, i%exporterTopK, 0, gone), actorWorkload(cfg, actors, (i+1)%exporterTopK, 0, gone)
		b.add("loopwatch_audit_fight_handoffs", value{c: gaugeCurve(4, 26, 60, next()), scale: 1, floor: true},
			slices.Concat([]string{gr.group, gr.resource, sub, ns, name, a, bb, "manager-a", "manager-b", ""}, wa, wb)...)
		b.add("loopwatch_audit_hot_object_writes_per_second", value{c: gaugeCurve(0.3, 2.7, 60, next()), scale: 1},
			slices.Concat([]string{gr.group, gr.resource, sub, ns, "hot-" + name, a, "manager-a", ""}, wa)...)
		b.add("loopwatch_audit_replica_race_pods", value{c: gaugeCurve(2, 1.99, 60, next()), scale: 1, floor: true},
			slices.Concat([]string{gr.group, gr.resource, sub, ns, "raced-" + name, a}, actorWorkload(cfg, actors, i%exporterTopK, i%cfg.Replicas, gone))...)
	}

	const batches = 5.0 // webhook batches per second
	b.add("loopwatch_audit_requests_total", counter(batches), "accepted", "ok")
	for _, r := range []string{"unauthenticated", "forbidden", "method_not_allowed", "unsupported_media_type", "too_large", "malformed", "overloaded"} {
		b.add("loopwatch_audit_requests_total", counted(constant(0), 1), "rejected", r)
	}
	b.add("loopwatch_audit_batches_total", counter(batches))
	b.add("loopwatch_audit_events_total", counter(200), "counted")
	b.add("loopwatch_audit_events_total", counter(200), "ignored_stage")
	b.add("loopwatch_audit_events_total", counter(0.01), "duplicate")
	for _, r := range []string{"malformed", "line_too_long"} {
		b.add("loopwatch_audit_dropped_events_total", counted(constant(0), 1), r)
	}
	batchCount := counterCurve(batches, start, next())
	for _, name := range []string{"loopwatch_audit_decode_seconds", "loopwatch_audit_request_seconds"} {
		median := 0.0003
		b.histogram(name, batchCount, 1, counterCurve(batches*lognormalMean(median, 0.8), start, next()),
			func(le float64) float64 { return lognormalCDF(le, median, 0.8) })
	}
	b.add("loopwatch_audit_last_batch_timestamp_seconds", value{c: clockCurve(), scale: 1})
	b.add("loopwatch_audit_tracked_objects", value{c: gaugeCurve(6000, 4000, 60, next()), scale: 1, floor: true})
	b.add("loopwatch_audit_tracked_actors", value{c: gaugeCurve(280, 60, 60, next()), scale: 1, floor: true})
	b.add("loopwatch_audit_labelled_actors", value{c: constant(exporterTopK), scale: 1})
	for _, table := range []string{"objects", "offenders", "actor_labels"} {
		b.add("loopwatch_audit_evictions_total", counter(0.05), table)
	}
	return t
}

// apiserverTarget is one kube-apiserver as kube-prometheus scrapes it (job apiserver, no pod
// label: the endpoints of the kubernetes Service have no target pod). It exposes the audit
// counters the exporter's alerts read; apiserver_audit_error_total is created on a first error,
// so a healthy API server does not expose it.
func apiserverTarget(cfg FleetConfig, i, index int) *Target {
	t := newTarget(cfg, index, "apiserver", map[string]string{
		"namespace": "default",
		"service":   "kubernetes",
		"endpoint":  "https",
		"instance":  fmt.Sprintf("10.0.0.%d:6443", 10+i),
	})
	b := builder{t: t}
	b.add("apiserver_audit_event_total", counted(counterCurve(400, float64(cfg.Start.Unix())-day, mix(cfg.Seed, uint64(i)+0xa915)), 1))
	return t
}
