package track

import (
	"slices"
	"unsafe"
)

// Event-time order. Each API server sends its own batches, up to its --audit-webhook-batch-max-wait
// apart, and retries a refused one 10 s or more later: taken in arrival order, the writes of two
// actors on two API servers interleave wrongly and a fight loses handoffs (a 44-handoff fight
// across two API servers counted 35 in arrival order). So the writes the detections read (fights,
// hot objects, replica races: a successful or conflicting write to a named object) wait in a
// reorder buffer and are taken in the order of their own timestamps once they are ReorderWait
// old. Counters of writes and reads do not depend on order and are counted on arrival.
//
// The buffer holds each waiting write once, in an arena of fixed-size entries, bounded in bytes
// (MaxReorderBytes: the entries and the strings they hold), and orders them as a few sorted runs: a batch's events come nearly in time
// order, and so does each API server's stream, so a write almost always goes at the end of the
// run the previous one went to, and taking the oldest is a look at the heads of a handful of runs
// (kept in a heap on their heads). A write older than what has been released already (it arrived
// after its wait was over) is taken at once and counted late; when the buffer is full the oldest
// write is taken before its time and counted as overflow. Either way nothing is silently
// misordered.

// pendingWrite is a write waiting in the reorder buffer: what the detections need of the event,
// copied (its strings are the decoder's interned ones, which stay valid), with the label values
// it was counted under on arrival.
type pendingWrite struct {
	at  int64  // event time, microseconds since the epoch
	seq uint64 // arrival order, for writes with equal times
	h   eventHashes
	// size is what the entry counts against the buffer's bound: itself and its strings.
	size int32

	code         int32
	verb         uint8 // writeVerbs index
	impersonated bool

	actor, actorLabel string
	group, resource   string // bounded label values
	pod               string
	manager, agent    string
	webhook           string
	obj               ObjectRef
}

// conflict says the write was answered 409 (it counts for replica races only).
func (w *pendingWrite) conflict() bool { return w.code == 409 }

// writerPod is the pod behind the writer's bound service-account token, or "" when the token is
// not bound to a pod or the write is impersonated: the pod is then the impersonator's, not the
// actor's.
func (w *pendingWrite) writerPod() string {
	if w.impersonated {
		return ""
	}
	return w.pod
}

// writeVerbs are the write verbs a pendingWrite names by index (0: another verb).
var writeVerbs = [...]string{"", "create", "update", "patch", "delete", "deletecollection"}

// verbCode is v's index in writeVerbs, 0 when it is none of them.
func verbCode(v string) uint8 {
	for i := 1; i < len(writeVerbs); i++ {
		if writeVerbs[i] == v {
			return uint8(i)
		}
	}
	return 0
}

// run is a sequence of arena indices sorted by (at, seq) from head on.
type run struct {
	idx  []int32
	head int
}

// reorderBuffer orders pending writes by event time (see the top of this file).
type reorderBuffer struct {
	arena []pendingWrite
	free  []int32
	// runs is a min-heap of the non-empty runs on their head entries.
	runs   []*run
	spare  []*run
	recent *run // the run the previous push went to
	newest *run // the run whose last write is the newest
	n      int
	seq    uint64
	// bytes is what the waiting writes count (pendingWrite.size), maxBytes its bound; the arena
	// never holds more than maxEntries.
	bytes, maxBytes int64
	maxEntries      int
}

// entryBytes is the fixed part of a waiting write: the entry, its index in a run (whose slice may
// be up to twice as long as it needs), its free-list slot, and a run of its own with its place in
// the heap (writes that arrive newest first each start one).
const entryBytes = int64(unsafe.Sizeof(pendingWrite{})) + 3*4 + int64(unsafe.Sizeof(run{})) + 2*8

// Emptied runs are kept for reuse, spareRuns of them with up to spareRunEntries entries each.
const (
	spareRuns       = 64
	spareRunEntries = 4096
)

