package exporter

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loopwatch/loopwatch/catalogue"
)

const testToken = "s3cret-token"

type testServer struct {
	server   *Server
	url      string
	pki      *testPKI
	exporter *Exporter
	reg      *prometheus.Registry
}

func startTestServer(t *testing.T, mutate func(*ServerConfig)) *testServer {
	t.Helper()
	pki := newTestPKI(t)
	tokenFile := filepath.Join(pki.dir, "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, reg := newTestExporter(t)
	cfg := ServerConfig{
		Addr: "127.0.0.1:0", TLSCertFile: pki.certFile, TLSKeyFile: pki.keyFile,
		ClientCAFile: pki.caFile, TokenFile: tokenFile, MaxBodyBytes: 1 << 20, Gatherer: reg,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := NewServer(cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &testServer{server: srv, url: "https://" + l.Addr().String(), pki: pki, exporter: e, reg: reg}
}

func (s *testServer) client(cert *tls.Certificate) *http.Client {
	tlsCfg := &tls.Config{RootCAs: s.pki.roots}
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 10 * time.Second}
}

func TestServerAnswersEachRequest(t *testing.T) {
	s := startTestServer(t, nil)
	good := eventList(t, fightWrites()...)
	cases := []struct {
		name        string
		cert        *tls.Certificate
		method      string
		path        string
		token       string
		contentType string
		body        []byte
		want        int
	}{
		{name: "accepts a batch from a client certificate", cert: &s.pki.client, body: good, want: 200},
		{name: "accepts a batch with the bearer token", token: testToken, body: good, want: 200},
		{name: "accepts a batch posted to the root path", path: "/", token: testToken, body: good, want: 200},
		{name: "refuses a request without credentials", body: good, want: 401},
		{name: "refuses a wrong bearer token", token: "nope", body: good, want: 403},
		{name: "refuses a certificate from another CA", cert: &s.pki.otherClient, body: good, want: 403},
		{name: "refuses a GET", method: http.MethodGet, token: testToken, want: 405},
		{name: "refuses another content type", token: testToken, contentType: "text/plain", body: good, want: 415},
		{name: "refuses a body over the limit", token: testToken, body: bytes.Repeat([]byte(" "), 2<<20), want: 413},
		{name: "refuses malformed json", token: testToken, body: good[:len(good)-2], want: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, path, ct := tc.method, tc.path, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = WebhookPath
			}
			if ct == "" {
				ct = "application/json"
			}
			req, err := http.NewRequest(method, s.url+path, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", ct)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := s.client(tc.cert).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	want := requestsExposition(map[string]int{
		ReasonOK: 3, ReasonForbidden: 2, ReasonMalformed: 1, ReasonMethodNotAllowed: 1, ReasonTooLarge: 1,
		ReasonUnauthenticated: 1, ReasonUnsupportedMediaType: 1,
	})
	if err := testutil.GatherAndCompare(s.reg, strings.NewReader(want), "loopwatch_audit_requests_total"); err != nil {
		t.Fatal(err)
	}
	// The three accepted posts carried the same batch: counted once.
	if got := testutil.ToFloat64(s.exporter.metrics.events.WithLabelValues(EventCounted)); got != 6 {
		t.Fatalf("counted %v events, want 6", got)
	}
}

func TestServerServesHealthAndMetrics(t *testing.T) {
	s := startTestServer(t, nil)
	c := s.client(&s.pki.client)
	deadline := time.Now().Add(5 * time.Second)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		for {
			resp, err := c.Get(s.url + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s answered %d", path, resp.StatusCode)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestNewServerReportsEveryConfigProblem(t *testing.T) {
	_, err := NewServer(ServerConfig{ClientCAFile: "/nonexistent/ca.crt"}, nil)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"exporter is required", "listen address is required", "tls cert and key files are required", "read webhook client CA file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := NewServer(ServerConfig{Addr: ":1", InsecureHTTP: true}, &Exporter{}); err == nil || !strings.Contains(err.Error(), "client CA file or a bearer token") {
		t.Errorf("unauthenticated server accepted: %v", err)
	}
}

func TestServerKeepsAcceptingWhileRefusingBadRequests(t *testing.T) {
	s := startTestServer(t, func(c *ServerConfig) { c.MaxInFlight = 64 })
	c := s.client(&s.pki.client)
	var bodies [][]byte
	for i := range 20 {
		w := auditWrite{id: fmt.Sprintf("ok-%d", i), actor: "a", name: fmt.Sprintf("o%d", i)}
		bodies = append(bodies, eventList(t, w))
	}
	errs := make(chan error, 40)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- postExpect(c, s.url+WebhookPath, bodies[i], http.StatusOK)
		}()
		go func() {
			defer wg.Done()
			errs <- postExpect(c, s.url+WebhookPath, []byte(`{"items":[{"verb":`), http.StatusBadRequest)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := testutil.ToFloat64(s.exporter.metrics.events.WithLabelValues(EventCounted)); got != 20 {
		t.Fatalf("counted %v events, want 20", got)
	}
}

func postExpect(c *http.Client, url string, body []byte, want int) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("status %d, want %d", resp.StatusCode, want)
	}
	return nil
}

func TestServerAnswersTooManyRequestsWhenSlotsStayTaken(t *testing.T) {
	s := startTestServer(t, func(c *ServerConfig) { c.MaxInFlight = 1; c.QueueWait = 50 * time.Millisecond })
	srv := s.server
	srv.inFlight <- struct{}{} // a batch that never finishes
	defer func() { <-srv.inFlight }()
	err := postExpect(s.client(&s.pki.client), s.url+WebhookPath, eventList(t, fightWrites()...), http.StatusTooManyRequests)
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(s.exporter.metrics.requests.WithLabelValues(OutcomeRejected, ReasonOverloaded)); got != 1 {
		t.Fatalf("overloaded rejections %v, want 1", got)
	}
}

// requestsExposition is the exposition of loopwatch_audit_requests_total with the given counts
// by reason (ok is the accepted outcome; every rejection reason is exposed, 0 when absent).
func requestsExposition(counts map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", catalogue.AuditRequestsTotal.Name, catalogue.AuditRequestsTotal.Help, catalogue.AuditRequestsTotal.Name)
	fmt.Fprintf(&b, "%s{outcome=%q,reason=%q} %d\n", catalogue.AuditRequestsTotal.Name, OutcomeAccepted, ReasonOK, counts[ReasonOK])
	reasons := slices.Sorted(slices.Values(RejectReasons))
	for _, r := range reasons {
		fmt.Fprintf(&b, "%s{outcome=%q,reason=%q} %d\n", catalogue.AuditRequestsTotal.Name, OutcomeRejected, r, counts[r])
	}
	return b.String()
}
