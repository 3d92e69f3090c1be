package analyze

import (
	"bytes"
	"flag"
	"fmt"
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
		{"skips the malformed line", rep.Skipped.Lines == 1 && rep.Skipped.Malformed == 1 && fmt.Sprint(rep.Skipped.FirstLines) == "[6]"},
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

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "analyze", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func analyzeBytes(t *testing.T, b []byte) *Report {
	t.Helper()
	rep, err := Analyze(bytes.NewReader(b), Options{Tracker: track.Config{FightHandoffs: 4, FightWindow: time.Minute, HotWrites: 20, HotWindow: time.Minute, RaceWindow: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAnalyzeCountsRepeatedLinesOnce: overlapping log files (or a log with every line written
// twice) give the report of the log itself, as the exporter counts a retried batch once.
func TestAnalyzeCountsRepeatedLinesOnce(t *testing.T) {
	log := readFixture(t, "incident.jsonl")
	var doubled []byte
	for _, line := range bytes.SplitAfter(log, []byte("\n")) {
		doubled = append(append(doubled, line...), line...)
	}
	want := analyzeBytes(t, log)
	for name, input := range map[string][]byte{
		"every line twice":          doubled,
		"the log twice, end to end": append(append([]byte(nil), log...), log...),
	} {
		t.Run(name, func(t *testing.T) {
			got := analyzeBytes(t, input)
			if got.Duplicates != want.Events {
				t.Errorf("%d repeats dropped, want %d", got.Duplicates, want.Events)
			}
			if got.Skipped.Lines != 2*want.Skipped.Lines {
				t.Errorf("%d lines skipped, want %d", got.Skipped.Lines, 2*want.Skipped.Lines)
			}
			got.Duplicates, got.Skipped, got.Forms = want.Duplicates, want.Skipped, want.Forms
			var g, w bytes.Buffer
			if err := got.WriteJSON(&g); err != nil {
				t.Fatal(err)
			}
			if err := want.WriteJSON(&w); err != nil {
				t.Fatal(err)
			}
			if g.String() != w.String() {
				t.Fatalf("report differs from the log's:\n%s\nwant:\n%s", g.String(), w.String())
			}
		})
	}
}

// TestAnalyzeReadsOlderEventVersions: audit.k8s.io/v1beta1 events of API servers before 1.10
// carry only "timestamp"; the report shows their real time span and the fight in them.
func TestAnalyzeReadsOlderEventVersions(t *testing.T) {
	rep := analyzeBytes(t, readFixture(t, "v1beta1.jsonl"))
	first, last := time.Date(2018, 1, 10, 10, 21, 55, 0, time.UTC), time.Date(2018, 1, 10, 10, 23, 55, 0, time.UTC)
	if rep.Events != 9 || !rep.First.Equal(first) || !rep.Last.Equal(last) {
		t.Fatalf("%d events from %v to %v, want 9 from %v to %v", rep.Events, rep.First, rep.Last, first, last)
	}
	if len(rep.Fights) != 1 || rep.Fights[0].Handoffs != 8 || !rep.Fights[0].First.Equal(first.Add(15*time.Second)) {
		t.Fatalf("fights %+v, want one of 8 handoffs from the second write on", rep.Fights)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Time span: 2018-01-10T10:21:55.000Z .. 2018-01-10T10:23:55.000Z (2m0s)") {
		t.Fatalf("report does not show the time span:\n%s", text.String())
	}
}

// TestAnalyzeReportsLinesItDoesNotUnderstand: a GKE Cloud Audit Log entry and an AKS diagnostic
// record wrap audit data in another format, which is recognised and read; a line of another
// program's JSON log and a line that is not JSON are reported with their line numbers, not read
// as stage-less events.
func TestAnalyzeReportsLinesItDoesNotUnderstand(t *testing.T) {
	rep := analyzeBytes(t, readFixture(t, "foreign.jsonl"))
	want := Skipped{Lines: 2, Malformed: 1, NotAuditEvents: 1, FirstLines: []int{5, 7}}
	if rep.Events != 4 || fmt.Sprint(rep.Skipped) != fmt.Sprint(want) {
		t.Fatalf("%d events, skipped %+v; want 4 events, skipped %+v", rep.Events, rep.Skipped, want)
	}
	wantForms := map[string]int{"audit log (JSON lines)": 2, "GKE Cloud Logging entry": 1, "AKS resource-log record": 1, "unknown": 2}
	if fmt.Sprint(rep.Forms) != fmt.Sprint(wantForms) {
		t.Errorf("forms %v, want %v", rep.Forms, wantForms)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Skipped lines: 1 malformed, 1 not audit events (another format, such as a cloud provider's log entry) (first: line 5, 7)") {
		t.Fatalf("report does not list the skipped lines:\n%s", text.String())
	}
}

// TestAnalyzeCountsWatchListRelists: a client with WatchList on (client-go from 1.35) makes its
// initial lists and relists as watches with sendInitialEvents=true; they count as initial lists,
// the ordinary watches of a healthy informer do not.
func TestAnalyzeCountsWatchListRelists(t *testing.T) {
	rep := analyzeBytes(t, readFixture(t, "watchlist.jsonl"))
	want := []Reader{
		{Actor: "system:serviceaccount:apps:relister", Watch: 12, InitialLists: 12},
		{Actor: "system:serviceaccount:apps:steady", Watch: 4, InitialLists: 1},
	}
	if fmt.Sprint(rep.TopReaders) != fmt.Sprint(want) {
		t.Fatalf("readers %+v, want %+v", rep.TopReaders, want)
	}
}

// TestAnalyzeReportsAnEventListWithForeignItems: a webhook body whose items are not all audit
// events is reported by line; its audit events are still counted.
func TestAnalyzeReportsAnEventListWithForeignItems(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "batch-03.json"))
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Replace(bytes.TrimSpace(b), []byte(`"items":[`), []byte(`"items":[{"insertId":"x","protoPayload":{}},`), 1)
	rep := analyzeBytes(t, append(append([]byte("\n"), line...), '\n'))
	if rep.Events != 4 || rep.Skipped.NotAuditEvents != 1 || fmt.Sprint(rep.Skipped.FirstLines) != "[2]" {
		t.Fatalf("%d events, skipped %+v; want 4 events and line 2 reported", rep.Events, rep.Skipped)
	}
}
