package track

import (
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/internal/keyhash"
)

// Observation is what the tracker reports to its Sink for one counted event.
type Observation struct {
	Event *decode.Event
	// Actor is the full actor name; ActorLabel its bounded label value (the name or "other").
	Actor      string
	ActorLabel string
	// Group and Resource are bounded label values ("other" beyond Config.MaxResources).
	Group    string
	Resource string
	// Object is the hash of the event's object (group, resource, namespace, name, subresource),
	// with the tracker's random seed: the key a FindingSink's Found names it by.
	Object uint64
}

// Sink receives the tracker's observations; the exporter turns them into counters, the
// post-mortem report into totals. Calls happen with the tracker's lock held, in event order; the
// *Observation is only valid during the call.
type Sink interface {
	// Write is called for every write (create, update, patch, delete, deletecollection),
	// whatever its response code.
	Write(o *Observation)
	// Read is called for every list and watch.
	Read(o *Observation)
	// Handoff is called when a successful write follows one by another actor on the same object.
	Handoff(o *Observation, fromActor, fromLabel string)
	// Demoted is called when an actor label value is taken away, so its series can be deleted.
	Demoted(label string)
}

// FindingKind is what a finding is: a fight, a hot object or a replica race.
type FindingKind uint8

// Finding kinds.
const (
	KindFight FindingKind = iota
	KindHot
	KindRace
)

// Found is a finding as it begins: the object, its actors, and how to tell which of the object's
// writes so far belong to it.
type Found struct {
	Kind FindingKind
	// Object is the object's hash, as Observation.Object.
	Object uint64
	Ref    ObjectRef
	// Actor is the hot object's or race's actor, or one of the fight's two; Other is the fight's
	// other actor.
	Actor, Other string
	// Handoffs (fights) is how many handoffs between Actor and Other, ending with the write being
	// observed, made it a fight: the fight's writes are the successful writes of the two back to
	// the one that began the first of these handoffs.
	Handoffs int
	// Writes (hot objects, races) is how many of the actor's writes, ending with the one being
	// observed, the finding already counts: its successful writes to a hot object, its writes
	// from a pod (successful or answered 409) to a raced one.
	Writes int
}

// FindingSink is what a Sink may also implement to be told when a finding begins (the
// post-mortem report draws each finding's writes): Found is called, with the tracker's lock held,
// when a fight, hot object or race enters the tracker's tables or changes actors, after the Write
// of the write that made it one.
type FindingSink interface {
	Found(f *Found)
}

// Stats are the tracker's self-metrics.
type Stats struct {
	TrackedObjects    int
	TrackedActors     int
	LabelledActors    int
	ObjectEvictions   uint64
	OffenderEvictions uint64
	ActorDemotions    uint64
}

// Tracker attributes events to actors and detects fights, hot objects and replica races. It is
// safe for concurrent use.
type Tracker struct {
	mu   sync.Mutex
	cfg  Config
	sink Sink
	// found is sink as a FindingSink, nil when it is not one.
	found FindingSink
	seed  maphash.Seed
	// objectSeed starts object hashes (keyhash), random like seed.
	objectSeed uint64
	actors     *actorLabels
	names      *nameCache
	objects    *objectTable
	resources  map[[2]string]struct{}
	fights     *offenderTable[Fight]
	hot        *offenderTable[HotObject]
	races      *offenderTable[Race]
	// raceCandidates are objects whose writer moved from one pod of an actor to another within
	// the race window once: a handover looks like that too. A candidate becomes a race when a
	// pod it saw writes again after another one, or when one of its writes conflicts.
	raceCandidates *offenderTable[Race]

	base      int64 // event-time origin, unix seconds
	nextDecay time.Time

	// One-entry caches: consecutive events mostly come from the same actor and resource.
	lastActor     string
	lastActorHash uint64
	lastResource  [2]string
	lastResLabels [2]string

	fightWindow, hotWindow, raceWindow uint32

	// obs is the observation handed to the sink; hashes holds, for each event of the batch being
	// observed, its actor's and object's hashes, or zero when the event does not count, and keys
	// its deduplication key (zero when none). All are reused from batch to batch.
	obs    Observation
	hashes []eventHashes
	keys   []uint64
}

