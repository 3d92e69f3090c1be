package diagnose

import (
	"slices"
	"strings"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
)

// Audit labels that name actors: one actor (hot objects, races, conflicts, lists) or the two
// sides of a write fight.
var actorLabels = []string{catalogue.LabelActor, "actor_a", "actor_b"}

// serviceAccountPrefix starts the username of a service account.
const serviceAccountPrefix = "system:serviceaccount:"

// target is a controller a finding is tied to, and how.
type target struct {
	key controllerKey
	how attribution
}

// attribute ties an alert instance (its labels, at time t) to the controllers it concerns. None
// means the finding is unattributed.
//
//   - A series with a controller label concerns that controller.
//   - An audit series names actors: a service account system:serviceaccount:<ns>:<sa> is the
//     workload in namespace <ns> whose job is named like <sa> (equal, or one containing the
//     other), and within it the controller named after the object's resource (controller-runtime
//     names a controller after the kind it reconciles: backups → backup), else its busiest one.
//   - Otherwise the check's scope decides: per-pod signals (client-go has no controller label)
//     go to the busiest controller of the workload; leader election concerns all of them.
func (inv *inventory) attribute(c *check, l map[string]string, t time.Time, step time.Duration) []target {
	if name := l[catalogue.LabelController]; name != "" {
		k := inv.controllerOf(l)
		if slices.Contains(inv.controllers, k) {
			return []target{{k, byController}}
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
			for _, j := range inv.jobsOfActor(a, l[inv.cfg.ClusterLabel]) {
				k, ok := inv.controllerForResource(j, l[catalogue.LabelResource])
				if !ok {
					k, ok = inv.busiest(j, t, step)
				}
				if ok && !slices.ContainsFunc(out, func(x target) bool { return x.key == k }) {
					out = append(out, target{k, byActor})
				}
			}
		}
		return out
	}
	j := inv.jobOf(l)
	switch c.scope {
	case byProcess:
		if k, ok := inv.busiest(j, t, step); ok {
			return []target{{k, byProcess}}
		}
	case byWorkload:
		var out []target
		for _, k := range inv.byJob[j] {
			out = append(out, target{k, byWorkload})
		}
		return out
	}
	return nil
}

// jobsOfActor returns the workloads an audit actor runs as: for a service account, the
// workloads of its namespace named like it.
func (inv *inventory) jobsOfActor(actor, cluster string) []jobKey {
	rest, ok := strings.CutPrefix(actor, serviceAccountPrefix)
	if !ok {
		return nil
	}
	ns, sa, ok := strings.Cut(rest, ":")
	if !ok || sa == "" {
		return nil
	}
	var out []jobKey
	for j := range inv.byJob {
		if j.cluster == cluster && j.namespace == ns && (j.job == sa || strings.Contains(j.job, sa) || strings.Contains(sa, j.job)) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b jobKey) int { return strings.Compare(a.namespace+"/"+a.job, b.namespace+"/"+b.job) })
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
