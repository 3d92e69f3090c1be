package demo

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
)

// TestIncidentsFireTheirAlerts is `make demo` with every incident: on real components, a healthy
// run stays silent, then each incident reproduced by the operator's fault modes fires its
// alert, and the audit-log post-mortem runs.
func TestIncidentsFireTheirAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real components for minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{Out: os.Stdout})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, inc := range Incidents() {
		names = append(names, inc.Name)
	}
	err = run(ctx, env, names)
	env.Close(err != nil)
	if err != nil {
		t.Fatal(err)
	}
}

// Every incident the demo shows exists; every incident names its alert, and the labels it
// expects are labels that alert keeps.
func TestIncidentTable(t *testing.T) {
	for _, n := range DemoIncidents {
		_ = incident(n) // panics when missing
	}
	seen := map[string]bool{}
	for _, inc := range Incidents() {
		if inc.Alert == nil || len(inc.Flags) == 0 || seen[inc.Name] {
			t.Errorf("incident %+v: needs a unique name, flags and an alert", inc)
			continue
		}
		seen[inc.Name] = true
		kept := inc.Alert.LabelNames(Config())
		for l := range inc.Labels {
			if !slices.Contains(kept, l) {
				t.Errorf("incident %s expects label %q, which %s does not keep (it keeps %v)", inc.Name, l, inc.Alert.FullName(), kept)
			}
		}
	}
}
