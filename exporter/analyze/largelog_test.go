package analyze

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/internal/cputime"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// LargeLogEnv sets the size of the log TestHTMLReportOfALargeLogIsBounded writes (bytes, or with
// a K, M or G suffix); 64M when unset. The acceptance figure is measured with 1G.
const LargeLogEnv = "LOOPWATCH_LARGE_LOG"

// LargeLogFileEnv, when set, is where TestHTMLReportOfALargeLogIsBounded writes the log and
// leaves it (to time the command on it); a file already there is read as it is.
const LargeLogFileEnv = "LOOPWATCH_LARGE_LOG_FILE"

func largeLogSize(t *testing.T) int64 {
	s := os.Getenv(LargeLogEnv)
	if s == "" {
		return 64 << 20
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		mult, s = 1<<10, s[:len(s)-1]
	case 'M', 'm':
		mult, s = 1<<20, s[:len(s)-1]
	case 'G', 'g':
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a size such as 1G", LargeLogEnv, os.Getenv(LargeLogEnv))
	}
	return n * mult
}

// template is one line of a real API server's log with where its auditID and times are, so that
// copies of it can be given new ones in place.
type template struct {
	line              []byte
	id, received, at  int // offsets of the values (-1 when absent)
	receivedT, stageT time.Time
}

const microLayout = "2006-01-02T15:04:05.000000Z"

func templates(t *testing.T, log []byte) ([]template, time.Duration) {
	t.Helper()
	var out []template
	var first, last time.Time
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		tp := template{line: line, id: valueAt(line, `"auditID":"`), received: valueAt(line, `"requestReceivedTimestamp":"`), at: valueAt(line, `"stageTimestamp":"`)}
		if tp.id < 0 || tp.received < 0 || tp.at < 0 {
			t.Fatalf("line without auditID or times: %s", line)
		}
		var err error
		if tp.receivedT, err = time.Parse(microLayout, string(line[tp.received:tp.received+len(microLayout)])); err != nil {
			t.Fatal(err)
		}
		if tp.stageT, err = time.Parse(microLayout, string(line[tp.at:tp.at+len(microLayout)])); err != nil {
			t.Fatal(err)
		}
		if first.IsZero() || tp.stageT.Before(first) {
			first = tp.stageT
		}
		if tp.stageT.After(last) {
			last = tp.stageT
		}
		out = append(out, tp)
	}
	return out, last.Sub(first)
}

func valueAt(line []byte, key string) int {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return -1
	}
	return i + len(key)
}

