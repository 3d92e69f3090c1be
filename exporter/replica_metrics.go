package exporter

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/catalogue"
)

// ReplicatePath is where a standby joins its leader's stream.
const ReplicatePath = "/replicate"

// ReplicaHeader names the replica a peer request comes from.
const ReplicaHeader = "X-Loopwatch-Replica"

// Reasons of loopwatch_audit_replica_standby_drops_total.
const (
	DropAckTimeout    = "ack_timeout"
	DropQueueFull     = "queue_full"
	DropClosed        = "closed"
	DropLeaderStopped = "leader_stopped"
)

// Outcomes of loopwatch_audit_replica_takeovers_total and loopwatch_audit_replica_forwarded_total.
const (
	TakeoverAdopted   = "adopted"
	TakeoverDiscarded = "discarded"

	ForwardOK       = "ok"
	ForwardRefused  = "refused"
	ForwardNoLeader = "no_leader"
)

// replicaMetrics are a replica's own metrics (catalogue/replicas.go).
type replicaMetrics struct {
	leader    prometheus.Gauge
	inStep    atomic.Int64
	dropped   *prometheus.CounterVec
	takeovers *prometheus.CounterVec
	forwarded *prometheus.CounterVec
}

func newReplicaMetrics(reg prometheus.Registerer) (*replicaMetrics, error) {
	m := &replicaMetrics{
		leader:    gauge(catalogue.AuditReplicaLeader),
		dropped:   counterVec(catalogue.AuditReplicaStandbyDropsTotal),
		takeovers: counterVec(catalogue.AuditReplicaTakeoversTotal),
		forwarded: counterVec(catalogue.AuditReplicaForwardedTotal),
	}
	for _, r := range []string{DropAckTimeout, DropQueueFull, DropClosed, DropLeaderStopped} {
		m.dropped.WithLabelValues(r)
	}
	for _, o := range []string{TakeoverAdopted, TakeoverDiscarded} {
		m.takeovers.WithLabelValues(o)
	}
	for _, o := range []string{ForwardOK, ForwardRefused, ForwardNoLeader} {
		m.forwarded.WithLabelValues(o)
	}
	standbys := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: catalogue.AuditReplicaStandbys.Name, Help: catalogue.AuditReplicaStandbys.Help},
		func() float64 { return float64(m.inStep.Load()) })
	for _, c := range []prometheus.Collector{m.leader, standbys, m.dropped, m.takeovers, m.forwarded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// seriesFor returns this replica's series of a family for a leader's definition: the series of
// the same labels, created at 0 when new (so that Prometheus sees it rise from 0 if this replica
// takes over and adopts increments), bounded like the series the replica counts itself.
func (m *Metrics) seriesFor(fam family, labels []string) (*shared, error) {
	want := map[family]int{famWrites: 5, famConflicts: 3, famHandoffs: 4, famReads: 4, famInitialLists: 4, famEvents: 1, famBatches: 0}[fam]
	if len(labels) != want {
		return nil, errFrame
	}
	switch fam {
	case famWrites:
		return m.writeCounter(writeKey{labels[0], labels[1], labels[2], labels[3], labels[4]}), nil
	case famConflicts:
		return m.conflictCounter(conflictKey{labels[0], labels[1], labels[2]}), nil
	case famHandoffs:
		return m.handoffCounter(handoffKey{labels[0], labels[1], labels[2], labels[3]}), nil
	case famReads, famInitialLists:
		return m.readCounter(fam, readKey{labels[0], labels[1], labels[2], labels[3]}), nil
	case famEvents:
		for i, o := range []string{EventCounted, EventIgnoredStage, EventUnattributable, EventDuplicate} {
			if labels[0] == o {
				return m.eventOutcomes[i], nil
			}
		}
		return nil, errFrame
	}
	return m.batchCount, nil
}
