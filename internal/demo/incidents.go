package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/loopwatch/loopwatch/gen"
)

// Incident is one controller failure reproduced with the operator's fault modes, and the alert
// that must catch it.
type Incident struct {
	// Name identifies the incident.
	Name string
	// What is said when it is injected.
	What string
	// Flags are the operator's fault flags.
	Flags []string
	// Pods is how many operator pods run it (default 1).
	Pods int
	// Setup prepares the cluster before the operator starts (optional).
	Setup func(ctx context.Context, e *Environment) error
	// Alert must fire, with at least Labels (which must be among the labels the alert keeps).
	Alert  *gen.Alert
	Labels map[string]string
}

// DemoIncidents are the incidents `make demo` shows.
var DemoIncidents = []string{"hot-loop", "write-fight"}

// Incidents returns every incident the environment can reproduce, in the order the tests inject
// them: the alerts read 5m rate windows, so an incident whose signal is a ratio (calls per
// reconcile, slow or failed share) comes before incidents that flood the window with fast
// reconciles (the hot loop).
func Incidents() []Incident {
	return []Incident{
		{
			Name:  "n-plus-one",
			What:  "every reconcile lists all Backups and GETs each one uncached (--fault-n-plus-one, 55 Backups)",
			Flags: []string{"--fault-n-plus-one"}, Setup: fleet,
			Alert: gen.APICallsPerReconcileHigh, Labels: map[string]string{"job": operatorJob},
		},
		{
			Name:  "slow-store",
			What:  "every store call takes 6s, as an overloaded object store does (--fault-slow-store=6s)",
			Flags: []string{"--fault-slow-store=6s"}, Setup: scheduledBackups,
			Alert: gen.ReconcileSlow, Labels: map[string]string{"job": operatorJob},
		},
		{
			Name:  "error-storm",
			What:  "the archive store fails every write (--fault-failing-store)",
			Flags: []string{"--fault-failing-store"}, Setup: scheduledBackups,
			Alert: gen.ReconcileErrors, Labels: map[string]string{"job": operatorJob},
		},
		{
			Name:  "replica-race",
			What:  "two replicas run without leader election and reconcile the same Backups (--fault-no-leader-election)",
			Flags: []string{"--fault-no-leader-election"}, Pods: 2, Setup: scheduledBackups,
			Alert: gen.ReplicaRace, Labels: map[string]string{"actor": "system:serviceaccount:" + namespace + ":" + operatorSA},
		},
		{
			Name:  "hot-loop",
			What:  "a timestamp annotation patched on every reconcile re-triggers the controller (--fault-hot-loop)",
			Flags: []string{"--fault-hot-loop"},
			Alert: gen.PatchRateHigh, Labels: map[string]string{"job": operatorJob, "method": "PATCH"},
		},
		{
			Name:  "write-fight",
			What:  "a second controller keeps changing an annotation the operator sets back (--fault-fight)",
			Flags: []string{"--fault-fight", "--fault-fight-as=system:serviceaccount:" + namespace + ":" + rivalSA},
			Alert: gen.WriteFight, Labels: map[string]string{"group": "backup.loopwatch.dev", "resource": "backups"},
		},
	}
}

func incident(name string) Incident {
	for _, inc := range Incidents() {
		if inc.Name == name {
			return inc
		}
	}
	panic(fmt.Sprintf("no incident %q", name))
}

// scheduledBackups creates Backups that take a snapshot every 10 seconds, so the controllers keep
// reconciling (and writing) after startup. Created once; later incidents reuse them.
func scheduledBackups(ctx context.Context, e *Environment) error {
	err := e.CreateBackups(ctx, "every10s", 5, 10)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// fleet adds 40 more Backups to the scheduled ones: the N+1 fault makes one GET per object of the
// namespace, so the calls per reconcile grow with the fleet (here 1 list + 50 GETs + the
// reconcile's own calls).
func fleet(ctx context.Context, e *Environment) error {
	if err := scheduledBackups(ctx, e); err != nil {
		return err
	}
	err := e.CreateBackups(ctx, "fleet", 40, 0)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// AnalyzeAuditLog runs `loopwatch audit analyze` on the API server's own audit log file: the
// post-mortem finds the same fights without Prometheus.
func (e *Environment) AnalyzeAuditLog(ctx context.Context) error {
	log := e.cp.AuditLogPath()
	e.say("== post-mortem: loopwatch audit analyze %s", log)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "loopwatch"), "audit", "analyze", log)
	cmd.Stdout, cmd.Stderr = e.opts.Out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("loopwatch audit analyze: %w", err)
	}
	return nil
}
