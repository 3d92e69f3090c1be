package exporter

import "github.com/loopwatch/loopwatch/exporter/decode"

// dedupe remembers recently seen auditID+stage pairs so that a batch the API server retries
// (it retries any non-2xx answer and any transport error, up to 5 attempts) is not counted twice.
// It keeps two generations of at most size entries each: when the current one is full it becomes
// the previous one and the oldest is forgotten, so memory is bounded and every key is remembered
// for at least size insertions.
type dedupe struct {
	size      int
	cur, prev *hashSet
}

func newDedupe(size int) *dedupe {
	return &dedupe{size: size, cur: newHashSet(size), prev: newHashSet(size)}
}

// stageSalt separates the two counted stages of one auditID.
func stageSalt(stage string) uint64 {
	if stage == decode.StagePanic {
		return 0x9e3779b97f4a7c15
	}
	return 0
}

// seen records the event and reports whether it was seen before. Events without auditID are
// never duplicates.
func (d *dedupe) seen(ev *decode.Event) bool {
	if !ev.HasAuditID || d.size == 0 {
		return false
	}
	k := ev.AuditIDHash ^ stageSalt(ev.Stage)
	if k == 0 {
		k = 1
	}
	if d.cur.has(k) || d.prev.has(k) {
		return true
	}
	if d.cur.n >= d.size {
		d.prev.clear()
		d.prev, d.cur = d.cur, d.prev
	}
	d.cur.add(k)
	return false
}

// hashSet is an open-addressing set of non-zero hashes, at most half full: 16 bytes per entry,
// no pointers, no allocation after construction.
type hashSet struct {
	slots []uint64
	mask  uint64
	n     int
}

func newHashSet(size int) *hashSet {
	n := 2
	for n < 2*size {
		n <<= 1
	}
	return &hashSet{slots: make([]uint64, n), mask: uint64(n - 1)}
}

func (s *hashSet) has(k uint64) bool {
	for i := k & s.mask; ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case k:
			return true
		case 0:
			return false
		}
	}
}

// add inserts k (the caller checked it is absent and that the set is not full).
func (s *hashSet) add(k uint64) {
	i := k & s.mask
	for s.slots[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.slots[i] = k
	s.n++
}

func (s *hashSet) clear() {
	clear(s.slots)
	s.n = 0
}
