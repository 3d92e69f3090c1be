package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/gen"
)

// without replaces the hand-written playbook, for the test, by one without a's check: a trial of
// adding alert a with its declaration and runbook only.
func without(t *testing.T, a *gen.Alert) {
	t.Helper()
	t.Cleanup(func() { handWritten = playbook })
	handWritten = func() []*check {
		return slices.DeleteFunc(playbook(), func(c *check) bool { return c.alert == a })
	}
}

// An alert without a hand-written check gets one derived from its declaration: its scope from its
// labels, what it needs from the metrics its expression reads, its signals from its comparisons.
func TestAlertWithoutAHandWrittenCheckGetsADerivedOne(t *testing.T) {
	without(t, gen.ReconcilePanics)
	c := checkOf(t, gen.ReconcilePanics)
	if c.signals != nil || c.scope != byController || !c.optional {
		t.Errorf("derived check: signals %v, scope %s, optional %v; want derived signals, by controller, optional", c.signals, c.scope, c.optional)
	}
	if len(c.needs) != 1 || c.needs[0].Name != catalogue.ControllerRuntimeReconcilePanicsTotal.Name {
		t.Errorf("derived check needs %v, want [%s]", c.needs, catalogue.ControllerRuntimeReconcilePanicsTotal.Name)
	}
	for _, tc := range []struct {
		a    *gen.Alert
		want attribution
	}{
		{gen.PatchRateHigh, byProcess}, {gen.LeaderMissing, byWorkload}, {gen.WriteFight, byActor},
		{gen.ConflictStorm, byActor}, {gen.AuditWebhookErrors, byNone}, {gen.APFQueueWaitHigh, byNone},
	} {
		if got := derivedCheck(tc.a).scope; got != tc.want {
			t.Errorf("derived check of %s: scope %s, want %s", tc.a.FullName(), got, tc.want)
		}
	}
}

// Every alert's derived check plans: its signals match its expression's comparisons, whatever
// the hand-written checks would have named them.
func TestEveryDerivedCheckPlans(t *testing.T) {
	t.Cleanup(func() { handWritten = playbook })
	handWritten = func() []*check { return nil }
	d := planned(t, gen.Default(), nil)
	if len(d.runs) != len(gen.Alerts()) {
		t.Fatalf("%d runs for %d alerts", len(d.runs), len(gen.Alerts()))
	}
	for _, run := range d.runs {
		if len(run.signals) == 0 {
			t.Errorf("%s: derived check has no signal", run.check.alert.FullName())
		}
		for _, s := range run.signals {
			if s.spec.name == "" || s.query == "" {
				t.Errorf("%s: signal %+v has no name or query", run.check.alert.FullName(), s.spec)
			}
		}
	}
}

// The trial: with ReconcilePanics' hand-written check gone, a controller whose reconciles panic
// is still found unhealthy, with the alert's numbers and next step.
func TestAlertWithoutAHandWrittenCheckIsJudged(t *testing.T) {
	without(t, gen.ReconcilePanics)
	fx := newFixture(t)
	backup := fx.controller("backup-system", "backup-operator", "backup")
	fx.d.inv.coverage[catalogue.ControllerRuntimeReconcilePanicsTotal.Name] = map[string]float64{fx.d.inv.levelKey(catalogue.ControllerRuntimeReconcilePanicsTotal, backup): 60}
	fx.holds(gen.ReconcilePanics, backup, 9*time.Minute, 0, 3)
	run := fx.run(gen.ReconcilePanics)
	fx.signal(gen.ReconcilePanics, run.signals[0].spec.name, backup, 3)
	r := fx.d.report()
	c, ok := r.Find("backup-system", "backup-operator", "backup")
	if !ok {
		t.Fatalf("controller backup not in the report: %+v", r.Controllers)
	}
	if c.Verdict != Unhealthy || len(c.Causes) == 0 || c.Causes[0].Alert != gen.ReconcilePanics.FullName() {
		t.Fatalf("controller backup: verdict %s, causes %+v; want unhealthy from %s", c.Verdict, c.Causes, gen.ReconcilePanics.FullName())
	}
	cause := c.Causes[0]
	if !strings.Contains(cause.NextStep, "kubectl -n backup-system logs deploy/backup-operator") {
		t.Errorf("next step %q is not the alert's, filled with the finding's labels", cause.NextStep)
	}
	if len(cause.Evidence) != 1 || cause.Evidence[0].Signal != catalogue.ControllerRuntimeReconcilePanicsTotal.Name {
		t.Errorf("evidence %+v: want one signal named after the metric the expression reads", cause.Evidence)
	}
}
