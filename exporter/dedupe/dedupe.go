// Package dedupe recognises audit events seen before: the API server retries a webhook batch it
// got no 2xx answer for (every non-2xx answer and every transport error, up to 5 attempts), and
// overlapping audit log files repeat lines, so the same event can arrive several times.
//
// An event is identified by what it says, not by its auditID alone: the API server keeps a
// client-supplied Audit-ID header as the event's auditID, so distinct requests can share one (by
// accident, or to hide writes behind one already counted). The key covers the auditID and stage,
// its two timestamps (microseconds, set by the API server), verb and response code, and its
// subject: a hash of the actor and the object (group, resource, namespace, name, subresource),
// which the tracker computes anyway and hands over. An exact re-send has the key of the original;
// distinct requests have distinct keys. Two requests that agree in all of these would be counted
// the same way in every metric anyway.
package dedupe

import (
	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/internal/keyhash"
)

// DefaultSize is the default number of keys per generation: enough for 10 API servers × 4000
// events/s over the ~80 s the webhook backend spends retrying.
const DefaultSize = 1 << 19

// Window remembers the keys of recently seen events. It keeps two generations of at most size
// keys each: when the current one is full it becomes the previous one and the oldest is
// forgotten, so memory is bounded (see Bytes) and every key is remembered for at least size
// insertions. It is not safe for concurrent use.
//
// Each generation is an open-addressing set of non-zero keys, at most half full, with no
// pointers and no allocation after construction. The two are interleaved in one table, slot i of
// generation g at 2i+g, so that a key's slots in both lie in one cache line: a new key, which
// both generations must be asked about, costs one cache miss, not two.
type Window struct {
	size  int
	slots []uint64
	mask  uint64 // slots per generation - 1
	cur   uint64 // the current generation, 0 or 1
	n     [2]int // keys per generation
	// touched keeps what Drop reads ahead, so that the reads are not optimised away.
	touched uint64
}

// New returns a window of two generations of size keys; size 0 remembers nothing.
func New(size int) *Window {
	n := tableSlots(size)
	return &Window{size: size, slots: make([]uint64, 2*n), mask: uint64(n - 1)}
}

// Bytes is the memory a window of size keys per generation holds.
func Bytes(size int) int64 {
	return 2 * 8 * int64(tableSlots(size))
}

// Key is the event's key (see the package function Key); with Drop it makes a window a
// track.Deduplicator, which computes a batch's keys before it looks them up.
func (w *Window) Key(ev *decode.Event, subject uint64) uint64 { return Key(ev, subject) }

// touchAhead is how many keys Drop reads the slots of before looking them up.
const touchAhead = 32

// Drop records keys in order and replaces by 0 each that was seen before (earlier in keys
// included); zero keys are passed over. For each run of touchAhead keys it first reads the
// cache line where each starts in both generations, without acting on what it reads: those reads
// miss the cache (the table is megabytes, the keys random), and with nothing waiting on them the
// processor overlaps them, so that the lookups then find their lines in the cache instead of
// waiting for memory one after the other (a lookup's branches depend on what it reads, which
// keeps the processor from running ahead to the next key's).
func (w *Window) Drop(keys []uint64) {
	if w.size == 0 {
		return
	}
	for len(keys) > 0 {
		run := keys[:min(len(keys), touchAhead)]
		keys = keys[len(run):]
		var x uint64
		for _, k := range run {
			x += w.slots[2*(k&w.mask)]
		}
		w.touched = x
		for i, k := range run {
			if k != 0 && w.Seen(k) {
				run[i] = 0
			}
		}
	}
}

// Seen records an event's key and reports whether it was seen before.
func (w *Window) Seen(k uint64) bool {
	if w.size == 0 {
		return false
	}
	if w.has(w.cur, k) || w.has(1-w.cur, k) {
		return true
	}
	if w.n[w.cur] >= w.size {
		w.cur = 1 - w.cur
		w.clear(w.cur)
	}
	w.add(w.cur, k)
	return false
}

// seed makes keys unpredictable outside the process, so that nobody can choose two distinct
// requests with one key.
var seed = keyhash.Seed()

// Key is the event's identity (never 0): a hash of its auditID, stage, timestamps, verb and
// response code and of subject, a hash of its actor and object that the caller computed with a
// seed of its own (the tracker's).
func Key(ev *decode.Event, subject uint64) uint64 {
	a := keyhash.Mix(seed, ev.AuditIDHash)
	a = keyhash.Mix(a, uint64(ev.StageTimestamp.UnixMicro()))
	a = keyhash.Mix(a, uint64(ev.RequestReceived.UnixMicro())^uint64(ev.Timestamp.Unix())<<1)
	a = keyhash.Mix(a, uint64(uint32(ev.Code))|btoi(ev.HasAuditID)<<32|uint64(len(ev.Stage))<<40)
	h := keyhash.Mix(keyhash.String(a, ev.Verb), subject)
	if h == 0 {
		h = 1
	}
	return h
}

func btoi(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// tableSlots is the slot count of a set holding size keys at most half full.
func tableSlots(size int) int {
	n := 2
	for n < 2*size {
		n <<= 1
	}
	return n
}

// has reports whether generation g holds k.
func (w *Window) has(g, k uint64) bool {
	for i := k & w.mask; ; i = (i + 1) & w.mask {
		switch w.slots[2*i+g] {
		case k:
			return true
		case 0:
			return false
		}
	}
}

// add inserts k into generation g (the caller checked it is absent and that g is not full).
func (w *Window) add(g, k uint64) {
	i := k & w.mask
	for w.slots[2*i+g] != 0 {
		i = (i + 1) & w.mask
	}
	w.slots[2*i+g] = k
	w.n[g]++
}

// clear empties generation g.
func (w *Window) clear(g uint64) {
	for i := g; i < uint64(len(w.slots)); i += 2 {
		w.slots[i] = 0
	}
	w.n[g] = 0
}
