package track

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// nopSink takes observations and keeps nothing: the benchmark measures the tracker alone.
type nopSink struct{}

func (nopSink) Write(*Observation) {}
func (nopSink) Read(*Observation)  {}
func (nopSink) Handoff(*Handoff)   {}
func (nopSink) Demoted(string)     {}

// BenchmarkObserveBatch tracks 400 real events (the captured webhook batches, decoded once) per
// operation: attribution, the reorder buffer, the object table, fights, hot objects and races,
// without decoding, deduplication or metrics. ns/op is per batch.
func BenchmarkObserveBatch(b *testing.B) {
	files, _ := filepath.Glob("../testdata/batch-*.json")
	var items [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		start, end := bytes.Index(data, []byte(`"items":[`))+len(`"items":[`), bytes.LastIndex(data, []byte("]"))
		items = append(items, data[start:end])
	}
	var body bytes.Buffer
	body.WriteString(`{"items":[`)
	for n := 0; n < 400; {
		for _, it := range items {
			if n > 0 {
				body.WriteByte(',')
			}
			body.Write(it)
			n += bytes.Count(it, []byte(`"auditID"`))
		}
	}
	body.WriteString("]}")
	events, err := decode.NewDecoder(0).DecodeList(body.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	// Each batch holds the next second of a steady stream, its events spread over it in order (as
	// an API server's batches are), so that the writes go through the reorder buffer and out of
	// it 20 batches later.
	start := events[0].StageTimestamp.Truncate(time.Second)
	for i := range events {
		at := start.Add(time.Duration(i) * time.Second / time.Duration(len(events)))
		events[i].StageTimestamp, events[i].RequestReceived = at, at
	}
	now := start
	tr, err := New(Config{Now: func() time.Time { return now }}, nopSink{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range events {
			events[i].StageTimestamp = events[i].StageTimestamp.Add(time.Second)
		}
		now = now.Add(time.Second)
		tr.ObserveBatch(events, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
}
