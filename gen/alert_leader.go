package gen

import (
	"fmt"
	"time"
)

// Leader-election alerts, per lease: leader_election_master_status{name} is 1 on the leader and 0
// on the others. Replicas racing without a leader show up as "more than one leader" when each runs
// its own election of one lease name (in different lease namespaces, say), and as write races in
// the audit exporter when there is no election at all or each elects on a lease name of its own.
//
// A healthy restart or handover must leave both LeaderMissing and LeaderMultiple silent, not even
// pending: controller-runtime reports 0 on every replica from the moment its elector is built until
// one wins, so a restarted or newly started replica shows "no leader" for a moment; and the old
// leader's last sample (1) stays visible until Prometheus marks it stale at its next failed scrape,
// while the new leader may already report 1. Both alerts therefore look at a window: no replica
// led at any sample of it, or two replicas led at every sample of it while both are still there.

// leaderSeries is the leader-status series of the controller's replicas.
func leaderSeries(e *exprEnv) string {
	return sel("leader_election_master_status", e.Selector("controller"))
}

// leaseReplicas returns the status series of two replicas of the controller target.
func leaseReplicas(c *caseEnv) (a, b Labels) {
	a = c.Target("controller").With("name", "backup-operator-lock")
	return a, otherReplica(a)
}

// windowGap is how long a handover in a case may leave a lease without a leader when the
// window is w seconds: the whole sample intervals of the window less one.
func windowGap(w float64) time.Duration {
	n := time.Duration(w*float64(time.Second)) / sampleInterval
	return max(0, (n-1)*sampleInterval)
}

// LeaderMissing fires when no replica has held a lease at any sample of a window longer than a
// handover, and replicas were already there before that window: the first election of a fresh
// deployment, a restart and a handover never make it pending.
var LeaderMissing = &Alert{
	Key: "leaderMissing", Name: "LeaderMissing",
	Severity: SeverityCritical, For: 2 * time.Minute,
	Params: []Param{
		{Key: "handover", Default: 180, Check: seconds,
			Doc: "Seconds without any replica reporting leadership before the lease counts as leaderless: longer than a handover (lease duration and retry period, plus two scrape intervals), so restarts and handovers stay silent. The alert fires `for` after that."},
	},
	Level: levelLease,
	Expr: func(e *exprEnv) string {
		w := "[" + e.P("handover") + "s]"
		return lines(
			sumBy(levelLease, "max_over_time("+leaderSeries(e)+w+")")+" < 1",
			"and on ("+levelLease.by()+")",
			sumBy(levelLease, leaderSeries(e)+" offset "+e.P("handover")+"s"))
	},
	Summary:     "A controller has no leader.",
	Description: "No replica of {{ $labels.namespace }}/{{ $labels.job }} has held lease {{ $labels.name }} for ⟦@handover:g⟧s: nothing reconciles.",
	NextStep:    "Read the replicas' logs for lease renewal errors, check the API server's health and the lease: kubectl -n <namespace> get lease <name> -o yaml.",
	Panel:       PanelRef{"controller", "Leader per lease"},
	Cases: func(c *caseEnv) []Case {
		a, b := leaseReplicas(c)
		w := c.P("handover")
		window := time.Duration(w * float64(time.Second))
		// The leader's last sample at 1 is one sample before incidentAt; the window is left-open,
		// so that sample leaves it at incidentAt - sampleInterval + window.
		lastLed := incidentAt - sampleInterval
		gap := windowGap(w)
		cases := []Case{
			{
				Name:   "fires when no replica holds the lease",
				Series: []*Series{Gauge("leader_election_master_status", a, 1).Set(incidentAt, 0), Gauge("leader_election_master_status", b, 0)},
				Fires:  &Firing{At: ceilTo(lastLed+window, sampleInterval), Labels: c.Instance(a), Value: Constant(0)},
			},
			{
				Name:   "stays silent with one leader and a standby",
				Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0)},
			},
		}
		if gap == 0 {
			// A window shorter than two samples leaves no room for a sample without a leader.
			return cases
		}
		return append(cases, []Case{
			{
				Name: "stays silent through a handover to a standby while the old leader's pod goes away",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 1).Until(incidentAt),
					Gauge("leader_election_master_status", b, 0).Set(incidentAt+gap, 1),
				},
			},
			{
				Name: "stays silent through a restart of the only replica",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 1).Set(incidentAt, 0).Set(incidentAt+gap, 1),
				},
			},
			{
				Name: "stays silent while a new deployment elects its first leader",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 0).From(incidentAt).Set(incidentAt+gap, 1),
					Gauge("leader_election_master_status", b, 0).From(incidentAt),
				},
			},
		}...)
	},
}