// eventHashes are an event's actor and object hashes, computed once per event: they key the
// tracker's state and, combined (subject), the deduplicator's key.
type eventHashes struct{ actor, object uint64 }

// Subject combines the actor and object hashes: who did what to which object, for a
// deduplicator's key.
func (h eventHashes) subject() uint64 {
	return (h.actor ^ bits.RotateLeft64(h.object, 31)) * 0x9e3779b97f4a7c15
}

// New returns a tracker reporting to sink.
func New(cfg Config, sink Sink) (*Tracker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errSinkRequired
	}
	secs := func(d time.Duration) uint32 { return uint32(math.Ceil(d.Seconds())) }
	found, _ := sink.(FindingSink)
	return &Tracker{
		cfg:        cfg,
		sink:       sink,
		found:      found,
		seed:       maphash.MakeSeed(),
		objectSeed: keyhash.Seed(),
		actors:     newActorLabels(cfg.TopK, cfg.Candidates, cfg.MinLabelCount),
		names:      newNameCache(4 * cfg.Candidates),
		objects:    newObjectTable(cfg.MaxObjects, secs(cfg.ObjectTTL)),
		resources:  make(map[[2]string]struct{}, cfg.MaxResources),
		fights:     newOffenderTable[Fight](cfg.MaxOffenders, cfg.OffenderTTL),
		hot:        newOffenderTable[HotObject](cfg.MaxOffenders, cfg.OffenderTTL),
		races:      newOffenderTable[Race](cfg.MaxOffenders, cfg.OffenderTTL),
		// Candidates expire like the object state: a handover's candidate is of no use once
		// the object has not been written for that long.
		raceCandidates: newOffenderTable[Race](cfg.MaxOffenders, cfg.ObjectTTL),
		nextDecay:      cfg.Now().Add(cfg.DecayInterval),
		fightWindow:    secs(cfg.FightWindow),
		hotWindow:      secs(cfg.HotWindow),
		raceWindow:     secs(cfg.RaceWindow),
	}, nil
}

// BatchResult says what became of the events of a batch.
type BatchResult struct {
	// Counted events were tracked.
	Counted int
	// IgnoredStage events are at a stage that does not complete a request.
	IgnoredStage int
	// Unattributable events complete a request but name no verb or no user.
	Unattributable int
	// Skipped events were dropped by the caller's deduplicator (duplicates).
	Skipped int
}

// classify says what becomes of an event before the deduplicator sees it.
func classify(ev *decode.Event, r *BatchResult) bool {
	switch {
	case !ev.Counts():
		r.IgnoredStage++
	case !ev.Attributable():
		r.Unattributable++
	default:
		return true
	}
	return false
}

// Deduplicator lets the caller of ObserveBatch and Observe drop an attributable event before it
// is tracked (a duplicate). It is called with the tracker's lock held, so it needs no lock of its
// own. Key gets the event's subject, a hash of its actor and object (with the tracker's random
// seed), so that it need not hash them again. A batch's keys are all computed before any is
// looked up, and Drop gets them all at once: the lookups are cache misses, which a deduplicator
// can then overlap instead of waiting for each (computing each key between two lookups made the
// deduplication step of a batch nearly twice as slow).
type Deduplicator interface {
	// Key is the event's identity, never 0.
	Key(ev *decode.Event, subject uint64) uint64
	// Drop records keys in order and replaces by 0 each that was seen before (earlier in keys
	// included); zero keys are passed over.
	Drop(keys []uint64)
}

