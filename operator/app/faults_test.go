package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loopwatch/loopwatch/catalogue"
	"github.com/loopwatch/loopwatch/instrument"
	backupv1 "github.com/loopwatch/loopwatch/operator/api/v1alpha1"
	"github.com/loopwatch/loopwatch/operator/controller"
	"github.com/loopwatch/loopwatch/operator/faults"
)

// verbCount reads loopwatch_controller_api_requests_total for one controller and verb.
func verbCount(t *testing.T, reg *prometheus.Registry, ctrlName string, verb instrument.Verb) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != catalogue.ControllerAPIRequestsTotal.Name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, catalogue.LabelController) == ctrlName && labelValue(m, catalogue.LabelVerb) == string(verb) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestFaultModesReproduceTheirIncident runs the operator with each fault mode
// on and checks that the failure's symptom shows up in what loopwatch
// measures.
func TestFaultModesReproduceTheirIncident(t *testing.T) {
	needCluster(t)
	cases := []struct {
		name  string
		modes faults.Modes
		// check polls until the symptom shows.
		check func(ctx context.Context, t *testing.T, reg *prometheus.Registry, ns string) (bool, error)
	}{
		{
			name:  "hot loop: the controller patches its Backup again and again",
			modes: faults.Modes{HotLoop: true},
			check: func(_ context.Context, t *testing.T, reg *prometheus.Registry, _ string) (bool, error) {
				n := verbCount(t, reg, controller.BackupControllerName, instrument.VerbPatch)
				return n >= 30, fmt.Errorf("%v patches so far", n)
			},
		},
		{
			name:  "fight: two writers keep flipping the same annotation",
			modes: faults.Modes{Fight: true},
			check: func(_ context.Context, t *testing.T, reg *prometheus.Registry, _ string) (bool, error) {
				// Four finalizer patches, then the controller resetting the
				// annotation after each of the fighter's rounds.
				n := verbCount(t, reg, controller.BackupControllerName, instrument.VerbPatch)
				return n >= 20, fmt.Errorf("%v controller patches so far", n)
			},
		},
		{
			name:  "failing store: snapshot writes fail and are retried",
			modes: faults.Modes{FailingStore: true},
			check: func(ctx context.Context, t *testing.T, reg *prometheus.Registry, ns string) (bool, error) {
				snaps, err := snapshotsOf(ctx, ns, "shop")
				if err != nil || len(snaps) == 0 {
					return false, err
				}
				c := meta.FindStatusCondition(snaps[0].Status.Conditions, backupv1.ConditionStored)
				gets := verbCount(t, reg, controller.SnapshotControllerName, instrument.VerbGet)
				return c != nil && c.Reason == backupv1.ReasonStoreError && gets >= 3, fmt.Errorf("condition %+v after %v reconciles", c, gets)
			},
		},
		{
			name:  "n+1: every reconcile lists all Backups and GETs each one",
			modes: faults.Modes{NPlusOne: true},
			check: func(_ context.Context, t *testing.T, reg *prometheus.Registry, _ string) (bool, error) {
				lists := verbCount(t, reg, controller.BackupControllerName, instrument.VerbList)
				gets := verbCount(t, reg, controller.BackupControllerName, instrument.VerbGet)
				return lists >= 2 && gets > 2*lists, fmt.Errorf("%v lists, %v gets", lists, gets)
			},
		},
		{
			name:  "mass update: every Backup is touched and reconciled each period",
			modes: faults.Modes{MassUpdateEvery: time.Second},
			check: func(ctx context.Context, t *testing.T, reg *prometheus.Registry, ns string) (bool, error) {
				b := &backupv1.Backup{}
				if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, b); err != nil {
					return false, err
				}
				gets := verbCount(t, reg, controller.BackupControllerName, instrument.VerbGet)
				return b.Annotations[faults.MassUpdateAnnotation] != "" && gets >= 5, fmt.Errorf("%v reconciles, annotations %v", gets, b.Annotations)
			},
		},
		{
			name:  "slow store: a snapshot takes as long as the store",
			modes: faults.Modes{SlowStore: 2 * time.Second},
			check: func(ctx context.Context, t *testing.T, _ *prometheus.Registry, ns string) (bool, error) {
				snaps, err := snapshotsOf(ctx, ns, "shop")
				if err != nil || len(snaps) == 0 || snaps[0].Status.CompletionTime == nil {
					return false, err
				}
				took := snaps[0].Status.CompletionTime.Sub(snaps[0].CreationTimestamp.Time)
				if took < time.Second { // timestamps have second precision
					t.Errorf("snapshot completed %s after creation, want about the store's 2s", took)
				}
				return true, nil
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t, "fault")
			createAppObjects(t, ns, "shop")
			for _, name := range []string{"other-1", "other-2", "other-3"} {
				if err := testClient.Create(ctx, newBackup(ns, name, "shop")); err != nil {
					t.Fatal(err)
				}
			}
			o := testOptions(t)
			o.Faults = c.modes
			o.FightInterval = 200 * time.Millisecond
			o.Namespaces = []string{ns}
			reg := prometheus.NewRegistry()
			o.Registerer = reg
			startOperator(t, testCfg, o)
			if err := testClient.Create(ctx, newBackup(ns, "shop", "shop")); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "the incident's symptom", func() (bool, error) { return c.check(ctx, t, reg, ns) })
		})
	}
}

func TestNoLeaderElectionLetsReplicasRace(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, "race")
	createAppObjects(t, ns, "shop")
	var regs []*prometheus.Registry
	for i := 0; i < 2; i++ {
		o := testOptions(t)
		o.LeaderElection = true
		o.LeaderElectionNamespace = ns
		o.LeaderElectionID = "race-" + ns
		o.Faults.NoLeaderElection = true
		o.Namespaces = []string{ns}
		reg := prometheus.NewRegistry()
		o.Registerer = reg
		regs = append(regs, reg)
		startOperator(t, testCfg, o)
	}
	for i := 0; i < 5; i++ {
		if err := testClient.Create(ctx, newBackup(ns, fmt.Sprintf("b-%d", i), "shop")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "both replicas to reconcile the same Backups", func() (bool, error) {
		a := verbCount(t, regs[0], controller.BackupControllerName, instrument.VerbGet)
		b := verbCount(t, regs[1], controller.BackupControllerName, instrument.VerbGet)
		return a >= 5 && b >= 5, fmt.Errorf("replica reconciles: %v and %v", a, b)
	})
}
