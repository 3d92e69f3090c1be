package track

import (
	"sort"
	"time"
)

// ObjectRef names an object (and subresource) as the audit log does.
type ObjectRef struct {
	Group       string `json:"group"`
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name"`
	Subresource string `json:"subresource,omitempty"`
}

// String renders the object as group/resource[/subresource] namespace/name.
func (o ObjectRef) String() string {
	gr := o.Resource
	if o.Group != "" {
		gr += "." + o.Group
	}
	if o.Subresource != "" {
		gr += "/" + o.Subresource
	}
	if o.Namespace != "" {
		return gr + " " + o.Namespace + "/" + o.Name
	}
	return gr + " " + o.Name
}

// Fight is one object written alternately by two actors.
type Fight struct {
	Object ObjectRef `json:"object"`
	// ActorA and ActorB are the two actors, in lexical order.
	ActorA string `json:"actorA"`
	ActorB string `json:"actorB"`
	// Handoffs counts writes that changed hands between the two since the fight was detected
	// (including the handoffs that made it one).
	Handoffs int       `json:"handoffs"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// FieldManagerA and FieldManagerB are the field managers the two actors write under (see
	// decode.Event.Manager), UserAgentA and UserAgentB their user agents: the first seen of each.
	FieldManagerA string `json:"fieldManagerA,omitempty"`
	FieldManagerB string `json:"fieldManagerB,omitempty"`
	UserAgentA    string `json:"userAgentA,omitempty"`
	UserAgentB    string `json:"userAgentB,omitempty"`
	// MutatingWebhook is the mutating admission webhook ("<configuration>/<webhook>") that
	// changed writes of the fight, the first seen; MutatedActor is whose writes it changed. A
	// webhook that rewrites what one actor writes can make the other undo it: the fight is the
	// webhook's as much as theirs.
	MutatingWebhook string `json:"mutatingWebhook,omitempty"`
	MutatedActor    string `json:"mutatedActor,omitempty"`
	// PodA and PodB are the pods behind each actor's bound token on its latest write (see
	// writerPod): a scraped target with the same pod and namespace names the actor's workload.
	PodA string `json:"podA,omitempty"`
	PodB string `json:"podB,omitempty"`
}

// HotObject is one object rewritten by one actor faster than the threshold.
type HotObject struct {
	Object ObjectRef `json:"object"`
	Actor  string    `json:"actor"`
	// Writes counts the actor's writes since the object was found hot (including those that
	// made it hot).
	Writes int       `json:"writes"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	// FieldManager and UserAgent are the actor's (see decode.Event.Manager), the first seen.
	FieldManager string `json:"fieldManager,omitempty"`
	UserAgent    string `json:"userAgent,omitempty"`
	// MutatingWebhook is the mutating admission webhook ("<configuration>/<webhook>") that
	// changed the actor's writes, the first seen: a controller that keeps writing back what a
	// webhook rewrites loops with it.
	MutatingWebhook string `json:"mutatingWebhook,omitempty"`
	// Pod is the pod behind the actor's bound token on its latest write (see writerPod).
	Pod string `json:"pod,omitempty"`
}

// WritesPerSecond is the hot object's write rate over its span (Writes when the span is zero).
func (h HotObject) WritesPerSecond() float64 {
	span := h.Last.Sub(h.First).Seconds()
	if span <= 0 {
		return float64(h.Writes)
	}
	return float64(h.Writes) / span
}