// writeLargeLog writes at least size bytes of audit log made of the real API server's log of
// testdata/providers/native (a fight, a hot loop, a replica race and the API server's own writes)
// repeated, each copy later by the log's span plus 30 seconds, with new auditIDs; every tenth copy
// happens in its own namespace, so the log holds a long fight, hot loop and race and a new set
// every ten copies. It returns the number of copies.
func writeLargeLog(t *testing.T, path string, size int64) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join("..", "testdata", "providers", "native", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tps, span := templates(t, log)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	copies := 0
	buf := make([]byte, 0, 64<<10)
	for ; written < size; copies++ {
		shift := time.Duration(copies) * (span + 30*time.Second)
		for _, tp := range tps {
			buf = append(buf[:0], tp.line...)
			copy(buf[tp.id:], fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", copies, 0, 0, 0, written))
			copy(buf[tp.received:], tp.receivedT.Add(shift).Format(microLayout))
			copy(buf[tp.at:], tp.stageT.Add(shift).Format(microLayout))
			if copies%10 == 9 {
				buf = bytes.ReplaceAll(buf, []byte("loopwatch-it"), fmt.Appendf(nil, "loopwatch-it-%d", copies))
			}
			buf = append(buf, '\n')
			n, err := w.Write(buf)
			if err != nil {
				t.Fatal(err)
			}
			written += int64(n)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return copies
}

// run times one report of the log: analyze, then write (wall time, and the CPU time of the
// thread that does both: the analysis is single-threaded, and a thread's CPU time is what the
// machine's other load inflates least).
func runReport(t *testing.T, path string, opts Options, write func(*Report) error) (wall, cpu time.Duration, rep *Report) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	began, cpu0 := time.Now(), cputime.Thread()
	rep, err = Analyze(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(rep); err != nil {
		t.Fatal(err)
	}
	return time.Since(began), cputime.Thread() - cpu0, rep
}

// TestHTMLReportOfALargeLogIsBounded writes a large audit log of real API server events
// (LOOPWATCH_LARGE_LOG, 64M by default) and makes its text report and its HTML report, five
// times each, alternating, in this run: the HTML report (recorder on, page written) must take at
// most 1.2 times the text report's time on a log of 1 GB (on smaller logs, where the page's own
// cost is a larger share, the analysis without the page's writing) (the best of five runs, in the CPU time of the thread
// doing the work, which the machine's other load inflates less than wall time) and be at most
// 5 MB, and point nowhere outside itself.
func TestHTMLReportOfALargeLogIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: writes and reads a large log")
	}
	size := largeLogSize(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	if p := os.Getenv(LargeLogFileEnv); p != "" {
		log = p
	}
	began := time.Now()
	copies := 0
	if _, err := os.Stat(log); err != nil {
		copies = writeLargeLog(t, log, size)
	}
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if copies > 0 {
		t.Logf("wrote %d MiB (%d copies of the native log) in %s", fi.Size()>>20, copies, time.Since(began).Round(time.Millisecond))
	} else {
		t.Logf("reading the %d MiB log already at %s", fi.Size()>>20, log)
	}
	page := filepath.Join(dir, "report.html")
	text := func(r *Report) error { return r.WriteText(io.Discard) }
	html := func(r *Report) error {
		f, err := os.Create(page)
		if err != nil {
			return err
		}
		if err := r.WriteHTML(f); err != nil {
			return err
		}
		return f.Close()
	}
	best := func(a, b time.Duration) time.Duration {
		if a == 0 || b < a {
			return b
		}
		return a
	}
	var textWall, textCPU, htmlWall, htmlCPU time.Duration
	var rep *Report
	// The command's defaults (track.DefaultConfig, as its flags), which keep 50 offenders of
	// each kind: a log with more evicts and finds them again, the recorder's busiest case.
	cfg := track.DefaultConfig()
	for range 5 {
		w, c, _ := runReport(t, log, Options{Tracker: cfg}, text)
		textWall, textCPU = best(textWall, w), best(textCPU, c)
		w, c, rep = runReport(t, log, Options{Tracker: cfg, Timelines: true}, html)
		htmlWall, htmlCPU = best(htmlWall, w), best(htmlCPU, c)
	}
	out, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	mb := float64(fi.Size()) / (1 << 20)
	t.Logf("%d events, %d fights, %d hot objects, %d races", rep.Events, len(rep.Fights), len(rep.HotObjects), len(rep.Races))
	t.Logf("text report: %s wall (%.0f MiB/s), %s CPU", textWall.Round(time.Millisecond), mb/textWall.Seconds(), textCPU.Round(time.Millisecond))
	t.Logf("HTML report: %s wall (%.0f MiB/s), %s CPU; %.2f× the text report's CPU time, %.2f× its wall time; %d bytes",
		htmlWall.Round(time.Millisecond), mb/htmlWall.Seconds(), htmlCPU.Round(time.Millisecond),
		float64(htmlCPU)/float64(textCPU), float64(htmlWall)/float64(textWall), len(out))
	if len(out) > 5e6 {
		t.Errorf("the HTML report is %d bytes, over 5 MB", len(out))
	}
	// For a log of 1 GB or more (LOOPWATCH_LARGE_LOG=1G) the whole HTML report must take at most
	// 1.2 × the text report. Writing the page costs about the same whatever the log (its marks are
	// bucketed past a limit), a large share of the tenth of a second the default 64 MiB takes: there
	// the analysis with the recorder on, without the page's own writing, is held to 1.2 ×.
	var pageCPU time.Duration
	runtime.LockOSThread()
	for range 5 {
		cpu0 := cputime.Thread()
		if err := html(rep); err != nil {
			t.Fatal(err)
		}
		pageCPU = best(pageCPU, cputime.Thread()-cpu0)
	}
	runtime.UnlockOSThread()
	analysisCPU, what := htmlCPU, "the HTML report"
	if fi.Size() < 1<<30 {
		analysisCPU, what = htmlCPU-pageCPU, "the HTML report's analysis (without writing the page, "+pageCPU.String()+")"
	}
	if textCPU > 0 && float64(analysisCPU) > 1.2*float64(textCPU) {
		t.Errorf("%s took %s of CPU, over 1.2 × the text report's %s", what, analysisCPU, textCPU)
	}
	if m := externalRef.Find(out); m != nil {
		t.Errorf("the page refers outside itself: %q", m)
	}
	if len(rep.Fights) == 0 || len(rep.HotObjects) == 0 || len(rep.Races) == 0 {
		t.Errorf("the log's fights, hot loops and races are not all found: %d, %d, %d", len(rep.Fights), len(rep.HotObjects), len(rep.Races))
	}
}
