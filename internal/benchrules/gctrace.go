package benchrules

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"
)

// GCCycle is one garbage collection cycle of Prometheus, from the Go runtime's trace: when it
// started and how long it took from sweep termination to the end of mark termination. While a
// cycle marks, a quarter of the CPUs mark and a goroutine that allocates helps (mark assists):
// an evaluation that runs then takes longer.
type GCCycle struct {
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// gctraceEnv asks Prometheus' Go runtime for a line per garbage collection cycle, keeping any
// GODEBUG setting of the benchmark's environment.
func gctraceEnv() []string {
	if v := os.Getenv("GODEBUG"); v != "" {
		return []string{"GODEBUG=" + v + ",gctrace=1"}
	}
	return []string{"GODEBUG=gctrace=1"}
}

// gctraceLine is the start of the runtime's line: "gc 7 @12.345s 1%: 0.02+41+0.03 ms clock, ...":
// the cycle's number, its start since the process started, and the wall-clock time of its
// three phases (stop-the-world sweep termination, concurrent mark, stop-the-world mark
// termination).
var gctraceLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s \d+%: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock`)

// parseGCTrace returns the cycles the trace lines of a log record (other lines are skipped);
// started is when the process started, what the lines count from.
func parseGCTrace(r io.Reader, started time.Time) ([]GCCycle, error) {
	var out []GCCycle
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := gctraceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var v [4]float64
		for i := range v {
			f, err := strconv.ParseFloat(m[i+1], 64)
			if err != nil {
				return nil, fmt.Errorf("gctrace line %q: %w", sc.Text(), err)
			}
			v[i] = f
		}
		out = append(out, GCCycle{
			Start:   started.Add(time.Duration(v[0] * float64(time.Second))),
			Seconds: (v[1] + v[2] + v[3]) / 1000,
		})
	}
	return out, sc.Err()
}

// gcCyclesBetween reads Prometheus' log for the cycles that overlap [from, to].
func gcCyclesBetween(logPath string, started, from, to time.Time) ([]GCCycle, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("read garbage collection trace: %w", err)
	}
	defer func() { _ = f.Close() }()
	all, err := parseGCTrace(f, started)
	if err != nil {
		return nil, fmt.Errorf("read garbage collection trace in %s: %w", logPath, err)
	}
	var out []GCCycle
	for _, c := range all {
		if c.Start.Before(to) && c.end().After(from) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (c GCCycle) end() time.Time { return c.Start.Add(seconds(c.Seconds)) }
