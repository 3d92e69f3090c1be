// Command coldstart is `make cold-start`: what a newcomer waits for. It clones the repository's
// committed HEAD into a throwaway directory, points the Go module and build caches at empty
// throwaway directories, runs `make demo` there as a newcomer would, and reports when the first
// alert fired and where the time went: each build (from the Makefile's TIMING_LOG), the
// control plane's start and the scene. The result goes to the README's first-alert sentence and
// to docs/testing.md's table, with what was measured in docs/results/cold-start.json.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loopwatch/loopwatch/internal/results"
)

// The tables the measurement writes: a sentence in the README, the steps in docs/testing.md.
var (
	Headline = results.Table{Name: "cold-start", Page: "README.md", Command: "make cold-start"}
	Steps    = results.Table{Name: "cold-start-steps", Page: "docs/testing.md", Command: "make cold-start"}
)

// Run is what one cold start measured.
type Run struct {
	Scenario string `json:"scenario"`
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel,omitempty"`
	Go       string `json:"go"`
	// LoadBefore is the 1-minute load average when the run started: a busy machine slows it.
	LoadBefore float64 `json:"loadBefore"`
	// FirstAlert is the time from `make demo`'s start to the first FIRING line, in seconds.
	FirstAlert float64 `json:"firstAlert"`
	// FirstAlertName is what fired first; empty when no alert fired.
	FirstAlertName string `json:"firstAlertName,omitempty"`
	// Total is make demo's whole run, in seconds.
	Total float64 `json:"total"`
	// Steps are the builds and the demo's phases, in the order they started.
	Steps []Step `json:"steps"`
	// Passed reports whether make demo exited 0.
	Passed bool `json:"passed"`
}

// Step is one build or phase, in seconds from make demo's start.
type Step struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

func main() {
	scenario := flag.String("scenario", "write-fight", "the demo's scenario")
	root := flag.String("results", "", "repository root: write the README's sentence and docs/testing.md's table there")
	keep := flag.Bool("keep", false, "keep the throwaway clone and caches")
	flag.Parse()
	if err := run(*scenario, *root, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "cold-start:", err)
		os.Exit(1)
	}
}

// run measures the demo's cold start and, with a root, writes its tables there.
func run(scenario, root string, keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := measure(ctx, scenario, keep)
	if err != nil {
		return err
	}
	fmt.Print("\n" + renderSteps(r))
	if root != "" {
		if err := write(root, r); err != nil {
			return err
		}
	}
	if !r.Passed {
		return errors.New("the demo failed; its steps are above")
	}
	return nil
}

func write(root string, r Run) error {
	if err := Headline.Write(root, r, renderHeadline(r)); err != nil {
		return err
	}
	return Steps.WriteBody(root, renderSteps(r))
}

func measure(ctx context.Context, scenario string, keep bool) (Run, error) {
	r := Run{Scenario: scenario, CPUs: runtime.NumCPU(), CPUModel: results.CPUModel(), Go: runtime.Version(), LoadBefore: loadAverage()}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return r, fmt.Errorf("find the repository: %w", err)
	}
	tmp, err := os.MkdirTemp("", "loopwatch-cold-start-")
	if err != nil {
		return r, err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
		// The module cache is read-only; make it removable.
		defer exec.Command("chmod", "-R", "u+w", tmp).Run() //nolint:errcheck // best effort before RemoveAll
	}
	clone := filepath.Join(tmp, "loopwatch")
	if out, err := exec.CommandContext(ctx, "git", "clone", "--quiet", "--no-hardlinks", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		return r, fmt.Errorf("git clone: %w: %s", err, out)
	}
	timing := filepath.Join(tmp, "timing.log")
	cmd := exec.CommandContext(ctx, "make", "demo", "SCENARIO="+scenario, "TIMING_LOG="+timing)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(),
		"GOPATH="+filepath.Join(tmp, "gopath"),
		"GOMODCACHE="+filepath.Join(tmp, "gomodcache"),
		"GOCACHE="+filepath.Join(tmp, "gocache"),
		"GOFLAGS=", "GOTOOLCHAIN=local", "LOOPWATCH_BIN=", "KUBEBUILDER_ASSETS=",
	)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	phases := scan(out, start, &r)
	err = cmd.Wait()
	r.Total = since(start)
	r.Passed = err == nil
	builds, terr := readTiming(timing, start)
	if terr != nil {
		return r, terr
	}
	r.Steps = slices.Concat(builds, phases)
	slices.SortStableFunc(r.Steps, func(a, b Step) int { return int((a.Start - b.Start) * 1000) })
	if err != nil && r.FirstAlertName == "" {
		return r, fmt.Errorf("make demo: %w", err)
	}
	return r, nil
}

