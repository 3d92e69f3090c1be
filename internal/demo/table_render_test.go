package demo

import (
	"strings"
	"testing"
)

func TestWriteTableShowsEveryOutcome(t *testing.T) {
	secs := func(s float64) *float64 { return &s }
	run := MatrixRun{
		Components: []string{"Kubernetes v1.37.2"}, CPUs: 2, CPUModel: "CPU",
		Scenes: []SceneResult{
			{Incident: "healthy", Diagnosis: &SceneDiagnosis{Want: "healthy", Said: "healthy", Right: true, Run: true}, Seconds: 60},
			{Incident: "hot-loop", Expected: []ExpectedAlert{{Alert: "LoopwatchHotLoop", Detected: secs(44)}, {Alert: "LoopwatchHotObject", Detected: secs(27)}},
				Diagnosis: &SceneDiagnosis{Want: "LoopwatchHotLoop", Said: "LoopwatchHotLoop", Right: true, Run: true}, Seconds: 90},
			{Incident: "missed", Expected: []ExpectedAlert{{Alert: "LoopwatchQueueBacklog"}}, Others: []string{"LoopwatchReconcileSlow firing"}, Seconds: 120},
			{Incident: "known", Expected: []ExpectedAlert{{Alert: "LoopwatchFinalizerStuck", Known: "needs instrument"}}, Error: "scene\nfailed", Seconds: 10},
		},
	}
	var b strings.Builder
	WriteTable(&b, run)
	got := b.String()
	for _, want := range []string{
		"| healthy | none (healthy) | — | — | none | healthy |",
		"| hot-loop | LoopwatchHotLoop<br>LoopwatchHotObject | yes<br>yes | 44s<br>27s | none | LoopwatchHotLoop |",
		"| missed | LoopwatchQueueBacklog | **no** | — | **LoopwatchReconcileSlow firing** | — |",
		"| known | LoopwatchFinalizerStuck | no — needs instrument | — | none<br>**error: scene failed** | — |",
		"1/3 incidents caught (every expected alert fired), 1 other alerts; diagnose right in 2/2 scenes; 4 scenes in 4m40s, on 2 CPUs (CPU); Kubernetes v1.37.2.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
