package exporter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/loopwatch/loopwatch/exporter/track"
)

// testReplica is an exporter replica served over TLS in this process; the tests drive its
// election by hand (Lead, Follow), as the lease would.
type testReplica struct {
	t        *testing.T
	e        *Exporter
	reg      *prometheus.Registry
	srv      *Server
	url      string
	identity string
	cancel   context.CancelFunc
	done     chan error
	stopped  sync.Once
}

func startReplica(t *testing.T, pki *testPKI, name string) *testReplica {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e, err := New(Config{Registerer: reg, Tracker: track.Config{ReorderWait: 2 * time.Second, FightHandoffs: 4}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	peers, err := LoadPeers(pki.certFile, pki.keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	r := &testReplica{t: t, e: e, reg: reg, url: "https://" + l.Addr().String(), done: make(chan error, 1)}
	r.identity = ReplicaIdentity(name, "0", l.Addr().String())
	if err := e.EnableReplication(ReplicationConfig{Identity: r.identity, Peers: peers, TakeoverWindow: time.Minute}); err != nil {
		t.Fatal(err)
	}
	r.srv, err = NewServer(ServerConfig{
		Addr: l.Addr().String(), TLSCertFile: pki.certFile, TLSKeyFile: pki.keyFile, ClientCAFile: pki.caFile,
		Gatherer: reg, MetricsOpen: true, Logger: slog.New(slog.DiscardHandler),
	}, e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.srv.Serve(ctx, l) }()
	t.Cleanup(r.stop)
	return r
}

// stop shuts the replica down gracefully (it steps down).
func (r *testReplica) stop() {
	r.stopped.Do(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			r.t.Errorf("replica %s did not stop", r.identity)
		}
	})
}

// crash ends the replica's server at once, as kill -9 would: no step down, no farewell.
func (r *testReplica) crash() {
	if s := r.srv.httpServer.Load(); s != nil {
		_ = s.Close()
	}
	r.e.mu.Lock()
	r.e.repl.role.Store(int32(RoleStopping)) // it counts nothing more
	for _, c := range r.e.repl.standbys {
		c.close(DropClosed)
	}
	r.e.mu.Unlock()
}

func (r *testReplica) post(t *testing.T, pki *testPKI, body []byte, want int) {
	t.Helper()
	c := (&testServer{pki: pki}).client(&pki.client)
	if err := postExpect(c, r.url+WebhookPath, body, want); err != nil {
		t.Fatalf("post to %s: %v", r.identity, err)
	}
}

// scrape GETs /metrics as Prometheus would (with its scrape header: a marker on a leader), and
// returns the exposition.
func (r *testReplica) scrape(t *testing.T, pki *testPKI) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(PrometheusScrapeHeader, "10")
	resp, err := (&testServer{pki: pki}).client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape of %s: %d %s", r.identity, resp.StatusCode, b)
	}
	return string(b)
}

func (r *testReplica) counted() float64 {
	return testutil.ToFloat64(r.e.metrics.eventOutcomes[0].c)
}

// sampleOf reads one sample's value from an exposition ("" labels: the only series).
func sampleOf(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return 0
}

// fightBatches are n batches of a fight between sa-a and sa-b over one object, every write a
// second after the last, numbered from first.
func fightBatches(t *testing.T, first, n, per int) [][]byte {
	var out [][]byte
	i := first
	for range n {
		var ws []auditWrite
		for range per {
			actor := "system:serviceaccount:default:sa-a"
			if i%2 == 1 {
				actor = "system:serviceaccount:default:sa-b"
			}
			ws = append(ws, auditWrite{id: fmt.Sprint("w", i), actor: actor, name: "fought", at: time.Duration(i) * time.Second})
			i++
		}
		out = append(out, eventList(t, ws...))
	}
	return out
}

