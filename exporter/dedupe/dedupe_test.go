package dedupe

import (
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

var t0 = time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC)

// create is a completed create of configmap name by a controller, with auditID id, received at t0+at.
func create(id, name string, at time.Duration) *decode.Event {
	e := &decode.Event{
		Stage: decode.StageResponseComplete, Verb: "create", Username: "system:serviceaccount:ns:ctl",
		Resource: "configmaps", Namespace: "ns", Name: name, Code: 201,
		RequestReceived: t0.Add(at), StageTimestamp: t0.Add(at + 3*time.Millisecond),
	}
	if id != "" {
		e.AuditIDHash, e.HasAuditID = decode.HashAuditID([]byte(id)), true
	}
	return e
}

func with(e *decode.Event, change func(*decode.Event)) *decode.Event {
	c := *e
	change(&c)
	return &c
}

// subject stands for the tracker's hash of the event's actor and object.
func subject(e *decode.Event) uint64 {
	return mixString(mixString(mixString(mixString(mixString(mixString(seed, e.Actor()), e.APIGroup), e.Resource), e.Namespace), e.Name), e.Subresource)
}

func TestWindow(t *testing.T) {
	a := create("a", "x", 0)
	cases := []struct {
		name   string
		size   int
		events []*decode.Event
		want   []bool
	}{
		{"drops an exact re-send", 4, []*decode.Event{a, with(a, func(*decode.Event) {})}, []bool{false, true}},
		{"keeps the same auditID at another stage", 4,
			[]*decode.Event{a, with(a, func(e *decode.Event) { e.Stage = decode.StagePanic })}, []bool{false, false}},
		{"keeps requests sharing an auditID and timestamps that differ in actor", 4,
			[]*decode.Event{a, with(a, func(e *decode.Event) { e.Username = "system:serviceaccount:ns:other" })}, []bool{false, false}},
		{"keeps distinct creates sharing one auditID", 8,
			[]*decode.Event{create("a", "x", 0), create("a", "y", time.Millisecond), create("a", "z", 2*time.Millisecond)},
			[]bool{false, false, false}},
		{"keeps requests sharing an auditID that differ only in their stage timestamp", 4,
			[]*decode.Event{a, with(a, func(e *decode.Event) { e.StageTimestamp = e.StageTimestamp.Add(time.Microsecond) })}, []bool{false, false}},
		{"keeps requests sharing an auditID and timestamps that differ in verb", 4,
			[]*decode.Event{a, with(a, func(e *decode.Event) { e.Verb = "update" })}, []bool{false, false}},
		{"keeps requests sharing an auditID and timestamps that differ in object", 4,
			[]*decode.Event{a, with(a, func(e *decode.Event) { e.Name = "x2" }), with(a, func(e *decode.Event) { e.Namespace = "ns2" })},
			[]bool{false, false, false}},
		{"keeps requests that differ in where one field ends and the next begins", 4,
			[]*decode.Event{with(a, func(e *decode.Event) { e.Namespace, e.Name = "ab", "c" }), with(a, func(e *decode.Event) { e.Namespace, e.Name = "a", "bc" })},
			[]bool{false, false}},
		{"keeps requests sharing an auditID that differ in code", 4,
			[]*decode.Event{a, with(a, func(e *decode.Event) { e.Code = 409 })}, []bool{false, false}},
		{"drops an exact re-send of an event without auditID", 4,
			[]*decode.Event{create("", "x", 0), create("", "x", 0)}, []bool{false, true}},
		{"remembers the previous generation", 2,
			[]*decode.Event{create("a", "x", 0), create("b", "x", 0), create("c", "x", 0), create("a", "x", 0)}, []bool{false, false, false, true}},
		{"forgets beyond two generations", 1,
			[]*decode.Event{create("a", "x", 0), create("b", "x", 0), create("c", "x", 0), create("a", "x", 0)}, []bool{false, false, false, false}},
		{"is off at size zero", 0, []*decode.Event{a, a}, []bool{false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := New(tc.size)
			for i, e := range tc.events {
				if got := w.Seen(e, subject(e)); got != tc.want[i] {
					t.Fatalf("event %d: seen %v, want %v", i, got, tc.want[i])
				}
			}
		})
	}
}

func TestBytes(t *testing.T) {
	if got, want := Bytes(1<<19), int64(16<<20); got != want {
		t.Fatalf("Bytes(2^19) = %d, want %d", got, want)
	}
}

func BenchmarkKey(b *testing.B) {
	e := create("0b5c8e0e-9a7c-4b0e-8d2a-3c1f5e6a7b8c", "backup-nightly-2026-11-21", 0)
	s := subject(e)
	var sink uint64
	for range b.N {
		sink += Key(e, s)
	}
	_ = sink
}
