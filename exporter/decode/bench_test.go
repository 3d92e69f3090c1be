package decode

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/loopwatch/loopwatch/exporter/internal/cputime"
)

// BenchmarkDecodeList decodes real Metadata-level batches; compare with BenchmarkEncodingJSON,
// the baseline, in the same run. ns/op is per event (b.N counts events).
func BenchmarkDecodeList(b *testing.B) { benchmarkDecodeList(b, false) }

// BenchmarkDecodeListGeneralPath decodes the same batches with the fast path turned off: what
// an event costs when it does not fit the API server's form.
func BenchmarkDecodeListGeneralPath(b *testing.B) { benchmarkDecodeList(b, true) }

func benchmarkDecodeList(b *testing.B, generalOnly bool) {
	data := readBatches(b)["batch-00.json"]
	d := NewDecoder(0)
	d.generalOnly = generalOnly
	events, _ := d.DecodeList(data)
	n := len(events)
	b.SetBytes(int64(len(data) / n))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	c0, p0 := cputime.Thread(), cputime.Process()
	for i := 0; i < b.N; i += n {
		if _, err := d.DecodeList(data); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cputime.Thread()-c0, cputime.Process()-p0)
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
	c0, p0 := cputime.Thread(), cputime.Process()
	for i := 0; i < b.N; i += n {
		var list auditv1.EventList
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cputime.Thread()-c0, cputime.Process()-p0)
}

// reportCPU reports per event the benchmark thread's CPU time (cpu-ns/event) and the whole
// process's (proc-cpu-ns/event), which includes the garbage collector's workers on other threads.
func reportCPU(b *testing.B, thread, process time.Duration) {
	b.ReportMetric(float64(thread.Nanoseconds())/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(process.Nanoseconds())/float64(b.N), "proc-cpu-ns/event")
}
