package analyze

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/track"
)

// TestTimelinesCountTheWritesOfEachFinding: what the recorder keeps of each finding, in a run
// without a browser, equals what the raw log (read with encoding/json) says the finding counts:
// per actor for a fight, with its handoffs; the hot object's writes; per pod for a race, with
// its conflicts. Past the exact-marks limit the buckets count the same.
func TestTimelinesCountTheWritesOfEachFinding(t *testing.T) {
	native, err := os.ReadFile(filepath.Join("..", "testdata", "providers", "native", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		log      []byte
		bucketed bool
		// handoffs, when not 0, is the handoffs of the log's only fight.
		handoffs int
	}{
		{"a fight, a hot loop and a race", readFixture(t, "incident.jsonl"), false, 0},
		{"the same on a real API server", native, false, 0},
		{"a fight of v1beta1 events", readFixture(t, "v1beta1.jsonl"), false, 0},
		{"a hot loop and a fight past the exact-marks limit", synthHeavy(t), true, 0},
		{"a fight across two API servers' batches, drawn in event-time order", synthSplit(t), false, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Analyze(bytes.NewReader(tc.log), Options{Tracker: track.Config{FightHandoffs: 4, FightWindow: time.Minute, HotWrites: 20, HotWindow: time.Minute, RaceWindow: time.Minute}, Timelines: true})
			if err != nil {
				t.Fatal(err)
			}
			raw := readRaw(t, tc.log)
			bucketed := false
			for _, f := range rep.Fights {
				tl := rep.timelineOf(track.KindFight, f.Object, f.ActorA+"\x00"+f.ActorB)
				want, handoffs := fightWrites(raw, f)
				if tl == nil || tl.lanes[0].stats.writes != want[f.ActorA] || tl.lanes[1].stats.writes != want[f.ActorB] || tl.handoffs != handoffs || handoffs != f.Handoffs {
					t.Errorf("fight %s: timeline %+v, want %v writes and %d handoffs", f.Object, tl, want, f.Handoffs)
					continue
				}
				bucketed = bucketed || tl.bucketed
				checkMarks(t, tl)
			}
			for _, h := range rep.HotObjects {
				tl := rep.timelineOf(track.KindHot, h.Object, h.Actor)
				if tl == nil || tl.lanes[0].stats.writes != h.Writes || hotWrites(raw, h) != h.Writes {
					t.Errorf("hot object %s: timeline %+v, want %d writes", h.Object, tl, h.Writes)
					continue
				}
				bucketed = bucketed || tl.bucketed
				checkMarks(t, tl)
			}
			for _, rc := range rep.Races {
				tl := rep.timelineOf(track.KindRace, rc.Object, rc.Actor)
				want, conflicts := raceWrites(raw, rc)
				if tl == nil || conflicts != rc.Conflicts {
					t.Errorf("race %s: timeline %+v, %d conflicts in the raw log, want %d", rc.Object, tl, conflicts, rc.Conflicts)
					continue
				}
				for _, ln := range tl.lanes {
					if ln.stats.writes != want[ln.name] {
						t.Errorf("race %s, pod %s: %d writes, want %d", rc.Object, ln.name, ln.stats.writes, want[ln.name])
					}
				}
				checkMarks(t, tl)
			}
			if tc.handoffs != 0 && (len(rep.Fights) != 1 || rep.Fights[0].Handoffs != tc.handoffs) {
				t.Errorf("fights %+v, want one of %d handoffs", rep.Fights, tc.handoffs)
			}
			if bucketed != tc.bucketed {
				t.Errorf("bucketed %v, want %v", bucketed, tc.bucketed)
			}
		})
	}
}

// checkMarks checks that a timeline's marks or buckets add up to its lanes' counts.
func checkMarks(t *testing.T, tl *timeline) {
	t.Helper()
	for i, ln := range tl.lanes {
		n := 0
		if tl.bucketed {
			for _, c := range ln.counts {
				n += int(c)
			}
		} else {
			for _, m := range tl.marks {
				if int(m.lane) == i {
					n++
				}
			}
		}
		if n != ln.stats.writes {
			t.Errorf("%s, lane %s: %d drawn, %d counted", tl.ref, ln.name, n, ln.stats.writes)
		}
	}
}

// TestTimelinesSayWhatTheRingNoLongerHeld: a finding found after its first writes left the ring
// of recent writes is drawn from what is left, and says how many are missing.
func TestTimelinesSayWhatTheRingNoLongerHeld(t *testing.T) {
	rep, err := AnalyzeAll([]io.Reader{bytes.NewReader(synthHeavy(t))}, Options{
		Tracker:   track.Config{FightHandoffs: 4, FightWindow: time.Minute, HotWrites: 20, HotWindow: time.Minute, RaceWindow: time.Minute},
		Timelines: true, ringSize: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := rep.HotObjects[0]
	tl := rep.timelineOf(track.KindHot, h.Object, h.Actor)
	if tl == nil || tl.missing != 20-8 || tl.lanes[0].stats.writes != h.Writes-tl.missing {
		t.Fatalf("timeline %+v of %d writes: want the 12 writes before the ring's 8 missing", tl, h.Writes)
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page.Bytes(), []byte("12 of the first writes of this finding are not drawn")) {
		t.Errorf("the page does not say which writes are not drawn")
	}
}
