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
	// with the tracker's random seed: the key a FindingSink's Taken and Found name it by.
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
	// Handoffs are found in event-time order, after the write waited in the reorder buffer (see
	// Config.ReorderWait), so they come later than the write's Write call.
	Handoff(h *Handoff)
	// Demoted is called when an actor label value is taken away, so its series can be deleted.
	Demoted(label string)
}

// Handoff is a successful write to an object whose previous successful write was another
// actor's.
type Handoff struct {
	// From and To are the previous writer and this one; FromLabel and ToLabel their label values
	// (the name or "other").
	From, FromLabel string
	To, ToLabel     string
	// Group and Resource are the object's bounded label values.
	Group, Resource string
	// Object is the object's hash, as Observation.Object.
	Object uint64
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
	// taken, made it a fight: the fight's writes are the successful writes of the two back to
	// the one that began the first of these handoffs.
	Handoffs int
	// Writes (hot objects, races) is how many of the actor's writes, ending with the one being
	// taken, the finding already counts: its successful writes to a hot object, its writes
	// from a pod (successful or answered 409) to a raced one.
	Writes int
}

// Taken is a write as the detections take it: a successful or conflicting write to a named
// object, in event-time order (after the reorder buffer), which is the order the detections
// count its handoffs and writes in.
type Taken struct {
	// Object is the object's hash, as Observation.Object.
	Object uint64
	// At is the write's event time, in microseconds since the epoch.
	At    int64
	Actor string
	// Pod is the writer's pod (a bound service-account token), "" when none or when the write is
	// impersonated (the pod is then the impersonator's).
	Pod  string
	Verb string
	// Code is the response code: 2xx or 3xx, or 409 for a conflict.
	Code int32
	// Mutated says a mutating admission webhook changed the write.
	Mutated bool
}

