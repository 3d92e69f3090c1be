package exporter

import (
	"testing"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

func TestDedupe(t *testing.T) {
	ev := func(id string, stage string) *decode.Event {
		e := &decode.Event{Stage: stage}
		if id != "" {
			e.AuditIDHash, e.HasAuditID = decode.HashAuditID([]byte(id)), true
		}
		return e
	}
	cases := []struct {
		name   string
		size   int
		events []*decode.Event
		want   []bool
	}{
		{"drops a repeated auditID and stage", 4,
			[]*decode.Event{ev("a", "ResponseComplete"), ev("a", "ResponseComplete")}, []bool{false, true}},
		{"keeps the same auditID at another stage", 4,
			[]*decode.Event{ev("a", "ResponseComplete"), ev("a", "Panic")}, []bool{false, false}},
		{"never drops events without auditID", 4,
			[]*decode.Event{ev("", "ResponseComplete"), ev("", "ResponseComplete")}, []bool{false, false}},
		{"remembers the previous generation", 2,
			[]*decode.Event{ev("a", "P"), ev("b", "P"), ev("c", "P"), ev("a", "P")}, []bool{false, false, false, true}},
		{"forgets beyond two generations", 1,
			[]*decode.Event{ev("a", "P"), ev("b", "P"), ev("c", "P"), ev("a", "P")}, []bool{false, false, false, false}},
		{"is off at size zero", 0,
			[]*decode.Event{ev("a", "P"), ev("a", "P")}, []bool{false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDedupe(tc.size)
			for i, e := range tc.events {
				if got := d.seen(e); got != tc.want[i] {
					t.Fatalf("event %d: seen %v, want %v", i, got, tc.want[i])
				}
			}
		})
	}
}
