package analyze

import (
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// What the HTML report keeps to draw, and its bounds. The report's size and the time to write it
// follow these numbers, not the log's size: a finding's writes are kept one by one up to
// maxExactMarks and counted in timelineBuckets buckets past it; the over-time charts have
// seriesBuckets buckets whatever the span.
const (
	// ringSize is how many of the latest writes to named objects are kept, so that a finding,
	// found at its Nth write, can be drawn from its first: 6 MiB, four minutes of a cluster
	// writing 1,000 objects a second (a fight's window is five minutes by default, a hot
	// object's one). More cost more than they bring: the memory a 1M-write ring takes is most of
	// what the recorder adds to the analysis of a 1 GB log.
	ringSize = 1 << 18
	// maxTimelines bounds the findings whose writes are kept.
	maxTimelines = 1000
	// maxExactMarks bounds the writes of one finding drawn one by one.
	maxExactMarks = 300
	// timelineBuckets is how many buckets a finding's writes are counted in past maxExactMarks.
	timelineBuckets = 120
	// maxRaceLanes bounds the pods of a race drawn in lanes of their own; the others share one.
	maxRaceLanes = 16
	// seriesBuckets is how many buckets the writers and readers over time are counted in.
	seriesBuckets = 240
	// maxSeries bounds the actors whose writes (or initial lists) over time are counted; the
	// writes of the others are counted together.
	maxSeries = 2000
	// maxPods bounds the pod names the recorder tells apart; later ones share one name.
	maxPods = 1<<16 - 1
	// pinBits is the size of the filter that tells, for each write, whether its object may have a
	// finding being drawn.
	pinBits = 1 << 16
)

// Flags of a kept write.
const (
	flagOK       uint8 = 1 << iota // answered 2xx or 3xx
	flagConflict                   // answered 409 (not a create)
	flagMutated                    // a mutating webhook changed it
	flagPod                        // written from a pod (a bound token), not impersonated
	verbShift          = 4         // the verb, in bits 4 to 6 (verbIndex)
	flagHandoff  uint8 = 1 << 7    // (a timeline's marks) the write took the object over from the fight's other actor
)

// verbs are the write verbs by index (flags >> verbShift).
var verbs = [...]string{"other", "create", "update", "patch", "delete", "deletecollection"}

func verbIndex(v string) uint8 {
	for i := 1; i < len(verbs); i++ {
		if verbs[i] == v {
			return uint8(i)
		}
	}
	return 0
}

// writeMark is a write to a named object, as the recorder keeps it: 24 bytes, no pointers.
type writeMark struct {
	key   uint64 // the object, as track.Observation.Object
	nanos int64  // event time, Unix nanoseconds
	actor uint32 // Writer.id
	pod   uint16 // recorder.pods index, 0 for none
	flags uint8
}

// axis maps times onto n equal buckets. It starts at width and doubles its width (realigned) to
// take a time outside it, so a series is bounded in size whatever the span.
type axis struct {
	start, width int64 // nanoseconds
	n            int
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// index is t's bucket, -1 when t is outside the axis.
func (a *axis) index(t int64) int {
	if t < a.start {
		return -1
	}
	i := (t - a.start) / a.width
	if i >= int64(a.n) {
		return -1
	}
	return int(i)
}

// fit widens a so that t falls in it and reports the axis before, and whether it changed.
func (a *axis) fit(t int64) (axis, bool) {
	if a.index(t) >= 0 {
		return *a, false
	}
	old := *a
	lo, hi := min(a.start, t), max(a.start+int64(a.n)*a.width-1, t)
	w := a.width
	for w < 1<<60 {
		w *= 2
		s := floorDiv(lo, w) * w
		if hi-s < int64(a.n)*w {
			a.start, a.width = s, w
			return old, true
		}
	}
	return old, false
}

// rebucket moves counts from axis from onto axis to (wider, so buckets only merge).
func rebucket(counts []uint32, from, to axis) []uint32 {
	out := make([]uint32, to.n)
	for i, c := range counts {
		if c != 0 {
			if j := to.index(from.start + int64(i)*from.width); j >= 0 {
				out[j] += c
			}
		}
	}
	return out
}

// laneStats are what the report says about one lane.
type laneStats struct {
	writes, conflicts, mutated int
	verbs                      [len(verbs)]int
	first, last                int64
}

func (s *laneStats) add(m writeMark) {
	s.writes++
	if m.flags&flagConflict != 0 {
		s.conflicts++
	}
	if m.flags&flagMutated != 0 {
		s.mutated++
	}
	s.verbs[m.flags>>verbShift&7]++
	if s.first == 0 || m.nanos < s.first {
		s.first = m.nanos
	}
	s.last = max(s.last, m.nanos)
}

func (s *laneStats) merge(p laneStats) {
	if p.writes == 0 {
		return
	}
	s.writes += p.writes
	s.conflicts += p.conflicts
	s.mutated += p.mutated
	for i, v := range p.verbs {
		s.verbs[i] += v
	}
	if s.first == 0 || p.first < s.first {
		s.first = p.first
	}
	s.last = max(s.last, p.last)
}

// lane is one row of a finding's timeline: an actor, or a pod of the raced actor.
type lane struct {
	id   uint32 // Writer.id of the actor, or the pod's index
	name string
	// stats are the lane's counted writes; pending (fights) those after the last handoff, which
	// the fight counts only if another handoff follows.
	stats, pending laneStats
	// counts, pending and conflicts per bucket, once the timeline counts in buckets.
	counts, pendingCounts, conflictCounts []uint32
}

// mark is one write drawn on a timeline.
type mark struct {
	nanos int64
	lane  uint8
	flags uint8
}

// timeline is the writes of one finding: the object's writes the finding counts, by lane.
type timeline struct {
	kind            track.FindingKind
	ref             track.ObjectRef
	actor, other    string // the hot object's or race's actor; a fight's two actors in lexical order
	actorID         uint32
	otherID         uint32
	lanes           []lane
	marks           []mark
	confirmed       int // marks[:confirmed] are counted; the rest wait for a handoff (fights)
	bucketed        bool
	axis            axis
	missing         int // writes of the finding older than the recorder's reach (fights: -1, unknown)
	handoffs        int // a fight's handoffs drawn
	pendingN        int // writes pending (fights)
	maxLanesReached bool
}

// laneOf returns the lane of a write, adding one (races) when needed; -1 when the write is not
// the timeline's.
func (t *timeline) laneOf(m writeMark, pods []string) int {
	switch t.kind {
	case track.KindFight:
		switch m.actor {
		case t.actorID:
			return 0
		case t.otherID:
			return 1
		}
		return -1
	case track.KindHot:
		if m.actor == t.actorID {
			return 0
		}
		return -1
	}
	if m.actor != t.actorID {
		return -1
	}
	for i := range t.lanes {
		if t.lanes[i].id == uint32(m.pod) {
			return i
		}
	}
	if len(t.lanes) == maxRaceLanes {
		t.maxLanesReached = true
		t.lanes = append(t.lanes, lane{id: 1 << 31, name: "other pods"})
	}
	if len(t.lanes) > maxRaceLanes {
		return maxRaceLanes
	}
	t.lanes = append(t.lanes, lane{id: uint32(m.pod), name: pods[m.pod]})
	return len(t.lanes) - 1
}

// counts reports whether the finding counts a write of its actor(s): a fight and a hot object
// their successful writes, a race its actor's writes from a pod, successful or answered 409.
func (t *timeline) counts(m writeMark) bool {
	if t.kind == track.KindRace {
		return m.flags&flagPod != 0 && m.flags&(flagOK|flagConflict) != 0
	}
	return m.flags&flagOK != 0
}

// add draws a write: counted at once for a hot object or race, pending until confirm for a
// fight (the writes after its last handoff are not the fight's).
func (t *timeline) add(m writeMark, l int) {
	pending := t.kind == track.KindFight
	ln := &t.lanes[l]
	if pending {
		ln.pending.add(m)
		t.pendingN++
	} else {
		ln.stats.add(m)
	}
	if !t.bucketed {
		t.marks = append(t.marks, mark{nanos: m.nanos, lane: uint8(l), flags: m.flags})
		if !pending {
			t.confirmed = len(t.marks)
		}
		if len(t.marks) > maxExactMarks {
			t.toBuckets()
		}
		return
	}
	t.bucket(mark{nanos: m.nanos, lane: uint8(l), flags: m.flags}, pending)
}

// bucket counts one mark in its bucket, widening the axis when needed.
func (t *timeline) bucket(m mark, pending bool) {
	if old, grown := t.axis.fit(m.nanos); grown {
		for i := range t.lanes {
			ln := &t.lanes[i]
			ln.counts = rebucket(ln.counts, old, t.axis)
			ln.pendingCounts = rebucket(ln.pendingCounts, old, t.axis)
			ln.conflictCounts = rebucket(ln.conflictCounts, old, t.axis)
		}
	}
	i := t.axis.index(m.nanos)
	if i < 0 {
		return
	}
	ln := &t.lanes[m.lane]
	if ln.counts == nil {
		ln.counts, ln.pendingCounts, ln.conflictCounts = make([]uint32, t.axis.n), make([]uint32, t.axis.n), make([]uint32, t.axis.n)
	}
	if pending {
		ln.pendingCounts[i]++
	} else {
		ln.counts[i]++
	}
	if m.flags&flagConflict != 0 {
		ln.conflictCounts[i]++
	}
}

// toBuckets turns the exact marks into bucket counts.
func (t *timeline) toBuckets() {
	lo, hi := t.marks[0].nanos, t.marks[0].nanos
	for _, m := range t.marks {
		lo, hi = min(lo, m.nanos), max(hi, m.nanos)
	}
	t.axis = axis{start: lo, width: int64(time.Millisecond), n: timelineBuckets}
	t.axis.start = floorDiv(lo, t.axis.width) * t.axis.width
	t.axis.fit(hi)
	t.bucketed = true
	for i, m := range t.marks {
		t.bucket(m, i >= t.confirmed)
	}
	t.marks, t.confirmed = nil, 0
}

// confirm counts a fight's pending writes, at a handoff.
func (t *timeline) confirm() {
	if t.pendingN == 0 {
		t.confirmed = len(t.marks)
		return
	}
	t.pendingN = 0
	for i := range t.lanes {
		ln := &t.lanes[i]
		ln.stats.merge(ln.pending)
		ln.pending = laneStats{}
		for j, c := range ln.pendingCounts {
			if c != 0 {
				ln.counts[j] += c
				ln.pendingCounts[j] = 0
			}
		}
	}
	t.confirmed = len(t.marks)
}

// finish drops the writes a fight does not count: those after its last handoff.
func (t *timeline) finish() {
	for i := range t.lanes {
		ln := &t.lanes[i]
		clear(ln.pendingCounts)
		ln.pending = laneStats{}
	}
	t.pendingN = 0
	t.marks = t.marks[:t.confirmed]
}

// recorder keeps, while the log is read, what the HTML report draws: the latest writes to named
// objects (a ring), the writes of each finding (timelines) and every actor's writes and initial
// lists over time. It is off unless Options.Timelines is set.
type recorder struct {
	// ring holds the latest writes; it grows by doubling up to ringMax, so a small log does not
	// pay for a large ring.
	ring    []writeMark
	ringMax int
	next    int
	full    bool

	pods      []string
	podIDs    map[string]uint16
	lastPod   string
	lastPodID uint16

	pinned    []uint64
	timelines map[uint64]*[3]*timeline
	kept      int
	// unkept counts the findings beyond maxTimelines, which are listed without their writes.
	unkept  int
	scratch []writeMark
	// lastWriter is the writer of the last write taken: consecutive writes are mostly one
	// actor's.
	lastWriter *writerState

	// The over-time series: all writes, all initial lists, and per actor.
	axis            axis
	axisSet         bool
	writes, initial []uint32
	byWriter        [][]uint32 // by writer series index
	byReader        [][]uint32
	otherWrites     []uint32
	otherInitial    []uint32
}

func newRecorder(ring int) *recorder {
	return &recorder{
		ring:      make([]writeMark, min(ring, 1<<12)),
		ringMax:   ring,
		pods:      []string{""},
		podIDs:    map[string]uint16{},
		pinned:    make([]uint64, pinBits/64),
		timelines: map[uint64]*[3]*timeline{},
		axis:      axis{width: int64(time.Second), n: seriesBuckets},
	}
}

func (r *recorder) pod(name string) uint16 {
	if name == "" {
		return 0
	}
	if name == r.lastPod && r.lastPodID != 0 {
		return r.lastPodID
	}
	id, ok := r.podIDs[name]
	if !ok {
		if len(r.pods) > maxPods {
			return uint16(maxPods)
		}
		id = uint16(len(r.pods))
		r.pods = append(r.pods, name)
		r.podIDs[name] = id
	}
	r.lastPod, r.lastPodID = name, id
	return id
}

// nanos is an event's time in Unix nanoseconds, and whether it is one the axes can hold.
func nanos(ts time.Time) (int64, bool) {
	if s := ts.Unix(); s < 1 || s > 1<<33 {
		return 0, false
	}
	return ts.UnixNano(), true
}

// series returns the counts of series i of set, growing set as needed (nil past maxSeries).
func (r *recorder) series(set *[][]uint32, i int) []uint32 {
	if i < 0 {
		return nil
	}
	for len(*set) <= i {
		*set = append(*set, nil)
	}
	if (*set)[i] == nil {
		(*set)[i] = make([]uint32, r.axis.n)
	}
	return (*set)[i]
}

// count adds one to the over-time series s (and total) at t.
func (r *recorder) count(t int64, total *[]uint32, s []uint32) {
	if !r.axisSet {
		r.axis.start, r.axisSet = floorDiv(t, r.axis.width)*r.axis.width, true
	}
	if old, grown := r.axis.fit(t); grown {
		r.regrid(old)
	}
	i := r.axis.index(t)
	if i < 0 {
		return
	}
	if *total == nil {
		*total = make([]uint32, r.axis.n)
	}
	(*total)[i]++
	if s != nil {
		s[i]++
	}
}

// regrid moves every series onto the widened axis.
func (r *recorder) regrid(old axis) {
	for _, p := range []*[]uint32{&r.writes, &r.initial, &r.otherWrites, &r.otherInitial} {
		if *p != nil {
			*p = rebucket(*p, old, r.axis)
		}
	}
	for _, set := range [][][]uint32{r.byWriter, r.byReader} {
		for i, s := range set {
			if s != nil {
				set[i] = rebucket(s, old, r.axis)
			}
		}
	}
}

// write counts one write of w in the over-time series (the sink's Write, on arrival).
func (r *recorder) write(o *track.Observation, w *writerState) {
	t, ok := nanos(o.Event.When())
	if !ok {
		return
	}
	if w.series >= 0 {
		r.count(t, &r.writes, r.series(&r.byWriter, w.series))
	} else {
		if r.otherWrites == nil {
			r.otherWrites = make([]uint32, r.axis.n)
		}
		r.count(t, &r.writes, r.otherWrites)
	}
}

// taken keeps one successful or conflicting write to a named object in the ring and draws it on
// its object's timelines (the FindingSink's Taken: in event-time order, as the detections count
// it, so that a finding found at this write is drawn from the same writes).
func (r *recorder) taken(tw *track.Taken, ids map[string]*writerState) {
	t, ok := nanos(time.UnixMicro(tw.At))
	if !ok {
		return
	}
	w := r.lastWriter
	if w == nil || w.Actor != tw.Actor {
		if w = ids[tw.Actor]; w == nil {
			return // every write is counted (Write) before it is taken
		}
		r.lastWriter = w
	}
	f := flagConflict
	if tw.Code != 409 {
		f = flagOK
	}
	if tw.Mutated {
		f |= flagMutated
	}
	var pod uint16
	if tw.Pod != "" {
		f |= flagPod
		pod = r.pod(tw.Pod)
	}
	f |= verbIndex(tw.Verb) << verbShift
	m := writeMark{key: tw.Object, nanos: t, actor: w.id, pod: pod, flags: f}
	r.ring[r.next] = m
	if r.next++; r.next == len(r.ring) {
		if len(r.ring) < r.ringMax {
			r.ring = append(r.ring, make([]writeMark, min(len(r.ring), r.ringMax-len(r.ring)))...)
		} else {
			r.next, r.full = 0, true
		}
	}
	if r.pinned[(tw.Object>>6)%(pinBits/64)]&(1<<(tw.Object&63)) == 0 {
		return
	}
	if ts := r.timelines[tw.Object]; ts != nil {
		for _, tl := range ts {
			if tl == nil || !tl.counts(m) {
				continue
			}
			if l := tl.laneOf(m, r.pods); l >= 0 {
				tl.add(m, l)
			}
		}
	}
}

// initialList records an initial list of reader rd (the sink's Read).
func (r *recorder) initialList(ev *decode.Event, rd *readerState) {
	t, ok := nanos(ev.When())
	if !ok {
		return
	}
	if rd.series >= 0 {
		r.count(t, &r.initial, r.series(&r.byReader, rd.series))
		return
	}
	if r.otherInitial == nil {
		r.otherInitial = make([]uint32, r.axis.n)
	}
	r.count(t, &r.initial, r.otherInitial)
}

// handoff confirms a fight's pending writes when the object changed hands between its actors.
func (r *recorder) handoff(h *track.Handoff) {
	if r.pinned[(h.Object>>6)%(pinBits/64)]&(1<<(h.Object&63)) == 0 {
		return
	}
	ts := r.timelines[h.Object]
	if ts == nil || ts[track.KindFight] == nil {
		return
	}
	tl := ts[track.KindFight]
	if h.To == tl.actor && h.From == tl.other || h.To == tl.other && h.From == tl.actor {
		if n := len(tl.marks); n > 0 {
			tl.marks[n-1].flags |= flagHandoff
		}
		tl.handoffs++
		tl.confirm()
	}
}

// found starts (or restarts) the timeline of a finding and draws its writes so far from the
// ring.
func (r *recorder) found(f *track.Found, ids map[string]*writerState) {
	ts := r.timelines[f.Object]
	if ts == nil || ts[f.Kind] == nil {
		if r.kept >= maxTimelines {
			r.unkept++
			return
		}
		r.kept++
	}
	if ts == nil {
		ts = &[3]*timeline{}
		r.timelines[f.Object] = ts
		r.pinned[(f.Object>>6)%(pinBits/64)] |= 1 << (f.Object & 63)
	}
	tl := &timeline{kind: f.Kind, ref: f.Ref, actor: f.Actor}
	if w := ids[f.Actor]; w != nil {
		tl.actorID = w.id
	}
	switch f.Kind {
	case track.KindFight:
		tl.other = f.Other
		if w := ids[f.Other]; w != nil {
			tl.otherID = w.id
		}
		if tl.other < tl.actor {
			tl.actor, tl.other, tl.actorID, tl.otherID = tl.other, tl.actor, tl.otherID, tl.actorID
		}
		tl.lanes = []lane{{id: tl.actorID, name: tl.actor}, {id: tl.otherID, name: tl.other}}
	case track.KindHot:
		tl.lanes = []lane{{id: tl.actorID, name: tl.actor}}
	}
	ts[f.Kind] = tl
	r.backfill(tl, f)
}

// backfill draws a finding's writes so far, newest first from the ring: a fight's back to the
// write that began its first handoff, a hot object's or race's the Writes it counts.
func (r *recorder) backfill(tl *timeline, f *track.Found) {
	got := r.scratch[:0]
	switches, prev, complete := 0, uint32(0), false
	n := len(r.ring)
	if !r.full {
		n = r.next
	}
	for k := 1; k <= n && !complete; k++ {
		m := &r.ring[(r.next-k+len(r.ring))%len(r.ring)]
		if m.key != f.Object || !tl.counts(*m) {
			continue
		}
		switch tl.kind {
		case track.KindFight:
			if m.actor != tl.actorID && m.actor != tl.otherID {
				complete = true
				continue
			}
			if len(got) > 0 && m.actor != prev {
				if switches++; switches == f.Handoffs {
					complete = true
					continue
				}
			}
			prev = m.actor
			got = append(got, *m)
		default:
			if m.actor != tl.actorID {
				continue
			}
			got = append(got, *m)
			complete = len(got) == f.Writes
		}
	}
	if !complete {
		if tl.kind == track.KindFight {
			tl.missing = -1
		} else {
			tl.missing = f.Writes - len(got)
		}
	}
	for i := len(got) - 1; i >= 0; i-- {
		m := got[i]
		if tl.kind == track.KindFight && (i == len(got)-1 && complete || i < len(got)-1 && got[i+1].actor != m.actor) {
			// The oldest took the object over from the other actor, and every change of actor
			// after it is a handoff.
			m.flags |= flagHandoff
			tl.handoffs++
		}
		if l := tl.laneOf(m, r.pods); l >= 0 {
			tl.add(m, l)
		}
	}
	tl.confirm()
	r.scratch = got[:0]
}

// timelineKey names a finding for the report to find its timeline.
type timelineKey struct {
	kind  track.FindingKind
	ref   track.ObjectRef
	actor string // a fight's actors joined by a NUL
}

// finish ends every fight's timeline at its last handoff and indexes the timelines.
func (r *recorder) finish() map[timelineKey]*timeline {
	out := make(map[timelineKey]*timeline, r.kept)
	for _, ts := range r.timelines {
		for _, tl := range ts {
			if tl == nil {
				continue
			}
			tl.finish()
			k := timelineKey{kind: tl.kind, ref: tl.ref, actor: tl.actor}
			if tl.kind == track.KindFight {
				k.actor += "\x00" + tl.other
			}
			out[k] = tl
		}
	}
	return out
}
