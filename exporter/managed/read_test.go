package managed

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/managed/forms"
)

type readResult struct {
	events     []time.Time
	lines      []int
	unreadable []string
	sum        Summary
}

func readAll(t *testing.T, input []byte, opts ReadOptions) readResult {
	t.Helper()
	var r readResult
	sum, err := Read(bytes.NewReader(input), opts, func(line int, evs []decode.Event) {
		for i := range evs {
			r.events = append(r.events, evs[i].When())
			r.lines = append(r.lines, line)
		}
	}, func(u Unreadable) {
		r.unreadable = append(r.unreadable, fmt.Sprintf("%d:%s:%s", u.Line, u.Form, u.Reason))
	})
	if err != nil {
		t.Fatal(err)
	}
	r.sum = sum
	return r
}

func TestReadRecognisesEachLineByItself(t *testing.T) {
	c := forms.DefaultCluster
	evs := nativeEvents(t, 3)
	entries, err := c.LogEntries(evs[1:2])
	if err != nil {
		t.Fatal(err)
	}
	input := strings.Join([]string{
		string(evs[0].Line),
		strings.TrimSpace(string(c.StorageSink(entries))),
		strings.TrimSpace(string(c.PT1H(evs[2:3]))),
		`{"level":"info","msg":"reconciled"}`,
		`not json`,
		``,
		strings.TrimSpace(string(c.S3Export(evs[:1]))),
		`2026-11-23T16:41:02.000Z {"kind":"Event"`,
	}, "\n")
	r := readAll(t, []byte(input), ReadOptions{})
	if len(r.events) != 4 || fmt.Sprint(r.lines) != "[1 2 3 7]" {
		t.Errorf("%d events on lines %v, want 4 on lines 1 2 3 7", len(r.events), r.lines)
	}
	want := []string{"4:unknown:not_audit", "5:unknown:malformed", "8:EKS CloudWatch export (S3):malformed"}
	if fmt.Sprint(r.unreadable) != fmt.Sprint(want) {
		t.Errorf("unreadable %v, want %v", r.unreadable, want)
	}
}

func TestReadOrdersADocumentNewestFirst(t *testing.T) {
	c := forms.DefaultCluster
	evs := nativeEvents(t, 20)
	entries, err := c.LogEntries(evs)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{
		"gcloud logging read": c.GcloudRead(entries),
		"filter-log-events":   c.FilterLogEvents(evs),
	} {
		t.Run(name, func(t *testing.T) {
			r := readAll(t, doc, ReadOptions{})
			if len(r.events) != 20 || len(r.unreadable) != 0 {
				t.Fatalf("%d events, unreadable %v; want 20, none", len(r.events), r.unreadable)
			}
			for i := 1; i < len(r.events); i++ {
				if r.events[i].Before(r.events[i-1]) {
					t.Fatalf("event %d at %v comes after one at %v", i, r.events[i], r.events[i-1])
				}
			}
			if r.lines[0] < 2 {
				t.Errorf("first event reported on line %d: a document's elements start after its first line", r.lines[0])
			}
		})
	}
	if _, err := Read(bytes.NewReader(c.GcloudRead(entries)), ReadOptions{MaxDocumentEvents: 5},
		func(int, []decode.Event) {}, func(Unreadable) {}); err == nil || !strings.Contains(err.Error(), "more than 5 events") {
		t.Errorf("a document over the bound: %v", err)
	}
}

func TestReadUndoesGzipAndSkipsOverlongLines(t *testing.T) {
	c := forms.DefaultCluster
	evs := nativeEvents(t, 5)
	r := readAll(t, c.S3ExportFile(evs), ReadOptions{})
	if len(r.events) != 5 || r.sum.Forms[FormS3Export] != 5 {
		t.Errorf("%d events, forms %v; want 5 S3 export lines", len(r.events), r.sum.Forms)
	}
	long := append(append([]byte(nil), evs[0].Line...), '\n')
	long = append(long, bytes.Repeat([]byte("x"), 2000)...)
	long = append(long, '\n')
	long = append(long, evs[1].Line...)
	r = readAll(t, long, ReadOptions{MaxLineBytes: 1500})
	if len(r.events) != 2 || fmt.Sprint(r.unreadable) != "[2:unknown:too_large]" {
		t.Errorf("%d events, unreadable %v; want 2, line 2 too large", len(r.events), r.unreadable)
	}
}
