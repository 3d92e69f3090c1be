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
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// DefaultSize is the default number of keys per generation: enough for 10 API servers × 4000
// events/s over the ~80 s the webhook backend spends retrying.
const DefaultSize = 1 << 19

// Window remembers the keys of recently seen events. It keeps two generations of at most size
// keys each: when the current one is full it becomes the previous one and the oldest is
// forgotten, so memory is bounded (see Bytes) and every key is remembered for at least size
// insertions. It is not safe for concurrent use.
type Window struct {
	size      int
	cur, prev *hashSet
}

// New returns a window of two generations of size keys; size 0 remembers nothing.
func New(size int) *Window {
	return &Window{size: size, cur: newHashSet(size), prev: newHashSet(size)}
}

// Bytes is the memory a window of size keys per generation holds.
func Bytes(size int) int64 {
	return 2 * 8 * int64(tableSlots(size))
}

// Seen records the event and reports whether an event with the same key was seen before.
// subject hashes the event's actor and object (see Key); it is track.SkipFunc.
func (w *Window) Seen(ev *decode.Event, subject uint64) bool {
	if w.size == 0 {
		return false
	}
	k := Key(ev, subject)
	if w.cur.has(k) || w.prev.has(k) {
		return true
	}
	if w.cur.n >= w.size {
		w.prev.clear()
		w.prev, w.cur = w.cur, w.prev
	}
	w.cur.add(k)
	return false
}

// seed makes keys unpredictable outside the process, so that nobody can choose two distinct
// requests with one key.
var seed = func() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}()

// Key is the event's identity (never 0): a hash of its auditID, stage, timestamps, verb and
// response code and of subject, a hash of its actor and object that the caller computed with a
// seed of its own (the tracker's).
func Key(ev *decode.Event, subject uint64) uint64 {
	a := mix(seed, ev.AuditIDHash)
	a = mix(a, uint64(ev.StageTimestamp.UnixMicro()))
	a = mix(a, uint64(ev.RequestReceived.UnixMicro())^uint64(ev.Timestamp.Unix())<<1)
	a = mix(a, uint64(uint32(ev.Code))|btoi(ev.HasAuditID)<<32|uint64(len(ev.Stage))<<40)
	h := mix(mixString(a, ev.Verb), subject)
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

// mix folds v into h (a multiply-xorshift round: each step is a bijection of h for a fixed v).
func mix(h, v uint64) uint64 {
	h = (h ^ v) * 0x9e3779b97f4a7c15
	return h ^ h>>32
}

// mixString folds s into h sixteen bytes at a time (one 128-bit multiply each, as wyhash does),
// the last block ending with its length so that the boundaries between consecutive strings
// count. Every byte of s is read: blocks, then an overlapping last block, or for short strings
// loads that together cover it.
func mixString(h uint64, s string) uint64 {
	n := len(s)
	b := unsafe.Slice(unsafe.StringData(s), n)
	var lo, hi uint64
	switch {
	case n > 16:
		for len(b) > 16 {
			h = mum(h^binary.LittleEndian.Uint64(b), k1^binary.LittleEndian.Uint64(b[8:]))
			b = b[16:]
		}
		b = unsafe.Slice(unsafe.StringData(s[n-16:]), 16)
		lo, hi = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	case n >= 8:
		lo, hi = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		lo = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
	case n > 0:
		lo = uint64(b[0]) | uint64(b[n/2])<<8 | uint64(b[n-1])<<16
	}
	return mum(h^lo, k2^hi^uint64(n))
}

const (
	k1 = 0xe7037ed1a0b428db
	k2 = 0xa0761d6478bd642f
)

// mum multiplies a and b to 128 bits and folds the halves.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// tableSlots is the slot count of a set holding size keys at most half full.
func tableSlots(size int) int {
	n := 2
	for n < 2*size {
		n <<= 1
	}
	return n
}

// hashSet is an open-addressing set of non-zero hashes, at most half full: 16 bytes per entry,
// no pointers, no allocation after construction.
type hashSet struct {
	slots []uint64
	mask  uint64
	n     int
}

func newHashSet(size int) *hashSet {
	n := tableSlots(size)
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