// LeaderMultiple fires when two replicas have claimed one lease at every sample of a window and
// are both still there. A new leader counts only once its earlier samples (0 as a standby, or
// none as a new pod) have left the window, by which time the old leader's series is stale.
//
// A replica is a pod: one pod scraped twice under one job (a ServiceMonitor and a PodMonitor, or
// two ports of one pod) gives two series that differ by instance (and by the endpoint or
// container label prometheus-operator adds), and both say the same leader. The status is taken
// per pod (the highest of its series) before the leaders are counted; a target without a pod
// label is a replica of its own, by its instance.
var LeaderMultiple = &Alert{
	Key: "leaderMultiple", Name: "LeaderMultiple",
	Severity: SeverityCritical, For: 2 * time.Minute,
	Params: []Param{
		{Key: "overlap", Default: 120, Check: seconds,
			Doc: "Seconds two replicas must both report leadership before they count as two leaders: at least two scrape intervals, so a handover, whose old leader stays visible for up to one scrape, stays silent."},
	},
	Level: levelLease,
	Expr: func(e *exprEnv) string {
		s := leaderSeries(e)
		led := lines(
			"min_over_time("+s+"["+e.P("overlap")+"s])",
			"and",
			s,
			"and",
			s+" offset "+e.P("overlap")+"s",
		)
		return sumBy(levelLease, maxBy(levelLease.with(replicaLabel), byReplica(led))) + " > 1"
	},
	Summary:     "A controller has more than one leader.",
	Description: "{{ $value }} replicas of {{ $labels.namespace }}/{{ $labels.job }} claim lease {{ $labels.name }} at once. They will race on every object.",
	NextStep:    "Make every replica use the same Lease object (the same LeaderElectionID and LeaderElectionNamespace) and check that their clocks agree.",
	Panel:       PanelRef{"controller", "Leader per lease"},
	Cases: func(c *caseEnv) []Case {
		a, b := leaseReplicas(c)
		window := time.Duration(c.P("overlap") * float64(time.Second))
		// b's last sample at 0 is one sample before incidentAt; it leaves the left-open window
		// at incidentAt - sampleInterval + window.
		cases := []Case{
			{
				Name:   "fires when two replicas claim the lease",
				Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0).Set(incidentAt, 1)},
				Fires:  &Firing{At: ceilTo(incidentAt-sampleInterval+window, sampleInterval), Labels: c.Instance(a), Value: Constant(2)},
			},
			{
				Name:   "stays silent with one leader and a standby",
				Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0)},
			},
			{
				// A second scrape configuration of the same pod (another port, a PodMonitor
				// beside a ServiceMonitor) under the same job: two series, one leader.
				Name: "stays silent when the leader's pod is scraped twice under one job",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 1),
					Gauge("leader_election_master_status", a.With("instance", "10.244.1.17:8080", "endpoint", "metrics-alt"), 1),
					Gauge("leader_election_master_status", b, 0),
				},
			},
		}
		// Targets without a pod label (static configurations): each instance is a replica.
		if noPod, err := satisfy(c.cfg.selectorValue("controller"), a.With("pod", "")); err == nil && noPod["pod"] == "" {
			other := noPod.With("instance", otherReplica(a)["instance"])
			cases = append(cases, Case{
				Name:   "fires when two replicas of targets without a pod label claim the lease",
				Series: []*Series{Gauge("leader_election_master_status", noPod, 1), Gauge("leader_election_master_status", other, 0).Set(incidentAt, 1)},
				Fires:  &Firing{At: ceilTo(incidentAt-sampleInterval+window, sampleInterval), Labels: c.Instance(noPod), Value: Constant(2)},
			})
		}
		if window < 2*sampleInterval {
			// The old leader of a handover is seen for up to one sample: a shorter window cannot
			// tell it from a second leader at this sample interval.
			return cases
		}
		return append(cases, []Case{
			{
				Name: "stays silent through a handover whose old leader is still seen for one scrape",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 1).Until(incidentAt + sampleInterval),
					Gauge("leader_election_master_status", b, 0).Set(incidentAt, 1),
				},
			},
			{
				Name: "stays silent when a new pod takes the lease while the old leader is still seen",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 1).Until(incidentAt + sampleInterval),
					Gauge("leader_election_master_status", b, 1).From(incidentAt),
				},
			},
		}...)
	},
}

// replicaLabel is the label byReplica gives each series: the replica (the pod) that reports it.
const replicaLabel = "replica"

// byReplica labels every series of expr with the replica that reports it (replicaLabel): its pod,
// or, for a target without a pod label, its instance.
func byReplica(expr string) string {
	return `label_replace(label_replace(` + expr + `, "` + replicaLabel + `", "$1", "instance", "(.*)"), "` + replicaLabel + `", "$1", "pod", "(.+)")`
}

// levelReplicaLease: one replica's view of one lease.
var levelReplicaLease = levelUp.with("name")

// leaderSampleInterval is the evaluation interval of the group that samples the leader status
// (recLeaderStatus), whatever the rule interval: LeaderFlapping counts changes over an hour.
const leaderSampleInterval = time.Minute

