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
	// Pods are the pod names seen writing (sorted, bounded by Config.MaxRacePods).
	Pods      []string  `json:"pods"`
	Writes    int       `json:"writes"`
	Conflicts int       `json:"conflicts"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
}

// offenderTable is a bounded, expiring set of offenders keyed by object hash. When full, the
// entry seen longest ago (by the clock) is evicted.
type offenderTable[T any] struct {
	max       int
	ttl       time.Duration
	entries   map[uint64]*offender[T]
	evictions uint64
}

type offender[T any] struct {
	value T
	seen  time.Time
}

func newOffenderTable[T any](max int, ttl time.Duration) *offenderTable[T] {
	return &offenderTable[T]{max: max, ttl: ttl, entries: map[uint64]*offender[T]{}}
}

func (t *offenderTable[T]) get(key uint64, now time.Time) *T {
	e := t.entries[key]
	if e == nil {
		return nil
	}
	if now.Sub(e.seen) > t.ttl {
		delete(t.entries, key)
		return nil
	}
	e.seen = now
	return &e.value
}

// add inserts an entry (the caller checked it is absent) and returns it; nil when max is 0.
func (t *offenderTable[T]) add(key uint64, v T, now time.Time) *T {
	if t.max == 0 {
		return nil
	}
	if len(t.entries) >= t.max {
		t.expire(now)
	}
	if len(t.entries) >= t.max {
		t.evictOldest(max(1, t.max/4))
	}
	e := &offender[T]{value: v, seen: now}
	t.entries[key] = e
	return &e.value
}

// evictOldest removes the n entries seen longest ago. Evicting a quarter of a full table at once
// keeps a storm of new offenders at amortised O(log n) per insertion.
func (t *offenderTable[T]) evictOldest(n int) {
	type aged struct {
		key  uint64
		seen time.Time
	}
	all := make([]aged, 0, len(t.entries))
	for k, e := range t.entries {
		all = append(all, aged{k, e.seen})
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].seen.Equal(all[j].seen) {
			return all[i].seen.Before(all[j].seen)
		}
		return all[i].key < all[j].key
	})
	for _, a := range all[:min(n, len(all))] {
		delete(t.entries, a.key)
		t.evictions++
	}
}

func (t *offenderTable[T]) expire(now time.Time) {
	for k, e := range t.entries {
		if now.Sub(e.seen) > t.ttl {
			delete(t.entries, k)
		}
	}
}

// snapshot returns copies of the live entries, ordered by less.
func (t *offenderTable[T]) snapshot(now time.Time, less func(a, b *T) bool) []T {
	t.expire(now)
	out := make([]T, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e.value)
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