// marks are the demo's lines that start or end a phase.
var marks = []struct{ prefix, phase string }{
	{"starting etcd and kube-apiserver", "control plane"},
	{"kube-apiserver ready", "control plane"},
	{"== scene ", "scene"},
	{"FIRING ", "scene"},
}

// scan copies make demo's output to stderr, each line with its offset, and finds the phases and
// the first alert.
func scan(out io.Reader, start time.Time, r *Run) []Step {
	var steps []Step
	open := map[string]int{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		at := since(start)
		fmt.Fprintf(os.Stderr, "%7.1fs %s\n", at, line)
		for _, m := range marks {
			if !strings.Contains(line, m.prefix) {
				continue
			}
			if i, ok := open[m.phase]; ok {
				if steps[i].End == 0 {
					steps[i].End = at
				}
			} else {
				open[m.phase] = len(steps)
				steps = append(steps, Step{Name: m.phase, Start: at})
			}
		}
		if i := strings.Index(line, "FIRING "); i >= 0 && r.FirstAlertName == "" {
			r.FirstAlert = at
			// "FIRING LoopwatchWriteFight{labels} after 36s": the name alone.
			name := line[i+len("FIRING "):]
			if j := strings.IndexAny(name, "{ "); j >= 0 {
				name = name[:j]
			}
			r.FirstAlertName = name
		}
	}
	return steps
}

// readTiming reads tools/timed's log: "name start end exit" per build.
func readTiming(path string, start time.Time) ([]Step, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the builds' timing: %w", err)
	}
	var steps []Step
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		s, err1 := strconv.ParseFloat(f[1], 64)
		e, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		origin := float64(start.UnixNano()) / 1e9
		steps = append(steps, Step{Name: "build " + f[0], Start: s - origin, End: e - origin})
	}
	return steps, nil
}

func since(t time.Time) float64 { return float64(time.Since(t).Round(100*time.Millisecond)) / 1e9 }

func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// clock prints seconds as "7 min 52 s".
func clock(secs float64) string {
	d := time.Duration(secs * float64(time.Second)).Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// renderHeadline is the README's sentence.
func renderHeadline(r Run) string {
	if r.FirstAlertName == "" {
		return fmt.Sprintf("`make demo` fired no alert within %s on a fresh clone with empty Go caches (%d cores).", clock(r.Total), r.CPUs)
	}
	return fmt.Sprintf("on a fresh clone with empty Go module and build caches, %d cores, `make demo` fired its first alert (%s) **%s** after it started, and finished in %s; where the time went is in [docs/testing.md](docs/testing.md#a-newcomers-first-alert).",
		r.CPUs, r.FirstAlertName, clock(r.FirstAlert), clock(r.Total))
}

// renderSteps is docs/testing.md's table.
func renderSteps(r Run) string {
	var b strings.Builder
	b.WriteString("| step | started | ended | took |\n|---|---:|---:|---:|\n")
	for _, s := range r.Steps {
		end, took := "—", "—"
		if s.End > 0 {
			end, took = clock(s.End), clock(s.End-s.Start)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Name, clock(s.Start), end, took)
	}
	first := "no alert fired"
	if r.FirstAlertName != "" {
		first = fmt.Sprintf("first alert (%s) at **%s**", r.FirstAlertName, clock(r.FirstAlert))
	}
	machine := fmt.Sprintf("%d CPUs", r.CPUs)
	if r.CPUModel != "" {
		machine += " (" + r.CPUModel + ")"
	}
	fmt.Fprintf(&b, "\n`make demo SCENARIO=%s` on a fresh clone with empty Go module and build caches: %s; done in %s. %s, load average %.1f at the start, %s.\n",
		r.Scenario, first, clock(r.Total), machine, r.LoadBefore, r.Go)
	return b.String()
}
