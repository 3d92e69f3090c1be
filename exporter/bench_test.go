package exporter

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/loopwatch/loopwatch/exporter/internal/cputime"
)

// realBatch returns a webhook body of n real Metadata-level events captured from a
// kube-apiserver (testdata/batch-*.json), byte for byte as the API server wrote them, repeated
// with fresh auditIDs to reach n.
func realBatch(tb testing.TB, n int) []byte {
	tb.Helper()
	files, _ := filepath.Glob("testdata/batch-*.json")
	var items []json.RawMessage
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var list struct{ Items []json.RawMessage }
		if err := json.Unmarshal(b, &list); err != nil {
			tb.Fatal(err)
		}
		items = append(items, list.Items...)
	}
	var body bytes.Buffer
	body.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`)
	for i := range n {
		item := items[i%len(items)]
		var ev struct{ AuditID string }
		if err := json.Unmarshal(item, &ev); err != nil {
			tb.Fatal(err)
		}
		fresh := fmt.Sprintf("%08x%s", i, ev.AuditID[8:])
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(bytes.Replace(item, []byte(ev.AuditID), []byte(fresh), 1))
	}
	body.WriteString("]}")
	return body.Bytes()
}

// renumberer overwrites the first 8 hex digits of every auditID in a body with a sequence number,
// so that repeated batches are new events to the deduplicator, and sets the events' timestamps so
// that batch seq holds the second seq of a steady stream, its events spread over that second in
// order: each batch is then newer than the last, as an API server's are, and the writes go
// through the reorder buffer and out of it 20 batches later as they do in production (with the
// captured times repeated, every batch would be older than the writes already taken). The
// auditIDs and timestamps are located once: the benchmarks' wall times should measure the
// exporter, not the rewriting.
type renumberer struct {
	body    []byte
	offsets []int
	// times are the offsets of the timestamp values (RFC 3339 with microseconds, UTC), secs each
	// one's second of the day in batch 0.
	times []int
	secs  []int64
}

// retimeStart is the time of the first event of batch 0.
var retimeStart = time.Date(2026, 11, 21, 4, 0, 0, 0, time.UTC)

func newRenumberer(body []byte) *renumberer {
	r := &renumberer{body: body}
	key := []byte(`"auditID":"`)
	for i := 0; ; {
		j := bytes.Index(body[i:], key)
		if j < 0 {
			break
		}
		p := i + j + len(key)
		r.offsets = append(r.offsets, p)
		i = p + 8
	}
	const layout = "2006-01-02T15:04:05.000000Z"
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`Timestamp":"`))
		if j < 0 {
			break
		}
		p := i + j + len(`Timestamp":"`)
		if p+len(layout) <= len(body) && body[p+len(layout)-1] == 'Z' && body[p+len(layout)] == '"' {
			r.times = append(r.times, p)
		}
		i = p
	}
	perEvent := 1
	if len(r.offsets) > 0 && len(r.times) >= 2*len(r.offsets) {
		perEvent = 2 // requestReceivedTimestamp and stageTimestamp
	}
	events := max(1, len(r.times)/perEvent)
	for k, p := range r.times {
		at := retimeStart.Add(time.Duration(k/perEvent) * time.Second / time.Duration(events))
		copy(body[p:], at.AppendFormat(nil, layout))
		r.secs = append(r.secs, int64(at.Sub(at.Truncate(24*time.Hour))/time.Second))
	}
	return r
}

func (r *renumberer) renumber(seq uint32) {
	const hex = "0123456789abcdef"
	var digits [8]byte
	for k := range digits {
		digits[k] = hex[(seq>>(28-4*k))&0xf]
	}
	for _, p := range r.offsets {
		copy(r.body[p:p+8], digits[:])
	}
	// HH:MM:SS of batch seq, the date and microseconds as written by newRenumberer (a day holds
	// 86,400 batches, more than any benchmark run makes).
	for k, p := range r.times {
		s := (r.secs[k] + int64(seq)) % 86400
		h, m, sec := s/3600, s/60%60, s%60
		b := r.body[p+11 : p+19]
		b[0], b[1], b[3], b[4], b[6], b[7] = byte('0'+h/10), byte('0'+h%10), byte('0'+m/10), byte('0'+m%10), byte('0'+sec/10), byte('0'+sec%10)
	}
}

