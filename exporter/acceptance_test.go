package exporter

// The hardening's acceptance, measured on the built `loopwatch` binary as an operator runs it:
// each scenario starts a fresh `loopwatch exporter` process (so that its peak resident set,
// VmHWM, is the scenario's own), attacks it over TLS with the webhook's client certificate, and
// reports what it measured. Run with:
//
//	flock /work/wt/heavy.lock go test ./exporter -run TestAcceptanceOnTheBinary -v -count=1

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// buildLoopwatch builds the loopwatch command from this module into a temporary directory.
func buildLoopwatch(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loopwatch")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/loopwatch/loopwatch/cmd/loopwatch").CombinedOutput()
	if err != nil {
		t.Fatalf("build loopwatch: %v\n%s", err, out)
	}
	return bin
}

// exporterProcess is a running `loopwatch exporter`.
type exporterProcess struct {
	cmd  *exec.Cmd
	url  string
	pki  *testPKI
	logs *bytes.Buffer
	// http is one client for all the scenario's requests, so that polling does not open a
	// connection each time (the exporter closes connections beyond its limit).
	http *http.Client
}

func startExporterProcess(t *testing.T, bin string, extra ...string) *exporterProcess {
	t.Helper()
	pki := newTestPKI(t)
	addr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"exporter", "--listen-address=" + addr, "--tls-cert-file=" + pki.certFile,
		"--tls-key-file=" + pki.keyFile, "--client-ca-file=" + pki.caFile}, extra...)
	p := &exporterProcess{cmd: exec.Command(bin, args...), url: "https://" + addr, pki: pki, logs: &bytes.Buffer{}}
	p.http = (&testServer{pki: pki}).client(&pki.client)
	p.http.Timeout = time.Minute
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("exporter log:\n%s", p.logs.String())
		}
	})
	c := (&testServer{pki: pki}).client(&pki.client)
	waitFor(t, 20*time.Second, "exporter ready", func() bool {
		resp, err := c.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func (p *exporterProcess) peakRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func (p *exporterProcess) client() *http.Client { return p.http }

// metrics scrapes /metrics with the webhook's client certificate.
func (p *exporterProcess) metrics(t *testing.T) string {
	t.Helper()
	resp, err := p.client().Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// sample returns the value of the series line starting with prefix, or -1.
func sample(metrics, prefix string) float64 {
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, prefix) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

const mb = 1e6

func TestAcceptanceOnTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the loopwatch binary and sends it gigabytes")
	}
	bin := buildLoopwatch(t)

	t.Run("a 400-event batch is answered 200 within 3s among dribbling senders", func(t *testing.T) {
		p := startExporterProcess(t, bin)
		ts := &testServer{pki: p.pki, url: p.url}
		stop := make(chan struct{})
		defer close(stop)
		for i := range 8 {
			go func() {
				req, _ := http.NewRequest(http.MethodPost, p.url+WebhookPath, dribble{every: 100 * time.Millisecond, stop: stop})
				req.Header.Set("Content-Type", "application/json")
				req.ContentLength = DefaultMaxBodyBytes
				c := ts.client(&p.pki.client)
				if i >= 4 {
					c = ts.h2Client()
				}
				if resp, err := c.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		}
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		if err := postExpect(p.client(), p.url+WebhookPath, realBatch(t, 400), http.StatusOK); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		t.Logf("MEASURED 8 senders dribbling 1 byte/100ms (4 HTTP/1.1, 4 HTTP/2 streams): 400-event batch answered 200 in %s", d.Round(time.Millisecond))
		if d > 3*time.Second {
			t.Fatalf("took %s", d)
		}
		waitFor(t, 10*time.Second, "dribblers cut off", func() bool {
			return sample(p.metrics(t), `loopwatch_audit_requests_total{outcome="rejected",reason="slow_body"}`) == 8
		})
	})

	t.Run("a 3 MB body of a million empty events is answered within 3s under 400 MB", func(t *testing.T) {
		p := startExporterProcess(t, bin)
		body := append([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[{}`), bytes.Repeat([]byte(`,{}`), 1_000_000-1)...)
		body = append(body, "]}"...)
		start := time.Now()
		resp, err := p.client().Post(p.url+WebhookPath, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		d := time.Since(start)
		rss := p.peakRSS(t)
		t.Logf("MEASURED %.1f MB body of 1,000,000 {} events: answered %d in %s, peak RSS %.1f MB", float64(len(body))/mb, resp.StatusCode, d.Round(time.Millisecond), float64(rss)/mb)
		if d > 3*time.Second || rss > 400*mb || resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatal("over the acceptance line")
		}
	})

	t.Run("3000 events with 1 MB usernames stay under 600 MB with a small /metrics", func(t *testing.T) {
		p := startExporterProcess(t, bin)
		const events, perBatch, senders = 3000, 15, 4
		long := strings.Repeat("u", 1<<20)
		batches := make(chan int, events/perBatch)
		for b := 0; b < events; b += perBatch {
			batches <- b
		}
		close(batches)
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		start := time.Now()
		for range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := p.client()
				var body bytes.Buffer
				for b := range batches {
					body.Reset()
					body.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`)
					for i := b; i < b+perBatch; i++ {
						if i > b {
							body.WriteByte(',')
						}
						fmt.Fprintf(&body, `{"level":"Metadata","auditID":"long-%d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/configmaps/cm-%d","verb":"patch","user":{"username":"%s-%04d","groups":["system:authenticated"]},"objectRef":{"resource":"configmaps","namespace":"ns","name":"cm-%d","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T04:04:45.744196Z","stageTimestamp":"2026-11-21T04:04:45.745733Z"}`, i, i, long, i, i)
					}
					body.WriteString("]}")
					if err := postExpect(c, p.url+WebhookPath, body.Bytes(), http.StatusOK); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sent := time.Since(start)
		m := p.metrics(t)
		longest := 0
		for _, v := range regexp.MustCompile(`="([^"]*)"`).FindAllStringSubmatch(m, -1) {
			longest = max(longest, len(v[1]))
		}
		rss := p.peakRSS(t)
		counted := sample(m, `loopwatch_audit_events_total{outcome="counted"}`)
		t.Logf("MEASURED 3000 events with 1 MB usernames (4 senders, 15 per batch, %s): %v counted, peak RSS %.1f MB, /metrics %d bytes, longest label value %d bytes",
			sent.Round(time.Millisecond), counted, float64(rss)/mb, len(m), longest)
		if rss > 600*mb || len(m) > 2<<20 || longest > 1024 || counted != events {
			t.Fatal("over the acceptance line")
		}
	})

	t.Run("five creates sharing an auditID count five times, an exact retry once", func(t *testing.T) {
		p := startExporterProcess(t, bin)
		var creates []auditWrite
		for i := range 5 {
			creates = append(creates, auditWrite{id: "chosen-by-the-client", actor: "system:serviceaccount:ns:sneaky", verb: "create",
				resource: "configmaps", name: fmt.Sprint("cm-", i), code: 201, at: time.Duration(i) * time.Millisecond})
		}
		body := eventList(t, creates...)
		for range 2 {
			if err := postExpect(p.client(), p.url+WebhookPath, body, http.StatusOK); err != nil {
				t.Fatal(err)
			}
		}
		m := p.metrics(t)
		counted := sample(m, `loopwatch_audit_events_total{outcome="counted"}`)
		dup := sample(m, `loopwatch_audit_events_total{outcome="duplicate"}`)
		t.Logf("MEASURED five creates sharing one auditID, the batch sent twice: %v counted, %v duplicates", counted, dup)
		if counted != 5 || dup != 5 {
			t.Fatal("over the acceptance line")
		}
	})

	t.Run("/metrics without credentials is refused", func(t *testing.T) {
		p := startExporterProcess(t, bin)
		c := (&testServer{pki: p.pki}).client(nil)
		resp, err := c.Get(p.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		t.Logf("MEASURED GET /metrics over TLS without credentials: %d", resp.StatusCode)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatal("over the acceptance line")
		}
	})

	t.Run("a 20 MiB batch is refused with 413 and counted", func(t *testing.T) {
		p := startExporterProcess(t, bin)
		var ws []auditWrite
		for i := 0; ; i++ {
			ws = append(ws, auditWrite{id: fmt.Sprint(i), actor: "system:serviceaccount:ns:ctl", name: strings.Repeat("x", 240) + fmt.Sprint(i)})
			if i%5000 == 4999 && len(eventList(t, ws...)) > 20<<20 {
				break
			}
		}
		body := eventList(t, ws...)
		resp, err := p.client().Post(p.url+WebhookPath, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tooLarge := sample(p.metrics(t), `loopwatch_audit_requests_total{outcome="rejected",reason="too_large"}`)
		t.Logf("MEASURED %.1f MiB batch: answered %d, too_large refusals %v", float64(len(body))/(1<<20), resp.StatusCode, tooLarge)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || tooLarge != 1 {
			t.Fatal("over the acceptance line")
		}
	})

	t.Run("SIGTERM with slow uploads in flight exits 0 within the grace period", func(t *testing.T) {
		p := startExporterProcess(t, bin, "--shutdown-timeout=10s")
		ts := &testServer{pki: p.pki, url: p.url}
		stop := make(chan struct{})
		defer close(stop)
		for range 3 {
			go func() {
				req, _ := http.NewRequest(http.MethodPost, p.url+WebhookPath, dribble{every: 200 * time.Millisecond, stop: stop})
				req.Header.Set("Content-Type", "application/json")
				if resp, err := ts.h2Client().Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		}
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := p.cmd.Wait()
		d := time.Since(start)
		t.Logf("MEASURED SIGTERM with 3 slow uploads in flight: exited %v after %s (grace period 10s)", p.cmd.ProcessState.ExitCode(), d.Round(time.Millisecond))
		if err != nil || d > 10*time.Second {
			t.Fatalf("exit: %v after %s", err, d)
		}
	})

	t.Run("audit analyze gives the log's counts on every line twice, a v1beta1 span, foreign lines skipped", func(t *testing.T) {
		dir := t.TempDir()
		log, err := os.ReadFile(filepath.Join("testdata", "analyze", "incident.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var doubled []byte
		for _, line := range bytes.SplitAfter(log, []byte("\n")) {
			doubled = append(append(doubled, line...), line...)
		}
		doubledPath := filepath.Join(dir, "doubled.jsonl")
		if err := os.WriteFile(doubledPath, doubled, 0o600); err != nil {
			t.Fatal(err)
		}
		analyze := func(path string) string {
			out, err := exec.CommandContext(context.Background(), bin, "audit", "analyze", path).Output()
			if err != nil {
				t.Fatalf("analyze %s: %v", path, err)
			}
			return string(out)
		}
		once, twice := analyze(filepath.Join("testdata", "analyze", "incident.jsonl")), analyze(doubledPath)
		head := func(s string) string { h, _, _ := strings.Cut(s, "\n"); return h }
		t.Logf("MEASURED analyze on the log: %q; every line twice: %q", head(once), head(twice))
		rest := func(s string) string { _, r, _ := strings.Cut(s, "Fights"); return r }
		if rest(once) != rest(twice) || !strings.Contains(head(twice), "58 counted (53 writes, 5 reads), 58 repeats dropped") {
			t.Fatal("the doubled log's report differs")
		}
		v1beta1 := analyze(filepath.Join("testdata", "analyze", "v1beta1.jsonl"))
		span := regexp.MustCompile(`Time span: .*`).FindString(v1beta1)
		t.Logf("MEASURED analyze on a v1beta1 log: %s", span)
		if span != "Time span: 2018-01-10T10:21:55.000Z .. 2018-01-10T10:23:55.000Z (2m0s)" {
			t.Fatal("no real time span")
		}
		foreign := analyze(filepath.Join("testdata", "analyze", "foreign.jsonl"))
		skipped := regexp.MustCompile(`Skipped lines: .*`).FindString(foreign)
		t.Logf("MEASURED analyze on a log with a GKE and an AKS line: %s", skipped)
		if !strings.Contains(skipped, "2 not audit events") {
			t.Fatal("foreign lines not reported")
		}
	})
}
