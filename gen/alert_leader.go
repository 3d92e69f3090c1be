package gen

import (
	"fmt"
	"time"
)

// Leader-election alerts, per lease: leader_election_master_status{name} is 1 on the leader and 0
// on the others. Replicas racing without a leader show up as "more than one leader" when each runs
// its own election, and as write races in the audit exporter when there is no election at all.

// leaderStatus is the number of replicas claiming each lease.
func leaderStatus(e *exprEnv) string {
	return sumBy(levelLease, sel("leader_election_master_status", e.Selector("controller")))
}

// leaseReplicas returns the status series of two replicas of the controller target.
func leaseReplicas(c *caseEnv) (a, b Labels) {
	a = c.Target("controller").With("name", "backup-operator-lock")
	return a, a.With("pod", a["pod"]+"-b", "instance", "10.244.1.18:8443")
}

// LeaderMissing fires when no replica holds a lease. controller-runtime reports 0 on every replica
// until one wins, so a restart shows a moment without a leader: `for` must be longer than a
// normal handover.
var LeaderMissing = &Alert{
	Key: "leaderMissing", Name: "LeaderMissing",
	Severity: SeverityCritical, For: 5 * time.Minute,
	Level:       levelLease,
	Expr:        func(e *exprEnv) string { return leaderStatus(e) + " < 1" },
	Summary:     "A controller has no leader.",
	Description: "No replica of {{ $labels.namespace }}/{{ $labels.job }} holds lease {{ $labels.name }}: nothing reconciles. Check the replicas' logs for lease renewal errors and the API server's health.",
	Panel:       PanelRef{"controller", "Leader per lease"},
	Cases: func(c *caseEnv) []Case {
		a, b := leaseReplicas(c)
		// A handover leaves the lease without a holder for less than `for`.
		gap := max(0, ceilTo(c.For()/2, sampleInterval)-sampleInterval)
		return []Case{
			{
				Name:   "fires when no replica holds the lease",
				Series: []*Series{Gauge("leader_election_master_status", a, 1).Set(incidentAt, 0), Gauge("leader_election_master_status", b, 0)},
				Fires:  &Firing{At: incidentAt, Labels: c.Instance(a), Value: Constant(0)},
			},
			{
				Name: "stays silent through a handover shorter than for",
				Series: []*Series{
					Gauge("leader_election_master_status", a, 1).Set(incidentAt, 0),
					Gauge("leader_election_master_status", b, 0).Set(incidentAt+gap, 1),
				},
			},
		}
	},
}

// LeaderMultiple fires when several replicas claim one lease at once.
var LeaderMultiple = &Alert{
	Key: "leaderMultiple", Name: "LeaderMultiple",
	Severity: SeverityCritical, For: 2 * time.Minute,
	Level:       levelLease,
	Expr:        func(e *exprEnv) string { return leaderStatus(e) + " > 1" },
	Summary:     "A controller has more than one leader.",
	Description: "{{ $value }} replicas of {{ $labels.namespace }}/{{ $labels.job }} claim lease {{ $labels.name }} at once. They will race on every object: check that they use the same lease name and namespace, and that clocks agree.",
	Panel:       PanelRef{"controller", "Leader per lease"},
	Cases: func(c *caseEnv) []Case {
		a, b := leaseReplicas(c)
		return []Case{
			{
				Name:   "fires when two replicas claim the lease",
				Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0).Set(incidentAt, 1)},
				Fires:  &Firing{At: incidentAt, Labels: c.Instance(a), Value: Constant(2)},
			},
			{
				Name:   "stays silent with one leader and a standby",
				Series: []*Series{Gauge("leader_election_master_status", a, 1), Gauge("leader_election_master_status", b, 0)},
			},
		}
	},
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
		return sumBy(levelLease, "changes("+sel("leader_election_master_status", e.Selector("controller"))+"[1h])") + " > " + e.P("threshold")
	},
	Summary:     "A controller's leadership changes too often.",
	Description: "Leadership of lease {{ $labels.name }} in {{ $labels.namespace }}/{{ $labels.job }} changed {{ $value }} times in the last hour. Replicas that crash or miss renewals (CPU throttling, slow API server) hand the lease back and forth; each handover restarts every informer.",
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
			// A handover at h is a change inside (t-1h, t] when the samples at h and before h both are.
			first := max(incidentAt, t-time.Hour+2*sampleInterval)
			n := 0
			for h := incidentAt; h <= t; h += every {
				if h >= first {
					n++
				}
			}
			return float64(2 * n)
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
