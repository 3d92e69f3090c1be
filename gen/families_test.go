package gen

import (
	"slices"
	"testing"
)

// Families follows recording rules down to the catalogued metrics an alert reads.
func TestFamiliesFollowRecordingRules(t *testing.T) {
	m := buildDefault(t)
	fams, ok, err := m.Families(QueueBacklog)
	if !ok || err != nil {
		t.Fatalf("Families: %v %v", ok, err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.Name)
	}
	for _, want := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_work_duration_seconds"} {
		if !slices.Contains(names, want) {
			t.Errorf("QueueBacklog reads %v, want %s among them (through its recording rules)", names, want)
		}
	}
	for _, a := range Alerts() {
		if fams, _, err := m.Families(a); err != nil || len(fams) == 0 {
			t.Errorf("%s: families %v, error %v", a.FullName(), fams, err)
		}
	}
}
