package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/loopwatch/loopwatch/exporter/internal/cputime"
)

// realBatch returns a webhook body of n real Metadata-level events captured from a
// kube-apiserver (testdata/batch-*.json, repeated with fresh auditIDs to reach n).
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
	var out []json.RawMessage
	for i := 0; len(out) < n; i++ {
		item := items[i%len(items)]
		var ev map[string]any
		if err := json.Unmarshal(item, &ev); err != nil {
			tb.Fatal(err)
		}
		ev["auditID"] = fmt.Sprintf("%08x-%s", i, ev["auditID"].(string)[9:])
		b, _ := json.Marshal(ev)
		out = append(out, b)
	}
	body, err := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{}, "items": out})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// renumber overwrites the first 8 hex digits of every auditID with seq, so that repeated
// batches are new events to the deduplicator.
func renumber(body []byte, seq uint32) {
	key := []byte(`"auditID":"`)
	const hex = "0123456789abcdef"
	for i := 0; ; {
		j := bytes.Index(body[i:], key)
		if j < 0 {
			return
		}
		p := i + j + len(key)
		for k := 0; k < 8; k++ {
			body[p+k] = hex[(seq>>(28-4*k))&0xf]
		}
		i = p + 8
	}
}

// BenchmarkDecodeAndAttribute is the exporter's hot path per event on real events: decode,
// dedupe, attribute, track and count. Compare with BenchmarkEncodingJSONBaseline in the same run.
func BenchmarkDecodeAndAttribute(b *testing.B) {
	const n = 400
	body := realBatch(b, n)
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
	var cpu time.Duration
	for i := 0; i < b.N; i += n {
		seq++
		renumber(body, seq)
		c0 := cputime.Thread()
		if _, err := e.IngestList(body); err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Thread() - c0
	}
	reportCPU(b, cpu)
}

// reportCPU reports the thread CPU time per event and the events per CPU-second: on a shared
// machine wall time (ns/op) includes waiting for a core, CPU time does not.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/cpu-s")
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
	c0 := cputime.Thread()
	for i := 0; i < b.N; i += n {
		var list auditv1.EventList
		if err := json.Unmarshal(body, &list); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cputime.Thread()-c0)
}

// BenchmarkWebhookBatch400 posts 400-event batches over TLS with a client certificate, end to
// end through the HTTP server, and reports the latency percentiles.
func BenchmarkWebhookBatch400(b *testing.B) {
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	ts := &testServer{url: "https://" + l.Addr().String(), pki: pki}
	client := ts.client(&pki.client)
	body := realBatch(b, 400)
	post := func(seq uint32) time.Duration {
		renumber(body, seq)
		start := time.Now()
		resp, err := client.Post(ts.url+WebhookPath, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	for i := range 20 { // warm up: TLS handshake, pools
		post(uint32(1<<31 + i))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		lat = append(lat, post(uint32(i)))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkIngestBatch400 is the server-side share of a webhook request: decoding, dedupe,
// attribution and counting of one 400-event batch, with latency percentiles.
func BenchmarkIngestBatch400(b *testing.B) {
	e, err := New(Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	body := realBatch(b, 400)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		renumber(body, uint32(i))
		start := time.Now()
		if _, err := e.IngestList(body); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
