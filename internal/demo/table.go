package demo

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/loopwatch/loopwatch/internal/results"
)

// MatrixTable is the detection matrix's table in docs/detection.md: `make e2e` measures it and
// writes it there, with what it measured in docs/results/e2e-matrix.json.
var MatrixTable = results.Table{Name: "e2e-matrix", Page: "docs/detection.md", Command: "make e2e"}

// MatrixRun is what one run of the detection matrix measured, in the form it is kept in: the
// scenes in the order they ran, and the machine and components they ran on.
type MatrixRun struct {
	// Components are the real components' versions ("kube-apiserver v1.36.3", ...).
	Components []string      `json:"components"`
	CPUs       int           `json:"cpus"`
	CPUModel   string        `json:"cpuModel,omitempty"`
	Scenes     []SceneResult `json:"scenes"`
}

// SceneResult is one scene's outcome.
type SceneResult struct {
	Incident string `json:"incident"`
	// Expected are the alerts that had to fire, in the incident's order.
	Expected []ExpectedAlert `json:"expected,omitempty"`
	// Others are the other loopwatch alerts seen pending or firing.
	Others []string `json:"others,omitempty"`
	// Error is why the scene could not run to its end.
	Error string `json:"error,omitempty"`
	// Diagnosis is what diagnose concluded; nil when the incident does not check it.
	Diagnosis *SceneDiagnosis `json:"diagnosis,omitempty"`
	// Seconds is the scene's wall time.
	Seconds float64 `json:"seconds"`
}

// ExpectedAlert is an expected alert and when it fired.
type ExpectedAlert struct {
	Alert string `json:"alert"`
	// Detected is the time from the injection to the first time the alert was seen firing, in
	// seconds; nil when it did not fire.
	Detected *float64 `json:"detected,omitempty"`
	// Known says why the alert cannot fire yet, when that is known and accepted.
	Known string `json:"known,omitempty"`
}

// SceneDiagnosis is what diagnose said against what the scene expects.
type SceneDiagnosis struct {
	Want  string `json:"want"`
	Said  string `json:"said,omitempty"`
	Right bool   `json:"right"`
	Error string `json:"error,omitempty"`
	Run   bool   `json:"run"`
}

// NewMatrixRun records the scenes' results with the components and machine they ran on.
func NewMatrixRun(scenes []Result, components []string) MatrixRun {
	run := MatrixRun{Components: components, CPUs: runtime.NumCPU(), CPUModel: results.CPUModel()}
	for _, r := range scenes {
		inc := r.Incident
		s := SceneResult{Incident: inc.Name, Others: r.Others, Seconds: r.Took.Round(time.Second).Seconds()}
		if r.Err != nil {
			s.Error = r.Err.Error()
		}
		for _, a := range inc.Expect {
			e := ExpectedAlert{Alert: a.FullName(), Known: inc.Known[a]}
			if t, ok := r.Fired[a.FullName()]; ok {
				secs := t.Round(time.Second).Seconds()
				e.Detected = &secs
			}
			s.Expected = append(s.Expected, e)
		}
		if inc.Diagnosis != nil {
			d := &SceneDiagnosis{Want: inc.Diagnosis.want()}
			if r.Diagnosed != nil {
				d.Run, d.Said, d.Right = true, r.Diagnosed.Said, r.Diagnosed.Right
				if r.Diagnosed.Err != nil {
					d.Error = r.Diagnosed.Err.Error()
				}
			}
			s.Diagnosis = d
		}
		run.Scenes = append(run.Scenes, s)
	}
	return run
}

// WriteTable writes the run as a Markdown table: incident, expected alerts, fired, time to
// detect, other alerts, diagnose's first cause; then the totals and what it ran on.
func WriteTable(w io.Writer, run MatrixRun) {
	fmt.Fprintln(w, "| incident | expected alert | fired | time to detect | other alerts | diagnose (first cause) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	caught, incidents, others, diagnosed, right := 0, 0, 0, 0, 0
	var took float64
	for _, s := range run.Scenes {
		took += s.Seconds
		expected, fired, detect := "none (healthy)", "—", "—"
		if len(s.Expected) > 0 {
			incidents++
			if s.caught() {
				caught++
			}
			var e, f, d []string
			for _, a := range s.Expected {
				e = append(e, a.Alert)
				switch {
				case a.Detected != nil:
					f = append(f, "yes")
					d = append(d, (time.Duration(*a.Detected) * time.Second).String())
				case a.Known != "":
					f = append(f, "no — "+a.Known)
					d = append(d, "—")
				default:
					f = append(f, "**no**")
					d = append(d, "—")
				}
			}
			expected, fired, detect = strings.Join(e, "<br>"), strings.Join(f, "<br>"), strings.Join(d, "<br>")
		}
		other := "none"
		if len(s.Others) > 0 {
			others += len(s.Others)
			other = "**" + strings.Join(s.Others, ", ") + "**"
		}
		if s.Error != "" {
			other += "<br>**error: " + oneLine(s.Error) + "**"
		}
		diag := "—"
		if d := s.Diagnosis; d != nil {
			diagnosed++
			switch {
			case !d.Run:
				diag = "**not run**"
			case d.Error != "":
				diag = "**error: " + oneLine(d.Error) + "**"
			case d.Right:
				right++
				diag = d.Said
			default:
				diag = fmt.Sprintf("**%s** (expected %s)", d.Said, d.Want)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", s.Incident, expected, fired, detect, other, diag)
	}
	fmt.Fprintf(w, "\n%d/%d incidents caught (every expected alert fired), %d other alerts; diagnose right in %d/%d scenes; %d scenes in %s",
		caught, incidents, others, right, diagnosed, len(run.Scenes), (time.Duration(took) * time.Second).String())
	machine := fmt.Sprintf("%d CPUs", run.CPUs)
	if run.CPUModel != "" {
		machine += " (" + run.CPUModel + ")"
	}
	if len(run.Components) > 0 {
		fmt.Fprintf(w, ", on %s; %s", machine, strings.Join(run.Components, ", "))
	}
	fmt.Fprintln(w, ".")
}

// caught reports whether every expected alert but the known misses fired, and one at least.
func (s SceneResult) caught() bool {
	if s.Error != "" || len(s.Others) > 0 || (s.Diagnosis != nil && !s.Diagnosis.Right) {
		return false
	}
	fired := 0
	for _, a := range s.Expected {
		switch {
		case a.Detected != nil:
			fired++
		case a.Known == "":
			return false
		}
	}
	return fired > 0
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
