package diagnose

import (
	"slices"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/gen"
)

// t0 is the end of the fixtures' window.
var t0 = time.Date(2026, 3, 4, 5, 30, 0, 0, time.UTC)

const fixtureStep = 10 * time.Second

// checkOf returns the playbook's check of alert a.
func checkOf(t testing.TB, a *gen.Alert) *check {
	t.Helper()
	for _, c := range checks() {
		if c.alert == a {
			return c
		}
	}
	t.Fatalf("no check for %s", a.FullName())
	return nil
}

// held builds a finding of alert a whose condition held from `from` to `to` before t0 (to 0:
// holds now), with value now against threshold (op ">").
func held(t testing.TB, a *gen.Alert, from, to time.Duration, value, peak, threshold float64) *finding {
	return &finding{
		check: checkOf(t, a), op: ">", threshold: &threshold,
		instances: []instance{{value: value, peak: peak, first: t0.Add(-from), last: t0.Add(-to), active: to == 0}},
	}
}

func TestRank(t *testing.T) {
	type want struct {
		alert *gen.Alert
		role  Role
		by    *gen.Alert
	}
	for _, tc := range []struct {
		name     string
		findings func(t testing.TB) []*finding
		want     []want
	}{
		{
			name: "a stuck worker explains a growing queue, however far past its threshold the queue is",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.QueueBacklog, 8*time.Minute, 0, 5000, 5000, 100),
					held(t, gen.ProcessorStuck, 10*time.Minute, 0, 900, 900, 600),
				}
			},
			want: []want{{gen.ProcessorStuck, RoleCause, nil}, {gen.QueueBacklog, RoleSymptom, gen.ProcessorStuck}},
		},
		{
			name: "N+1 API calls explain slow reconciles and the queue behind them",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.ReconcileSlow, 5*time.Minute, 0, 0.8, 0.8, 0.1),
					held(t, gen.QueueBacklog, 3*time.Minute, 0, 400, 400, 100),
					held(t, gen.APICallsPerReconcileHigh, 5*time.Minute, 0, 51, 51, 20),
				}
			},
			want: []want{
				{gen.APICallsPerReconcileHigh, RoleCause, nil},
				{gen.ReconcileSlow, RoleSymptom, gen.APICallsPerReconcileHigh},
				{gen.QueueBacklog, RoleSymptom, gen.ReconcileSlow},
			},
		},
		{
			name: "a write fight explains a high PATCH rate and a hot object",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.PatchRateHigh, 6*time.Minute, 0, 40, 40, 10),
					held(t, gen.HotObject, 6*time.Minute, 0, 3, 3, 0.25),
					held(t, gen.WriteFight, 6*time.Minute, 0, 5, 5, 4),
				}
			},
			want: []want{
				{gen.WriteFight, RoleCause, nil},
				{gen.HotObject, RoleSymptom, gen.WriteFight},
				{gen.PatchRateHigh, RoleSymptom, gen.HotObject},
			},
		},
		{
			name: "an error storm behind replicas racing is a symptom of the race",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.ReconcileErrors, 4*time.Minute, 0, 0.5, 0.5, 0.1),
					held(t, gen.ReplicaRace, 4*time.Minute, 0, 2, 2, 2),
				}
			},
			want: []want{{gen.ReplicaRace, RoleCause, nil}, {gen.ReconcileErrors, RoleSymptom, gen.ReplicaRace}},
		},
		{
			name: "unrelated failures rank by how far past their thresholds they are",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.ReconcileSlow, 5*time.Minute, 0, 0.2, 0.2, 0.1),
					held(t, gen.ReconcileErrors, 5*time.Minute, 0, 0.6, 0.6, 0.1),
				}
			},
			want: []want{{gen.ReconcileErrors, RoleCause, nil}, {gen.ReconcileSlow, RoleContributing, nil}},
		},
		{
			name: "a failure that holds now ranks before one that held earlier",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.ReconcileErrors, 20*time.Minute, 10*time.Minute, 0.9, 0.9, 0.1),
					held(t, gen.ReconcileSlow, 2*time.Minute, 0, 0.15, 0.15, 0.1),
				}
			},
			want: []want{{gen.ReconcileSlow, RoleCause, nil}, {gen.ReconcileErrors, RoleContributing, nil}},
		},
		{
			name: "a failure that holds now at its peak ranks before one fading from a higher peak",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.ReconcileSlow, 20*time.Minute, 0, 0.3, 0.95, 0.1),
					held(t, gen.ReconcileErrors, 3*time.Minute, 0, 0.2, 0.2, 0.1),
				}
			},
			want: []want{{gen.ReconcileErrors, RoleCause, nil}, {gen.ReconcileSlow, RoleContributing, nil}},
		},
		{
			name: "a cause that ended before the symptom began explains nothing",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.ProcessorStuck, 25*time.Minute, 20*time.Minute, 900, 900, 600),
					held(t, gen.QueueBacklog, 5*time.Minute, 0, 300, 300, 100),
				}
			},
			want: []want{{gen.QueueBacklog, RoleCause, nil}, {gen.ProcessorStuck, RoleContributing, nil}},
		},
		{
			name: "a cause fading away does not explain a symptom at its peak",
			findings: func(t testing.TB) []*finding {
				return []*finding{
					held(t, gen.APICallsPerReconcileHigh, 20*time.Minute, 0, 22, 51, 20),
					held(t, gen.ReconcileSlow, 3*time.Minute, 0, 0.4, 0.4, 0.1),
				}
			},
			want: []want{{gen.ReconcileSlow, RoleCause, nil}, {gen.APICallsPerReconcileHigh, RoleContributing, nil}},
		},
		{
			name: "failures rank before monitoring gaps",
			findings: func(t testing.TB) []*finding {
				gap := held(t, gen.WorkqueueMetricsMissing, 30*time.Minute, 0, 2, 2, 0)
				gap.op, gap.threshold = "", nil
				return []*finding{gap, held(t, gen.ReconcileErrors, time.Minute, 0, 0.11, 0.11, 0.1)}
			},
			want: []want{{gen.ReconcileErrors, RoleCause, nil}, {gen.WorkqueueMetricsMissing, RoleGap, nil}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rank(tc.findings(t), fixtureStep)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				f := got[i]
				var by *gen.Alert
				if f.explainedBy != nil {
					by = f.explainedBy.check.alert
				}
				if f.check.alert != w.alert || f.role != w.role || by != w.by {
					t.Errorf("#%d: %s %s (by %v), want %s %s (by %v)", i, f.check.alert.FullName(), f.role, name(by), w.alert.FullName(), w.role, name(w.by))
				}
			}
		})
	}
}

