package exporter

import "github.com/loopwatch/loopwatch/exporter/decode"

// dedupe remembers recently seen auditID+stage pairs so that a batch the API server retries
// (it retries any non-2xx answer and any transport error, up to 5 attempts) is not counted twice.
// It keeps two generations of at most size entries each: when the current one is full it becomes
// the previous one and the oldest is forgotten, so memory is bounded and every key is remembered
// for at least size insertions.
type dedupe struct {
	size      int
	cur, prev map[uint64]struct{}
}

func newDedupe(size int) *dedupe {
	return &dedupe{size: size, cur: make(map[uint64]struct{}, size), prev: make(map[uint64]struct{}, size)}
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
	if _, ok := d.cur[k]; ok {
		return true
	}
	if _, ok := d.prev[k]; ok {
		return true
	}
	if len(d.cur) >= d.size {
		clear(d.prev)
		d.prev, d.cur = d.cur, d.prev
	}
	d.cur[k] = struct{}{}
	return false
}
