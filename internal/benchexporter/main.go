// Command benchexporter is `make bench-exporter`: it runs the audit exporter's decoder and
// pipeline benchmarks several times, with their encoding/json baselines in the same invocation,
// and writes the table of docs/performance.md ("What the audit exporter costs") from the medians,
// keeping every run's figures in docs/results/bench-exporter.json.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/loopwatch/loopwatch/internal/results"
)

// Table is the exporter's table in docs/performance.md.
var Table = results.Table{Name: "bench-exporter", Page: "docs/performance.md", Command: "make bench-exporter"}

// row is one line of the table: a benchmark, the metrics shown for it and, for a ratio, the
// baseline it is set against (the same metrics, the same run).
type row struct {
	// What says what the benchmark measures, for a reader.
	What string
	// Pkg and Bench name the benchmark (Bench as go test prints it, without the -N suffix).
	Pkg, Bench string
	// Baseline, when set, is the benchmark of the same package the row is a ratio to.
	Baseline string
	// Metrics are the units shown, in order.
	Metrics []string
}

// rows are the table's lines; the benchmarks run are theirs and their baselines.
var rows = []row{
	{What: "decoding alone: the decoder vs `encoding/json` into the API server's own types (real Metadata events, ~815 B each)",
		Pkg: "./exporter/decode", Bench: "BenchmarkDecodeList", Baseline: "BenchmarkEncodingJSON",
		Metrics: []string{"cpu-ns/event", "proc-cpu-ns/event", "allocs/op"}},
	{What: "the whole pipeline per event: decode, dedupe, attribute, track, count (400-event batches) vs `encoding/json`'s decoding alone",
		Pkg: "./exporter", Bench: "BenchmarkDecodeAndAttribute", Baseline: "BenchmarkEncodingJSONBaseline",
		Metrics: []string{"cpu-ns/event", "proc-cpu-ns/event", "events/cpu-s"}},
	{What: "one 400-event batch, decoded and tracked: latency by the thread's CPU clock and by the wall clock",
		Pkg: "./exporter", Bench: "BenchmarkIngestBatch400",
		Metrics: []string{"cpu-p50-ms", "cpu-p99-ms", "p99-ms"}},
	{What: "a 400-event batch over TLS with a client certificate, client in the same process: the server's handling (what `loopwatch_audit_request_seconds` reports) and the client's round trip",
		Pkg: "./exporter", Bench: "BenchmarkWebhookBatch400",
		Metrics: []string{"server-p50-ms", "server-p99-ms", "p99-ms"}},
	{What: "memory per tracked object (the per-object table full)",
		Pkg: "./exporter/track", Bench: "BenchmarkBytesPerTrackedObject",
		Metrics: []string{"bytes/obj"}},
}

// Run is what one `make bench-exporter` measured: every run of every benchmark.
type Run struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel,omitempty"`
	Go       string `json:"go"`
	Count    int    `json:"count"`
	// Results maps "<pkg> <benchmark>" to its runs, each a map of unit to value.
	Results map[string][]map[string]float64 `json:"results"`
}

func main() {
	count := flag.Int("count", 5, "runs of each benchmark")
	benchtime := flag.String("benchtime", "2s", "go test -benchtime")
	root := flag.String("results", ".", "repository root: where docs/performance.md and docs/results/ are")
	flag.Parse()
	if err := run(*root, *count, *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "bench-exporter:", err)
		os.Exit(1)
	}
}

func run(root string, count int, benchtime string) error {
	r := Run{CPUs: runtime.NumCPU(), CPUModel: results.CPUModel(), Go: runtime.Version(), Count: count, Results: map[string][]map[string]float64{}}
	for _, pkg := range packages() {
		var names []string
		for _, rw := range rows {
			if rw.Pkg == pkg {
				names = append(names, rw.Bench)
				if rw.Baseline != "" {
					names = append(names, rw.Baseline)
				}
			}
		}
		// -p 1 and one package at a time: the benchmarks and their baselines share no core with
		// other test binaries.
		cmd := exec.Command("go", "test", "-p", "1", "-run", "^$", "-bench", "^("+strings.Join(names, "|")+")$",
			"-benchtime", benchtime, "-count", strconv.Itoa(count), pkg)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout = io.MultiWriter(&out, os.Stderr)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go test -bench %s: %w", pkg, err)
		}
		for name, runs := range parse(&out) {
			r.Results[pkg+" "+name] = append(r.Results[pkg+" "+name], runs...)
		}
	}
	body, err := render(r)
	if err != nil {
		return err
	}
	fmt.Print(body)
	return Table.Write(root, r, body)
}

// packages lists the rows' packages once each, in the rows' order.
func packages() []string {
	var out []string
	for _, rw := range rows {
		if !slices.Contains(out, rw.Pkg) {
			out = append(out, rw.Pkg)
		}
	}
	return out
}

// parse reads go test's benchmark lines: "BenchmarkX-2  N  v1 unit1  v2 unit2 ...", one map of
// unit to value per line, by benchmark name without its -GOMAXPROCS suffix.
func parse(r io.Reader) map[string][]map[string]float64 {
	out := map[string][]map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			m[f[i+1]] = v
		}
		out[name] = append(out[name], m)
	}
	return out
}

// render writes the table from the runs' medians.
func render(r Run) (string, error) {
	var b strings.Builder
	b.WriteString("| benchmark | what | median of the runs | vs the baseline, same run |\n|---|---|---|---|\n")
	for _, rw := range rows {
		runs := r.Results[rw.Pkg+" "+rw.Bench]
		if len(runs) == 0 {
			return "", fmt.Errorf("no runs of %s in %s", rw.Bench, rw.Pkg)
		}
		var cells, ratios []string
		for _, unit := range rw.Metrics {
			v, ok := median(runs, unit)
			if !ok {
				return "", fmt.Errorf("%s reported no %s", rw.Bench, unit)
			}
			cells = append(cells, format(v)+" "+unit)
			if rw.Baseline == "" || unit == "allocs/op" {
				continue
			}
			base, ok := median(r.Results[rw.Pkg+" "+rw.Baseline], unit)
			if !ok || v == 0 {
				return "", fmt.Errorf("%s reported no %s", rw.Baseline, unit)
			}
			ratio := base / v
			if strings.HasSuffix(unit, "/cpu-s") {
				ratio = v / base
			}
			ratios = append(ratios, fmt.Sprintf("%s %.1f× (`%s`: %s)", unit, ratio, rw.Baseline, format(base)))
		}
		vs := "—"
		if len(ratios) > 0 {
			vs = strings.Join(ratios, "; ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", rw.Bench, rw.What, strings.Join(cells, ", "), vs)
	}
	machine := fmt.Sprintf("%d CPUs", r.CPUs)
	if r.CPUModel != "" {
		machine += " (" + r.CPUModel + ")"
	}
	fmt.Fprintf(&b, "\nMedians of %d runs of each benchmark (`-benchtime 2s`, one package at a time), %s, %s.\n", r.Count, machine, r.Go)
	return b.String(), nil
}

func median(runs []map[string]float64, unit string) (float64, bool) {
	var vs []float64
	for _, m := range runs {
		if v, ok := m[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// format prints a figure with three significant digits at most, thousands grouped.
func format(v float64) string {
	switch {
	case v >= 1000:
		s := strconv.FormatFloat(v, 'f', 0, 64)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