// TestStandbyTakesOverAKilledLeaderWithoutLossOrDoubles: a standby in step with its leader holds
// what the leader counted since Prometheus last scraped it (another reader of /metrics does not
// count as a scrape); when the leader is killed, the
// standby takes over and counts those events, so the leader's last scrape and the standby's
// counters add up to every event exactly once, a batch the API server retries after the kill is
// not counted again, and the fight the leader was following goes on with every handoff.
func TestStandbyTakesOverAKilledLeaderWithoutLossOrDoubles(t *testing.T) {
	pki := newTestPKI(t)
	a, b := startReplica(t, pki, "a"), startReplica(t, pki, "b")
	a.e.Follow(a.identity)
	a.e.Lead()
	b.e.Follow(a.identity)
	waitFor(t, 10*time.Second, "the standby to join", b.e.Ready)

	batches := fightBatches(t, 0, 4, 5)
	a.post(t, pki, batches[0], http.StatusOK)
	scraped := sampleOf(t, a.scrape(t, pki), `loopwatch_audit_events_total{outcome="counted"}`)
	a.post(t, pki, batches[1], http.StatusOK)
	b.post(t, pki, batches[2], http.StatusOK) // the standby forwards it to the leader
	// Another reader of /metrics (not Prometheus: no scrape header) is no marker.
	resp, err := (&testServer{pki: pki}).client(nil).Get(a.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := a.counted(); got != 15 || scraped != 5 {
		t.Fatalf("leader counted %v (scraped at %v), want 15 (5)", got, scraped)
	}
	if got := b.counted(); got != 0 {
		t.Fatalf("standby counted %v itself, want 0: only the leader counts", got)
	}
	if n := testutil.ToFloat64(b.e.repl.metrics.forwarded.WithLabelValues(ForwardOK)); n != 1 {
		t.Fatalf("standby forwarded %v batches, want 1", n)
	}

	a.crash()
	waitFor(t, 10*time.Second, "the standby to see the stream end", func() bool { return !b.e.Ready() })
	b.e.Lead()
	if got := b.counted(); got != 10 {
		t.Fatalf("after the takeover the standby counts %v events, want the 10 the leader was not scraped for", got)
	}
	if n := testutil.ToFloat64(b.e.repl.metrics.takeovers.WithLabelValues(TakeoverAdopted)); n != 1 {
		t.Fatalf("takeovers adopted %v, want 1", n)
	}
	b.post(t, pki, batches[2], http.StatusOK) // the API server's retry of a batch the leader counted
	b.post(t, pki, batches[3], http.StatusOK)
	if got := b.counted(); scraped+got != 20 {
		t.Fatalf("the leader's last scrape (%v) and the new leader (%v) count %v events, want 20", scraped, got, scraped+got)
	}
	b.e.Tracker().Flush()
	f := b.e.Tracker().Fights()
	if len(f) != 1 || f[0].Handoffs != 19 {
		t.Fatalf("fights on the new leader %+v, want one of 19 handoffs", f)
	}
}

// TestStandbyAdoptsALeaderThatStepsDown: a leader that stops (a rollout) steps down first, and
// its standby takes over everything it counted since its last scrape.
func TestStandbyAdoptsALeaderThatStepsDown(t *testing.T) {
	pki := newTestPKI(t)
	a, b := startReplica(t, pki, "a"), startReplica(t, pki, "b")
	a.e.Follow(a.identity)
	a.e.Lead()
	b.e.Follow(a.identity)
	waitFor(t, 10*time.Second, "the standby to join", b.e.Ready)
	for _, body := range fightBatches(t, 0, 3, 4) {
		a.post(t, pki, body, http.StatusOK)
	}
	a.stop()
	if got := a.counted(); got != 12 {
		t.Fatalf("leader counted %v, want 12", got)
	}
	b.e.Lead()
	if got := b.counted(); got != 12 {
		t.Fatalf("new leader counts %v, want the 12 the stopped leader was never scraped for", got)
	}
}

// TestStandbyJoiningLateGetsTheUnscrapedIncrementsAndTheWaitingWrites: a standby that joins a
// leader that has counted since its last scrape, with writes still waiting for their turn,
// starts from both.
func TestStandbyJoiningLateGetsTheUnscrapedIncrementsAndTheWaitingWrites(t *testing.T) {
	pki := newTestPKI(t)
	a := startReplica(t, pki, "a")
	a.e.Follow(a.identity)
	a.e.Lead()
	batches := fightBatches(t, 0, 3, 4)
	a.post(t, pki, batches[0], http.StatusOK)
	a.scrape(t, pki)
	a.post(t, pki, batches[1], http.StatusOK)
	b := startReplica(t, pki, "b")
	b.e.Follow(a.identity)
	waitFor(t, 10*time.Second, "the standby to join", b.e.Ready)
	a.post(t, pki, batches[2], http.StatusOK)
	a.crash()
	waitFor(t, 10*time.Second, "the standby to see the stream end", func() bool { return !b.e.Ready() })
	b.e.Lead()
	if got := b.counted(); got != 8 {
		t.Fatalf("new leader counts %v, want the 8 events after the last scrape", got)
	}
	b.e.Tracker().Flush()
	if f := b.e.Tracker().Fights(); len(f) != 1 || f[0].Handoffs < 4 {
		t.Fatalf("fights %+v, want the fight from the writes that were waiting", f)
	}
}

// TestStandbyAnswersNoLeader503: a standby that follows nobody answers a batch 503 (the API
// server retries), and is not ready.
func TestStandbyAnswersNoLeader503(t *testing.T) {
	pki := newTestPKI(t)
	b := startReplica(t, pki, "b")
	if b.e.Ready() {
		t.Fatal("a standby without a leader is ready")
	}
	b.post(t, pki, fightBatches(t, 0, 1, 2)[0], http.StatusServiceUnavailable)
	if n := testutil.ToFloat64(b.e.repl.metrics.forwarded.WithLabelValues(ForwardNoLeader)); n != 1 {
		t.Fatalf("no_leader %v, want 1", n)
	}
}

// TestAPromotedStandbyTakesStandbys: the replica that took over leads like any other: a standby
// joins it (with its waiting writes and unscraped increments) and follows it in step.
func TestAPromotedStandbyTakesStandbys(t *testing.T) {
	pki := newTestPKI(t)
	a, b := startReplica(t, pki, "a"), startReplica(t, pki, "b")
	a.e.Follow(a.identity)
	a.e.Lead()
	b.e.Follow(a.identity)
	waitFor(t, 10*time.Second, "b to join a", b.e.Ready)
	batches := fightBatches(t, 0, 4, 5)
	a.post(t, pki, batches[0], http.StatusOK)
	a.post(t, pki, batches[1], http.StatusOK)
	a.crash()
	waitFor(t, 10*time.Second, "b to see the stream end", func() bool { return !b.e.Ready() })
	b.e.Lead()
	c := startReplica(t, pki, "c")
	c.e.Follow(b.identity)
	waitFor(t, 10*time.Second, "c to join b", c.e.Ready)
	b.post(t, pki, batches[2], http.StatusOK)
	c.post(t, pki, batches[3], http.StatusOK)
	if got := b.counted(); got != 20 {
		t.Fatalf("b counts %v, want 20 (10 adopted, 10 its own)", got)
	}
}
