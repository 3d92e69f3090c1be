package analyze

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/track"
	"github.com/loopwatch/loopwatch/internal/browser"
)

var screenshot = flag.Bool("screenshot", false, "rewrite the README's screenshot, "+readmeShot+", from the report of incident.jsonl")

// readmeShot is the screenshot the README shows, relative to this package.
const readmeShot = "../../docs/img/audit-post-mortem.png"

// rawEvent is what the browser test reads of an audit event with encoding/json, to count each
// finding's writes by itself rather than through the recorder it checks.
type rawEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	Impersonated *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
	Timestamp      time.Time `json:"timestamp"`
}

func (e rawEvent) actor() string {
	if e.Impersonated != nil && e.Impersonated.Username != "" {
		return e.Impersonated.Username
	}
	return e.User.Username
}

func (e rawEvent) pod() string {
	if p := e.User.Extra["authentication.kubernetes.io/pod-name"]; len(p) > 0 && (e.Impersonated == nil || e.Impersonated.Username == "") {
		return p[0]
	}
	return ""
}

func (e rawEvent) when() time.Time {
	if !e.StageTimestamp.IsZero() {
		return e.StageTimestamp
	}
	return e.Timestamp
}

func (e rawEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// writesTo returns the completed writes to ref, in event-time order (as the detections take
// them), in log order for equal times.
func writesTo(events []rawEvent, ref track.ObjectRef) []rawEvent {
	var out []rawEvent
	for _, e := range events {
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil || !slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, e.Verb) {
			continue
		}
		o := e.ObjectRef
		if o.APIGroup == ref.Group && o.Resource == ref.Resource && o.Namespace == ref.Namespace && o.Name == ref.Name && o.Subresource == ref.Subresource {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b rawEvent) int { return a.when().Compare(b.when()) })
	return out
}

func readRaw(t *testing.T, logs ...[]byte) []rawEvent {
	t.Helper()
	var out []rawEvent
	for _, log := range logs {
		sc := bufio.NewScanner(bytes.NewReader(log))
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			var list struct {
				Items []rawEvent `json:"items"`
			}
			if json.Unmarshal(line, &list) == nil && list.Items != nil {
				out = append(out, list.Items...)
				continue
			}
			var e rawEvent
			if json.Unmarshal(line, &e) == nil {
				out = append(out, e)
			}
		}
	}
	return out
}