// FindingSink is what a Sink may also implement to follow the findings (the post-mortem report
// draws each finding's writes). Both are called with the tracker's lock held. Taken is called for
// every write the detections take, in event-time order, before they read it; Found when a fight,
// hot object or race enters the tracker's tables or changes actors, after the Taken of the write
// that made it one. Write and Read come on arrival, which may be up to Config.ReorderWait earlier
// and in another order: a FindingSink that matches a finding to its writes does so on Taken.
type FindingSink interface {
	Taken(w *Taken)
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
	// Waiting writes are in the reorder buffer; Late ones arrived after their wait was over and
	// Overflow ones were taken before it was, the buffer being full (see Config.ReorderWait).
	Waiting  int
	Late     uint64
	Overflow uint64
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

	// order holds the writes waiting for their turn in event time; nil when events are taken in
	// arrival order (a negative Config.ReorderWait). released is the event time (microseconds)
	// through which writes have been taken: a write at or before it is late. newest is the
	// newest event time of a write seen, arrived the clock when it came (see releaseDue).
	order          *reorderBuffer
	wait           int64
	released       int64
	newest         int64
	arrived        int64
	late, overflow uint64
	// following says another tracker decides when writes are taken (ReleaseThrough): a standby
	// replica takes them when its leader did.
	following bool
	pending   pendingWrite
	handoff   Handoff

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
	var order *reorderBuffer
	if cfg.ReorderWait > 0 {
		order = newReorderBuffer(cfg.MaxReorderBytes)
	}
	found, _ := sink.(FindingSink)
	return &Tracker{
		cfg:        cfg,
		sink:       sink,
		found:      found,
		seed:       maphash.MakeSeed(),
		objectSeed: keyhash.Seed(),
		actors:     newActorLabels(cfg.TopK, cfg.Candidates, cfg.MinLabelCount),
		names:      newNameCache(4 * cfg.Candidates),
		objects:    newObjectTable(cfg.MaxObjects, secs(cfg.ObjectTTL), cfg.FightHandoffs-1),
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
		order:          order,
		wait:           cfg.ReorderWait.Microseconds(),
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
	t.releaseDue(now)
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
	t.releaseDue(now)
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

// objectRefHash is objectHash of the object o names.
func (t *Tracker) objectRefHash(o *ObjectRef) uint64 {
	h := keyhash.String(t.objectSeed, o.Name)
	h = keyhash.String(h, o.Namespace)
	h = keyhash.String(h, o.Resource)
	h = keyhash.String(h, o.Group)
	return keyhash.String(h, o.Subresource)
}

func objectRef(ev *decode.Event) ObjectRef {
	return ObjectRef{Group: ev.APIGroup, Resource: ev.Resource, Namespace: ev.Namespace, Name: ev.Name, Subresource: ev.Subresource}
}

// objectWrite is what the detections share about one successful or conflicting write to a named
// object. It lives on observeWrite's stack and is passed by pointer: kept in the tracker (on the
// heap) and refilled for every write, it cost a copy through write barriers on every write
// (BenchmarkObserveBatch: 118 ns per event instead of 85).
type objectWrite struct {
	pw    *pendingWrite
	st    *objectState // the object's state
	slot  int          // the object's slot in the table
	now   uint32       // the event's time on the tracker's scale
	ts    time.Time    // the event's time
	clock time.Time    // the tracker's clock, for the offender tables' expiry
}

// observe counts an attributable event on arrival (its actor's label, the write and read
// counters) and hands a successful or conflicting write to a named object to the detections: at
// once when events are taken in arrival order, else through the reorder buffer.
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
	if ev.Name == "" || !success && !ev.IsConflict() {
		return
	}
	ts := ev.When()
	if ts.IsZero() {
		ts = clock
	}
	code := ev.Code
	if !success {
		code = 409
	}
	pw := &t.pending
	*pw = pendingWrite{
		at: ts.UnixMicro(), h: h, code: code, verb: verbCode(ev.Verb), impersonated: ev.ImpersonatedUsername != "",
		actor: actor, actorLabel: o.ActorLabel, group: o.Group, resource: o.Resource,
		pod: ev.Pod, manager: ev.Manager(), agent: ev.UserAgent, webhook: ev.MutatingWebhook,
		obj: objectRef(ev),
	}
	if pw.at > t.newest {
		t.newest = pw.at
	}
	t.arrived = clock.UnixMicro()
	switch {
	case t.order == nil:
		t.observeWrite(pw, clock)
	case pw.at <= t.released:
		t.late++
		t.observeWrite(pw, clock)
	default:
		for !t.order.fits(pw) {
			if t.order.len() == 0 {
				// Larger than the whole bound: it cannot wait.
				t.overflow++
				t.observeWrite(pw, clock)
				return
			}
			t.overflow++
			t.takeOldest(clock)
			if pw.at <= t.released {
				t.observeWrite(pw, clock)
				return
			}
		}
		t.order.push(pw)
	}
}

// takeOldest takes the oldest waiting write out of the reorder buffer and through the detections.
func (t *Tracker) takeOldest(clock time.Time) {
	slot := t.order.pop()
	pw := &t.order.arena[slot]
	t.released = max(t.released, pw.at)
	t.observeWrite(pw, clock)
	t.order.release(slot)
}

// releaseDue takes, in event-time order, every waiting write at least ReorderWait older than the
// event time now: the newest write's time, advanced by the clock since it came, and never ahead
// of the clock. While writes keep coming that is the API servers' own time, so neither the
// exporter's clock being off nor replaying an old log file (where the clock is hours ahead of the
// events) makes writes late; in a quiet spell the clock carries it on, so the last writes are
// not left waiting; and an API server whose clock is ahead cannot release the others' writes
// early.
func (t *Tracker) releaseDue(clock time.Time) {
	if t.order == nil || t.following {
		return
	}
	now := clock.UnixMicro()
	if t.newest != 0 {
		now = min(now, t.newest+max(0, now-t.arrived))
	}
	t.releaseThrough(now-t.wait, clock)
}

// releaseThrough takes every waiting write at or before watermark (microseconds), oldest first.
func (t *Tracker) releaseThrough(watermark int64, clock time.Time) {
	if watermark <= t.released {
		return
	}
	t.released = watermark
	for {
		at, ok := t.order.oldest()
		if !ok || at > watermark {
			return
		}
		t.takeOldest(clock)
	}
}

// Release takes the writes whose wait is over through the detections. The exporter calls it
// every second, so that the last writes before a quiet spell are not left waiting; batches
// release what is due as they come.
func (t *Tracker) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseDue(t.cfg.Now())
}