// recLeaderStatus samples every replica's leader status once per leaderSampleInterval, for
// LeaderFlapping: its hour of changes() reads 60 samples per replica instead of one per scrape
// (240 at 15s scrapes; at 500 × 3 the raw hour was 359,000 samples per evaluation). A status
// that changes and changes back within a minute is not seen; a lease that changes hands every
// few minutes is. promtool evaluates every group at the test's interval, so the tests sample at
// that interval.
var recLeaderStatus = &Recording{
	Name:      levelReplicaLease.record("leader_election_master_status", "max"),
	ForAlerts: []string{"leaderFlapping"},
	Expr: func(e *exprEnv) string {
		return maxBy(levelReplicaLease, sel("leader_election_master_status", e.Selector("controller")))
	},
	Cases: func(c *caseEnv) []ExprCase {
		a, b := leaseReplicas(c)
		return []ExprCase{{
			Name:   "records each replica's status of each lease",
			At:     5 * time.Minute,
			Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0)},
			Want:   []Sample{{c.AtLevel(levelReplicaLease, a), 1}, {c.AtLevel(levelReplicaLease, b), 0}},
		}}
	},
}

// sampledChanges is changes(…[window]) at the evaluation t over s as recLeaderStatus records
// it: the last sample at or before each evaluation, every `every`, back from t.
func sampledChanges(s *Series, window, t, every time.Duration) int {
	n, later, have := 0, 0.0, false
	for e := t; e > t-window && e >= 0; e -= every {
		v, ok := s.sampleAt(e - e%sampleInterval)
		if !ok {
			continue
		}
		if have && v != later {
			n++
		}
		later, have = v, true
	}
	return n
}

// LeaderFlapping fires when leadership changes hands too often: replicas that crash or miss
// renewals (CPU throttling, a slow API server) hand the lease back and forth.
var LeaderFlapping = &Alert{
	Key: "leaderFlapping", Name: "LeaderFlapping",
	Severity: SeverityWarning, For: 5 * time.Minute,
	Params: []Param{
		{Key: "threshold", Default: 4, Check: positive,
			Doc: "Changes of the leader status of a lease's replicas in an hour (a handover changes two) above which the alert fires."},
	},
	Level: levelLease,
	Expr: func(e *exprEnv) string {
		return sumBy(levelLease, "changes("+recLeaderStatus.Name+"[1h])") + " > " + e.P("threshold")
	},
	Summary:     "A controller's leadership changes too often.",
	Description: "Leadership of lease {{ $labels.name }} in {{ $labels.namespace }}/{{ $labels.job }} changed {{ $value }} times in the last hour. Replicas that crash or miss renewals (CPU throttling, slow API server) hand the lease back and forth; each handover restarts every informer.",
	NextStep:    "Replicas hand the lease back and forth: look for restarts (kubectl -n <namespace> get pods), CPU throttling and slow API calls; a longer lease duration and renew deadline ride them out.",
	Panel:       PanelRef{"controller", "Leader per lease"},
	Cases: func(c *caseEnv) []Case {
		th := c.P("threshold")
		a, b := leaseReplicas(c)
		// From incidentAt the lease changes hands every `every`: each handover changes both
		// replicas' status. changes(...[1h]) sees the samples of the last hour.
		every := 2 * sampleInterval
		if 2*float64(time.Hour/every-1) <= th*above {
			every = sampleInterval
		}
		if 2*float64(time.Hour/every-1) <= th*above {
			c.errs = append(c.errs, fmt.Errorf("alert leaderFlapping: threshold %g is above what one hour of samples every %s can show", th, sampleInterval))
		}
		end := incidentAt + time.Hour + c.For() + 2*time.Hour
		sa, sb := Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0)
		for i, t := 0, incidentAt; t <= end; i, t = i+1, t+every {
			sa.Set(t, float64(i%2))
			sb.Set(t, float64((i+1)%2))
		}
		changes := func(t time.Duration) float64 {
			return float64(sampledChanges(sa, time.Hour, t, c.Interval()) + sampledChanges(sb, time.Hour, t, c.Interval()))
		}
		one := []*Series{
			Gauge("leader_election_master_status", a, 1).Set(incidentAt, 0),
			Gauge("leader_election_master_status", b, 0).Set(incidentAt, 1),
		}
		cases := []Case{
			{
				Name:   "fires when the lease keeps changing hands",
				Series: []*Series{sa, sb},
				Fires:  &Firing{At: c.crossingExact(incidentAt, incidentAt+time.Hour, th, changes), Labels: c.Instance(a), Value: changes},
			},
			{
				Name:   "stays silent with a steady leader",
				Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0)},
			},
		}
		if th >= 2 {
			cases = append(cases, Case{Name: "stays silent after one handover", Series: one})
		}
		return cases
	},
}