// fightWrites counts, by actor, the writes of a fight from the raw log: the two actors'
// successful writes from the first that took the object from the other (at or after the fight's
// first second) to the last that did, and the handoffs among them.
func fightWrites(events []rawEvent, f track.Fight) (map[string]int, int) {
	ok := func(e rawEvent) bool { return e.code() >= 200 && e.code() < 400 }
	var seq []rawEvent
	for _, e := range writesTo(events, f.Object) {
		if ok(e) {
			seq = append(seq, e)
		}
	}
	first, last := -1, -1
	for i := 1; i < len(seq); i++ {
		a, b := seq[i-1].actor(), seq[i].actor()
		pair := (a == f.ActorA && b == f.ActorB) || (a == f.ActorB && b == f.ActorA)
		if pair && !seq[i].when().Before(f.First) && !seq[i].when().After(f.Last) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	counts, handoffs := map[string]int{}, 0
	for i := first; i >= 0 && i <= last; i++ {
		if a := seq[i].actor(); a == f.ActorA || a == f.ActorB {
			counts[a]++
			if p := seq[i-1].actor(); p != a && (p == f.ActorA || p == f.ActorB) {
				handoffs++
			}
		}
	}
	return counts, handoffs
}

// hotWrites counts the hot actor's successful writes in the finding's span from the raw log.
func hotWrites(events []rawEvent, h track.HotObject) int {
	n := 0
	for _, e := range writesTo(events, h.Object) {
		if e.actor() == h.Actor && e.code() >= 200 && e.code() < 400 && !e.when().Before(h.First) && !e.when().After(h.Last) {
			n++
		}
	}
	return n
}

// raceWrites counts, by pod, a race's writes from the raw log: the actor's writes from a pod
// (successful or answered 409) from the one before its first change of pod in the span to the
// last, and the 409s among them.
func raceWrites(events []rawEvent, rc track.Race) (map[string]int, int) {
	var seq []rawEvent
	for _, e := range writesTo(events, rc.Object) {
		if e.actor() == rc.Actor && e.pod() != "" && (e.code() >= 200 && e.code() < 400 || e.code() == 409 && e.Verb != "create") {
			seq = append(seq, e)
		}
	}
	start := -1
	for i := 1; i < len(seq); i++ {
		if seq[i].pod() != seq[i-1].pod() && !seq[i-1].when().Before(rc.First) {
			start = i - 1
			break
		}
	}
	counts, conflicts := map[string]int{}, 0
	for i := start; i >= 0 && i < len(seq) && !seq[i].when().After(rc.Last); i++ {
		counts[seq[i].pod()]++
		if seq[i].code() == 409 {
			conflicts++
		}
	}
	return counts, conflicts
}

// synthHeavy writes a log past the report's exact-marks limit: a hot loop of 1500 patches, 50 ms
// apart, and a fight of 400 handoffs, one every 0.4 s, from the events of incident.jsonl with
// their times moved.
func synthHeavy(t *testing.T) []byte {
	t.Helper()
	var patch, fightA, fightB []byte
	for _, line := range bytes.Split(readFixture(t, "incident.jsonl"), []byte("\n")) {
		switch {
		case bytes.Contains(line, []byte(`"username":"system:serviceaccount:ops:stamper"`)) && patch == nil:
			patch = line
		case bytes.Contains(line, []byte(`"username":"system:serviceaccount:team-a:labeler"`)) && fightA == nil:
			fightA = line
		case bytes.Contains(line, []byte(`"username":"system:serviceaccount:team-b:janitor"`)) && fightB == nil:
			fightB = line
		}
	}
	base := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	id := 0
	emit := func(line []byte, at time.Time) {
		id++
		b.Write(retime(line, id, at))
		b.WriteByte('\n')
	}
	for i := range 1500 {
		emit(patch, base.Add(time.Duration(i)*50*time.Millisecond))
	}
	for i := range 401 {
		line := fightA
		if i%2 == 1 {
			line = fightB
		}
		emit(line, base.Add(time.Minute+time.Duration(i)*400*time.Millisecond))
	}
	return b.Bytes()
}

// synthSplit writes the log of a fight between an actor on each of two API servers, 41 writes
// (40 handoffs) 0.4 s apart, as the exporter would be sent it: each API server's writes in
// batches of 5 s, a's batch before b's. Taken as the lines come, the fight has a handoff or two
// per batch; in event-time order all 40.
func synthSplit(t *testing.T) []byte {
	t.Helper()
	var fightA, fightB []byte
	for _, line := range bytes.Split(readFixture(t, "incident.jsonl"), []byte("\n")) {
		switch {
		case bytes.Contains(line, []byte(`"username":"system:serviceaccount:team-a:labeler"`)) && fightA == nil:
			fightA = line
		case bytes.Contains(line, []byte(`"username":"system:serviceaccount:team-b:janitor"`)) && fightB == nil:
			fightB = line
		}
	}
	base := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	const perBatch = 12 // 4.8 s of writes
	for start := 0; start < 41; start += perBatch {
		for _, server := range []int{0, 1} {
			for i := start; i < min(start+perBatch, 41); i++ {
				if i%2 != server {
					continue
				}
				line := fightA
				if server == 1 {
					line = fightB
				}
				b.Write(retime(line, i+1, base.Add(time.Duration(i)*400*time.Millisecond)))
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

var (
	auditIDMember = regexp.MustCompile(`"auditID":"[^"]*"`)
	receivedAt    = regexp.MustCompile(`"requestReceivedTimestamp":"[^"]*"`)
	stageAt       = regexp.MustCompile(`"stageTimestamp":"[^"]*"`)
)

// retime gives an API server's audit line a new auditID (numbered id) and times (at), keeping
// everything else as the API server wrote it.
func retime(line []byte, id int, at time.Time) []byte {
	const micro = "2006-01-02T15:04:05.000000Z07:00"
	line = auditIDMember.ReplaceAll(line, fmt.Appendf(nil, `"auditID":"00000000-0000-0000-0000-%012d"`, id))
	line = receivedAt.ReplaceAll(line, fmt.Appendf(nil, `"requestReceivedTimestamp":%q`, at.Add(-2*time.Millisecond).UTC().Format(micro)))
	return stageAt.ReplaceAll(line, fmt.Appendf(nil, `"stageTimestamp":%q`, at.UTC().Format(micro)))
}

// externalRef finds anything a page would fetch: a scheme in a URL, or src/href/url() that does
// not point into the page.
var externalRef = regexp.MustCompile(`(?i)https?://|\ssrc=|url\(|@import|href="[^#]`)

// TestHTMLReportInChromium renders the HTML report of each fixture, loads it from file:// in a
// real headless Chromium, and checks the DOM the browser built: every fight, hot object and race
// of the report has its section and timeline, each lane's marks (or bucket counts) add up to the
// writes counted from the raw log by encoding/json, a fight's handoff lines to its handoffs, every
// table has one row per entry, every chart has a text alternative, the sorting script ran, and
// nothing points outside the page. It also takes a screenshot and prints each page to PDF.
func TestHTMLReportInChromium(t *testing.T) {
	c := browser.ForTest(t)
	opts := Options{Tracker: track.Config{FightHandoffs: 4, FightWindow: time.Minute, HotWrites: 20, HotWindow: time.Minute, RaceWindow: time.Minute}, Timelines: true}
	healthy := [][]byte{}
	for i := range 5 {
		b, err := os.ReadFile(filepath.Join("..", "testdata", fmt.Sprintf("batch-%02d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		healthy = append(healthy, b)
	}
	native, err := os.ReadFile(filepath.Join("..", "testdata", "providers", "native", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		logs   [][]byte
		shot   bool // the README's screenshot
		counts func(*Report) bool
	}{
		{"a fight, a hot loop, a replica race, conflicts and a relisting reader", [][]byte{readFixture(t, "incident.jsonl")}, true,
			func(r *Report) bool { return len(r.Fights) == 1 && len(r.HotObjects) == 1 && len(r.Races) == 1 }},
		{"a fight, a hot loop and a replica race on a real API server", [][]byte{native}, false,
			func(r *Report) bool { return len(r.Fights) == 1 && len(r.HotObjects) == 1 && len(r.Races) == 1 }},
		{"a fight of audit.k8s.io/v1beta1 events", [][]byte{readFixture(t, "v1beta1.jsonl")}, false,
			func(r *Report) bool { return len(r.Fights) == 1 && r.Fights[0].Handoffs == 8 }},
		{"a hot loop and a fight past the exact-marks limit, drawn in buckets", [][]byte{synthHeavy(t)}, false,
			func(r *Report) bool {
				return len(r.Fights) == 1 && r.Fights[0].Handoffs == 400 && len(r.HotObjects) == 1 && r.HotObjects[0].Writes == 1500
			}},
		{"a healthy log of a real API server", healthy, false,
			func(r *Report) bool { return len(r.Fights)+len(r.HotObjects)+len(r.Races) == 0 && r.Events > 0 }},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var readers []*bytes.Reader
			for _, l := range tc.logs {
				readers = append(readers, bytes.NewReader(l))
			}
			rep, err := AnalyzeAll(toReaders(readers), opts)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.counts(rep) {
				t.Fatalf("the fixture's report is not the one this case expects: %d fights, %d hot objects, %d races", len(rep.Fights), len(rep.HotObjects), len(rep.Races))
			}
			page := filepath.Join(dir, htmlSlug(tc.name)+".html")
			var buf bytes.Buffer
			if err := rep.WriteHTML(&buf); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if m := externalRef.Find(buf.Bytes()); m != nil {
				t.Errorf("the page refers outside itself: %q", m)
			}
			ctx := context.Background()
			shot, pdf := filepath.Join(dir, filepath.Base(page)+".png"), filepath.Join(dir, filepath.Base(page)+".pdf")
			dom, err := c.Load(ctx, page+"#sort=writers-table.1.asc", browser.Capture{Screenshot: shot, Width: 1100, Height: 1400, PDF: pdf})
			if err != nil {
				t.Fatal(err)
			}
			doc, err := browser.ParseDOM(dom)
			if err != nil {
				t.Fatal(err)
			}
			checkDOM(t, doc, rep, readRaw(t, tc.logs...))
			checkPNG(t, shot)
			if b, _ := os.ReadFile(pdf); !bytes.HasPrefix(b, []byte("%PDF")) || bytes.Count(b, []byte("/Type /Page")) == 0 && bytes.Count(b, []byte("/Type/Page")) == 0 {
				t.Errorf("the printed page is no PDF with pages (%d bytes)", len(b))
			}
			if tc.shot && *screenshot {
				if _, err := c.Load(ctx, page, browser.Capture{Screenshot: shot, Width: 1000, Height: 1250}); err != nil {
					t.Fatal(err)
				}
				if err := browser.ShrinkPNG(shot, readmeShot); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", readmeShot)
			}
		})
	}
}

func htmlSlug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

func toReaders(rs []*bytes.Reader) []io.Reader {
	out := make([]io.Reader, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number: %v", s, err)
	}
	return n
}

// lanes returns, for the finding section id, each lane's name, its writes as the page says, and
// what its marks or buckets add up to.
func lanes(t *testing.T, doc browser.Node, id string) (names []string, said, drawn []int, handoffLines int, bucketed bool) {
	t.Helper()
	sec, ok := doc.ByID(id)
	if !ok {
		t.Fatalf("no section %q", id)
	}
	figs := sec.All(browser.Tagged("figure", "timeline"))
	if len(figs) != 1 {
		t.Fatalf("section %q has %d timelines, want 1", id, len(figs))
	}
	fig := figs[0]
	bucketed = fig.Attr("data-bucketed") == "true"
	ls := fig.All(browser.Tagged("g", "lane"))
	for i, l := range ls {
		names = append(names, l.Attr("data-lane"))
		said = append(said, atoi(t, l.Attr("data-writes")))
		n := 0
		if bucketed {
			for _, b := range l.All(browser.Tagged("rect", "b")) {
				n += atoi(t, b.Attr("data-n"))
			}
		} else {
			n = len(fig.All(func(x browser.Node) bool {
				return x.Tag() == "use" && x.HasClass("m") && x.Attr("data-lane") == strconv.Itoa(i)
			}))
		}
		drawn = append(drawn, n)
	}
	handoffLines = len(fig.All(browser.Tagged("line", "hand")))
	return names, said, drawn, handoffLines, bucketed
}

func checkDOM(t *testing.T, doc browser.Node, rep *Report, raw []rawEvent) {
	t.Helper()
	for _, f := range rep.Fights {
		names, said, drawn, hand, bucketed := lanes(t, doc, fightID(f))
		want, handoffs := fightWrites(raw, f)
		if len(names) != 2 || names[0] != f.ActorA || names[1] != f.ActorB {
			t.Errorf("fight %s: lanes %q, want one per actor", f.Object, names)
			continue
		}
		if handoffs != f.Handoffs {
			t.Errorf("fight %s: the raw log has %d handoffs, the report %d", f.Object, handoffs, f.Handoffs)
		}
		for i, a := range names {
			if said[i] != want[a] || drawn[i] != want[a] {
				t.Errorf("fight %s, lane %s: %d writes said, %d drawn, want %d (from the raw log)", f.Object, a, said[i], drawn[i], want[a])
			}
		}
		if !bucketed && hand != f.Handoffs {
			t.Errorf("fight %s: %d handoff lines, want %d", f.Object, hand, f.Handoffs)
		}
	}
	for _, h := range rep.HotObjects {
		names, said, drawn, _, _ := lanes(t, doc, hotID(h))
		want := hotWrites(raw, h)
		if len(names) != 1 || names[0] != h.Actor || said[0] != h.Writes || drawn[0] != h.Writes || want != h.Writes {
			t.Errorf("hot object %s: lanes %q with %v writes said, %v drawn; want one lane of %d (raw log: %d)", h.Object, names, said, drawn, h.Writes, want)
		}
	}
	for _, rc := range rep.Races {
		names, said, drawn, _, _ := lanes(t, doc, raceID(rc))
		want, conflicts := raceWrites(raw, rc)
		total := 0
		for i, p := range names {
			total += drawn[i]
			if said[i] != want[p] || drawn[i] != want[p] {
				t.Errorf("race %s, pod %s: %d writes said, %d drawn, want %d (from the raw log)", rc.Object, p, said[i], drawn[i], want[p])
			}
		}
		if total != rc.Writes || len(names) != len(rc.Pods) || conflicts != rc.Conflicts {
			t.Errorf("race %s: %d writes drawn in %d lanes, %d conflicts in the raw log; want %d writes, %d pods, %d conflicts", rc.Object, total, len(names), conflicts, rc.Writes, len(rc.Pods), rc.Conflicts)
		}
		if c := len(doc.All(func(x browser.Node) bool { return x.Tag() == "use" && x.HasClass("cf") })); c < rc.Conflicts {
			t.Errorf("race %s: %d conflict marks, want at least %d", rc.Object, c, rc.Conflicts)
		}
	}
	for _, tb := range []struct {
		id   string
		want int
	}{
		{"fights-table", len(rep.Fights)}, {"hot-table", len(rep.HotObjects)}, {"races-table", len(rep.Races)},
		{"conflicts-table", len(rep.Conflicts)}, {"writers-table", len(rep.TopWriters)}, {"readers-table", len(rep.TopReaders)},
	} {
		n, ok := doc.ByID(tb.id)
		switch {
		case !ok && tb.want > 0:
			t.Errorf("no table %s for %d rows", tb.id, tb.want)
		case ok && len(n.Rows()) != tb.want:
			t.Errorf("table %s has %d rows, want %d", tb.id, len(n.Rows()), tb.want)
		}
	}
	if wt, ok := doc.ByID("writers-table"); ok {
		rows := wt.Rows()
		for i := 1; i < len(rows); i++ {
			a, b := browser.Node{Node: rows[i-1].FirstChild.NextSibling}, browser.Node{Node: rows[i].FirstChild.NextSibling}
			if atoi(t, a.Attr("data-v")) > atoi(t, b.Attr("data-v")) {
				t.Errorf("writers not sorted by writes ascending after #sort=writers-table.1.asc: %s before %s", a.Text(), b.Text())
			}
		}
	}
	for _, svg := range doc.All(func(x browser.Node) bool { return x.Tag() == "svg" && x.Attr("role") == "img" }) {
		for _, id := range strings.Fields(svg.Attr("aria-labelledby")) {
			if n, ok := doc.ByID(id); !ok || n.Text() == "" {
				t.Errorf("chart text alternative %q is missing or empty", id)
			}
		}
	}
	if len(rep.Fights)+len(rep.HotObjects)+len(rep.Races) == 0 && !strings.Contains(doc.Text(), "No fight, hot object, replica race or conflict.") {
		t.Errorf("the healthy report does not say nothing was found")
	}
}

// checkPNG checks that a screenshot is a picture with content, not a blank page.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("screenshot %s has %d colours: the page did not render", path, len(colours))
	}
}
