package decode

import (
	"encoding/json"
	"runtime"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/loopwatch/loopwatch/exporter/internal/cputime"
)

// BenchmarkDecodeList decodes real Metadata-level batches; compare with BenchmarkEncodingJSON,
// the baseline, in the same run. ns/op is per event (b.N counts events).
func BenchmarkDecodeList(b *testing.B) {
	data := readBatches(b)["batch-00.json"]
	d := NewDecoder(0)
	events, _ := d.DecodeList(data)
	n := len(events)
	b.SetBytes(int64(len(data) / n))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	c0 := cputime.Thread()
	for i := 0; i < b.N; i += n {
		if _, err := d.DecodeList(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cputime.Thread()-c0).Nanoseconds())/float64(b.N), "cpu-ns/event")
}

// BenchmarkEncodingJSON is the baseline: encoding/json into auditv1.EventList, per event.
func BenchmarkEncodingJSON(b *testing.B) {
	data := readBatches(b)["batch-00.json"]
	var probe auditv1.EventList
	if err := json.Unmarshal(data, &probe); err != nil {
		b.Fatal(err)
	}
	n := len(probe.Items)
	b.SetBytes(int64(len(data) / n))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	c0 := cputime.Thread()
	for i := 0; i < b.N; i += n {
		var list auditv1.EventList
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cputime.Thread()-c0).Nanoseconds())/float64(b.N), "cpu-ns/event")
}
