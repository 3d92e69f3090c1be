package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/operator/controller"
)

// Incident is one controller failure reproduced on the cluster, and the alerts that must catch
// it. Each runs in a scene of its own (see RunIncident).
type Incident struct {
	// Name identifies the incident (a DNS label; SCENARIO= of `make demo`).
	Name string
	// What says what goes wrong and how the scene produces it.
	What string
	// Expect are the alerts that must fire, each within its `for` + 1 minute of the injection;
	// every other loopwatch alert must stay silent (neither pending nor firing). Empty for a
	// healthy scene. Several alerts when they are views of the same failure.
	Expect []*gen.Alert
	// Known says, for an expected alert that cannot fire yet, why: the incident is run and
	// reported, and that alert's miss does not fail the matrix.
	Known map[*gen.Alert]string
	// Operator is how the operator's replicas run; "{ns}" in a flag is the scene's namespace.
	Operator Operator
	// Workload is how they are deployed: service account and job (default backup-operator).
	Workload Workload
	// Before prepares the scene before the operator starts (objects it finds at startup).
	Before func(ctx context.Context, s *Scene) error
	// Inject starts the incident once the operator runs (load, a deletion); nil when the
	// operator's fault modes are the incident.
	Inject func(ctx context.Context, s *Scene) error
	// Delay is how long after the operator starts (and Inject returns) the fault takes effect.
	Delay time.Duration
	// Watch is how long a healthy scene is watched for silence.
	Watch time.Duration
	// Diagnosis is what `loopwatch diagnose` must conclude once the expected alerts fired (or,
	// for a healthy scene, at the end of the watch); nil: not checked.
	Diagnosis *Diagnosis
}

// Object sets of the scenes.
var (
	// scheduled take a snapshot every 20 seconds, so the controllers keep reconciling and
	// writing. Each snapshot rewrites its Backup's status about three times (taken, completed,
	// the oldest pruned): every 10 seconds would be 18 writes a minute to one object, the
	// exporter's hot-object line.
	scheduled = Backups{Prefix: "every20s", N: 5, IntervalSeconds: 20}
	// fleet is a namespace's worth of Backups, suspended.
	fleet = Backups{Prefix: "fleet", N: 25, Suspend: true}
	// few are a handful of Backups on the default schedule.
	few = Backups{Prefix: "backup", N: 3}
)

