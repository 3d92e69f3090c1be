package track

import (
	"runtime"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// BenchmarkBytesPerTrackedObject fills a tracker's object table and reports the heap it takes
// per tracked object (metric bytes/obj).
func BenchmarkBytesPerTrackedObject(b *testing.B) {
	const objects = 1 << 16
	names := make([]string, 2*objects) // twice the capacity: the table ends full
	for i := range names {
		names[i] = "obj-" + string(rune('a'+i%26)) + itoa(i)
	}
	b.ResetTimer()
	for range b.N {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		tr, err := New(Config{MaxObjects: objects, ReorderWait: -1, Now: func() time.Time { return t0 }}, &labelSink{labels: map[string]struct{}{}})
		if err != nil {
			b.Fatal(err)
		}
		for i, n := range names {
			ev := decode.Event{Verb: "update", Stage: decode.StageResponseComplete, Code: 200, Username: "u", Resource: "configmaps", Namespace: "ns", Name: n, StageTimestamp: t0.Add(time.Duration(i) * time.Microsecond)}
			tr.observe(&ev, t0, tr.hashesOf(&ev))
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		live := tr.Stats().TrackedObjects
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(live), "bytes/obj")
		b.ReportMetric(float64(live)/float64(len(tr.objects.slots)), "occupancy")
		runtime.KeepAlive(tr)
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}
