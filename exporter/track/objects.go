package track

// ways is the associativity of the object table: an object lives in one of the ways slots of its
// set, so a lookup touches one cache-line-sized run of slots and eviction is local.
const ways = 8

// objectState is everything kept per tracked object besides its handoff times. It has no
// pointers (the garbage collector never scans the table) and is 56 bytes; times are seconds on the
// tracker's event-time scale.
type objectState struct {
	key   uint64 // hash of group/resource/namespace/name/subresource; 0 means empty
	actor uint64 // hash of the last successful writer
	other uint64 // hash of the other actor of the current handoff pair
	pod   uint64 // hash of the last writing pod (actor and pod name), 0 when none

	seen     uint32 // last write
	hotFrom  uint32 // start of the hot window
	podAt    uint32 // last write by pod
	podActor uint32 // low bits of the actor hash of pod

	hotWrites uint16 // writes by actor since hotFrom
}

// objectTable is a fixed-size set-associative table of objectState, with beside it the times of
// each object's last few handoffs (a fight's sliding window).
type objectTable struct {
	slots []objectState
	// times holds perSlot handoff times (seconds on the tracker's scale, newest first, 0 for
	// none) for each slot: slot i's are times[i*perSlot:(i+1)*perSlot].
	times     []uint32
	perSlot   int
	setMask   uint64
	ttl       uint32
	live      int
	evictions uint64
	sweepAt   int
	sweptAt   uint32 // time of the last sweepDue that swept
}

// newObjectTable sizes a table for maxObjects objects with handoffTimes handoff times each.
func newObjectTable(maxObjects int, ttlSeconds uint32, handoffTimes int) *objectTable {
	sets := 1
	for sets*ways < maxObjects {
		sets <<= 1
	}
	return &objectTable{
		slots: make([]objectState, sets*ways), times: make([]uint32, sets*ways*handoffTimes), perSlot: handoffTimes,
		setMask: uint64(sets - 1), ttl: ttlSeconds,
	}
}

// handoffs returns the handoff times of slot i, newest first.
func (t *objectTable) handoffs(i int) []uint32 {
	return t.times[i*t.perSlot : (i+1)*t.perSlot]
}

// reset makes slot i hold key, fresh.
func (t *objectTable) reset(i int, key uint64, now uint32) {
	t.slots[i] = objectState{key: key, seen: now}
	clear(t.handoffs(i))
}

func (t *objectTable) expired(s *objectState, now uint32) bool {
	return s.key != 0 && now > s.seen && now-s.seen > t.ttl
}

// get returns the slot of key's state, creating it (fresh) when absent. When the set is full the
// slot written longest ago is evicted; fresh reports whether the state was just created.
func (t *objectTable) get(key uint64, now uint32) (slot int, fresh bool) {
	if key == 0 {
		key = 1
	}
	base := int((key>>32)&t.setMask) * ways
	set := t.slots[base : base+ways]
	for i := range set {
		if set[i].key != key {
			continue
		}
		if t.expired(&set[i], now) {
			t.reset(base+i, key, now)
			return base + i, true
		}
		return base + i, false
	}
	victim := -1
	for i := range set {
		if set[i].key == 0 {
			victim = i
			break
		}
	}
	if victim < 0 {
		for i := range set {
			if t.expired(&set[i], now) {
				victim = i
				break
			}
		}
	}
	if victim < 0 {
		victim = 0
		for i := 1; i < len(set); i++ {
			if set[i].seen < set[victim].seen {
				victim = i
			}
		}
	}
	v := &set[victim]
	switch {
	case v.key == 0:
		t.live++
	case !t.expired(v, now):
		t.evictions++
	}
	t.reset(base+victim, key, now)
	return base + victim, true
}

// sweepPasses is how many full passes over the table sweepDue makes per TTL, so an expired
// object stops being counted at most TTL/sweepPasses after it expired.
const sweepPasses = 4

// sweepDue sweeps as many slots as the time since the last sweep calls for: sweepPasses passes
// over the whole table per TTL. The cost follows the clock, not the event rate: a busy exporter
// does not re-read the table for every batch, and a quiet one still converges.
func (t *objectTable) sweepDue(now uint32) {
	if now == 0 {
		return
	}
	if t.sweptAt == 0 || now < t.sweptAt {
		t.sweptAt = now
		return
	}
	period := uint64(max(1, t.ttl/sweepPasses))
	n := uint64(now-t.sweptAt) * uint64(len(t.slots)) / period
	if n == 0 {
		return
	}
	t.sweptAt = now
	t.sweep(int(min(n, uint64(len(t.slots)))), now)
}

// sweep clears up to n expired slots, continuing where the last sweep stopped, so that the live
// count converges without ever scanning the whole table at once.
func (t *objectTable) sweep(n int, now uint32) {
	for range n {
		s := &t.slots[t.sweepAt]
		if t.expired(s, now) {
			*s = objectState{}
			t.live--
		}
		t.sweepAt++
		if t.sweepAt == len(t.slots) {
			t.sweepAt = 0
		}
	}
}