// shortLease makes lease handovers take seconds: the lease incidents produce several.
var shortLease = []string{"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}

// Healthy is the scene with no fault: the operator with a standby, scheduled Backups and a user
// editing specs. Nothing may go pending or fire.
var Healthy = Incident{
	Name:     "healthy",
	What:     "the operator with leader election and a standby, 5 Backups snapshotting every 20s, a user editing a spec every 5s",
	Operator: Operator{Pods: 2},
	Before:   create(scheduled),
	Inject: func(ctx context.Context, s *Scene) error {
		s.EditEvery(scheduled, 5*time.Second)
		return nil
	},
	Watch:     time.Minute,
	Diagnosis: &Diagnosis{},
}

// Incidents returns the incidents of the matrix: the thirteen of the issue, then those produced
// another way (two leaders, flapping, relists of a LIST client), then a rollout whose new build
// exports no controller metrics.
func Incidents() []Incident {
	return []Incident{
		{
			Name:      "queue-backlog",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.QueueBacklog},
			What:      "Backups are created 10 per second while the controller, with one worker and reconciles waiting 300ms on a slow dependency, handles about 3 per second",
			// A backlog makes items wait: the queue-wait alert is the other view of it.
			Expect:   []*gen.Alert{gen.QueueBacklog, gen.QueueWaitHigh},
			Operator: Operator{Flags: []string{"--fault-reconcile-delay=300ms", "--max-concurrent-reconciles=1"}},
			Inject: func(ctx context.Context, s *Scene) error {
				s.CreateEvery(Backups{Prefix: "onboarding", N: 2000, Suspend: true}, 100*time.Millisecond)
				return nil
			},
		},
		{
			Name:      "slow-reconcile",
			Diagnosis: &Diagnosis{Controller: controller.SnapshotControllerName, Cause: gen.ReconcileSlow},
			What:      "every archive store call takes 6s, as an overloaded object store does (--fault-slow-store=6s); 2 Backups snapshot every 20s",
			Expect:    []*gen.Alert{gen.ReconcileSlow},
			Operator:  Operator{Flags: []string{"--fault-slow-store=6s"}},
			Before:    create(Backups{Prefix: "every20s", N: 2, IntervalSeconds: 20}),
		},
		{
			Name:      "stuck-worker",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.ProcessorStuck},
			What:      "the reconcile of one Backup never returns, as a call without a timeout does (--fault-hang)",
			Expect:    []*gen.Alert{gen.ProcessorStuck},
			Operator:  Operator{Flags: []string{"--fault-hang=" + few.Prefix + "-0"}},
			Before:    create(few),
		},
		{
			Name:      "error-storm",
			Diagnosis: &Diagnosis{Controller: controller.SnapshotControllerName, Cause: gen.ReconcileErrors},
			What:      "the archive store fails every write (--fault-failing-store); 5 Backups snapshot every 20s",
			// The error-budget alerts are the SLO view of the same failures.
			Expect:   []*gen.Alert{gen.ReconcileErrors, gen.ErrorBudgetBurnFast, gen.ErrorBudgetBurnSlow},
			Operator: Operator{Flags: []string{"--fault-failing-store"}},
			Before:   create(scheduled),
		},
		{
			Name:      "n-plus-one",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.APICallsPerReconcileHigh},
			What:      "every reconcile lists all Backups and GETs each one from the API server (--fault-n-plus-one) while the namespace grows to 30 Backups",
			Expect:    []*gen.Alert{gen.APICallsPerReconcileHigh},
			Operator:  Operator{Flags: []string{"--fault-n-plus-one"}},
			Before:    create(scheduled),
			Inject: func(ctx context.Context, s *Scene) error {
				s.CreateEvery(fleet, 500*time.Millisecond)
				return nil
			},
		},
		{
			Name:      "hot-loop",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.HotLoop},
			What:      "a timestamp annotation patched after every reconcile wakes the controller again (--fault-hot-loop)",
			// The loop's three views: the PATCH rate of its process, the object its one actor
			// rewrites (audit), and the controller that writes on every reconcile, fast, with
			// a hot object written by its namespace.
			Expect: []*gen.Alert{gen.PatchRateHigh, gen.HotObject, gen.HotLoop},
			// A loop limited only by the API server, as client-go's default 5 requests per second
			// is not: the 5-minute PATCH rate must cross 10/s within a minute.
			Operator: Operator{Flags: []string{"--fault-hot-loop", "--kube-api-qps=200", "--kube-api-burst=400"}},
			Before:   create(few),
		},
		{
			Name:      "write-fight",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.WriteFight},
			What:      "a second controller, with its own service account, sets an annotation every 6s that the operator sets back (--fault-fight)",
			Expect:    []*gen.Alert{gen.WriteFight},
			Operator: Operator{Flags: []string{"--fault-fight", "--fault-fight-interval=6s",
				"--fault-fight-as=system:serviceaccount:{ns}:" + rivalSA}},
			Before: create(few),
		},
		{
			Name:      "replica-race",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.ReplicaRace},
			What:      "two replicas run without leader election and reconcile the same Backups (--fault-no-leader-election)",
			Expect:    []*gen.Alert{gen.ReplicaRace},
			Operator:  Operator{Pods: 2, Flags: []string{"--fault-no-leader-election"}},
			Before:    create(scheduled),
		},
		{
			Name:      "leader-lost",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.LeaderMissing},
			What:      "15s after the start the API server is unreachable for the leader elector of both replicas (--fault-lease-unreachable-after): the leader cannot renew, gives up and exits; the standby cannot take the lease",
			Expect:    []*gen.Alert{gen.LeaderMissing},
			Operator:  Operator{Pods: 2, Flags: append([]string{"--fault-lease-unreachable-after=15s"}, shortLease...)},
			Before:    create(few),
			Delay:     15 * time.Second,
		},
		{
			Name:      "periodic-storm",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.QueueWaitHigh},
			What:      "every 15s a cron job touches all 60 Backups and requeues them (--fault-mass-update-every); with one worker and 300ms reconciles, fresh events wait behind the storm",
			Expect:    []*gen.Alert{gen.QueueWaitHigh},
			Operator:  Operator{Flags: []string{"--fault-mass-update-every=15s", "--fault-reconcile-delay=300ms", "--max-concurrent-reconciles=1"}},
			Before:    create(Backups{Prefix: "cron", N: 60, Suspend: true}),
			Delay:     15 * time.Second,
		},
		{
			Name:      "relist-storm",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.RelistStorm},
			What:      "a client of the operator rebuilds its ConfigMap informer 50 times a second (--fault-relist-every=20ms); client-go's WatchList is on, as by default, so each relist is a WATCH with sendInitialEvents=true",
			Expect:    []*gen.Alert{gen.RelistStorm},
			Operator:  Operator{Flags: []string{"--fault-relist-every=20ms", "--kube-api-qps=200", "--kube-api-burst=400"}},
		},
		{
			Name:      "stuck-finalizer",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.FinalizerStuck},
			What:      "a Backup is deleted while its finalizer waits for an external clean-up that never completes (--fault-finalizer-stuck)",
			Expect:    []*gen.Alert{gen.FinalizerStuck},
			Operator:  Operator{Flags: []string{"--fault-finalizer-stuck"}},
			Before:    create(few),
			Inject: func(ctx context.Context, s *Scene) error {
				if err := s.WaitFinalizer(ctx, few, 0); err != nil {
					return err
				}
				return s.Delete(ctx, few, 0)
			},
		},
		{
			Name:      "missing-metrics",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.WorkqueueMetricsMissing},
			What:      "the Backup controller's work queue registers its metrics with a registry nobody serves, as when another workqueue metrics provider wins (--fault-workqueue-metrics-unregistered)",
			Expect:    []*gen.Alert{gen.WorkqueueMetricsMissing},
			Operator:  Operator{Flags: []string{"--fault-workqueue-metrics-unregistered"}},
			Before:    create(few),
		},
		{
			Name:      "two-leaders",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.LeaderMultiple},
			What:      "two replicas elect a leader with the same lease name in different namespaces: both lead",
			Expect:    []*gen.Alert{gen.LeaderMultiple},
			Operator:  Operator{Pods: 2, PodFlags: map[int][]string{1: {"--leader-election-namespace={ns}-lease"}}},
			Before: func(ctx context.Context, s *Scene) error {
				return s.ensureNamespace(ctx, s.Namespace+"-lease")
			},
		},
		{
			Name:      "leader-flapping",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.LeaderFlapping},
			What:      "a replica that has led for 5s can no longer renew its lease (--fault-lease-lost-after=5s): it exits, is restarted as a standby, and the other replica takes the lease, in turn",
			Expect:    []*gen.Alert{gen.LeaderFlapping},
			Operator:  Operator{Pods: 2, Restart: true, Flags: append([]string{"--fault-lease-lost-after=5s"}, shortLease...)},
		},
		{
			Name:      "relist-storm-list",
			Diagnosis: &Diagnosis{Controller: controller.BackupControllerName, Cause: gen.RelistStorm},
			What:      "the relist storm of a client with WatchList off (KUBE_FEATURE_WatchListClient=false), as older clients: each relist is a LIST",
			Expect:    []*gen.Alert{gen.RelistStorm},
			Operator:  Operator{Flags: []string{"--fault-relist-every=20ms", "--kube-api-qps=200", "--kube-api-burst=400"}, Env: []string{"KUBE_FEATURE_WatchListClient=false"}},
		},
		{
			Name:      "unserved-metrics",
			Diagnosis: &Diagnosis{Cause: gen.ControllerMetricsMissing, Pod: podName(1)},
			What:      "a rollout replaces the operator with a build whose metrics endpoint serves a registry of its own, Go and process metrics only (--fault-metrics-own-registry): the new pod is up and leads, and none of its controllers' metrics reach Prometheus",
			Expect:    []*gen.Alert{gen.ControllerMetricsMissing},
			Operator:  Operator{Pods: 1},
			Before:    create(few),
			Inject:    rollOutOwnRegistry,
		},
	}
}

