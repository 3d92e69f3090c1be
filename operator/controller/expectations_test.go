package controller

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(e *expectations)
		advance time.Duration
		seen    map[string]bool
		want    bool
	}{
		{name: "is satisfied with nothing expected", setup: func(*expectations) {}, want: true},
		{name: "waits until the cache shows a created snapshot", setup: func(e *expectations) { e.expectCreate("ns/b", "b-1") }, want: false},
		{name: "is satisfied once the created snapshot is cached", setup: func(e *expectations) { e.expectCreate("ns/b", "b-1") },
			seen: map[string]bool{"b-1": false}, want: true},
		{name: "waits while a deleted snapshot still looks alive", setup: func(e *expectations) { e.expectDelete("ns/b", "b-1") },
			seen: map[string]bool{"b-1": false}, want: false},
		{name: "is satisfied once the deleted snapshot is terminating", setup: func(e *expectations) { e.expectDelete("ns/b", "b-1") },
			seen: map[string]bool{"b-1": true}, want: true},
		{name: "gives up after the ttl so a lost event cannot block", setup: func(e *expectations) { e.expectCreate("ns/b", "b-1") },
			advance: 2 * time.Minute, want: true},
		{name: "is forgotten with its owner", setup: func(e *expectations) { e.expectCreate("ns/b", "b-1"); e.forget("ns/b") }, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			e := newExpectations(clk, time.Minute)
			c.setup(e)
			clk.SetTime(t0.Add(c.advance))
			if got := e.satisfied("ns/b", c.seen); got != c.want {
				t.Errorf("satisfied = %v, want %v", got, c.want)
			}
		})
	}
}
