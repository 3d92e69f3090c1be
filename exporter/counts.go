package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The counters the replicas share: the per-actor families and the event and batch counts, every
// counter an audit event moves. Each replica exposes its own series of them; the receiving
// replica (the leader) counts, and Prometheus' sum over the replicas (the rules drop the
// exporter's pod and instance) sees each event once. For that the standbys need, besides the
// batches, the leader's exact increments: when the leader dies, the increments it made since
// Prometheus last scraped it exist nowhere else, and the standby that takes over adds them to
// its own series (see replicate.go). So every increment of a shared counter is also kept as a
// delta until it is sent to the standbys, and as a count since the last scrape.

// family identifies a shared counter family in the replication stream.
type family uint8

const (
	famWrites family = iota
	famConflicts
	famHandoffs
	famReads
	famInitialLists
	famEvents
	famBatches
	numFamilies
)

// shared is one series of a shared family.
type shared struct {
	c prometheus.Counter
	// id names the series in the replication stream; ids are never reused.
	id     uint32
	fam    family
	labels []string
	// unsent counts the increments not yet sent to the standbys, since the increments since the
	// last scrape; both are kept only while the counters are kept for replication.
	unsent, since uint64
	// deleted says the series was deleted (an actor demoted): it must not be counted again.
	deleted bool
}

// sharedCounters numbers the shared series and keeps their deltas. It is guarded by the
// exporter's pipeline lock (the tracker's sink methods run under it).
type sharedCounters struct {
	// keep says deltas are kept: replication is configured and this replica counts.
	keep    bool
	nextID  uint32
	live    map[uint32]*shared
	dirty   []*shared // unsent > 0
	touched []*shared // since > 0
	// defined and dropped are the series created and deleted since the last step was built.
	defined []*shared
	dropped []uint32
}

func newSharedCounters() *sharedCounters {
	return &sharedCounters{live: map[uint32]*shared{}}
}

// create registers a new series of fam.
func (s *sharedCounters) create(fam family, c prometheus.Counter, labels []string) *shared {
	s.nextID++
	sc := &shared{c: c, id: s.nextID, fam: fam, labels: labels}
	s.live[sc.id] = sc
	if s.keep {
		s.defined = append(s.defined, sc)
	}
	return sc
}

// drop forgets a deleted series.
func (s *sharedCounters) drop(sc *shared) {
	sc.deleted = true
	delete(s.live, sc.id)
	if s.keep {
		s.dropped = append(s.dropped, sc.id)
	}
}

// inc counts one.
func (s *sharedCounters) inc(sc *shared) {
	sc.c.Inc()
	if s.keep {
		s.note(sc, 1)
	}
}

// add counts n.
func (s *sharedCounters) add(sc *shared, n uint64) {
	sc.c.Add(float64(n))
	if s.keep {
		s.note(sc, n)
	}
}

func (s *sharedCounters) note(sc *shared, n uint64) {
	if sc.unsent == 0 {
		s.dirty = append(s.dirty, sc)
	}
	sc.unsent += n
	if sc.since == 0 {
		s.touched = append(s.touched, sc)
	}
	sc.since += n
}

// delta is one series' increments in a step.
type delta struct {
	id uint32
	n  uint64
}

// takeDeltas returns the increments not yet sent and forgets them.
func (s *sharedCounters) takeDeltas(out []delta) []delta {
	for _, sc := range s.dirty {
		if !sc.deleted {
			out = append(out, delta{sc.id, sc.unsent})
		}
		sc.unsent = 0
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	return out
}

// sinceScrape returns the increments since the last scrape (what a standby joining now must hold
// for the leader).
func (s *sharedCounters) sinceScrape(out []delta) []delta {
	for _, sc := range s.touched {
		if !sc.deleted {
			out = append(out, delta{sc.id, sc.since})
		}
	}
	return out
}

// scraped marks every increment as seen by a scrape.
func (s *sharedCounters) scraped() {
	for _, sc := range s.touched {
		sc.since = 0
	}
	clear(s.touched)
	s.touched = s.touched[:0]
}

// takeDefinitions returns the series created and the ids deleted since the last call.
func (s *sharedCounters) takeDefinitions() (defined []*shared, dropped []uint32) {
	defined, dropped = s.defined, s.dropped
	s.defined, s.dropped = nil, nil
	return defined, dropped
}

// all returns the live series, for a standby that joins.
func (s *sharedCounters) all() []*shared {
	out := make([]*shared, 0, len(s.live))
	for _, sc := range s.live {
		out = append(out, sc)
	}
	return out
}