// Scenarios are the healthy scene and every incident, by name.
func Scenarios() []Incident { return append([]Incident{Healthy}, Incidents()...) }

// Scenario returns the scenario called name.
func Scenario(name string) (Incident, error) {
	var names []string
	for _, inc := range Scenarios() {
		if inc.Name == name {
			return inc, nil
		}
		names = append(names, inc.Name)
	}
	return Incident{}, fmt.Errorf("no scenario %q (scenarios: %v)", name, names)
}

// rollOutOwnRegistry waits until the rules have recorded that the operator's job exports
// controller metrics, then rolls the operator out as a Deployment does: the new replica, with
// --fault-metrics-own-registry, starts and is up before the old one stops and hands it the lease.
func rollOutOwnRegistry(ctx context.Context, s *Scene) error {
	seen := gen.JobSeenSeries() + `{job="` + s.workload.Job + `"}`
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := s.Prometheus().WaitForQuery(wctx, seen); err != nil {
		return err
	}
	if err := s.StartPod(1, "--fault-metrics-own-registry"); err != nil {
		return err
	}
	if err := s.WaitPodUp(ctx, 1); err != nil {
		return err
	}
	s.StopPod(0)
	return nil
}

// create returns a Before that creates the sets of Backups.
func create(sets ...Backups) func(context.Context, *Scene) error {
	return func(ctx context.Context, s *Scene) error {
		for _, b := range sets {
			if err := s.Create(ctx, b); err != nil {
				return err
			}
		}
		return nil
	}
}
