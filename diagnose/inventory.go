package diagnose

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// controllerKey identifies one controller of one workload.
type controllerKey struct{ cluster, namespace, job, name string }

// jobKey identifies one workload.
type jobKey struct{ cluster, namespace, job string }

func (k controllerKey) jobKey() jobKey { return jobKey{k.cluster, k.namespace, k.job} }

func (k controllerKey) String() string {
	s := k.namespace + "/" + k.job + " controller " + k.name
	if k.cluster != "" {
		s = k.cluster + ": " + s
	}
	return s
}

// podKey identifies one pod; actorKey one audit actor; saKey one service account.
type (
	podKey   struct{ cluster, namespace, pod string }
	actorKey struct{ cluster, actor string }
	saKey    struct{ cluster, namespace, name string }
)

// minSamples is how many samples a series needs in the window to give a rate.
const minSamples = 2

// inventory is what Prometheus has: the controllers found in the window, and for every family a
// check needs, how many samples each controller (or workload, for per-process families) has.
type inventory struct {
	cfg         gen.Config
	controllers []controllerKey
	byJob       map[jobKey][]controllerKey
	// coverage maps a family name to the samples per level key (see levelKey).
	coverage map[string]map[string]float64
	// calls and reconciles are every controller's instrumented API calls and reconciles per
	// second over the window: what "the busiest controller of a workload" is decided on.
	calls, reconciles []series
	// reporting are the controllers whose reconcile counter Prometheus has at the end of the
	// window.
	reporting map[controllerKey]bool
	// podJobs are the workloads with controllers that scrape each pod; actorPods the pods each
	// audit actor's offending writes came from (the exporter's actor_pod); saPods the pods that
	// run as each service account (kube-state-metrics). What audit findings are joined by.
	podJobs   map[podKey][]jobKey
	actorPods map[actorKey][]string
	saPods    map[saKey][]string
}

// loadInventory finds the controllers and the coverage of every family the checks need. No
// controller at all, and a requested controller that does not exist, are errors.
func (d *diagnosis) loadInventory(ctx context.Context) error {
	inv := &inventory{cfg: d.opts.Config, byJob: map[jobKey][]controllerKey{}, coverage: map[string]map[string]float64{}}
	families := neededFamilies()
	vectors := make([]model.Vector, len(families))
	var reporting, podJobs, actorPods, saPods model.Vector
	tasks := []func(context.Context) error{d.instantTask(d.q.reporting(), &reporting),
		d.instantTask(d.q.podJobs(d.window()), &podJobs), d.instantTask(d.q.actorPods(d.window()), &actorPods),
		d.instantTask(d.q.serviceAccountPods(d.window()), &saPods)}
	for i, m := range families {
		tasks = append(tasks, d.instantTask(d.q.coverage(m, d.window()), &vectors[i]))
	}
	if err := d.runAll(ctx, tasks); err != nil {
		return err
	}
	inv.reporting = map[controllerKey]bool{}
	for _, s := range reporting {
		inv.reporting[inv.controllerOf(labelsOf(s.Metric))] = true
	}
	inv.joins(podJobs, actorPods, saPods)
	for i, m := range families {
		cov := map[string]float64{}
		for _, s := range vectors[i] {
			cov[inv.levelKey(m, labelsOf(s.Metric))] = float64(s.Value)
		}
		inv.coverage[m.Name] = cov
	}
	seen := map[controllerKey]bool{}
	for _, s := range vectors[0] {
		k := inv.controllerOf(labelsOf(s.Metric))
		if k.name == "" || seen[k] {
			continue
		}
		seen[k] = true
		inv.controllers = append(inv.controllers, k)
	}
	if len(inv.controllers) == 0 {
		return fmt.Errorf("%w: no %s series with a controller label match selectors.controller {%s} in the last %s: check that Prometheus scrapes the controllers (up{%s}) and that the selector matches them",
			ErrNoControllers, catalogue.ControllerRuntimeReconcileTotal.Name, d.opts.Config.Selectors.Controller, d.window(), d.opts.Config.Selectors.Controller)
	}
	sort.Slice(inv.controllers, func(i, j int) bool { return inv.controllers[i].String() < inv.controllers[j].String() })
	if name := d.opts.Controller; name != "" {
		var names []string
		for _, k := range inv.controllers {
			if !slices.Contains(names, k.name) {
				names = append(names, k.name)
			}
		}
		if !slices.Contains(names, name) {
			sort.Strings(names)
			if len(names) > 20 {
				names = append(names[:20], fmt.Sprintf("and %d more", len(names)-20))
			}
			return fmt.Errorf("%w %q: no controller of that name in the last %s; controllers found: %s", ErrUnknownController, name, d.window(), strings.Join(names, ", "))
		}
	}
	for _, k := range inv.controllers {
		inv.byJob[k.jobKey()] = append(inv.byJob[k.jobKey()], k)
	}
	d.inv = inv
	return nil
}

