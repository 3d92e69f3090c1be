package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loopwatch/loopwatch/diagnose"
	"github.com/loopwatch/loopwatch/gen"
)

// Diagnosis is what `loopwatch diagnose` must conclude about a scene: the most likely cause it
// names first for the operator's controller, or, for a cause no controller carries (Controller
// empty), that it lists the cause among its unattributed findings, or, for a healthy scene (Cause
// nil), that every controller is healthy.
type Diagnosis struct {
	// Controller is the controller whose first cause is checked (the controller label); empty
	// for a cause diagnose ties to no controller.
	Controller string
	// Cause is the alert diagnose must name first; nil: every controller must be healthy.
	Cause *gen.Alert
	// Pod, for a cause diagnose ties to no controller, is the pod its finding must name (the
	// pod label of its strongest instance); empty: any.
	Pod string
}

// want is the expected conclusion, as the table shows it.
func (d Diagnosis) want() string {
	if d.Cause == nil {
		return string(diagnose.Healthy)
	}
	if d.Pod != "" {
		return d.Cause.FullName() + " (pod " + d.Pod + ")"
	}
	return d.Cause.FullName()
}

// Diagnosed is what diagnose said about a scene.
type Diagnosed struct {
	// Said is the first cause named for the controller, "healthy" when every controller was
	// found healthy, or the verdicts when they were not.
	Said string
	// Right reports whether Said is what the incident expects.
	Right bool
	// Err is why diagnose could not run.
	Err error
	// Report is diagnose's text report when Said is wrong, to show why.
	Report string
}

// diagnosis runs `loopwatch diagnose` (its Go API) on the scene's Prometheus over the scene's
// whole life, with the rules' own config.
func (s *Scene) diagnosis(ctx context.Context) (diagnose.Report, error) {
	since := time.Since(s.start).Round(time.Second) + time.Second
	r, err := diagnose.Run(ctx, diagnose.Options{Prometheus: s.prom.URL(), Since: since, Config: s.c.cfg})
	if err != nil {
		return r, fmt.Errorf("diagnose: %w", err)
	}
	return r, nil
}

// judge compares diagnose's conclusion about the scene with want.
func (s *Scene) judge(ctx context.Context, want Diagnosis) Diagnosed {
	r, err := s.diagnosis(ctx)
	if err != nil {
		return Diagnosed{Err: err}
	}
	if want.Cause == nil {
		var verdicts []string
		for _, c := range r.Controllers {
			if c.Verdict != diagnose.Healthy {
				verdicts = append(verdicts, fmt.Sprintf("%s %s %s", c.Name, c.Verdict, c.FirstCause()))
			}
		}
		if len(r.Controllers) > 0 && len(verdicts) == 0 {
			return Diagnosed{Said: string(diagnose.Healthy), Right: true}
		}
		return Diagnosed{Said: strings.Join(verdicts, ", "), Report: reportText(r)}
	}
	if want.Controller == "" {
		return judgeUnattributed(r, want)
	}
	c, ok := r.Find(s.Namespace, s.workload.Job, want.Controller)
	if !ok {
		return Diagnosed{Err: fmt.Errorf("diagnose found no controller %s of %s/%s", want.Controller, s.Namespace, s.workload.Job)}
	}
	said := c.FirstCause()
	if said == "" {
		said = string(c.Verdict)
	}
	d := Diagnosed{Said: said, Right: said == want.Cause.FullName()}
	if !d.Right {
		d.Report = reportText(r)
	}
	return d
}

// judgeUnattributed checks that diagnose lists want's cause among the findings it ties to no
// controller, naming want's pod when it has one.
func judgeUnattributed(r diagnose.Report, want Diagnosis) Diagnosed {
	var said []string
	right := false
	for _, c := range r.Unattributed {
		s := c.Alert
		if pod := c.Labels["pod"]; pod != "" {
			s += " (pod " + pod + ")"
		}
		said = append(said, s)
		right = right || c.Alert == want.Cause.FullName() && (want.Pod == "" || c.Labels["pod"] == want.Pod)
	}
	d := Diagnosed{Said: "unattributed: " + strings.Join(said, ", "), Right: right}
	if len(said) == 0 {
		d.Said = "no unattributed finding"
	}
	if !right {
		d.Report = reportText(r)
	}
	return d
}

// reportText is r as `loopwatch diagnose` prints it.
func reportText(r diagnose.Report) string {
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		return fmt.Sprintf("(report not written: %v)", err)
	}
	return b.String()
}
