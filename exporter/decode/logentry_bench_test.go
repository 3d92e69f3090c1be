package decode

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/loopwatch/loopwatch/exporter/internal/cputime"
)

// BenchmarkDecodeLogEntry decodes the GKE form of the real scenario's events (Cloud Storage sink
// lines of ../testdata/providers, about 1.2 KB each) with LogEntryDecoder; run it with
// BenchmarkDecodeNativeLines, the same events as the API server's log lines, to compare in the
// same run. ns/op is per event.
func BenchmarkDecodeLogEntry(b *testing.B) {
	lines := providerLines(b, "../testdata/providers/gke/storage/cloudaudit.googleapis.com/activity/2026/11/23/17-00-00_17-59-59_S0.json")
	d := NewLogEntryDecoder(0, Limits{})
	benchmarkLines(b, lines, func(line []byte, ev *Event) error { return d.Decode(line, ev) })
	if d.d.fallbacks != 0 {
		b.Errorf("%d entries left the fast path", d.d.fallbacks)
	}
}

// BenchmarkDecodeNativeLines decodes the native log of the same events.
func BenchmarkDecodeNativeLines(b *testing.B) {
	lines := providerLines(b, "../testdata/providers/native/audit.jsonl")
	d := NewDecoder(0)
	benchmarkLines(b, lines, d.DecodeEvent)
}

func providerLines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

func benchmarkLines(b *testing.B, lines [][]byte, decode func([]byte, *Event) error) {
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	var ev Event
	b.SetBytes(int64(size / len(lines)))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	c0, p0 := cputime.Thread(), cputime.Process()
	for i := 0; i < b.N; {
		for _, l := range lines {
			if err := decode(l, &ev); err != nil {
				b.Fatal(err)
			}
			if i++; i == b.N {
				break
			}
		}
	}
	reportCPU(b, cputime.Thread()-c0, cputime.Process()-p0)
}
