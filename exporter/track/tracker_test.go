package track

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// newTestTracker returns a tracker with a fake clock at t0. Unless cfg sets ReorderWait, it takes
// writes in arrival order: the tests of event-time order set it.
func newTestTracker(t *testing.T, cfg Config) (*Tracker, *recordingSink, *fakeClock) {
	t.Helper()
	if cfg.ReorderWait == 0 {
		cfg.ReorderWait = -1
	}
	clock := &fakeClock{now: t0}
	cfg.Now = clock.Now
	sink := newRecordingSink()
	tr, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	return tr, sink, clock
}

func alternate(a, b string, n int, every time.Duration) []write {
	var ws []write
	for i := range n {
		actor := a
		if i%2 == 1 {
			actor = b
		}
		ws = append(ws, write{actor: actor, name: "cm", at: time.Duration(i) * every})
	}
	return ws
}

func repeat(actor string, n int, every time.Duration) []write {
	var ws []write
	for i := range n {
		ws = append(ws, write{actor: actor, name: "cm", at: time.Duration(i) * every})
	}
	return ws
}

// handedOver is pod p1 handing object cm over to p2, which writes it every 4 minutes for 20
// minutes; then come the writes given.
func handedOver(then ...write) []write {
	ws := []write{{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p2", name: "cm", at: time.Second}}
	for at := 4 * time.Minute; at <= 20*time.Minute; at += 4 * time.Minute {
		ws = append(ws, write{actor: "sa", pod: "p2", name: "cm", at: at})
	}
	return append(ws, then...)
}

func TestTrackerDetections(t *testing.T) {
	cm := ObjectRef{Resource: "configmaps", Namespace: "default", Name: "cm"}
	cases := []struct {
		name   string
		writes []write
		fights []Fight
		hot    []HotObject
		races  []Race
	}{
		{
			name:   "reports a fight naming both actors after N handoffs within the window",
			writes: alternate("sa-b", "sa-a", 6, time.Second),
			fights: []Fight{{Object: cm, ActorA: "sa-a", ActorB: "sa-b", Handoffs: 5, First: t0.Add(time.Second), Last: t0.Add(5 * time.Second)}},
		},
		{
			name: "names both actors of a fight whose writes come from pods",
			writes: func() []write {
				ws := alternate("sa-b", "sa-a", 6, time.Second)
				for i := range ws {
					ws[i].pod = ws[i].actor + "-pod"
				}
				return ws
			}(),
			fights: []Fight{{Object: cm, ActorA: "sa-a", ActorB: "sa-b", Handoffs: 5, First: t0.Add(time.Second), Last: t0.Add(5 * time.Second), PodA: "sa-a-pod", PodB: "sa-b-pod"}},
		},
		{
			name:   "stays silent when the handoffs are spread beyond the window",
			writes: alternate("sa-a", "sa-b", 6, 3*time.Minute),
		},
		{
			// A window that restarted at the first handoff outside it (5:30 here) would count
			// 3 handoffs at 6:30 and see no fight: the window slides.
			name: "reports a fight whose handoffs straddle a window boundary, at the handoff that completes N within the window",
			writes: []write{
				{actor: "sa-a", name: "cm"}, {actor: "sa-b", name: "cm", at: time.Second},
				{actor: "sa-a", name: "cm", at: 4 * time.Minute}, {actor: "sa-b", name: "cm", at: 5*time.Minute + 30*time.Second},
				{actor: "sa-a", name: "cm", at: 6 * time.Minute}, {actor: "sa-b", name: "cm", at: 6*time.Minute + 30*time.Second},
			},
			fights: []Fight{{Object: cm, ActorA: "sa-a", ActorB: "sa-b", Handoffs: 4, First: t0.Add(4 * time.Minute), Last: t0.Add(6*time.Minute + 30*time.Second)}},
		},
		{
			name: "counts a handoff exactly one window after the first of N",
			writes: []write{
				{actor: "sa-a", name: "cm"}, {actor: "sa-b", name: "cm", at: time.Second},
				{actor: "sa-a", name: "cm", at: 2 * time.Minute}, {actor: "sa-b", name: "cm", at: 3 * time.Minute},
				{actor: "sa-a", name: "cm", at: 5*time.Minute + time.Second},
			},
			fights: []Fight{{Object: cm, ActorA: "sa-a", ActorB: "sa-b", Handoffs: 4, First: t0.Add(time.Second), Last: t0.Add(5*time.Minute + time.Second)}},
		},
		{
			name: "stays silent when the first of N handoffs left the window a second before the last",
			writes: []write{
				{actor: "sa-a", name: "cm"}, {actor: "sa-b", name: "cm", at: time.Second},
				{actor: "sa-a", name: "cm", at: 2 * time.Minute}, {actor: "sa-b", name: "cm", at: 3 * time.Minute},
				{actor: "sa-a", name: "cm", at: 5*time.Minute + 2*time.Second},
			},
		},
		{
			name:   "stays silent below N handoffs",
			writes: alternate("sa-a", "sa-b", 4, time.Second),
		},
		{
			name: "does not count a third actor towards the pair",
			writes: []write{
				{actor: "a", name: "cm"}, {actor: "b", name: "cm", at: 1}, {actor: "c", name: "cm", at: 2},
				{actor: "a", name: "cm", at: 3}, {actor: "b", name: "cm", at: 4},
			},
		},
		{
			name: "does not count conflicts as handoffs",
			writes: []write{
				{actor: "a", name: "cm"}, {actor: "b", name: "cm", code: 409}, {actor: "a", name: "cm"},
				{actor: "b", name: "cm", code: 409}, {actor: "a", name: "cm"}, {actor: "b", name: "cm", code: 409},
			},
		},
		{
			name:   "reports a hot object when one actor rewrites it faster than the threshold",
			writes: repeat("ctl", 25, 100*time.Millisecond),
			hot:    []HotObject{{Object: cm, Actor: "ctl", Writes: 25, First: t0, Last: t0.Add(2400 * time.Millisecond)}},
		},
		{
			name: "names the pod of the hot object's latest write, the one a restarted controller writes from",
			writes: func() []write {
				ws := repeat("ctl", 25, 100*time.Millisecond)
				for i := range ws {
					ws[i].pod = "ctl-old"
					if i >= 20 {
						ws[i].pod = "ctl-new"
					}
				}
				return ws
			}(),
			hot: []HotObject{{Object: cm, Actor: "ctl", Writes: 25, First: t0, Last: t0.Add(2400 * time.Millisecond), Pod: "ctl-new"}},
		},
		{
			name: "names no pod for a hot object written by impersonation: the pod is the impersonator's",
			writes: func() []write {
				ws := repeat("impersonator", 25, 100*time.Millisecond)
				for i := range ws {
					ws[i].pod, ws[i].impersonates = "impersonator-pod", "ctl"
				}
				return ws
			}(),
			hot: []HotObject{{Object: cm, Actor: "ctl", Writes: 25, First: t0, Last: t0.Add(2400 * time.Millisecond)}},
		},
		{
			name:   "stays silent when one actor writes slower than the threshold",
			writes: repeat("ctl", 25, 5*time.Second),
		},
		{
			name: "reports a replica race with pod names and conflicts",
			writes: []write{
				{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p2", name: "cm", at: time.Second, code: 409},
				{actor: "sa", pod: "p2", name: "cm", at: 2 * time.Second}, {actor: "sa", pod: "p3", name: "cm", at: 3 * time.Second},
			},
			races: []Race{{Object: cm, Actor: "sa", Pods: []string{"p1", "p2", "p3"}, LastPod: "p3", Writes: 4, Conflicts: 1, First: t0, Last: t0.Add(3 * time.Second)}},
		},
		{
			name: "reports a replica race when the first pod writes again after the second",
			writes: []write{
				{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p2", name: "cm", at: time.Second},
				{actor: "sa", pod: "p1", name: "cm", at: 2 * time.Second}, {actor: "sa", pod: "p2", name: "cm", at: 3 * time.Second},
			},
			races: []Race{{Object: cm, Actor: "sa", Pods: []string{"p1", "p2"}, LastPod: "p2", Writes: 4, First: t0, Last: t0.Add(3 * time.Second)}},
		},
		{
			name: "stays silent on a handover: the new pod writes soon after the old one, which never writes again",
			writes: []write{
				{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p1", name: "cm", at: time.Second},
				{actor: "sa", pod: "p2", name: "cm", at: 2 * time.Second}, {actor: "sa", pod: "p2", name: "cm", at: 3 * time.Second},
				{actor: "sa", pod: "p2", name: "cm", at: 50 * time.Second},
			},
		},
		{
			name: "stays silent through two handovers of a rolling restart",
			writes: []write{
				{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p2", name: "cm", at: time.Second},
				{actor: "sa", pod: "p3", name: "cm", at: 2 * time.Second}, {actor: "sa", pod: "p3", name: "cm", at: 3 * time.Second},
			},
		},
		{
			name: "stays silent when a pod takes the object back at the next handover, long after the first",
			// A StatefulSet's pods keep their names across rollouts.
			writes: handedOver(write{actor: "sa", pod: "p1", name: "cm", at: 20*time.Minute + time.Second},
				write{actor: "sa", pod: "p1", name: "cm", at: 24 * time.Minute}),
		},
		{
			name: "reports a replica race when pods take turns long after a handover",
			writes: handedOver(write{actor: "sa", pod: "p1", name: "cm", at: 20*time.Minute + time.Second},
				write{actor: "sa", pod: "p2", name: "cm", at: 20*time.Minute + 2*time.Second}),
			races: []Race{{Object: cm, Actor: "sa", Pods: []string{"p1", "p2"}, LastPod: "p2", Writes: 3, First: t0.Add(20 * time.Minute), Last: t0.Add(20*time.Minute + 2*time.Second)}},
		},
		{
			name: "stays silent when one pod writes repeatedly",
			writes: []write{
				{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p1", name: "cm", at: time.Second},
			},
		},
		{
			name: "stays silent when two pods write outside the race window",
			writes: []write{
				{actor: "sa", pod: "p1", name: "cm"}, {actor: "sa", pod: "p2", name: "cm", at: 2 * time.Minute},
			},
		},
		{
			name: "does not call pods of different actors a race",
			writes: []write{
				{actor: "sa1", pod: "p1", name: "cm"}, {actor: "sa2", pod: "p2", name: "cm", at: time.Second},
			},
		},
	}
	// Each case runs with the configured name cache and with one of a single pair of slots, where
	// every name collides: the previous writer's actor and pod must still be named, not unknown.
	// And each runs once with the writes arriving in order, taken as they come, and once as two
	// API servers would send them, every other write in the second's batches, which arrive 5 s
	// after the first's: the reorder buffer must give the same result.
	for _, tc := range cases {
		for _, mode := range []struct {
			name     string
			size     int
			twoStrms bool
		}{{"", 0, false}, {"/one slot pair for names", 1, false}, {"/from two API servers, reordered", 0, true}} {
			t.Run(tc.name+mode.name, func(t *testing.T) {
				cfg := Config{HotWrites: 20, HotWindow: time.Minute, FightHandoffs: 4, FightWindow: 5 * time.Minute}
				if mode.twoStrms {
					cfg.ReorderWait = 20 * time.Second
				}
				tr, _, clock := newTestTracker(t, cfg)
				if mode.size > 0 {
					tr.names = newNameCache(mode.size)
				}
				if mode.twoStrms {
					observeFromTwoAPIServers(tr, clock, tc.writes, 5*time.Second)
					if s := tr.Stats(); s.Late != 0 || s.Overflow != 0 || s.Waiting != 0 {
						t.Errorf("stats %+v: want no late, overflowed or waiting writes", s)
					}
				} else {
					for _, w := range tc.writes {
						ev := w.event()
						tr.Observe(&ev, nil)
					}
				}
				if got := tr.Fights(); !reflect.DeepEqual(got, nonNil(tc.fights)) {
					t.Errorf("fights:\n got %+v\nwant %+v", got, tc.fights)
				}
				if got := tr.HotObjects(); !reflect.DeepEqual(got, nonNil(tc.hot)) {
					t.Errorf("hot objects:\n got %+v\nwant %+v", got, tc.hot)
				}
				if got := tr.Races(); !reflect.DeepEqual(got, nonNil(tc.races)) {
					t.Errorf("races:\n got %+v\nwant %+v", got, tc.races)
				}
			})
		}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func TestTrackerReportsToSink(t *testing.T) {
	tr, sink, _ := newTestTracker(t, Config{TopK: 2})
	events := []decode.Event{
		write{actor: "a", name: "x"}.event(),
		write{actor: "b", name: "x"}.event(),
		write{actor: "c", name: "x"}.event(),
		write{actor: "a", name: "x", code: 409}.event(),
		{Verb: "list", Stage: decode.StageResponseComplete, Username: "a", Resource: "pods", Code: 200},
		{Verb: "watch", Stage: decode.StageResponseStarted, Username: "a", Resource: "pods"},
		{Verb: "patch", Stage: decode.StageRequestReceived, Username: "a", Resource: "pods", Name: "x"},
		{Verb: "get", Stage: decode.StageResponseComplete, Username: "a", Resource: "pods", Name: "x", Code: 200},
	}
	if r := tr.ObserveBatch(events, nil); r != (BatchResult{Counted: 6, IgnoredStage: 2}) {
		t.Errorf("batch result %+v, want 6 counted, 2 at other stages", r)
	}
	want := map[string][]string{
		"writes":    {"a=2", "b=1", "other=1"},
		"conflicts": {"a=1"},
		"reads":     {"a=1"},
		"handoffs":  {"a->b=1", "b->other=1"},
	}
	got := map[string][]string{
		"writes": sortedKeys(sink.writes), "conflicts": sortedKeys(sink.conflicts),
		"reads": sortedKeys(sink.reads), "handoffs": sortedKeys(sink.handoffs),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestTrackerDemotesQuietActorsOnDecay(t *testing.T) {
	tr, sink, clock := newTestTracker(t, Config{TopK: 1, DecayInterval: time.Minute})
	ev := write{actor: "early", name: "x"}.event()
	tr.Observe(&ev, nil)
	for i := range 10 {
		ev := write{actor: "busy", name: "y", at: time.Duration(i) * time.Second}.event()
		tr.Observe(&ev, nil)
	}
	if sink.writes["busy"] != 0 || sink.writes["early"] != 1 {
		t.Fatalf("labels before decay: %v", sink.writes)
	}
	clock.Set(t0.Add(2 * time.Minute))
	ev = write{actor: "busy", name: "y", at: time.Minute}.event()
	tr.Observe(&ev, nil)
	if !reflect.DeepEqual(sink.demoted, []string{"early"}) || sink.writes["busy"] != 1 {
		t.Fatalf("after decay: demoted %v, writes %v", sink.demoted, sink.writes)
	}
	if s := tr.Stats(); s.LabelledActors != 1 || s.ActorDemotions != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestTrackerExpiresOffenders(t *testing.T) {
	tr, _, clock := newTestTracker(t, Config{OffenderTTL: time.Minute})
	for _, w := range alternate("a", "b", 8, time.Second) {
		ev := w.event()
		tr.Observe(&ev, nil)
	}
	if len(tr.Fights()) != 1 {
		t.Fatal("fight not reported")
	}
	clock.Set(t0.Add(2 * time.Minute))
	if f := tr.Fights(); len(f) != 0 {
		t.Fatalf("fight still reported after its TTL: %+v", f)
	}
}

func TestTrackerCapsOffenders(t *testing.T) {
	tr, _, _ := newTestTracker(t, Config{MaxOffenders: 3, HotWrites: 2})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		for i := range 2 {
			ev := write{actor: "ctl", name: name, at: time.Duration(i) * time.Second}.event()
			tr.Observe(&ev, nil)
		}
	}
	if got := len(tr.HotObjects()); got != 3 {
		t.Fatalf("%d hot objects, want the cap of 3", got)
	}
	if s := tr.Stats(); s.OffenderEvictions != 2 { // the cap of 3 evicts max(1, 3/4) = 1 entry per insertion
		t.Fatalf("offender evictions %d, want 2", s.OffenderEvictions)
	}
}

// TestTrackerDoesNotChurnAFullHotTable: with more hot objects than the table holds, an evicted
// object comes back when its count doubles (2, 4, 8 writes here), not on each of its writes.
func TestTrackerDoesNotChurnAFullHotTable(t *testing.T) {
	tr, _, _ := newTestTracker(t, Config{MaxOffenders: 4, HotWrites: 2})
	const objects, rounds = 10, 8
	for i := range rounds {
		for o := range objects {
			ev := write{actor: "ctl", name: fmt.Sprint("cm-", o), at: time.Duration(i) * time.Second}.event()
			tr.Observe(&ev, nil)
		}
	}
	if got := len(tr.HotObjects()); got != 4 {
		t.Fatalf("%d hot objects, want the cap of 4", got)
	}
	// 3 admissions per object (at 2, 4 and 8 writes) into 4 slots: at most 30-4 evictions, where
	// admitting on every write from the second on would make 70 admissions.
	if s := tr.Stats(); s.OffenderEvictions > 3*objects-4 {
		t.Fatalf("offender evictions %d, want at most %d", s.OffenderEvictions, 3*objects-4)
	}
	for _, h := range tr.HotObjects() {
		if h.Writes < 2 {
			t.Errorf("hot object %v with %d writes", h.Object, h.Writes)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := New(Config{TopK: 10, Candidates: 5, FightHandoffs: 1, FightWindow: time.Millisecond, ReorderWait: time.Hour}, newRecordingSink())
	want := "candidates must be at least topK\nfightHandoffs must be between 2 and 64\nfightWindow must be at least 1s\nreorderWait must be at most 10m0s"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Fatal("nil sink accepted")
	}
}

// TestObserveBatchDoesNotAllocateAtSteadyState: a batch a second, each taken through the reorder
// buffer (the default 20 s wait), allocates nothing once the buffer has held a full wait.
func TestObserveBatchDoesNotAllocateAtSteadyState(t *testing.T) {
	clock := &fakeClock{now: t0}
	// Fewer offender slots than hot objects, so that the offender table churns as well.
	tr, err := New(Config{MaxOffenders: 8, HotWrites: 2, Now: clock.Now}, &labelSink{labels: map[string]struct{}{}})
	if err != nil {
		t.Fatal(err)
	}
	var batch []decode.Event
	for i := range 400 {
		// Objects 0-19 are rewritten by one actor (hot objects), 20-39 by two in turn (fights).
		w := write{actor: "hot-writer", name: fmt.Sprintf("cm-%d", i%40), at: time.Duration(i) * time.Millisecond}
		if i%40 >= 20 {
			w.actor = fmt.Sprintf("sa-%d", i/40%2)
		}
		if i%5 == 1 {
			w.code = 409
		}
		batch = append(batch, w.event())
	}
	next := func() {
		for i := range batch {
			batch[i].StageTimestamp = batch[i].StageTimestamp.Add(time.Second)
		}
		clock.Set(batch[len(batch)-1].StageTimestamp.Add(time.Second))
		tr.ObserveBatch(batch, neverSeen{})
	}
	for range 30 { // warm up: sink maps, names, offender tables, a full wait in the buffer
		next()
	}
	allocs := testing.AllocsPerRun(20, next)
	if allocs != 0 {
		t.Fatalf("%v allocations per 400-event batch at steady state, want 0", allocs)
	}
	if s := tr.Stats(); s.Waiting == 0 || s.Late != 0 || s.Overflow != 0 {
		t.Fatalf("stats %+v: want writes waiting, none late or overflowed", s)
	}
	if len(tr.HotObjects()) == 0 || len(tr.Fights()) == 0 {
		t.Fatal("no hot objects or fights: the batch does not exercise the offender tables")
	}
}

// TestOffendersNameFieldManagersAndTheMutatingWebhook: a fight in which a mutating webhook rewrites
// one actor's writes, and a controller looping with a webhook, name the webhook and the field
// managers (the fieldManager parameter, else the user agent's product).
func TestOffendersNameFieldManagersAndTheMutatingWebhook(t *testing.T) {
	const mutated = `{"configuration":"defaults","webhook":"mode.example.com","mutated":true}`
	tr, _, _ := newTestTracker(t, Config{FightHandoffs: 4, HotWrites: 5})
	for i := range 8 {
		w := write{actor: "stamper", name: "shared", at: time.Duration(i) * time.Second, agent: "stamper/v1.0 (linux/amd64)", webhook: mutated}
		if i%2 == 1 {
			w = write{actor: "keeper", name: "shared", at: time.Duration(i) * time.Second, manager: "mode-keeper"}
		}
		ev := w.event()
		tr.Observe(&ev, nil)
	}
	for i := range 6 {
		ev := write{actor: "looper", name: "loop", at: time.Duration(i) * 100 * time.Millisecond, agent: "looper/v2", webhook: mutated}.event()
		tr.Observe(&ev, nil)
	}
	fights, hot := tr.Fights(), tr.HotObjects()
	if len(fights) != 1 || len(hot) != 1 {
		t.Fatalf("fights %+v, hot %+v", fights, hot)
	}
	f, h := fights[0], hot[0]
	if f.ActorA != "keeper" || f.FieldManagerA != "mode-keeper" || f.FieldManagerB != "stamper" || f.UserAgentB != "stamper/v1.0 (linux/amd64)" ||
		f.MutatingWebhook != "defaults/mode.example.com" || f.MutatedActor != "stamper" {
		t.Errorf("fight %+v: want keeper [mode-keeper] and stamper [stamper], webhook defaults/mode.example.com on stamper's writes", f)
	}
	if h.Actor != "looper" || h.FieldManager != "looper" || h.MutatingWebhook != "defaults/mode.example.com" {
		t.Errorf("hot object %+v: want looper [looper], webhook defaults/mode.example.com", h)
	}
}

// observeFromTwoAPIServers sends writes as two API servers would: every other write goes through
// the second, whose batch of each second arrives delay after the first's; the clock follows the
// arrivals, and the tracker is flushed at the end.
func observeFromTwoAPIServers(tr *Tracker, clock *fakeClock, writes []write, delay time.Duration) {
	type arrival struct {
		at time.Time
		ev decode.Event
	}
	var arrivals []arrival
	for i, w := range writes {
		ev := w.event()
		at := ev.StageTimestamp.Truncate(time.Second).Add(time.Second) // the batch of its second
		if i%2 == 1 {
			at = at.Add(delay)
		}
		arrivals = append(arrivals, arrival{at, ev})
	}
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].at.Before(arrivals[j].at) })
	for i := 0; i < len(arrivals); {
		j := i
		var batch []decode.Event
		for ; j < len(arrivals) && arrivals[j].at.Equal(arrivals[i].at); j++ {
			batch = append(batch, arrivals[j].ev)
		}
		clock.Set(arrivals[i].at)
		tr.ObserveBatch(batch, nil)
		i = j
	}
	tr.Flush()
}
