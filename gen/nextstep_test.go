package gen

import (
	"slices"
	"strings"
	"testing"
)

// Every alert says what to do next, and its placeholders name labels every instance carries, so
// the annotation and diagnose always fill them.
func TestEveryAlertHasANextStepNamingItsLabels(t *testing.T) {
	for _, a := range Alerts() {
		if strings.TrimSpace(a.NextStep) == "" {
			t.Errorf("%s: no next step", a.FullName())
			continue
		}
		if !strings.HasSuffix(a.NextStep, ".") {
			t.Errorf("%s: next step %q must end a sentence", a.FullName(), a.NextStep)
		}
		labels := a.levelLabels()
		for _, l := range Placeholders(a.NextStep) {
			if !slices.Contains(labels, l) {
				t.Errorf("%s: next step names <%s>, not a label of the alert (%v)", a.FullName(), l, labels)
			}
		}
	}
}

// A placeholder naming a label the alert's level lacks is what the check above must catch.
func TestPlaceholdersOutsideTheLevelAreFound(t *testing.T) {
	a := &Alert{Level: levelController, NextStep: "Read kubectl -n <namespace> logs <pod> of <job>."}
	var outside []string
	for _, l := range Placeholders(a.NextStep) {
		if !slices.Contains(a.levelLabels(), l) {
			outside = append(outside, l)
		}
	}
	if !slices.Equal(outside, []string{"pod"}) {
		t.Errorf("labels outside levelController: %v, want [pod]", outside)
	}
	if got := a.levelLabels(); slices.Contains(got, clusterRef) || len(got) != 3 {
		t.Errorf("levelLabels %v: want namespace, job, controller without the cluster label", got)
	}
}

// The annotation, diagnose and the runbook read one text: the annotation renders it with the
// instance's labels as diagnose fills it.
func TestNextStepAnnotationMatchesDiagnoseFilling(t *testing.T) {
	m := buildDefault(t)
	for _, a := range Alerts() {
		fired, err := m.FiringAlerts(a)
		if err != nil {
			t.Fatal(err)
		}
		labels := fired[0]
		ann, ok, err := m.Annotations(a, labels, 1)
		if !ok || err != nil {
			t.Fatalf("%s: annotations: %v %v", a.FullName(), ok, err)
		}
		if got, want := ann["next_step"], a.FillNextStep(labels); got != want {
			t.Errorf("%s: next_step annotation %q, diagnose's next step %q", a.FullName(), got, want)
		}
		if len(Placeholders(a.NextStep)) > 0 && strings.Contains(ann["next_step"], "<") {
			t.Errorf("%s: next_step annotation %q leaves a placeholder", a.FullName(), ann["next_step"])
		}
	}
}

func TestFillNextStepKeepsPlaceholdersOfMissingLabels(t *testing.T) {
	a := &Alert{NextStep: "Run kubectl -n <namespace> logs deploy/<job>."}
	if got, want := a.FillNextStep(map[string]string{"namespace": "ops", "job": ""}), "Run kubectl -n ops logs deploy/<job>."; got != want {
		t.Errorf("FillNextStep = %q, want %q", got, want)
	}
	if got, want := nextStepTemplate(a.NextStep), "Run kubectl -n {{ $labels.namespace }} logs deploy/{{ $labels.job }}."; got != want {
		t.Errorf("nextStepTemplate = %q, want %q", got, want)
	}
}