// BenchmarkDecodeAndAttribute is the exporter's hot path per event on real events: decode,
// dedupe, attribute, track and count. Compare with BenchmarkEncodingJSONBaseline in the same run.
func BenchmarkDecodeAndAttribute(b *testing.B) {
	const n = 400
	body := realBatch(b, n)
	ids := newRenumberer(body)
	e, err := New(Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body) / n))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	seq := uint32(0)
	var cpu, proc time.Duration
	for i := 0; i < b.N; i += n {
		seq++
		ids.renumber(seq)
		c0, p0 := clockCPU(unix.CLOCK_THREAD_CPUTIME_ID), clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID)
		if _, err := e.IngestList(body); err != nil {
			b.Fatal(err)
		}
		cpu += clockCPU(unix.CLOCK_THREAD_CPUTIME_ID) - c0
		proc += clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID) - p0
	}
	reportCPU(b, cpu, proc)
}

// reportCPU reports per event the benchmark thread's CPU time (cpu-ns/event) and the whole
// process's (proc-cpu-ns/event, which includes the garbage collector's workers on other threads),
// and the events per process CPU-second: on a shared machine wall time (ns/op) includes waiting
// for a core, CPU time does not.
func reportCPU(b *testing.B, cpu, proc time.Duration) {
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(proc.Nanoseconds())/float64(b.N), "proc-cpu-ns/event")
	b.ReportMetric(float64(b.N)/proc.Seconds(), "events/cpu-s")
}

// BenchmarkEncodingJSONBaseline decodes the same events with encoding/json into the API
// server's own auditv1.EventList, per event.
func BenchmarkEncodingJSONBaseline(b *testing.B) {
	const n = 400
	body := realBatch(b, n)
	b.SetBytes(int64(len(body) / n))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	c0, p0 := cputime.Thread(), cputime.Process()
	for i := 0; i < b.N; i += n {
		var list auditv1.EventList
		if err := json.Unmarshal(body, &list); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cputime.Thread()-c0, cputime.Process()-p0)
}

// BenchmarkWebhookBatch400 posts 400-event batches over TLS with a client certificate, end to
// end through the HTTP server, and reports latency percentiles: the client's round trip in wall
// time (p50-ms, p99-ms: the client's encryption included), the CPU time the whole process spent
// per request (proc-cpu-: client and server, which on a busy machine is the part that does not
// depend on waiting for a core), and the server's handling time (server-: from the handler's start
// through receiving and decrypting the body, decoding and tracking, to the answer), which
// loopwatch_audit_request_seconds reports in production.
func BenchmarkWebhookBatch400(b *testing.B) {
	wh := startBenchWebhook(b)
	client := (&testServer{pki: wh.pki}).client(&wh.pki.client)
	body := realBatch(b, 400)
	ids := newRenumberer(body)
	post := func(seq uint32) (wall, cpu time.Duration) {
		ids.renumber(seq)
		start, c0 := time.Now(), clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID)
		resp, err := client.Post(wh.url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start), clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID) - c0
	}
	const warmup = 20
	for i := range warmup { // warm up: TLS handshake, pools
		post(uint32(i))
	}
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	wh.takeHandled()
	b.ResetTimer()
	for i := range b.N {
		w, c := post(uint32(warmup + i))
		lat, cpu = append(lat, w), append(cpu, c)
	}
	b.StopTimer()
	reportPercentiles(b, "", lat)
	reportPercentiles(b, "proc-cpu-", cpu)
	reportPercentiles(b, "server-", wh.takeHandled())
}

// benchWebhook is an exporter's TLS webhook (client certificates from pki) for the benchmarks,
// recording each request's handling time.
type benchWebhook struct {
	url     string // the webhook's URL
	pki     *testPKI
	mu      sync.Mutex
	handled []time.Duration
}

