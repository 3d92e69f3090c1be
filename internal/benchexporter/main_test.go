package main

import (
	"strings"
	"testing"
)

func TestParseReadsEveryUnit(t *testing.T) {
	out := `goos: linux
BenchmarkDecodeList-2   	 5000000	       480.5 ns/op	 1697.00 MB/s	       474.0 cpu-ns/event	       476.0 proc-cpu-ns/event	       0 B/op	       0 allocs/op
BenchmarkDecodeList-2   	 5000000	       490.5 ns/op	 1697.00 MB/s	       478.0 cpu-ns/event	       481.0 proc-cpu-ns/event	       0 B/op	       0 allocs/op
BenchmarkEncodingJSON-2 	  200000	     10000 ns/op	       10128 cpu-ns/event	       10776 proc-cpu-ns/event	    2500 B/op	      34 allocs/op
PASS
ok  	github.com/loopwatch/loopwatch/exporter/decode	12.3s
`
	got := parse(strings.NewReader(out))
	if len(got["BenchmarkDecodeList"]) != 2 || got["BenchmarkDecodeList"][1]["cpu-ns/event"] != 478 {
		t.Errorf("DecodeList runs = %v", got["BenchmarkDecodeList"])
	}
	if got["BenchmarkEncodingJSON"][0]["allocs/op"] != 34 {
		t.Errorf("EncodingJSON = %v", got["BenchmarkEncodingJSON"])
	}
}

func TestRenderRefusesAMissingBenchmark(t *testing.T) {
	if _, err := render(Run{Results: map[string][]map[string]float64{}}); err == nil {
		t.Error("render of no runs succeeded")
	}
}

// TestPerformancePageHoldsTheExporterTable checks that docs/performance.md shows what the last
// `make bench-exporter` measured, as render writes it: the table is the command's, not a hand
// edit.
func TestPerformancePageHoldsTheExporterTable(t *testing.T) {
	var r Run
	if err := Table.Load("../..", &r); err != nil {
		t.Fatal(err)
	}
	body, err := render(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := Table.Check("../..", body); err != nil {
		t.Error(err)
	}
}
