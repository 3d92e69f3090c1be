package exporter

// The attack suite: each test plays one way of abusing the exporter, with valid credentials
// where the attack needs them, against a real TLS listener, and checks that the exporter holds:
// it answers, stays within its bounds, counts the refusal by reason, and keeps serving real
// batches.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// dribble is a body that sends one byte per interval until stop is closed.
type dribble struct {
	every time.Duration
	stop  <-chan struct{}
}

func (d dribble) Read(p []byte) (int, error) {
	select {
	case <-time.After(d.every):
		p[0] = ' '
		return 1, nil
	case <-d.stop:
		return 0, io.ErrUnexpectedEOF
	}
}

// h2Client is an authenticated client speaking HTTP/2, as the API server's webhook client does.
func (s *testServer) h2Client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: s.pki.roots, Certificates: []tls.Certificate{s.pki.client}},
		ForceAttemptHTTP2: true,
	}, Timeout: 30 * time.Second}
}

func (s *testServer) rejected(reason string) float64 {
	return testutil.ToFloat64(s.exporter.metrics.requests.WithLabelValues(OutcomeRejected, reason))
}

func (s *testServer) counted() float64 {
	return testutil.ToFloat64(s.exporter.metrics.events.WithLabelValues(EventCounted))
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Item 1: senders that dribble their bodies hold no processing slot and are cut off.
func TestAttackSlowSendersDoNotStarveRealBatches(t *testing.T) {
	s := startTestServer(t, func(c *ServerConfig) {
		c.MaxBodyBytes = DefaultMaxBodyBytes
		c.BodyGrace = time.Second
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	statuses := make(chan int, 16)
	// Eight dribblers, twice the processing slots: four over HTTP/1.1 connections of their own,
	// four as streams of one HTTP/2 connection; half declare a 16 MiB body.
	h1, h2 := s.client(&s.pki.client), s.h2Client()
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, s.url+WebhookPath, dribble{every: 100 * time.Millisecond, stop: stop})
			req.Header.Set("Content-Type", "application/json")
			if i%2 == 0 {
				req.ContentLength = DefaultMaxBodyBytes
			}
			c := h1
			if i >= 4 {
				c = h2
			}
			resp, err := c.Do(req)
			if err != nil {
				statuses <- 0 // cut off before the answer reached us
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	time.Sleep(300 * time.Millisecond) // the dribblers are in
	start := time.Now()
	if err := postExpect(s.client(&s.pki.client), s.url+WebhookPath, realBatch(t, 400), http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a 400-event batch took %s among dribbling senders, want under 3s", d)
	}
	t.Logf("A 400-event batch answered 200 in %s among 8 dribbling senders", time.Since(start).Round(time.Millisecond))
	// The dribblers fall behind the minimum rate after the grace period and are cut off.
	waitFor(t, 5*time.Second, "dribblers cut off", func() bool { return s.rejected(ReasonSlowBody) == 8 })
	close(stop)
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 0 && st != http.StatusRequestTimeout {
			t.Errorf("a dribbler was answered %d, want 408 or a closed connection", st)
		}
	}
	if got := s.counted(); got != 400 {
		t.Fatalf("counted %v events, want 400", got)
	}
}

// Item 2: what a batch costs is bounded per byte: a body of a million empty events, events with
// nothing to attribute, and megabyte-long names.
func TestAttackCostIsBoundedPerByte(t *testing.T) {
	s := startTestServer(t, func(c *ServerConfig) { c.MaxBodyBytes = DefaultMaxBodyBytes })
	c := s.client(&s.pki.client)

	t.Run("a million empty events are refused without being decoded", func(t *testing.T) {
		body := append([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{}`), bytes.Repeat([]byte(`,{}`), 1<<20-1)...)
		body = append(body, "]}"...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := postExpect(c, s.url+WebhookPath, body, http.StatusRequestEntityTooLarge); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%.1f MB body of 1M empty events: answered 413 in %s, %.1f MB allocated", float64(len(body))/1e6, d.Round(time.Millisecond), float64(allocated)/1e6)
		if d > 3*time.Second || allocated > 64<<20 {
			t.Fatalf("took %s and allocated %d bytes", d, allocated)
		}
		if s.rejected(ReasonTooManyEvents) != 1 {
			t.Fatal("refusal not counted as too_many_events")
		}
	})

	t.Run("events with nothing to attribute are counted as such and not tracked", func(t *testing.T) {
		body := []byte(`{"items":[{},{"stage":"ResponseComplete"},{"stage":"ResponseComplete","verb":"patch"},{"stage":"ResponseComplete","user":{"username":"u"}}]}`)
		if err := postExpect(c, s.url+WebhookPath, body, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(s.exporter.metrics.events.WithLabelValues(EventUnattributable)); got != 3 {
			t.Fatalf("%v unattributable events, want 3", got)
		}
		if got := testutil.ToFloat64(s.exporter.metrics.events.WithLabelValues(EventIgnoredStage)); got != 1 {
			t.Fatalf("%v events at another stage, want 1", got)
		}
	})

	t.Run("megabyte names become bounded, distinct label values", func(t *testing.T) {
		const users, perBatch = 40, 10
		var names []string
		for i := range users {
			names = append(names, fmt.Sprintf("%s-%03d", strings.Repeat("u", 1<<20), i))
		}
		for b := 0; b < users; b += perBatch {
			var ws []auditWrite
			for i := b; i < b+perBatch; i++ {
				ws = append(ws, auditWrite{id: fmt.Sprint("long-", i), actor: names[i], name: strings.Repeat("n", 1<<16) + fmt.Sprint(i)})
			}
			if err := postExpect(c, s.url+WebhookPath, eventList(t, ws...), http.StatusOK); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := c.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		longest, actors := 0, map[string]bool{}
		for _, line := range strings.Split(string(metrics), "\n") {
			for _, v := range strings.Split(line, `="`)[1:] {
				v, _, _ = strings.Cut(v, `"`)
				longest = max(longest, len(v))
				if strings.HasPrefix(line, "loopwatch_audit_writes_total{") && strings.HasPrefix(v, "uuu") {
					actors[v] = true
				}
			}
		}
		t.Logf("/metrics %d bytes, longest label value %d bytes, %d labelled long actors", len(metrics), longest, len(actors))
		if len(metrics) > 2<<20 || longest > decode.DefaultMaxValueBytes {
			t.Fatalf("/metrics is %d bytes, its longest label value %d bytes", len(metrics), longest)
		}
		if len(actors) != 20 { // top-K: the first 20 long actors keep a label, each its own
			t.Fatalf("%d distinct long actor label values, want 20", len(actors))
		}
	})
}

// Item 3: deduplication cannot be used to hide writes behind a shared auditID, and still counts
// an exact retry once.
func TestAttackSharedAuditIDCannotHideWrites(t *testing.T) {
	s := startTestServer(t, nil)
	c := s.client(&s.pki.client)
	var creates []auditWrite
	for i := range 5 {
		creates = append(creates, auditWrite{id: "chosen-by-the-client", actor: "system:serviceaccount:ns:sneaky", verb: "create",
			resource: "configmaps", name: fmt.Sprint("cm-", i), code: 201, at: time.Duration(i) * time.Millisecond})
	}
	body := eventList(t, creates...)
	for range 3 { // the API server's retries of a batch it got no answer for
		if err := postExpect(c, s.url+WebhookPath, body, http.StatusOK); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.counted(); got != 5 {
		t.Fatalf("counted %v of five distinct creates sharing an auditID, sent three times; want 5", got)
	}
	if got := testutil.ToFloat64(s.exporter.metrics.events.WithLabelValues(EventDuplicate)); got != 10 {
		t.Fatalf("%v duplicates, want 10", got)
	}
}

// Item 4: /metrics names users and objects; it needs credentials unless served open.
func TestAttackMetricsNeedCredentials(t *testing.T) {
	cases := []struct {
		name   string
		open   bool
		cert   bool
		token  string
		status int
	}{
		{"refuses a scrape without credentials", false, false, "", http.StatusUnauthorized},
		{"refuses a wrong token", false, false, "guess", http.StatusForbidden},
		{"accepts the webhook's client certificate", false, true, "", http.StatusOK},
		{"accepts the webhook's token", false, false, testToken, http.StatusOK},
		{"accepts the scrape token", false, false, "scrape-" + testToken, http.StatusOK},
		{"serves anyone when told to serve it open", true, false, "", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startTestServer(t, func(c *ServerConfig) {
				c.MetricsOpen = tc.open
				c.MetricsTokenFile = writeFile(t, "scrape-token", "scrape-"+testToken)
			})
			var cert *tls.Certificate
			if tc.cert {
				cert = &s.pki.client
			}
			req, _ := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := s.client(cert).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == http.StatusOK && !bytes.Contains(b, []byte("loopwatch_audit_requests_total")) {
				t.Fatal("no metrics in the answer")
			}
			if tc.status != http.StatusOK && bytes.Contains(b, []byte("loopwatch_")) {
				t.Fatal("a refusal leaks metrics")
			}
			refused := testutil.ToFloat64(s.exporter.metrics.scrapesRefused.WithLabelValues(ReasonUnauthenticated)) +
				testutil.ToFloat64(s.exporter.metrics.scrapesRefused.WithLabelValues(ReasonForbidden))
			if want := btof(tc.status != http.StatusOK); refused != want {
				t.Fatalf("%v refusals counted, want %v", refused, want)
			}
		})
	}
}

// paced is a body that sends chunk bytes of data per interval.
type paced struct {
	data  []byte
	chunk int
	every time.Duration
}

func (p *paced) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(p.every)
	n := copy(b[:min(len(b), p.chunk)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// A large batch that arrives within the minimum rate but takes longer than the queue wait (a
// sender at 1 MiB/s with a 2 MiB batch, say) is received: the queue wait bounds each wait for
// buffer budget, not the upload.
func TestAttackLargeBatchSlowerThanTheQueueWaitIsReceived(t *testing.T) {
	s := startTestServer(t, func(c *ServerConfig) {
		c.MaxBodyBytes = DefaultMaxBodyBytes
		c.QueueWait = 200 * time.Millisecond
	})
	n := 400
	body := realBatch(t, n)
	for len(body) < 3*pooledBodyBytes {
		n *= 2
		body = realBatch(t, n)
	}
	// At least 1.5 MiB at about 1 MiB/s: the buffer grows past its first 512 KiB after about 0.5 s.
	req, _ := http.NewRequest(http.MethodPost, s.url+WebhookPath, &paced{data: body, chunk: 64 << 10, every: 60 * time.Millisecond})
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client(&s.pki.client).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a %d-byte batch sent at about 1 MiB/s was answered %d: %s", len(body), resp.StatusCode, answer)
	}
	if got := s.counted(); got != float64(n) {
		t.Fatalf("counted %v events, want %d", got, n)
	}
}

// A field manager is the writer's to choose, and the API server accepts one whose escapes decode
// to bytes that are not UTF-8 (fieldManager=%FF). It becomes a label value of the hot object, and
// must not fail the scrape of every metric the exporter has.
func TestAttackFieldManagerThatIsNotUTF8(t *testing.T) {
	s := startTestServer(t, nil)
	var writes []auditWrite
	for i := range 25 {
		writes = append(writes, auditWrite{actor: "system:serviceaccount:ns:w", name: "hot", at: time.Duration(i) * time.Second, query: "fieldManager=a%FF%C3b"})
	}
	if err := postExpect(s.client(&s.pki.client), s.url+WebhookPath, eventList(t, writes...), http.StatusOK); err != nil {
		t.Fatal(err)
	}
	s.exporter.Tracker().Flush() // the writes' reorder wait, over
	resp, err := s.client(&s.pki.client).Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape answered %d: %s", resp.StatusCode, b)
	}
	if want := "field_manager=\"a\uFFFD\uFFFDb\""; !bytes.Contains(b, []byte(want)) {
		t.Fatalf("no hot object with %s in the scrape:\n%s", want, b)
	}
	if !bytes.Contains(b, []byte("loopwatch_audit_requests_total")) {
		t.Fatal("the scrape lost the exporter's other metrics")
	}
}

func btof(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Item 5: a batch over the limits is refused with 413 and counted, whether its length is
// declared or not; the largest batch the API server sends with the deploy files' flags is
// accepted.
func TestAttackOversizedBatchesAreRefusedAndCounted(t *testing.T) {
	s := startTestServer(t, func(c *ServerConfig) { c.MaxBodyBytes = DefaultMaxBodyBytes })
	c := s.h2Client()
	big := bytes.Repeat([]byte(" "), 20<<20)
	if err := postExpect(c, s.url+WebhookPath, big, http.StatusRequestEntityTooLarge); err != nil {
		t.Fatalf("20 MiB with its length declared: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+WebhookPath, io.MultiReader(bytes.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1 // streamed: the limit is found while reading
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("20 MiB streamed: status %d, want 413", resp.StatusCode)
	}
	if got := s.rejected(ReasonTooLarge); got != 2 {
		t.Fatalf("%v too_large refusals, want 2", got)
	}
	// 15.6 MiB: the largest batch the API server sends with the deploy files' flags, 400 events
	// of 40 KiB (--audit-webhook-truncate-max-event-size cuts anything larger).
	var ws []auditWrite
	for i := range 400 {
		ws = append(ws, auditWrite{id: fmt.Sprint("big-", i), actor: "system:serviceaccount:ns:ctl", name: fmt.Sprint("object-", i), query: "fieldManager=" + strings.Repeat("m", 40200)})
	}
	body := eventList(t, ws...)
	if len(body) < 15<<20 || len(body) > 400*40960+1024 {
		t.Fatalf("the batch is %d bytes, want the largest the deploy files allow", len(body))
	}
	if err := postExpect(c, s.url+WebhookPath, body, http.StatusOK); err != nil {
		t.Fatalf("%d bytes, %d events: %v", len(body), len(ws), err)
	}
}

// Item 7: the small ones.
func TestAttackSmallOnes(t *testing.T) {
	t.Run("plain HTTP to the TLS port is answered 400 and counted", func(t *testing.T) {
		s := startTestServer(t, nil)
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /audit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		answer, _ := io.ReadAll(conn)
		if !bytes.HasPrefix(answer, []byte("HTTP/1.0 400")) {
			t.Fatalf("answered %q", answer)
		}
		waitFor(t, time.Second, "plain_http counted", func() bool { return s.rejected(ReasonPlainHTTP) == 1 })
	})

	t.Run("an object without items is no batch", func(t *testing.T) {
		s := startTestServer(t, nil)
		for _, body := range []string{`{}`, `{"items":null}`, `{"message":{"data":"e30="},"subscription":"projects/p/subscriptions/s"}`} {
			if err := postExpect(s.client(&s.pki.client), s.url+WebhookPath, []byte(body), http.StatusBadRequest); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
		}
		if got := s.rejected(ReasonNotEventList); got != 3 {
			t.Fatalf("%v not_event_list refusals, want 3", got)
		}
	})

	t.Run("connections beyond the limit are closed and counted", func(t *testing.T) {
		s := startTestServer(t, func(c *ServerConfig) { c.MaxConnections = 2 })
		addr := strings.TrimPrefix(s.url, "https://")
		for range 2 {
			c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: s.pki.roots, Certificates: []tls.Certificate{s.pki.client}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		if _, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: s.pki.roots}); err == nil {
			t.Fatal("a third connection was served")
		}
		waitFor(t, time.Second, "too_many_connections counted", func() bool { return s.rejected(ReasonTooManyConnections) == 1 })
	})

	t.Run("shutdown with slow uploads in flight ends cleanly within its grace period", func(t *testing.T) {
		pki := newTestPKI(t)
		e, _ := newTestExporter(t)
		srv, err := NewServer(ServerConfig{
			Addr: "127.0.0.1:0", TLSCertFile: pki.certFile, TLSKeyFile: pki.keyFile, ClientCAFile: pki.caFile,
			ShutdownTimeout: 3 * time.Second, BodyGrace: time.Minute,
		}, e)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, l) }()
		ts := &testServer{server: srv, url: "https://" + l.Addr().String(), pki: pki, exporter: e}
		stop := make(chan struct{})
		defer close(stop)
		answers := make(chan int, 3)
		for range 3 {
			go func() {
				req, _ := http.NewRequest(http.MethodPost, ts.url+WebhookPath, dribble{every: 200 * time.Millisecond, stop: stop})
				req.Header.Set("Content-Type", "application/json")
				resp, err := ts.h2Client().Do(req)
				if err != nil {
					answers <- 0
					return
				}
				resp.Body.Close()
				answers <- resp.StatusCode
			}()
		}
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
		case <-time.After(4 * time.Second):
			t.Fatal("shutdown did not end within its grace period")
		}
		t.Logf("Shut down in %s with 3 slow uploads in flight", time.Since(start).Round(time.Millisecond))
		for range 3 {
			if st := <-answers; st != http.StatusServiceUnavailable && st != 0 {
				t.Errorf("a slow upload was answered %d, want 503", st)
			}
		}
		if got := ts.rejected(ReasonShuttingDown); got != 3 {
			t.Errorf("%v shutting_down refusals, want 3", got)
		}
	})
}

// writeFile writes content to a new file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