func startBenchWebhook(b *testing.B) *benchWebhook {
	pki := newTestPKI(b)
	e, err := New(Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{
		Addr: "127.0.0.1:0", TLSCertFile: pki.certFile, TLSKeyFile: pki.keyFile, ClientCAFile: pki.caFile,
		Logger: slog.New(slog.DiscardHandler),
	}, e)
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	wh := &benchWebhook{url: "https://" + l.Addr().String() + WebhookPath, pki: pki}
	srv.handled = func(d time.Duration) {
		wh.mu.Lock()
		wh.handled = append(wh.handled, d)
		wh.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	b.Cleanup(func() { cancel(); <-done })
	return wh
}

// takeHandled returns the handling times recorded since the last call.
func (wh *benchWebhook) takeHandled() []time.Duration {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	out := wh.handled
	wh.handled = nil
	return out
}

// BenchmarkWebhookBatch400ClientProcess is BenchmarkWebhookBatch400 with the client in a process of
// its own, as the API server is: the exporter's process does only the exporter's work (its Go
// scheduler and garbage collector are not shared with the client's), and the server's handling
// time (server-) is measured there. The client's round trip (client-) is measured in the child.
func BenchmarkWebhookBatch400ClientProcess(b *testing.B) {
	wh := startBenchWebhook(b)
	pki := wh.pki
	dir := b.TempDir()
	bodyFile, outFile := filepath.Join(dir, "body.json"), filepath.Join(dir, "latencies")
	if err := os.WriteFile(bodyFile, realBatch(b, 400), 0o600); err != nil {
		b.Fatal(err)
	}
	const warmup = 20
	cmd := exec.Command(os.Args[0], "-test.run=^TestWebhookClientProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"LOOPWATCH_BENCH_CLIENT="+strings.Join([]string{
			wh.url, pki.caFile, pki.clientCertFile, pki.clientKeyFile,
			bodyFile, outFile, strconv.Itoa(warmup + b.N),
		}, ","))
	b.ResetTimer()
	out, err := cmd.CombinedOutput()
	b.StopTimer()
	if err != nil {
		b.Fatalf("client process: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(outFile)
	if err != nil {
		b.Fatal(err)
	}
	var client []time.Duration
	for _, f := range strings.Fields(string(raw)) {
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		client = append(client, time.Duration(ns))
	}
	handled := wh.takeHandled()
	if len(client) != warmup+b.N || len(handled) != warmup+b.N {
		b.Fatalf("%d client and %d server latencies for %d requests", len(client), len(handled), warmup+b.N)
	}
	reportPercentiles(b, "client-", client[warmup:])
	reportPercentiles(b, "server-", handled[warmup:])
}

// TestWebhookClientProcess is BenchmarkWebhookBatch400ClientProcess's client, run in a child
// process: it posts the body (with fresh auditIDs each time) the given number of times over TLS
// with the client certificate and writes each round trip's nanoseconds to the output file.
func TestWebhookClientProcess(t *testing.T) {
	spec := os.Getenv("LOOPWATCH_BENCH_CLIENT")
	if spec == "" {
		t.Skip("the client of BenchmarkWebhookBatch400ClientProcess")
	}
	f := strings.Split(spec, ",")
	if len(f) != 7 {
		t.Fatalf("LOOPWATCH_BENCH_CLIENT: want url,ca,cert,key,body,out,count, got %q", spec)
	}
	url, caFile, certFile, keyFile, bodyFile, outFile := f[0], f[1], f[2], f[3], f[4], f[5]
	n, err := strconv.Atoi(f[6])
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
	}, Timeout: 10 * time.Second}
	ids := newRenumberer(body)
	var out strings.Builder
	for i := range n {
		ids.renumber(uint32(i))
		start := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		fmt.Fprintln(&out, time.Since(start).Nanoseconds())
	}
	if err := os.WriteFile(outFile, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkIngestBatch400 is the server-side share of a webhook request: decoding, dedupe,
// attribution and counting of one 400-event batch, with wall-time and thread CPU-time
// latency percentiles.
func BenchmarkIngestBatch400(b *testing.B) {
	e, err := New(Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	body := realBatch(b, 400)
	ids := newRenumberer(body)
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := range b.N {
		ids.renumber(uint32(i))
		start, c0 := time.Now(), clockCPU(unix.CLOCK_THREAD_CPUTIME_ID)
		if _, err := e.IngestList(body); err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, clockCPU(unix.CLOCK_THREAD_CPUTIME_ID)-c0)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, "", lat)
	reportPercentiles(b, "cpu-", cpu)
}

// clockCPU reads a CPU-time clock (CLOCK_THREAD_CPUTIME_ID or CLOCK_PROCESS_CPUTIME_ID) to the
// nanosecond: getrusage, which cputime uses, only advances at scheduler ticks (4 ms here), fine
// for totals over seconds but too coarse for one batch.
func clockCPU(clock int32) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// reportPercentiles reports the median and 99th percentile of d in milliseconds, as
// <prefix>p50-ms and <prefix>p99-ms.
func reportPercentiles(b *testing.B, prefix string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), prefix+"p50-ms")
	b.ReportMetric(q(0.99), prefix+"p99-ms")
}

