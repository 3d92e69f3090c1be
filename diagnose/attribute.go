package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Audit labels that name actors: one actor (hot objects, races, conflicts, lists) or the two
// sides of a write fight.
var actorLabels = []string{catalogue.LabelActor, "actor_a", "actor_b"}

// target is a controller a finding is tied to, and how; for an audit actor, which join matched
// it to the workload and a sentence saying so.
type target struct {
	key    controllerKey
	how    attribution
	join   Join
	detail string
}

// Join is how an audit actor was matched to a workload, strongest first.
type Join string

// Joins, in the order they are tried.
const (
	// JoinPod: the pod behind the actor's bound token (the exporter's actor_pod) is a scraped
	// target of the workload, by namespace and pod.
	JoinPod Join = "pod"
	// JoinServiceAccount: the actor's events carry no pod, but kube-state-metrics names the pods
	// that run as its service account (kube_pod_service_account), and one is a target of the
	// workload.
	JoinServiceAccount Join = "serviceaccount"
	// JoinName: neither; the workload is in the service account's namespace and its job is named
	// like the service account (equal, or one containing the other). A guess.
	JoinName Join = "name"
)

// strength orders joins: a pod is a fact, a name a guess.
func (j Join) strength() int {
	switch j {
	case JoinPod:
		return 3
	case JoinServiceAccount:
		return 2
	case JoinName:
		return 1
	}
	return 0
}

// workloadTie is a workload an actor was matched to.
type workloadTie struct {
	job    jobKey
	join   Join
	detail string
}

// attribute ties an alert instance (its labels, at time t) to the controllers it concerns. None
// means the finding is unattributed.
//
//   - A series with a controller label concerns that controller.
//   - An audit series names actors: a service account system:serviceaccount:<ns>:<sa> is matched
//     to the workloads it runs as (workloadsOfActor: by pod, else by service account, else by
//     name), and within each the controller named after the object's resource (controller-runtime
//     names a controller after the kind it reconciles: backups → backup), else its busiest one.
//     A controller found through several actors or instances keeps the strongest join.
//   - Otherwise the check's scope decides: per-pod signals (client-go has no controller label)
//     go to the busiest controller of the workload; leader election concerns all of them.
func (inv *inventory) attribute(c *check, l map[string]string, t time.Time, step time.Duration) []target {
	if name := l[catalogue.LabelController]; name != "" {
		k := inv.controllerOf(l)
		if slices.Contains(inv.controllers, k) {
			return []target{{key: k, how: byController}}
		}
		return nil
	}
	var actors []string
	for _, a := range actorLabels {
		if v := l[a]; v != "" {
			actors = append(actors, v)
		}
	}
	if len(actors) > 0 {
		var out []target
		for _, a := range actors {
			for _, w := range inv.workloadsOfActor(a, l[inv.cfg.ClusterLabel]) {
				k, ok := inv.controllerForResource(w.job, l[catalogue.LabelResource])
				if !ok {
					k, ok = inv.busiest(w.job, t, step)
				}
				if !ok {
					continue
				}
				i := slices.IndexFunc(out, func(x target) bool { return x.key == k })
				switch {
				case i < 0:
					out = append(out, target{k, byActor, w.join, w.detail})
				case w.join.strength() > out[i].join.strength():
					out[i].join, out[i].detail = w.join, w.detail
				}
			}
		}
		return out
	}
	j := inv.jobOf(l)
	switch c.scope {
	case byProcess:
		if k, ok := inv.busiest(j, t, step); ok {
			return []target{{key: k, how: byProcess}}
		}
	case byWorkload:
		var out []target
		for _, k := range inv.byJob[j] {
			out = append(out, target{key: k, how: byWorkload})
		}
		return out
	}
	return nil
}

// workloadsOfActor returns the workloads an audit actor runs as, by the strongest join that finds
// any: the scraped targets among the pods its writes came from (pod); else the scraped targets
// among the pods kube-state-metrics says run as its service account (serviceaccount); else the
// workloads of its service account's namespace named like it (name).
func (inv *inventory) workloadsOfActor(actor, cluster string) []workloadTie {
	ns, sa, isSA := catalogue.SplitServiceAccount(actor)
	if !isSA {
		return nil
	}
	byPods := func(pods []string, join Join, how string) []workloadTie {
		var out []workloadTie
		for _, pod := range pods {
			for _, j := range inv.podJobs[podKey{cluster, ns, pod}] {
				if slices.ContainsFunc(out, func(w workloadTie) bool { return w.job == j }) {
					continue
				}
				out = append(out, workloadTie{j, join, fmt.Sprintf("%s pod %s/%s, a scraped target of job %s", how, ns, pod, j.job)})
			}
		}
		return out
	}
	if out := byPods(inv.actorPods[actorKey{cluster, actor}], JoinPod, "its writes came from"); len(out) > 0 {
		return out
	}
	if out := byPods(inv.saPods[saKey{cluster, ns, sa}], JoinServiceAccount, "kube-state-metrics runs service account "+ns+"/"+sa+" as"); len(out) > 0 {
		return out
	}
	var out []workloadTie
	for j := range inv.byJob {
		if j.cluster == cluster && j.namespace == ns && (j.job == sa || strings.Contains(j.job, sa) || strings.Contains(sa, j.job)) {
			out = append(out, workloadTie{j, JoinName, fmt.Sprintf("job %s of namespace %s is named like service account %s (no pod of its writes is a scraped target)", j.job, ns, sa)})
		}
	}
	slices.SortFunc(out, func(a, b workloadTie) int {
		return strings.Compare(a.job.namespace+"/"+a.job.job, b.job.namespace+"/"+b.job.job)
	})
	return out
}

// controllerForResource returns the controller of workload j named after resource (a plural,
// lower-case resource name; controller-runtime's default controller name is the lower-case
// kind).
func (inv *inventory) controllerForResource(j jobKey, resource string) (controllerKey, bool) {
	if resource == "" {
		return controllerKey{}, false
	}
	for _, k := range inv.byJob[j] {
		n := k.name
		if resource == n || resource == n+"s" || resource == n+"es" ||
			(strings.HasSuffix(n, "y") && resource == strings.TrimSuffix(n, "y")+"ies") {
			return k, true
		}
	}
	return controllerKey{}, false
}

// busiest returns the controller of workload j with the most instrumented API calls at t, or
// the most reconciles when none of them is instrumented.
func (inv *inventory) busiest(j jobKey, t time.Time, step time.Duration) (controllerKey, bool) {
	ks := inv.byJob[j]
	if len(ks) == 0 {
		return controllerKey{}, false
	}
	for _, data := range [][]series{inv.calls, inv.reconciles} {
		best, bestV, found := ks[0], -1.0, false
		for _, k := range ks {
			for _, s := range data {
				if inv.controllerOf(s.labels) != k {
					continue
				}
				if v, ok := s.at(t, step); ok && v > bestV {
					best, bestV, found = k, v, true
				}
			}
		}
		if found {
			return best, true
		}
	}
	return ks[0], true
}
