package analyze

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/track"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func analyzeFixture(t *testing.T, name string) *Report {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "analyze", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Analyze(f, Options{Tracker: track.Config{FightHandoffs: 4, FightWindow: time.Minute, HotWrites: 20, HotWindow: time.Minute, RaceWindow: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestAnalyzeGolden(t *testing.T) {
	rep := analyzeFixture(t, "incident.jsonl")
	for _, format := range []struct {
		golden string
		write  func(*Report, *bytes.Buffer) error
	}{
		{"incident.txt", func(r *Report, b *bytes.Buffer) error { return r.WriteText(b) }},
		{"incident.json", func(r *Report, b *bytes.Buffer) error { return r.WriteJSON(b) }},
	} {
		t.Run(format.golden, func(t *testing.T) {
			var got bytes.Buffer
			if err := format.write(rep, &got); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", "testdata", "analyze", format.golden)
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("report differs from %s (run with -update after checking):\n%s", path, got.String())
			}
		})
	}
}

func TestAnalyzeFindsTheIncident(t *testing.T) {
	rep := analyzeFixture(t, "incident.jsonl")
	cases := []struct {
		name string
		ok   bool
	}{
		{"reports the fight with both actors", len(rep.Fights) == 1 && rep.Fights[0].ActorA == "system:serviceaccount:team-a:labeler" &&
			rep.Fights[0].ActorB == "system:serviceaccount:team-b:janitor" && rep.Fights[0].Handoffs == 7 && rep.Fights[0].Object.Name == "shared"},
		{"reports the hot object and its actor", len(rep.HotObjects) == 1 && rep.HotObjects[0].Actor == "system:serviceaccount:ops:stamper" &&
			rep.HotObjects[0].Writes == 30 && rep.HotObjects[0].Object.Name == "heartbeat"},
		{"reports the replica race with pod names", len(rep.Races) == 1 && strings.Join(rep.Races[0].Pods, ",") == "syncer-7d9f-abcde,syncer-7d9f-fghij" &&
			rep.Races[0].Conflicts == 3},
		{"reports conflicts by actor", len(rep.Conflicts) == 1 && rep.Conflicts[0].Conflicts == 3},
		{"skips the malformed line", rep.Skipped == 1},
		{"ignores stages that do not complete a request", rep.Events == 8+30+10+5+1+4},
		{"ranks the hot writer first", rep.TopWriters[0].Actor == "system:serviceaccount:ops:stamper"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				var b bytes.Buffer
				_ = rep.WriteText(&b)
				t.Fatalf("not found in report:\n%s", b.String())
			}
		})
	}
}

func TestAnalyzeReadsWebhookBatches(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "batch-03.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(bytes.NewReader(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 4 || rep.TopWriters[0].Actor != "admin" || rep.TopWriters[0].Writes != 4 {
		t.Fatalf("unexpected report %+v", rep)
	}
}
