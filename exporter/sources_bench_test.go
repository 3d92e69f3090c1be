package exporter

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/managed"
	"github.com/loopwatch/loopwatch/exporter/managed/forms"
)

// BenchmarkSources measures each managed-cluster source against the webhook path, on the same
// 400 real events (testdata/batch-*.json) written in each provider's form by package forms:
//
//   - decode/<source>: the envelope, its layers (base64, gzip) and the events, into decode.Event;
//   - pipeline/<source>: the same, then deduplication, attribution, tracking and counters
//     (Exporter.ObserveEvents; the webhook's is Exporter.IngestList).
//
// Deduplication is off, so that every iteration tracks every event (the bodies repeat). ns/op is
// per event (b.N counts events), cpu-ns/event the benchmark thread's CPU time, proc-cpu-ns/event
// the process's (garbage collection included).
func BenchmarkSources(b *testing.B) {
	const n = 400
	body := realBatch(b, n)
	evs := nativeEventsOf(b, body)
	c := forms.DefaultCluster
	entries, err := c.LogEntries(evs)
	if err != nil {
		b.Fatal(err)
	}
	type source struct {
		name   string
		bodies [][]byte
		read   func(d *managed.Decoder, body []byte) error
	}
	sources := []source{
		{"webhook", [][]byte{body}, nil},
		// Firehose: CloudWatch payloads of 100 log events (subscriptions batch up to 10 000), one
		// request for the batch (after the subscription's control message record).
		{"eks-firehose", c.FirehoseBodies(evs, 100, 1000), func(d *managed.Decoder, b []byte) error { _, err := d.Firehose(b); return err }},
		// Pub/Sub: one push per entry.
		{"gke-pubsub", c.PubSubPushes(entries), func(d *managed.Decoder, b []byte) error { _, err := d.PubSubPush(b); return err }},
		// Event Hubs: bodies of 100 records.
		{"aks-eventhub", c.EventHubBodies(evs, 100), func(d *managed.Decoder, b []byte) error { return d.EventHubBody(b) }},
	}
	for _, stage := range []string{"decode", "pipeline"} {
		for _, src := range sources {
			b.Run(stage+"/"+src.name, func(b *testing.B) {
				e, err := New(Config{Registerer: prometheus.NewRegistry(), DedupeSize: -1})
				if err != nil {
					b.Fatal(err)
				}
				native := decode.NewLimitedDecoder(0, e.limits)
				d := managed.NewDecoder(managed.Limits{MaxValueBytes: e.limits.MaxValueBytes})
				size := 0
				for _, body := range src.bodies {
					size += len(body)
				}
				one := func() int {
					events := 0
					if src.read == nil {
						if stage == "pipeline" {
							k, err := e.IngestList(body)
							if err != nil {
								b.Fatal(err)
							}
							return k
						}
						list, err := native.DecodeList(body)
						if err != nil {
							b.Fatal(err)
						}
						return len(list)
					}
					for _, body := range src.bodies {
						d.Reset()
						if err := src.read(d, body); err != nil {
							b.Fatal(err)
						}
						if stage == "pipeline" {
							e.ObserveEvents(d.Events)
						}
						events += len(d.Events)
					}
					return events
				}
				if k := one(); k != n {
					b.Fatalf("%d events per round, want %d", k, n)
				}
				b.SetBytes(int64(size / n))
				b.ReportAllocs()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.ResetTimer()
				var cpu, proc time.Duration
				for i := 0; i < b.N; i += n {
					c0, p0 := clockCPU(unix.CLOCK_THREAD_CPUTIME_ID), clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID)
					one()
					cpu += clockCPU(unix.CLOCK_THREAD_CPUTIME_ID) - c0
					proc += clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID) - p0
				}
				reportCPU(b, cpu, proc)
			})
		}
	}
}

// nativeEventsOf turns a webhook body's items into the log backend's lines (TypeMeta first, as
// the log backend writes it) and parses them for package forms.
func nativeEventsOf(tb testing.TB, body []byte) []forms.Event {
	tb.Helper()
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &list); err != nil {
		tb.Fatal(err)
	}
	var log bytes.Buffer
	for _, item := range list.Items {
		log.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1",`)
		log.Write(item[1:])
		log.WriteByte('\n')
	}
	evs, err := forms.ParseLines(log.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}