// Flush takes every waiting write through the detections, in event-time order: the end of an
// audit log, where no later batch can come.
func (t *Tracker) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.order != nil {
		t.releaseThrough(math.MaxInt64, t.cfg.Now())
	}
}

// Follow makes the tracker take waiting writes only when ReleaseThrough says so (following) or
// on its own again: a standby replica takes writes exactly when the leader it follows did, so that
// both count every write, and only once, whichever of them counts it.
func (t *Tracker) Follow(following bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.following = following
}

// Released is the event time (microseconds since the epoch) through which writes have been taken.
func (t *Tracker) Released() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.released
}

// ReleaseThrough takes every waiting write at or before watermark (microseconds since the
// epoch), as the leader did.
func (t *Tracker) ReleaseThrough(watermark int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.order != nil {
		t.releaseThrough(watermark, t.cfg.Now())
	}
}

// Waiting returns the writes waiting in the reorder buffer, oldest first, and the event time
// through which writes have been taken: what a standby joining this tracker's replica starts
// from.
func (t *Tracker) Waiting() ([]WaitingWrite, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.order == nil {
		return nil, t.released
	}
	slots := waitingOrder(t.order)
	out := make([]WaitingWrite, 0, len(slots))
	for _, s := range slots {
		pw := &t.order.arena[s]
		out = append(out, WaitingWrite{
			At: pw.at, Code: pw.code, Verb: writeVerbs[pw.verb], Impersonated: pw.impersonated, Actor: pw.actor, ActorLabel: pw.actorLabel,
			Group: pw.group, Resource: pw.resource, Pod: pw.pod, Manager: pw.manager, Agent: pw.agent,
			Webhook: pw.webhook, Object: pw.obj,
		})
	}
	return out, t.released
}

// Restore replaces the reorder buffer with ws (oldest first) and sets the event time through
// which writes have been taken: a standby joining a leader starts from the leader's.
func (t *Tracker) Restore(ws []WaitingWrite, released int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.released = released
	if t.order == nil {
		return
	}
	t.order = newReorderBuffer(t.cfg.MaxReorderBytes)
	for i := range ws {
		w := &ws[i]
		pw := &t.pending
		*pw = pendingWrite{
			at: w.At, code: w.Code, verb: verbCode(w.Verb), impersonated: w.Impersonated, actor: w.Actor, actorLabel: w.ActorLabel,
			group: w.Group, resource: w.Resource, pod: w.Pod, manager: w.Manager, agent: w.Agent, webhook: w.Webhook,
			obj: w.Object,
		}
		pw.h = eventHashes{actor: t.actorHash(w.Actor), object: t.objectRefHash(&w.Object)}
		if pw.at > t.newest {
			t.newest = pw.at
		}
		if !t.order.fits(pw) {
			t.overflow++
			t.observeWrite(pw, t.cfg.Now())
			continue
		}
		t.order.push(pw)
	}
}

// observeWrite runs the detections on one successful or conflicting write to a named object, in
// event-time order.
func (t *Tracker) observeWrite(pw *pendingWrite, clock time.Time) {
	ts := time.UnixMicro(pw.at).UTC()
	w := &objectWrite{pw: pw, ts: ts, now: t.seconds(ts), clock: clock}
	w.slot, _ = t.objects.get(pw.h.object, w.now)
	w.st = &t.objects.slots[w.slot]
	w.st.seen = w.now
	if t.found != nil {
		t.found.Taken(&Taken{
			Object: pw.h.object, At: pw.at, Actor: pw.actor, Pod: pw.writerPod(), Verb: writeVerbs[pw.verb],
			Code: pw.code, Mutated: pw.webhook != "",
		})
	}
	if pw.pod != "" && !pw.impersonated {
		t.trackRace(w)
	}
	if !pw.conflict() {
		t.trackFight(w)
		t.trackHot(w)
		w.st.actor = pw.h.actor
	}
	// Names are put after the detections have read the previous writer's, which this write's
	// names could otherwise evict from the cache.
	t.names.put(pw.h.actor, pw.actor)
}