// joins loads what audit actors are joined to workloads by (see workloadsOfActor).
func (inv *inventory) joins(podJobs, actorPods, saPods model.Vector) {
	cl := inv.cfg.ClusterLabel
	inv.podJobs, inv.actorPods, inv.saPods = map[podKey][]jobKey{}, map[actorKey][]string{}, map[saKey][]string{}
	for _, s := range podJobs {
		l := labelsOf(s.Metric)
		k, j := podKey{l[cl], l["namespace"], l["pod"]}, inv.jobOf(l)
		if !slices.Contains(inv.podJobs[k], j) {
			inv.podJobs[k] = append(inv.podJobs[k], j)
		}
	}
	for _, s := range actorPods {
		l := labelsOf(s.Metric)
		k := actorKey{l[cl], l[catalogue.LabelActor]}
		if p := l[catalogue.LabelActorPod]; p != "" && !slices.Contains(inv.actorPods[k], p) {
			inv.actorPods[k] = append(inv.actorPods[k], p)
		}
	}
	for _, s := range saPods {
		l := labelsOf(s.Metric)
		k := saKey{l[cl], l["namespace"], l["service_account"]}
		if p := l["pod"]; p != "" && !slices.Contains(inv.saPods[k], p) {
			inv.saPods[k] = append(inv.saPods[k], p)
		}
	}
	for _, m := range []map[actorKey][]string{inv.actorPods} {
		for _, v := range m {
			slices.Sort(v)
		}
	}
	for _, v := range inv.saPods {
		slices.Sort(v)
	}
	for _, v := range inv.podJobs {
		slices.SortFunc(v, func(a, b jobKey) int { return strings.Compare(a.namespace+"/"+a.job, b.namespace+"/"+b.job) })
	}
}

func labelsOf(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

// controllerOf returns the controller a series names (name empty when it names none).
func (inv *inventory) controllerOf(l map[string]string) controllerKey {
	return controllerKey{l[inv.cfg.ClusterLabel], l["namespace"], l["job"], l[catalogue.LabelController]}
}

// jobOf returns the workload a series belongs to.
func (inv *inventory) jobOf(l map[string]string) jobKey {
	return jobKey{l[inv.cfg.ClusterLabel], l["namespace"], l["job"]}
}

// levelKey is the key of a coverage entry: the controller for per-controller families, the
// workload for per-process ones, the cluster for the exporter's.
func (inv *inventory) levelKey(m catalogue.Metric, l map[string]string) string {
	switch {
	case m.Source == catalogue.SourceExporter:
		return l[inv.cfg.ClusterLabel]
	case hasLabel(m, catalogue.LabelController):
		return inv.controllerOf(l).String()
	default:
		j := inv.jobOf(l)
		return j.cluster + ": " + j.namespace + "/" + j.job
	}
}

// samples returns how many samples controller k has of family m in the window.
func (inv *inventory) samples(m catalogue.Metric, k controllerKey) float64 {
	l := map[string]string{inv.cfg.ClusterLabel: k.cluster, "namespace": k.namespace, "job": k.job, catalogue.LabelController: k.name}
	return inv.coverage[m.Name][inv.levelKey(m, l)]
}

// has reports whether controller k has enough samples of family m.
func (inv *inventory) has(m catalogue.Metric, k controllerKey) bool {
	return inv.samples(m, k) >= minSamples
}
