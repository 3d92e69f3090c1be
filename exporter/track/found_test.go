package track

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// foundSink records, in order, the writes the detections take and the findings the tracker says
// begin.
type foundSink struct {
	*recordingSink
	calls []string
}

func (s *foundSink) Taken(w *Taken) {
	s.calls = append(s.calls, fmt.Sprintf("taken %s %s +%s", w.Actor, w.Pod, time.UnixMicro(w.At).Sub(t0)))
}

func (s *foundSink) Found(f *Found) {
	s.calls = append(s.calls, fmt.Sprintf("found %d %s %s/%s handoffs=%d writes=%d", f.Kind, f.Ref, f.Actor, f.Other, f.Handoffs, f.Writes))
}

// found is the Found calls of calls.
func found(calls []string) []string {
	var out []string
	for _, c := range calls {
		if len(c) > 6 && c[:6] == "found " {
			out = append(out, c)
		}
	}
	return out
}

// TestFoundIsToldWhenAFindingBegins: a FindingSink hears of each finding once, when it enters
// the tracker's tables, with the count that made it one: a fight at its Nth handoff, a hot
// object at its Nth write, a race when a pod writes again after another; each right after the
// Taken of the write that made it one.
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
	tr.Flush()
	want := []string{
		fmt.Sprintf("found %d configmaps default/fought b/a handoffs=3 writes=0", KindFight),
		fmt.Sprintf("found %d configmaps default/hot hot/ handoffs=0 writes=4", KindHot),
		fmt.Sprintf("found %d configmaps default/raced racer/ handoffs=0 writes=3", KindRace),
	}
	if got := found(sink.calls); !slices.Equal(got, want) {
		t.Errorf("found\n%q\nwant\n%q", got, want)
	}
	for i, c := range sink.calls {
		if c == want[0] && sink.calls[i-1] != "taken b  +3s" ||
			c == want[1] && sink.calls[i-1] != "taken hot  +13s" ||
			c == want[2] && sink.calls[i-1] != "taken racer p-1 +22s" {
			t.Errorf("%q follows %q, not the Taken of the write that made it", c, sink.calls[i-1])
		}
	}
}

// TestTakenAndFoundFollowEventTimeAcrossAPIServers: a fight between an actor on each of two API
// servers arrives as each server's batch, one after the other; the FindingSink is told of the
// writes in the order they happened, and of the fight at the write that made its third handoff,
// as if they had come in order.
func TestTakenAndFoundFollowEventTimeAcrossAPIServers(t *testing.T) {
	clock := &fakeClock{now: t0}
	sink := &foundSink{recordingSink: newRecordingSink()}
	tr, err := New(Config{FightHandoffs: 3, Now: clock.Now}, sink)
	if err != nil {
		t.Fatal(err)
	}
	var first, second []write // a's API server's batch, then b's
	for i := range 6 {
		w := write{actor: []string{"a", "b"}[i%2], name: "fought", at: time.Duration(i) * time.Second}
		if i%2 == 0 {
			first = append(first, w)
		} else {
			second = append(second, w)
		}
	}
	clock.Set(t0.Add(6 * time.Second))
	for _, w := range slices.Concat(first, second) {
		ev := w.event()
		tr.Observe(&ev, nil)
	}
	clock.Set(t0.Add(time.Minute))
	tr.Release()
	want := []string{
		"taken a  +0s", "taken b  +1s", "taken a  +2s", "taken b  +3s",
		fmt.Sprintf("found %d configmaps default/fought b/a handoffs=3 writes=0", KindFight),
		"taken a  +4s", "taken b  +5s",
	}
	if !slices.Equal(sink.calls, want) {
		t.Errorf("calls\n%q\nwant\n%q", sink.calls, want)
	}
}