func (t *Tracker) trackRace(w *objectWrite) {
	pw, st := w.pw, w.st
	var ph maphash.Hash
	ph.SetSeed(t.seed)
	ph.WriteString(pw.actor)
	ph.WriteByte(0)
	ph.WriteString(pw.pod)
	pod := ph.Sum64() | 1
	a32 := uint32(pw.h.actor)
	key := pw.h.object
	switched := st.pod != 0 && st.pod != pod && st.podActor == a32 && w.now-st.podAt <= t.raceWindow
	if r := t.races.get(key, w.clock); r != nil {
		if r.Actor == pw.actor {
			t.raceWrite(r, pw, w.ts)
		}
	} else {
		// A first switch from one pod to another is a candidate: a handover, when the old
		// leader's last write and the new one's first fall within the window, looks the same.
		// Replicas that race take turns, or conflict.
		c := t.raceCandidates.get(key, w.clock)
		if c != nil && w.ts.Sub(c.First) > t.cfg.ObjectTTL {
			// Writes keep a candidate, but only for as long as an object keeps its state: a pod
			// of it writing again long after the switch is the next handover (a StatefulSet's
			// pods keep their names from one rollout to the next), not replicas taking turns.
			t.raceCandidates.drop(key)
			c = nil
		}
		if c == nil && switched {
			c = t.raceCandidates.add(key, Race{
				Object: pw.obj, Actor: pw.actor, Pods: []string{t.names.get(st.pod)}, Writes: 1,
				First: t.timeOf(st.podAt),
			}, w.clock)
		}
		if c != nil && c.Actor == pw.actor {
			returned := switched && slices.Contains(c.Pods, pw.pod)
			t.raceWrite(c, pw, w.ts)
			if returned || pw.conflict() {
				t.races.add(key, *c, w.clock)
				if t.found != nil {
					t.found.Found(&Found{Kind: KindRace, Object: key, Ref: c.Object, Actor: c.Actor, Writes: c.Writes})
				}
				t.raceCandidates.drop(key)
			}
		}
	}
	st.pod, st.podAt, st.podActor = pod, w.now, a32
	t.names.put(pod, pw.pod)
}