// ObserveBatch tracks the attributable events of a batch (decode.Event.Attributable: at a stage
// that completes a request, with a verb and a user); the others are ignored. dedupe, when
// non-nil, sees every attributable event, in order, before any is tracked.
func (t *Tracker) ObserveBatch(events []decode.Event, dedupe Deduplicator) (r BatchResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	t.maybeDecay(now)
	// The whole batch is hashed and keyed first, then deduplicated at once (see Deduplicator),
	// then tracked.
	hashes, keys := t.hashes[:0], t.keys[:0]
	for i := range events {
		var h eventHashes
		var k uint64
		if ev := &events[i]; classify(ev, &r) {
			h = t.hashesOf(ev)
			if dedupe != nil {
				k = dedupe.Key(ev, h.subject())
			}
		}
		hashes, keys = append(hashes, h), append(keys, k)
	}
	t.hashes, t.keys = hashes, keys
	if dedupe != nil {
		dedupe.Drop(keys)
		for i, k := range keys {
			if k == 0 && hashes[i].actor != 0 {
				hashes[i] = eventHashes{}
				r.Skipped++
			}
		}
	}
	for i := range events {
		if hashes[i].actor != 0 {
			t.observe(&events[i], now, hashes[i])
			r.Counted++
		}
	}
	t.objects.sweepDue(t.lastSeconds(now))
	return r
}

// Observe tracks one event, unless it is not attributable or dedupe (when non-nil) has seen it;
// it reports what became of it.
func (t *Tracker) Observe(ev *decode.Event, dedupe Deduplicator) (r BatchResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !classify(ev, &r) {
		return r
	}
	h := t.hashesOf(ev)
	if dedupe != nil {
		keys := t.keys[:0]
		keys = append(keys, dedupe.Key(ev, h.subject()))
		t.keys = keys
		if dedupe.Drop(keys); keys[0] == 0 {
			r.Skipped++
			return r
		}
	}
	now := t.cfg.Now()
	t.maybeDecay(now)
	t.observe(ev, now, h)
	r.Counted++
	return r
}

// hashesOf hashes an attributable event's actor (never 0) and object.
func (t *Tracker) hashesOf(ev *decode.Event) eventHashes {
	return eventHashes{actor: t.actorHash(ev.Actor()), object: t.objectHash(ev)}
}

func (t *Tracker) maybeDecay(now time.Time) {
	if now.Before(t.nextDecay) {
		return
	}
	for _, l := range t.actors.decay() {
		t.sink.Demoted(l)
	}
	t.nextDecay = now.Add(t.cfg.DecayInterval)
}

