package gen

// Leader-election alerts, per lease (leader_election_master_status{name} is 1 on the leader and
// 0 on the others). Seed 000's three replicas racing without a leader show up as "more than
// one leader" when each runs its own election, and as write races in the audit exporter when
// there is no election at all.
func (b *builder) leaderElectionAlerts() []Rule {
	s := b.selector("controller")
	status := sumBy(levelLease, sel("leader_election_master_status", s))
	a := b.cfg.Alerts
	var rules []Rule
	rules = append(rules, b.alert("leaderMissing", "LeaderMissing", a.LeaderMissing,
		status+" < 1",
		"A controller has no leader.",
		"No replica of {{ $labels.namespace }}/{{ $labels.job }} holds lease {{ $labels.name }}: nothing reconciles. Check the replicas' logs for lease renewal errors and the API server's health.")...)
	rules = append(rules, b.alert("leaderMultiple", "LeaderMultiple", a.LeaderMultiple,
		status+" > 1",
		"A controller has more than one leader.",
		"{{ $value }} replicas of {{ $labels.namespace }}/{{ $labels.job }} claim lease {{ $labels.name }} at once. They will race on every object: check that they use the same lease name and namespace, and that clocks agree.")...)
	rules = append(rules, b.alert("leaderFlapping", "LeaderFlapping", a.LeaderFlapping.Common,
		sumBy(levelLease, "changes("+sel("leader_election_master_status", s)+"[1h])")+" > "+b.p.G("leaderFlappingThreshold", a.LeaderFlapping.Threshold),
		"A controller's leadership changes too often.",
		"Leadership of lease {{ $labels.name }} in {{ $labels.namespace }}/{{ $labels.job }} changed {{ $value }} times in the last hour. Replicas that crash or miss renewals (CPU throttling, slow API server) hand the lease back and forth; each handover restarts every informer.")...)
	return rules
}