// raceWrite counts a write of a race or candidate.
func (t *Tracker) raceWrite(r *Race, pw *pendingWrite, ts time.Time) {
	r.Writes++
	if pw.conflict() {
		r.Conflicts++
	}
	r.Last = ts
	r.Pods = addPod(r.Pods, pw.pod, t.cfg.MaxRacePods)
	r.LastPod = pw.pod
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

// trackFight counts a handoff and finds fights: FightHandoffs handoffs between the same two
// actors within a FightWindow that slides with every handoff. The times of the pair's last
// FightHandoffs-1 handoffs are kept per object (objectTable.handoffs), so a fight whose handoffs
// straddle any boundary is seen at the handoff that completes it.
func (t *Tracker) trackFight(w *objectWrite) {
	pw, st := w.pw, w.st
	if st.actor == 0 || st.actor == pw.h.actor {
		return
	}
	from := t.names.get(st.actor)
	t.handoff = Handoff{
		From: from, FromLabel: t.actors.label(st.actor), To: pw.actor, ToLabel: pw.actorLabel,
		Group: pw.group, Resource: pw.resource, Object: pw.h.object,
	}
	t.sink.Handoff(&t.handoff)
	times := t.objects.handoffs(w.slot)
	if st.other != pw.h.actor {
		clear(times) // a new pair: the last writer handed over to someone else
	}
	st.other = st.actor
	n, first := inWindow(times, w.now, t.fightWindow)
	pushHandoff(times, w.now)
	a, b := pw.actor, from
	if b < a {
		a, b = b, a
	}
	f := t.fights.get(pw.h.object, w.clock)
	switch {
	case f != nil && f.ActorA == a && f.ActorB == b:
		f.Handoffs++
		f.Last = w.ts
	case n >= t.cfg.FightHandoffs:
		v := Fight{Object: pw.obj, ActorA: a, ActorB: b, Handoffs: n, First: t.timeOf(first), Last: w.ts}
		if f != nil {
			*f = v
		} else {
			f = t.fights.add(pw.h.object, v, w.clock)
		}
		if t.found != nil {
			t.found.Found(&Found{Kind: KindFight, Object: pw.h.object, Ref: v.Object, Actor: pw.actor, Other: from, Handoffs: n})
		}
	default:
		return
	}
	if f != nil {
		describeFight(f, pw)
	}
}

// inWindow counts the handoff at now and the earlier ones of times (newest first, 0 for none)
// within window of it, and returns the time of the first of them.
func inWindow(times []uint32, now, window uint32) (n int, first uint32) {
	n, first = 1, now
	for _, at := range times {
		// A write taken late can be older than handoffs already counted: those are within the
		// window too.
		if at == 0 || at < now && now-at > window {
			break
		}
		n++
		first = min(first, at)
	}
	return n, first
}

// pushHandoff records a handoff at now in times, newest first, dropping the oldest.
func pushHandoff(times []uint32, now uint32) {
	if len(times) == 0 {
		return
	}
	copy(times[1:], times[:len(times)-1])
	times[0] = now
}

// describeFight fills what the fight does not know yet about the writer of pw: its field manager
// and user agent, and the mutating webhook that changed its write; and its pod, as of its latest
// write.
func describeFight(f *Fight, pw *pendingWrite) {
	manager, agent, pod := &f.FieldManagerA, &f.UserAgentA, &f.PodA
	if pw.actor == f.ActorB {
		manager, agent, pod = &f.FieldManagerB, &f.UserAgentB, &f.PodB
	}
	*pod = pw.writerPod()
	if *manager == "" {
		*manager = pw.manager
	}
	if *agent == "" {
		*agent = pw.agent
	}
	if f.MutatingWebhook == "" && pw.webhook != "" {
		f.MutatingWebhook, f.MutatedActor = decode.ParseMutatingWebhook(pw.webhook), pw.actor
	}
}

// describeHot fills what the hot object does not know yet about its actor's write pw.
func describeHot(h *HotObject, pw *pendingWrite) {
	h.Pod = pw.writerPod()
	if h.FieldManager == "" {
		h.FieldManager = pw.manager
	}
	if h.UserAgent == "" {
		h.UserAgent = pw.agent
	}
	if h.MutatingWebhook == "" && pw.webhook != "" {
		h.MutatingWebhook = decode.ParseMutatingWebhook(pw.webhook)
	}
}

func (t *Tracker) trackHot(w *objectWrite) {
	pw, st := w.pw, w.st
	if st.actor == pw.h.actor && w.now-st.hotFrom <= t.hotWindow {
		if st.hotWrites < math.MaxUint16 {
			st.hotWrites++
		}
	} else {
		st.hotWrites, st.hotFrom = 1, w.now
	}
	h := t.hot.get(pw.h.object, w.clock)
	switch {
	case h != nil && h.Actor == pw.actor:
		h.Writes++
		h.Last = w.ts
	case h != nil && int(st.hotWrites) >= t.cfg.HotWrites:
		*h = HotObject{Object: pw.obj, Actor: pw.actor, Writes: int(st.hotWrites), First: t.timeOf(st.hotFrom), Last: w.ts}
		t.foundHot(h, pw.h.object)
	case h == nil && t.admitHot(int(st.hotWrites)):
		v := HotObject{Object: pw.obj, Actor: pw.actor, Writes: int(st.hotWrites), First: t.timeOf(st.hotFrom), Last: w.ts}
		h = t.hot.add(pw.h.object, v, w.clock)
		t.foundHot(h, pw.h.object)
	default:
		return
	}
	if h != nil {
		describeHot(h, pw)
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

// Config is the tracker's configuration, defaults filled.
func (t *Tracker) Config() Config { return t.cfg }

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
		Waiting:           t.waiting(),
		Late:              t.late,
		Overflow:          t.overflow,
	}
}

func (t *Tracker) waiting() int {
	if t.order == nil {
		return 0
	}
	return t.order.len()
}