// seconds maps an event time onto the tracker's uint32 scale.
func (t *Tracker) seconds(ts time.Time) uint32 {
	u := ts.Unix()
	if t.base == 0 {
		t.base = u - 1<<30
	}
	d := u - t.base
	switch {
	case d < 1:
		return 1
	case d > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(d)
}

func (t *Tracker) lastSeconds(now time.Time) uint32 {
	if t.base == 0 {
		return 0
	}
	return t.seconds(now)
}

func (t *Tracker) timeOf(sec uint32) time.Time {
	return time.Unix(t.base+int64(sec), 0).UTC()
}

func (t *Tracker) resourceLabels(group, resource string) (string, string) {
	k := [2]string{group, resource}
	if k == t.lastResource && t.lastResLabels[1] != "" {
		return t.lastResLabels[0], t.lastResLabels[1]
	}
	labels := [2]string{OtherLabel, OtherLabel}
	if _, ok := t.resources[k]; ok {
		labels = k
	} else if len(t.resources) < t.cfg.MaxResources {
		t.resources[k] = struct{}{}
		labels = k
	}
	t.lastResource, t.lastResLabels = k, labels
	return labels[0], labels[1]
}

func (t *Tracker) actorHash(actor string) uint64 {
	if actor == t.lastActor && t.lastActorHash != 0 {
		return t.lastActorHash
	}
	h := maphash.String(t.seed, actor)
	if h == 0 {
		h = 1
	}
	t.lastActor, t.lastActorHash = actor, h
	return h
}

// objectHash hashes the event's object (name, namespace, resource, group, subresource; each
// string's length counts, so no two objects differ only in where one field ends). Every
// attributable event needs it, reads and failed writes included, since it is part of the
// deduplication key: one pass of keyhash over the strings costs half of hashing each with
// maphash.String and combining (11 ns instead of 23 for a typical object).
func (t *Tracker) objectHash(ev *decode.Event) uint64 {
	h := keyhash.String(t.objectSeed, ev.Name)
	h = keyhash.String(h, ev.Namespace)
	h = keyhash.String(h, ev.Resource)
	h = keyhash.String(h, ev.APIGroup)
	return keyhash.String(h, ev.Subresource)
}

func objectRef(ev *decode.Event) ObjectRef {
	return ObjectRef{Group: ev.APIGroup, Resource: ev.Resource, Namespace: ev.Namespace, Name: ev.Name, Subresource: ev.Subresource}
}

// objectWrite is what the detections share about one successful or conflicting write to a named
// object. It lives on observe's stack and is passed by pointer: kept in the tracker (on the heap)
// and refilled for every write, it cost a copy through write barriers on every write
// (BenchmarkObserveBatch: 118 ns per event instead of 85).
type objectWrite struct {
	o     *Observation
	st    *objectState // the object's state
	key   uint64       // the object's hash
	ah    uint64       // the actor's hash
	now   uint32       // the event's time on the tracker's scale
	ts    time.Time    // the event's time
	clock time.Time    // the tracker's clock, for the offender tables' expiry
	// conflict says the write was answered 409 (only replica races count those).
	conflict bool
}

func (t *Tracker) observe(ev *decode.Event, clock time.Time, h eventHashes) {
	actor, ah := ev.Actor(), h.actor
	// The observation is handed to the sink through an interface, which would move a local to the
	// heap on every event; the tracker's own (guarded by its lock) is reused instead.
	o := &t.obs
	*o = Observation{Event: ev, Actor: actor, ActorLabel: t.actors.observe(ah, actor), Object: h.object}
	o.Group, o.Resource = t.resourceLabels(ev.APIGroup, ev.Resource)
	switch {
	case ev.IsRead():
		t.sink.Read(o)
		return
	case !ev.IsWrite():
		return
	}
	t.sink.Write(o)
	success := ev.Code >= 200 && ev.Code < 400
	conflict := ev.IsConflict()
	if ev.Name == "" || !success && !conflict {
		return
	}
	ts := ev.When()
	if ts.IsZero() {
		ts = clock
	}
	w := &objectWrite{o: o, key: h.object, ah: ah, now: t.seconds(ts), ts: ts, clock: clock, conflict: conflict}
	w.st, _ = t.objects.get(w.key, w.now)
	w.st.seen = w.now
	if ev.Pod != "" && ev.ImpersonatedUsername == "" {
		t.trackRace(w)
	}
	if success {
		t.trackFight(w)
		t.trackHot(w)
		w.st.actor = ah
	}
	// Names are put after the detections have read the previous writer's, which this write's
	// names could otherwise evict from the cache.
	t.names.put(ah, actor)
}

func (t *Tracker) trackRace(w *objectWrite) {
	ev, st := w.o.Event, w.st
	var ph maphash.Hash
	ph.SetSeed(t.seed)
	ph.WriteString(w.o.Actor)
	ph.WriteByte(0)
	ph.WriteString(ev.Pod)
	pod := ph.Sum64() | 1
	a32 := uint32(w.ah)
	switched := st.pod != 0 && st.pod != pod && st.podActor == a32 && w.now-st.podAt <= t.raceWindow
	if r := t.races.get(w.key, w.clock); r != nil {
		if r.Actor == w.o.Actor {
			t.raceWrite(r, ev, w.ts, w.conflict)
		}
	} else {
		// A first switch from one pod to another is a candidate: a handover, when the old
		// leader's last write and the new one's first fall within the window, looks the same.
		// Replicas that race take turns, or conflict.
		c := t.raceCandidates.get(w.key, w.clock)
		if c != nil && w.ts.Sub(c.First) > t.cfg.ObjectTTL {
			// Writes keep a candidate, but only for as long as an object keeps its state: a pod
			// of it writing again long after the switch is the next handover (a StatefulSet's
			// pods keep their names from one rollout to the next), not replicas taking turns.
			t.raceCandidates.drop(w.key)
			c = nil
		}
		if c == nil && switched {
			c = t.raceCandidates.add(w.key, Race{
				Object: objectRef(ev), Actor: w.o.Actor, Pods: []string{t.names.get(st.pod)}, Writes: 1,
				First: t.timeOf(st.podAt),
			}, w.clock)
		}
		if c != nil && c.Actor == w.o.Actor {
			returned := switched && slices.Contains(c.Pods, ev.Pod)
			t.raceWrite(c, ev, w.ts, w.conflict)
			if returned || w.conflict {
				t.races.add(w.key, *c, w.clock)
				if t.found != nil {
					t.found.Found(&Found{Kind: KindRace, Object: w.key, Ref: c.Object, Actor: c.Actor, Writes: c.Writes})
				}
				t.raceCandidates.drop(w.key)
			}
		}
	}
	st.pod, st.podAt, st.podActor = pod, w.now, a32
	t.names.put(pod, ev.Pod)
}

// raceWrite counts a write of a race or candidate.
func (t *Tracker) raceWrite(r *Race, ev *decode.Event, ts time.Time, conflict bool) {
	r.Writes++
	if conflict {
		r.Conflicts++
	}
	r.Last = ts
	r.Pods = addPod(r.Pods, ev.Pod, t.cfg.MaxRacePods)
	r.LastPod = ev.Pod
}

// writerPod is the pod behind the writer's bound service-account token, or "" when the token is
// not bound to a pod or the write is impersonated: the pod is then the impersonator's, not the
// actor's.
func writerPod(ev *decode.Event) string {
	if ev.ImpersonatedUsername != "" {
		return ""
	}
	return ev.Pod
}

// addPod inserts pod into the sorted set pods, bounded by max.
func addPod(pods []string, pod string, max int) []string {
	i := 0
	for i < len(pods) && pods[i] < pod {
		i++
	}
	if i < len(pods) && pods[i] == pod || len(pods) >= max {
		return pods
	}
	pods = append(pods, "")
	copy(pods[i+1:], pods[i:])
	pods[i] = pod
	return pods
}

func (t *Tracker) trackFight(w *objectWrite) {
	o, st := w.o, w.st
	if st.actor == 0 || st.actor == w.ah {
		return
	}
	from := t.names.get(st.actor)
	t.sink.Handoff(o, from, t.actors.label(st.actor))
	if st.other == w.ah && w.now-st.fightFrom <= t.fightWindow {
		if st.handoffs < math.MaxUint16 {
			st.handoffs++
		}
	} else {
		st.handoffs, st.fightFrom = 1, w.now
	}
	st.other = st.actor
	a, b := o.Actor, from
	if b < a {
		a, b = b, a
	}
	f := t.fights.get(w.key, w.clock)
	switch {
	case f != nil && f.ActorA == a && f.ActorB == b:
		f.Handoffs++
		f.Last = w.ts
	case int(st.handoffs) >= t.cfg.FightHandoffs:
		v := Fight{Object: objectRef(o.Event), ActorA: a, ActorB: b, Handoffs: int(st.handoffs), First: t.timeOf(st.fightFrom), Last: w.ts}
		if f != nil {
			*f = v
		} else {
			f = t.fights.add(w.key, v, w.clock)
		}
		if t.found != nil {
			t.found.Found(&Found{Kind: KindFight, Object: w.key, Ref: v.Object, Actor: o.Actor, Other: from, Handoffs: v.Handoffs})
		}
	default:
		return
	}
	if f != nil {
		describeFight(f, o)
	}
}

// describeFight fills what the fight does not know yet about the writer of o: its field manager
// and user agent, and the mutating webhook that changed its write.
func describeFight(f *Fight, o *Observation) {
	ev := o.Event
	manager, agent, pod := &f.FieldManagerA, &f.UserAgentA, &f.PodA
	if o.Actor == f.ActorB {
		manager, agent, pod = &f.FieldManagerB, &f.UserAgentB, &f.PodB
	}
	*pod = writerPod(ev)
	if *manager == "" {
		*manager = ev.Manager()
	}
	if *agent == "" {
		*agent = ev.UserAgent
	}
	if f.MutatingWebhook == "" && ev.MutatingWebhook != "" {
		f.MutatingWebhook, f.MutatedActor = decode.ParseMutatingWebhook(ev.MutatingWebhook), o.Actor
	}
}

// describeHot fills what the hot object does not know yet about its actor's write ev.
func describeHot(h *HotObject, ev *decode.Event) {
	h.Pod = writerPod(ev)
	if h.FieldManager == "" {
		h.FieldManager = ev.Manager()
	}
	if h.UserAgent == "" {
		h.UserAgent = ev.UserAgent
	}
	if h.MutatingWebhook == "" && ev.MutatingWebhook != "" {
		h.MutatingWebhook = decode.ParseMutatingWebhook(ev.MutatingWebhook)
	}
}

func (t *Tracker) trackHot(w *objectWrite) {
	st, actor := w.st, w.o.Actor
	if st.actor == w.ah && w.now-st.hotFrom <= t.hotWindow {
		if st.hotWrites < math.MaxUint16 {
			st.hotWrites++
		}
	} else {
		st.hotWrites, st.hotFrom = 1, w.now
	}
	h := t.hot.get(w.key, w.clock)
	switch {
	case h != nil && h.Actor == actor:
		h.Writes++
		h.Last = w.ts
	case h != nil && int(st.hotWrites) >= t.cfg.HotWrites:
		*h = HotObject{Object: objectRef(w.o.Event), Actor: actor, Writes: int(st.hotWrites), First: t.timeOf(st.hotFrom), Last: w.ts}
		t.foundHot(h, w.key)
	case h == nil && t.admitHot(int(st.hotWrites)):
		v := HotObject{Object: objectRef(w.o.Event), Actor: actor, Writes: int(st.hotWrites), First: t.timeOf(st.hotFrom), Last: w.ts}
		h = t.hot.add(w.key, v, w.clock)
		t.foundHot(h, w.key)
	default:
		return
	}
	if h != nil {
		describeHot(h, w.o.Event)
	}
}

// foundHot tells the FindingSink, if any, that h begins.
func (t *Tracker) foundHot(h *HotObject, key uint64) {
	if t.found != nil && h != nil {
		t.found.Found(&Found{Kind: KindHot, Object: key, Ref: h.Object, Actor: h.Actor, Writes: h.Writes})
	}
}

// admitHot reports whether an object with writes in its window, not in the hot table, is added to
// it: when it reaches the threshold, and again each time its count doubles. An object evicted from
// a full table (more hot objects than the table holds: leader-election leases alone can be) so
// comes back after a burst of further writes rather than on its next one, which would evict
// another entry on every write and churn the top-offender series.
func (t *Tracker) admitHot(writes int) bool {
	n := t.cfg.HotWrites
	if writes < n || writes%n != 0 {
		return false
	}
	q := writes / n
	return q&(q-1) == 0
}

// Fights returns the current fights, ordered by object.
func (t *Tracker) Fights() []Fight {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fights.snapshot(t.cfg.Now(), func(a, b *Fight) bool {
		if c := lessObject(a.Object, b.Object); c != 0 {
			return c < 0
		}
		return a.ActorA+"\x00"+a.ActorB < b.ActorA+"\x00"+b.ActorB
	})
}

// HotObjects returns the current hot objects, ordered by object.
func (t *Tracker) HotObjects() []HotObject {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hot.snapshot(t.cfg.Now(), func(a, b *HotObject) bool {
		if c := lessObject(a.Object, b.Object); c != 0 {
			return c < 0
		}
		return a.Actor < b.Actor
	})
}

// Races returns the current replica races, ordered by object; pod lists are copies.
func (t *Tracker) Races() []Race {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.races.snapshot(t.cfg.Now(), func(a, b *Race) bool {
		if c := lessObject(a.Object, b.Object); c != 0 {
			return c < 0
		}
		return a.Actor < b.Actor
	})
	for i := range out {
		out[i].Pods = append([]string(nil), out[i].Pods...)
	}
	return out
}

// Stats returns the tracker's self-metrics.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{
		TrackedObjects:    t.objects.live,
		TrackedActors:     len(t.actors.heap),
		LabelledActors:    len(t.actors.labels),
		ObjectEvictions:   t.objects.evictions,
		OffenderEvictions: t.fights.evictions + t.hot.evictions + t.races.evictions + t.raceCandidates.evictions,
		ActorDemotions:    t.actors.demotions,
	}
}
