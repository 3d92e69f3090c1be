package e2e_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/diagnose"
	"github.com/loopwatch/loopwatch/gen"
	"github.com/loopwatch/loopwatch/internal/demo"
	"github.com/loopwatch/loopwatch/internal/stack"
	"github.com/loopwatch/loopwatch/operator/controller"
)

// TestDiagnoseTiesFightsToControllersAsDeployed plays the matrix's write fight on the real stack
// (kube-apiserver's audit webhook to the exporter, the operator as real processes with tokens
// bound to their pods, Prometheus with the generated rules) with the operator deployed three ways:
// as itself (service account and job backup-operator), on its namespace's default ServiceAccount
// (job payments-api), and as kubebuilder's scaffold names a project (ServiceAccount
// controller-manager, job guestbook-controller-manager-metrics-service). Each time WriteFight must
// fire alone, carrying the operator's namespace and job, and `loopwatch diagnose` must list the
// fight first under the Backup controller, joined by the pod its writes came from.
func TestDiagnoseTiesFightsToControllersAsDeployed(t *testing.T) {
	stack.SkipShort(t)
	workloads := []struct {
		name string
		w    demo.Workload
	}{
		{"the reference operator", demo.Workload{}},
		{"a controller on its namespace's default ServiceAccount", demo.Workload{ServiceAccount: "default", Job: "payments-api"}},
		{"kubebuilder's scaffold names", demo.Workload{ServiceAccount: "controller-manager", Job: "guestbook-controller-manager-metrics-service"}},
	}
	cfg := demo.Config()
	jobs := []string{"backup-operator", "payments-api", "guestbook-controller-manager-metrics-service"}
	cfg.Selectors.Controller = `job=~"` + strings.Join(jobs, "|") + `"`
	cfg.Selectors.ControllerTargets = cfg.Selectors.Controller
	fight, err := demo.Scenario("write-fight")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c, err := demo.StartCluster(ctx, demo.Options{Out: os.Stdout, Config: &cfg})
	if err != nil {
		if errors.Is(err, stack.ErrMissingBinary) {
			t.Fatalf("%v: run make tools binaries", err)
		}
		t.Fatal(err)
	}
	failed := false
	defer func() { c.Close(failed) }()
	for _, tc := range workloads {
		inc := fight
		inc.Workload = tc.w
		start := time.Now()
		res, s := c.RunIncident(ctx, inc, true)
		if s == nil {
			failed = true
			t.Errorf("%s: the scene failed: %v", tc.name, res.Err)
			continue
		}
		func() {
			defer s.Close(failed)
			if !res.Passed() {
				failed = true
				t.Errorf("%s: expected %v to fire alone; fired %v, other alerts %v, error %v, diagnosed %+v", tc.name, inc.Expect, res.Fired, res.Others, res.Err, res.Diagnosed)
				return
			}
			job := tc.w.Job
			if job == "" {
				job = "backup-operator"
			}
			// The alert carries the operator's workload: the join with up by the writing pod.
			q := `ALERTS{alertname="` + gen.WriteFight.FullName() + `", alertstate="firing", namespace="` + s.Namespace + `", job="` + job + `"}`
			if v, err := s.Prometheus().Query(ctx, q); err != nil || len(v) == 0 {
				failed = true
				t.Errorf("%s: no firing WriteFight carries namespace %s and job %s (%v)", tc.name, s.Namespace, job, err)
			}
			r, err := diagnose.Run(ctx, diagnose.Options{Prometheus: s.Prometheus().URL(), Since: time.Since(start).Round(time.Second) + time.Minute, Config: cfg})
			if err != nil {
				failed = true
				t.Errorf("%s: diagnose: %v", tc.name, err)
				return
			}
			ctl, ok := r.Find(s.Namespace, job, controller.BackupControllerName)
			if !ok || len(ctl.Causes) == 0 {
				failed = true
				t.Errorf("%s: diagnose found no cause for controller %s of %s/%s", tc.name, controller.BackupControllerName, s.Namespace, job)
				return
			}
			first := ctl.Causes[0]
			t.Logf("%s: %s %s, tied by %s, joined by %s: %s", tc.name, ctl.Verdict, first.Alert, first.Attribution, first.Join, first.JoinDetail)
			if first.Alert != gen.WriteFight.FullName() || first.Join != string(diagnose.JoinPod) || !strings.Contains(first.JoinDetail, job) {
				failed = true
				t.Errorf("%s: first cause %s joined by %q (%s), want %s joined by pod to job %s", tc.name, first.Alert, first.Join, first.JoinDetail, gen.WriteFight.FullName(), job)
			}
		}()
	}
}
