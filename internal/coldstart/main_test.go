package main

import (
	"strings"
	"testing"
	"time"
)

func TestScanFindsThePhasesAndTheFirstAlert(t *testing.T) {
	out := strings.Join([]string{
		"go build -o bin/ ./cmd/loopwatch",
		"demo: starting etcd and kube-apiserver (audit webhook -> exporter at https://127.0.0.1:1/)",
		"demo: kube-apiserver ready at https://127.0.0.1:2",
		"demo: == scene write-fight (namespace write-fight)",
		`demo: FIRING LoopwatchWriteFight{actor_a="system:serviceaccount:a:b", namespace="a"} after 36s`,
		"demo: FIRING LoopwatchOther after 40s",
	}, "\n")
	var r Run
	steps := scan(strings.NewReader(out), time.Now(), &r)
	if r.FirstAlertName != "LoopwatchWriteFight" {
		t.Errorf("first alert %q, want LoopwatchWriteFight", r.FirstAlertName)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "control plane,scene" {
		t.Errorf("phases %v, want control plane and scene", names)
	}
}

func TestRenderSteps(t *testing.T) {
	r := Run{Scenario: "write-fight", CPUs: 2, Go: "go1.26.8", FirstAlert: 545, FirstAlertName: "LoopwatchWriteFight", Total: 600, LoadBefore: 0.2,
		Steps: []Step{{Name: "build kube-apiserver", Start: 0.2, End: 301}, {Name: "scene", Start: 480}}}
	got := renderSteps(r)
	for _, want := range []string{
		"| build kube-apiserver | 0 s | 5 min 1 s | 5 min 1 s |",
		"| scene | 8 min 0 s | — | — |",
		"first alert (LoopwatchWriteFight) at **9 min 5 s**; done in 10 min 0 s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("steps lack %q:\n%s", want, got)
		}
	}
}

// TestPagesHoldTheColdStartTables checks that the README's sentence and docs/testing.md's table
// are what the last `make cold-start` measured, as it renders them.
func TestPagesHoldTheColdStartTables(t *testing.T) {
	var r Run
	if err := Headline.Load("../..", &r); err != nil {
		t.Fatal(err)
	}
	if r.FirstAlertName == "" || r.FirstAlert <= 0 {
		t.Fatalf("%s: no first alert recorded", Headline.DataPath())
	}
	if err := Headline.Check("../..", renderHeadline(r)); err != nil {
		t.Error(err)
	}
	if err := Steps.Check("../..", renderSteps(r)); err != nil {
		t.Error(err)
	}
}
