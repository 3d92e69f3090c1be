package track

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// TestTrackerStaysBoundedWithAMillionDistinctActorsAndObjects feeds one million events, each
// from a new user to a new object, and checks that label values, tracked state and heap stay
// bounded.
func TestTrackerStaysBoundedWithAMillionDistinctActorsAndObjects(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	clock := &fakeClock{now: t0}
	labels := map[string]struct{}{}
	sink := &labelSink{labels: labels}
	cfg := Config{TopK: 20, Candidates: 1024, MaxObjects: 1 << 14, MaxOffenders: 50, Now: clock.Now}
	tr, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]decode.Event, 400)
	var before runtime.MemStats
	heapAt := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var baseline uint64
	for i := 0; i < n; i += len(batch) {
		for j := range batch {
			k := rng.Uint64()
			batch[j] = decode.Event{
				Verb: "patch", Stage: decode.StageResponseComplete, Code: 200,
				Username: fmt.Sprintf("user-%x", k), Pod: fmt.Sprintf("pod-%x", k>>7),
				Resource: fmt.Sprintf("res%d", k%1000), Namespace: "ns", Name: fmt.Sprintf("obj-%x", k),
				StageTimestamp: t0.Add(time.Duration(i+j) * time.Millisecond),
			}
		}
		clock.Set(t0.Add(time.Duration(i) * time.Millisecond))
		tr.ObserveBatch(batch, nil)
		if i == 100_000-100_000%len(batch) {
			baseline = heapAt()
		}
	}
	_ = before
	after := heapAt()
	s := tr.Stats()
	if len(labels) > cfg.TopK+1+int(s.ActorDemotions) || s.LabelledActors > cfg.TopK {
		t.Errorf("%d actor label values seen (%d labelled now, %d demoted), want at most topK+1 plus demotions", len(labels), s.LabelledActors, s.ActorDemotions)
	}
	if s.TrackedActors > cfg.Candidates || s.TrackedObjects > 1<<14 {
		t.Errorf("stats %+v exceed the configured bounds", s)
	}
	if s.ObjectEvictions == 0 {
		t.Error("no object evictions counted although every object was new")
	}
	if len(tr.resources) > DefaultConfig().MaxResources {
		t.Errorf("%d resource label pairs, want at most %d", len(tr.resources), DefaultConfig().MaxResources)
	}
	if baseline > 0 && after > baseline+8<<20 {
		t.Errorf("heap grew from %d to %d bytes between 100k and %d events", baseline, after, n)
	}
	t.Logf("labels %d, stats %+v, heap %d -> %d bytes", len(labels), s, baseline, after)
}

type labelSink struct{ labels map[string]struct{} }

func (s *labelSink) Write(o *Observation) { s.labels[o.ActorLabel] = struct{}{} }
func (s *labelSink) Read(o *Observation)  { s.labels[o.ActorLabel] = struct{}{} }
func (s *labelSink) Handoff(*Handoff)     {}
func (s *labelSink) Demoted(string)       {}