// BenchmarkHostileBatches decodes, dedupes and tracks batches built to cost as much as possible,
// beside the typical one (real events) in the same run: the cost of each is bounded per byte
// (MB/s), and none allocates per event. Each body holds fresh auditIDs each time where it has
// them, so that deduplication does not short-cut the work.
func BenchmarkHostileBatches(b *testing.B) {
	var long = strings.Repeat("u", 64<<10)
	list := func(items []string) []byte {
		return []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`)
	}
	event := func(i int, user, name string) string {
		return fmt.Sprintf(`{"level":"Metadata","auditID":"%08x-0000-4000-8000-000000000000","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/configmaps/%s?fieldManager=m","verb":"patch","user":{"username":"%s","groups":["system:authenticated"]},"objectRef":{"resource":"configmaps","namespace":"ns","name":"%s","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T04:04:45.744196Z","stageTimestamp":"2026-11-21T04:04:45.745733Z"}`, i, name, user, name)
	}
	repeat := func(n int, f func(i int) string) []byte {
		items := make([]string, n)
		for i := range items {
			items[i] = f(i)
		}
		return list(items)
	}
	cases := []struct {
		name string
		body []byte
	}{
		{"typical 400 real events", realBatch(b, 400)},
		{"10000 empty events", repeat(DefaultMaxBatchEvents, func(int) string { return `{}` })},
		{"10000 events with nothing to attribute", repeat(DefaultMaxBatchEvents, func(int) string { return `{"stage":"ResponseComplete","verb":"patch"}` })},
		{"400 distinct creates sharing one auditID", repeat(400, func(i int) string {
			return strings.Replace(event(0, "system:serviceaccount:ns:sneaky", fmt.Sprint("cm-", i)), `"verb":"patch"`, `"verb":"create"`, 1)
		})},
		{"100 events with 64 KiB usernames", repeat(100, func(i int) string { return event(i, fmt.Sprint(long, i), fmt.Sprint("cm-", i)) })},
		{"400 events with escaped names", repeat(400, func(i int) string {
			return event(i, `system:serviceaccount:ns:\u0063tl`, fmt.Sprintf(`cm-\u00e9-%d`, i))
		})},
		{"400 events with every member out of order", repeat(400, func(i int) string {
			return fmt.Sprintf(`{"stageTimestamp":"2026-11-21T04:04:45.745733Z","objectRef":{"name":"cm-%d","resource":"configmaps","namespace":"ns"},"user":{"username":"system:serviceaccount:ns:ctl"},"verb":"patch","stage":"ResponseComplete","auditID":"%08x"}`, i, i)
		})},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			e, err := New(Config{Registerer: prometheus.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			body := append([]byte(nil), tc.body...)
			ids := newRenumberer(body)
			if _, err := e.IngestList(body); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				ids.renumber(uint32(i + 1))
				if _, err := e.IngestList(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