// tailScan is how far back from a run's end a write that is slightly out of order (requests
// completing concurrently) is inserted, before another run is tried.
const tailScan = 16

func newReorderBuffer(maxBytes int64) *reorderBuffer {
	return &reorderBuffer{maxBytes: maxBytes, maxEntries: int(max(1, maxBytes/entryBytes))}
}

// sizeOf is what w counts against the bound: the entry and every string it holds. Strings shared
// between writes (an actor's name, a namespace) are counted for each, so the bound holds whatever
// the interner kept.
func sizeOf(w *pendingWrite) int32 {
	n := len(w.actor) + len(w.actorLabel) + len(w.group) + len(w.resource) + len(w.pod) + len(w.manager) +
		len(w.agent) + len(w.webhook) + len(w.obj.Group) + len(w.obj.Resource) + len(w.obj.Namespace) +
		len(w.obj.Name) + len(w.obj.Subresource)
	return int32(entryBytes) + int32(n)
}

// fits reports whether w can wait without exceeding the bound.
func (b *reorderBuffer) fits(w *pendingWrite) bool {
	return b.n < b.maxEntries && b.bytes+int64(sizeOf(w)) <= b.maxBytes
}

// len is the number of waiting writes.
func (b *reorderBuffer) len() int { return b.n }

func (b *reorderBuffer) at(i int32) int64 { return b.arena[i].at }

// before orders two entries by time, then arrival.
func (b *reorderBuffer) before(i, j int32) bool {
	x, y := &b.arena[i], &b.arena[j]
	return x.at < y.at || x.at == y.at && x.seq < y.seq
}

// push adds w (the caller checked that it fits).
func (b *reorderBuffer) push(w *pendingWrite) {
	var slot int32
	if n := len(b.free); n > 0 {
		slot, b.free = b.free[n-1], b.free[:n-1]
	} else {
		if len(b.arena) == cap(b.arena) {
			// Grown by hand so that the arena never holds more than max entries.
			grown := make([]pendingWrite, len(b.arena), min(b.maxEntries, max(64, 2*cap(b.arena))))
			copy(grown, b.arena)
			b.arena = grown
		}
		b.arena = append(b.arena, pendingWrite{})
		slot = int32(len(b.arena) - 1)
	}
	b.seq++
	w.seq, w.size = b.seq, sizeOf(w)
	b.arena[slot] = *w
	b.n++
	b.bytes += int64(w.size)
	// The newest run takes a write newer than everything (one API server's stream, in order);
	// the run the previous write went to takes the next of the same batch, even when another API
	// server's newer writes are in another run; a write slightly out of order goes near the end
	// of the run that takes its neighbours.
	if r := b.newest; r != nil && b.tail(r) <= w.at {
		r.idx = append(r.idx, slot)
		b.recent = r
		return
	}
	if r := b.recent; r != nil && r != b.newest && b.tail(r) <= w.at {
		r.idx = append(r.idx, slot)
		return
	}
	if r := b.recent; r != nil && b.insertNearTail(r, slot) {
		return
	}
	// The first write of a batch older than the newest: the run whose last write is the newest
	// not after it (patience sorting: the fewest runs), else a new run.
	var best *run
	for _, r := range b.runs {
		if t := b.tail(r); t <= w.at && (best == nil || t > b.tail(best)) {
			best = r
		}
	}
	if best != nil {
		best.idx = append(best.idx, slot)
		b.recent = best
		return
	}
	var r *run
	if n := len(b.spare); n > 0 {
		r, b.spare = b.spare[n-1], b.spare[:n-1]
	} else {
		r = &run{}
	}
	r.idx = append(r.idx[:0], slot)
	r.head = 0
	b.runs = append(b.runs, r)
	b.up(len(b.runs) - 1)
	b.recent = r
	if b.newest == nil {
		b.newest = r
	}
}