func name(a *gen.Alert) string {
	if a == nil {
		return "nothing"
	}
	return a.FullName()
}

// Every alert has one check, hand-written or derived, and no hand-written check names an alert
// twice or one gen does not declare.
func TestEveryAlertHasOneCheck(t *testing.T) {
	hand := map[*gen.Alert]int{}
	for _, c := range playbook() {
		if hand[c.alert]++; hand[c.alert] > 1 {
			t.Errorf("%s has %d hand-written checks", c.alert.FullName(), hand[c.alert])
		}
	}
	count := map[*gen.Alert]int{}
	for _, c := range checks() {
		count[c.alert]++
	}
	for _, a := range gen.Alerts() {
		if count[a] != 1 {
			t.Errorf("%s has %d checks in the playbook, want 1", a.FullName(), count[a])
		}
		delete(count, a)
	}
	for a := range count {
		t.Errorf("check for %s, which gen does not declare", a.FullName())
	}
}

// diagnose ranks by gen's cause/symptom relation: every alert in it must have a check.
func TestEveryCauseAndSymptomHasACheck(t *testing.T) {
	has := map[*gen.Alert]bool{}
	for _, c := range checks() {
		has[c.alert] = true
	}
	for _, c := range checks() {
		for _, x := range append(Symptoms(c.alert), gen.Causes(c.alert)...) {
			if !has[x] {
				t.Errorf("%s is related to %s but has no check", x.FullName(), c.alert.FullName())
			}
		}
	}
	if !slices.Contains(Symptoms(gen.HotLoop), gen.QueueWaitHigh) {
		t.Error("a hot loop keeps its workers busy: queue wait must be among its symptoms")
	}
}
