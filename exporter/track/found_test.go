package track

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// foundSink records the findings the tracker says begin.
type foundSink struct {
	*recordingSink
	found []string
}

func (s *foundSink) Found(f *Found) {
	s.found = append(s.found, fmt.Sprintf("%d %s %s/%s handoffs=%d writes=%d", f.Kind, f.Ref, f.Actor, f.Other, f.Handoffs, f.Writes))
}

// TestFoundIsToldWhenAFindingBegins: a FindingSink hears of each finding once, when it enters
// the tracker's tables, with the count that made it one: a fight at its Nth handoff, a hot
// object at its Nth write, a race when a pod writes again after another.
func TestFoundIsToldWhenAFindingBegins(t *testing.T) {
	clock := &fakeClock{now: t0}
	sink := &foundSink{recordingSink: newRecordingSink()}
	tr, err := New(Config{FightHandoffs: 3, HotWrites: 4, Now: clock.Now}, sink)
	if err != nil {
		t.Fatal(err)
	}
	var writes []write
	for i := range 6 { // a, b, a, b, a, b: the third handoff makes the fight
		writes = append(writes, write{actor: []string{"a", "b"}[i%2], name: "fought", at: time.Duration(i) * time.Second})
	}
	for i := range 5 { // four writes make it hot
		writes = append(writes, write{actor: "hot", name: "hot", at: 10*time.Second + time.Duration(i)*time.Second})
	}
	for i, pod := range []string{"p-1", "p-2", "p-1"} { // p-1 writing again after p-2 makes the race
		writes = append(writes, write{actor: "racer", pod: pod, name: "raced", at: 20*time.Second + time.Duration(i)*time.Second})
	}
	for _, w := range writes {
		ev := w.event()
		clock.Set(ev.StageTimestamp)
		tr.Observe(&ev, nil)
	}
	want := []string{
		fmt.Sprintf("%d configmaps default/fought b/a handoffs=3 writes=0", KindFight),
		fmt.Sprintf("%d configmaps default/hot hot/ handoffs=0 writes=4", KindHot),
		fmt.Sprintf("%d configmaps default/raced racer/ handoffs=0 writes=3", KindRace),
	}
	if !slices.Equal(sink.found, want) {
		t.Errorf("found\n%q\nwant\n%q", sink.found, want)
	}
}
