package track

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

var t0 = time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// recordingSink counts what the tracker reports.
type recordingSink struct {
	writes, reads map[string]int // by actor label
	conflicts     map[string]int
	handoffs      map[string]int // "from->to" by label
	demoted       []string
}

func newRecordingSink() *recordingSink {
	return &recordingSink{writes: map[string]int{}, reads: map[string]int{}, conflicts: map[string]int{}, handoffs: map[string]int{}}
}

func (s *recordingSink) Write(o *Observation) {
	s.writes[o.ActorLabel]++
	if o.Event.IsConflict() {
		s.conflicts[o.ActorLabel]++
	}
}
func (s *recordingSink) Read(o *Observation) { s.reads[o.ActorLabel]++ }
func (s *recordingSink) Handoff(h *Handoff) {
	s.handoffs[h.FromLabel+"->"+h.ToLabel]++
}
func (s *recordingSink) Demoted(l string) { s.demoted = append(s.demoted, l) }

// write builds a completed write event.
type write struct {
	actor, pod, name string
	code             int32
	at               time.Duration
	// manager is the fieldManager parameter, agent the user agent, webhook the mutating webhook
	// annotation's value.
	manager, agent, webhook string
	// impersonates is the user the actor impersonates: the event's actor, written from the
	// impersonator's pod.
	impersonates string
}

func (w write) event() decode.Event {
	code := w.code
	if code == 0 {
		code = 200
	}
	return decode.Event{
		Verb: "patch", Stage: decode.StageResponseComplete, Username: w.actor, Pod: w.pod,
		Resource: "configmaps", Namespace: "default", Name: w.name, Code: code, StageTimestamp: t0.Add(w.at),
		FieldManager: w.manager, MutatingWebhook: w.webhook, UserAgent: w.agent, ImpersonatedUsername: w.impersonates,
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return out
}

// neverSeen is a Deduplicator that drops nothing.
type neverSeen struct{}

func (neverSeen) Key(*decode.Event, uint64) uint64 { return 1 }
func (neverSeen) Drop([]uint64)                    {}