// Race is one object written by several pods of one actor.
type Race struct {
	Object ObjectRef `json:"object"`
	Actor  string    `json:"actor"`
	// Pods are the pod names seen writing (sorted, bounded by Config.MaxRacePods); LastPod is
	// the one that wrote last.
	Pods      []string  `json:"pods"`
	LastPod   string    `json:"lastPod,omitempty"`
	Writes    int       `json:"writes"`
	Conflicts int       `json:"conflicts"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
}

// offenderTable is a bounded, expiring set of offenders keyed by object hash. When full, the
// entries seen longest ago (by the clock) are evicted. Entries live in one preallocated slice
// (removal moves the last entry into the hole), so a storm of new offenders allocates nothing
// and eviction scans a slice rather than a map.
type offenderTable[T any] struct {
	max       int
	ttl       time.Duration
	index     map[uint64]int32
	entries   []offender[T]
	evictions uint64
	scratch   []aged
}

// aged is an entry's last sighting and key, for eviction.
type aged struct {
	seen int64
	key  uint64
}

type offender[T any] struct {
	key   uint64
	seen  time.Time
	value T
}

func newOffenderTable[T any](max int, ttl time.Duration) *offenderTable[T] {
	return &offenderTable[T]{
		max: max, ttl: ttl,
		index:   make(map[uint64]int32, max),
		entries: make([]offender[T], 0, max),
	}
}

// get returns the live entry of key, or nil. The pointer is valid until the next add or expiry.
func (t *offenderTable[T]) get(key uint64, now time.Time) *T {
	if len(t.entries) == 0 {
		return nil
	}
	i, ok := t.index[key]
	if !ok {
		return nil
	}
	e := &t.entries[i]
	if now.Sub(e.seen) > t.ttl {
		t.remove(int(i))
		return nil
	}
	e.seen = now
	return &e.value
}

// remove deletes the entry at slot i, moving the last entry into its place.
func (t *offenderTable[T]) remove(i int) {
	delete(t.index, t.entries[i].key)
	last := len(t.entries) - 1
	if i != last {
		t.entries[i] = t.entries[last]
		t.index[t.entries[i].key] = int32(i)
	}
	var zero offender[T]
	t.entries[last] = zero
	t.entries = t.entries[:last]
}

// drop deletes the entry of key, if any.
func (t *offenderTable[T]) drop(key uint64) {
	if i, ok := t.index[key]; ok {
		t.remove(int(i))
	}
}

// add inserts an entry (the caller checked it is absent) and returns it; nil when max is 0.
func (t *offenderTable[T]) add(key uint64, v T, now time.Time) *T {
	if t.max == 0 {
		return nil
	}
	if len(t.entries) >= t.max {
		t.makeRoom(now)
	}
	t.index[key] = int32(len(t.entries))
	t.entries = append(t.entries, offender[T]{key: key, seen: now, value: v})
	return &t.entries[len(t.entries)-1].value
}

// makeRoom is called when the table is full: it drops the expired entries or, when none has
// expired, evicts the quarter seen longest ago. Freeing a quarter at once keeps a storm of new
// offenders at amortised O(1) per insertion (one pass and a quickselect per max/4 insertions).
func (t *offenderTable[T]) makeRoom(now time.Time) {
	if t.expire(now) > 0 {
		return
	}
	all := t.scratch[:0]
	for i := range t.entries {
		all = append(all, aged{t.entries[i].seen.UnixNano(), t.entries[i].key})
	}
	t.scratch = all
	n := min(max(1, t.max/4), len(all))
	selectOldest(all, n)
	for _, a := range all[:n] {
		t.remove(int(t.index[a.key]))
		t.evictions++
	}
}

// older orders entries by last sighting, then key (keys are unique, so the order is total).
func (a aged) older(b aged) bool {
	return a.seen < b.seen || a.seen == b.seen && a.key < b.key
}

// selectOldest reorders all so that its first n entries are the n oldest (quickselect: linear
// on average, where a sort would be O(len log len) at every eviction).
func selectOldest(all []aged, n int) {
	lo, hi := 0, len(all)-1
	for lo < hi {
		// Median of three as pivot, moved to hi.
		mid := lo + (hi-lo)/2
		if all[mid].older(all[lo]) {
			all[mid], all[lo] = all[lo], all[mid]
		}
		if all[hi].older(all[lo]) {
			all[hi], all[lo] = all[lo], all[hi]
		}
		if all[mid].older(all[hi]) {
			all[mid], all[hi] = all[hi], all[mid]
		}
		pivot := all[hi]
		p := lo
		for i := lo; i < hi; i++ {
			if all[i].older(pivot) {
				all[i], all[p] = all[p], all[i]
				p++
			}
		}
		all[p], all[hi] = all[hi], all[p]
		switch {
		case p == n || p == n-1:
			return
		case p < n:
			lo = p + 1
		default:
			hi = p - 1
		}
	}
}

// expire drops the entries not seen for longer than the TTL and returns how many it dropped.
func (t *offenderTable[T]) expire(now time.Time) int {
	dropped := 0
	for i := len(t.entries) - 1; i >= 0; i-- {
		if now.Sub(t.entries[i].seen) > t.ttl {
			t.remove(i)
			dropped++
		}
	}
	return dropped
}

// snapshot returns copies of the live entries, ordered by less.
func (t *offenderTable[T]) snapshot(now time.Time, less func(a, b *T) bool) []T {
	t.expire(now)
	out := make([]T, 0, len(t.entries))
	for i := range t.entries {
		out = append(out, t.entries[i].value)
	}
	sort.Slice(out, func(i, j int) bool { return less(&out[i], &out[j]) })
	return out
}

func lessObject(a, b ObjectRef) int {
	for _, p := range [][2]string{
		{a.Group, b.Group}, {a.Resource, b.Resource}, {a.Namespace, b.Namespace}, {a.Name, b.Name},
		{a.Subresource, b.Subresource},
	} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}
