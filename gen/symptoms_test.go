package gen

import (
	"slices"
	"strings"
	"testing"
)

func TestSymptomsHaveNoCycle(t *testing.T) {
	var visit func(a *Alert, path []*Alert)
	visit = func(a *Alert, path []*Alert) {
		if slices.Contains(path, a) {
			var names []string
			for _, x := range append(path, a) {
				names = append(names, x.FullName())
			}
			t.Fatalf("cause/symptom cycle: %s", strings.Join(names, " → "))
		}
		for _, s := range Symptoms(a) {
			visit(s, append(path, a))
		}
	}
	for _, e := range explanations() {
		visit(e.cause, nil)
	}
}

func TestSymptomsAreDeclaredAlertsListedOnce(t *testing.T) {
	declared := map[*Alert]bool{}
	for _, g := range ruleGroups() {
		for _, a := range g.Alerts {
			declared[a] = true
		}
	}
	causes := map[*Alert]bool{}
	for _, e := range explanations() {
		if causes[e.cause] {
			t.Errorf("%s is listed twice as a cause", e.cause.FullName())
		}
		causes[e.cause] = true
		for _, a := range append([]*Alert{e.cause}, e.symptoms...) {
			if !declared[a] {
				t.Errorf("%s is not a declared alert", a.FullName())
			}
		}
		for i, s := range e.symptoms {
			if s == e.cause || slices.Contains(e.symptoms[:i], s) {
				t.Errorf("%s lists %s as its own symptom or twice", e.cause.FullName(), s.FullName())
			}
		}
	}
	got := Symptoms(HotLoop)
	got[0] = nil
	if Symptoms(HotLoop)[0] == nil {
		t.Fatal("Symptoms hands out the declaration's own list")
	}
	if Symptoms(&Alert{Name: "NotAnAlert"}) != nil {
		t.Error("an undeclared alert has symptoms")
	}
	if !slices.Contains(Causes(HotObject), HotLoop) || !slices.Contains(Causes(HotObject), WriteFight) {
		t.Errorf("Causes(HotObject) = %v, want HotLoop and WriteFight among them", Causes(HotObject))
	}
}
