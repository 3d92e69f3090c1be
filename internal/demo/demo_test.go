package demo

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestIncidentsFireTheirAlerts is `make demo` with every incident: on real components, a healthy
// run stays silent, then each seed incident reproduced by the operator's fault modes fires its
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

// Every incident the demo shows exists, and every incident names its seed and alert.
func TestIncidentTable(t *testing.T) {
	for _, n := range DemoIncidents {
		_ = incident(n) // panics when missing
	}
	seen := map[string]bool{}
	for _, inc := range Incidents() {
		if inc.Seed == "" || inc.Alert == "" || len(inc.Flags) == 0 || seen[inc.Name] {
			t.Errorf("incident %+v: needs a unique name, a seed, flags and an alert", inc)
		}
		seen[inc.Name] = true
	}
}