// tail is the time of r's last write.
func (b *reorderBuffer) tail(r *run) int64 { return b.at(r.idx[len(r.idx)-1]) }

// insertNearTail puts slot at its place among the last tailScan entries of r, after its head
// (which keeps r's place in the heap valid); false when it belongs farther back.
func (b *reorderBuffer) insertNearTail(r *run, slot int32) bool {
	at := b.at(slot)
	end := len(r.idx)
	pos := end
	for pos > r.head && b.at(r.idx[pos-1]) > at {
		if end-pos == tailScan {
			return false
		}
		pos--
	}
	if pos == r.head {
		return false
	}
	r.idx = append(r.idx, 0)
	copy(r.idx[pos+1:], r.idx[pos:end])
	r.idx[pos] = slot
	return true
}

// oldest returns the time of the oldest waiting write; ok is false when none waits.
func (b *reorderBuffer) oldest() (at int64, ok bool) {
	if len(b.runs) == 0 {
		return 0, false
	}
	r := b.runs[0]
	return b.at(r.idx[r.head]), true
}

// pop takes the oldest waiting write out of its run and returns its slot, which stays valid until
// release(slot). The buffer must not be empty.
func (b *reorderBuffer) pop() int32 {
	r := b.runs[0]
	slot := r.idx[r.head]
	r.head++
	if r.head == len(r.idx) {
		last := len(b.runs) - 1
		b.runs[0] = b.runs[last]
		b.runs[last] = nil
		b.runs = b.runs[:last]
		if r == b.recent {
			b.recent = nil
		}
		if r == b.newest {
			b.newest = nil
			for _, q := range b.runs {
				if b.newest == nil || b.tail(q) > b.tail(b.newest) {
					b.newest = q
				}
			}
		}
		r.idx, r.head = r.idx[:0], 0
		if cap(r.idx) <= spareRunEntries && len(b.spare) < spareRuns {
			b.spare = append(b.spare, r)
		}
	}
	if len(b.runs) > 0 {
		b.down(0)
	}
	b.n--
	b.bytes -= int64(b.arena[slot].size)
	return slot
}

// release returns a popped slot to the arena.
func (b *reorderBuffer) release(slot int32) {
	b.arena[slot] = pendingWrite{}
	b.free = append(b.free, slot)
}

func (b *reorderBuffer) headBefore(i, j int) bool {
	ri, rj := b.runs[i], b.runs[j]
	return b.before(ri.idx[ri.head], rj.idx[rj.head])
}

func (b *reorderBuffer) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !b.headBefore(i, p) {
			return
		}
		b.runs[i], b.runs[p] = b.runs[p], b.runs[i]
		i = p
	}
}

func (b *reorderBuffer) down(i int) {
	n := len(b.runs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && b.headBefore(r, l) {
			m = r
		}
		if !b.headBefore(m, i) {
			return
		}
		b.runs[i], b.runs[m] = b.runs[m], b.runs[i]
		i = m
	}
}

// WaitingWrite is a write in the reorder buffer as a replica that takes over from another needs
// it: everything the detections read, without the hashes (each tracker has its own seeds).
type WaitingWrite struct {
	// At is the event time in microseconds since the epoch.
	At           int64
	Code         int32
	Verb         string
	Impersonated bool
	// Actor is the writer, ActorLabel, Group and Resource the label values it was counted under.
	Actor, ActorLabel, Group, Resource string
	Pod, Manager, Agent, Webhook       string
	Object                             ObjectRef
}

// waitingOrder is the order of the waiting writes: by time, then arrival.
func waitingOrder(b *reorderBuffer) []int32 {
	var slots []int32
	for _, r := range b.runs {
		slots = append(slots, r.idx[r.head:]...)
	}
	slices.SortFunc(slots, func(x, y int32) int {
		if b.before(x, y) {
			return -1
		}
		if b.before(y, x) {
			return 1
		}
		return 0
	})
	return slots
}
