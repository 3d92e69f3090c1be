package e2e_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/internal/demo"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// TestMatrix is the e2e matrix: on one real control plane, the healthy scene and every incident
// of internal/demo, each in a scene of its own (namespace, operator pods, exporter, Prometheus).
// Each incident's expected alerts must fire within their `for` + 1 minute and no other
// loopwatch alert may be pending or firing; the healthy scene must stay silent. Then
// `loopwatch diagnose` (its Go API, on the scene's Prometheus) must name the incident's expected
// cause first, and call every controller of the healthy scene healthy. The table goes to the
// test log and, when LOOPWATCH_E2E_TABLE names a file, there; a run of every scene with
// LOOPWATCH_E2E_RESULTS set to the repository root also writes it into docs/detection.md, with
// what it measured in docs/results/e2e-matrix.json.
//
// It runs when LOOPWATCH_E2E_MATRIX is set (`make e2e`): alone, not beside the other packages'
// tests, because its time-to-detect figures are only meaningful on an otherwise idle machine.
// LOOPWATCH_E2E_SCENARIOS limits the run to a comma-separated list of scenario names.
func TestMatrix(t *testing.T) {
	if testing.Short() || os.Getenv("LOOPWATCH_E2E_MATRIX") == "" {
		t.Skip("set LOOPWATCH_E2E_MATRIX=1 (make e2e) to run the matrix on real components")
	}
	scenarios := demo.Scenarios()
	if sel := os.Getenv("LOOPWATCH_E2E_SCENARIOS"); sel != "" {
		scenarios = nil
		for _, name := range strings.Split(sel, ",") {
			inc, err := demo.Scenario(strings.TrimSpace(name))
			if err != nil {
				t.Fatal(err)
			}
			scenarios = append(scenarios, inc)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	c, err := demo.StartCluster(ctx, demo.Options{Out: os.Stdout})
	if err != nil {
		if errors.Is(err, stack.ErrMissingBinary) {
			t.Fatalf("%v: run make tools binaries", err)
		}
		t.Fatal(err)
	}
	var results []demo.Result
	failed := false
	for _, inc := range scenarios {
		res, _ := c.RunIncident(ctx, inc, false)
		results = append(results, res)
		if !res.Passed() {
			failed = true
			t.Errorf("%s: expected %v to fire alone; fired %v, other alerts %v, error %v", inc.Name, inc.Expect, res.Fired, res.Others, res.Err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	c.Close(failed)
	run := demo.NewMatrixRun(results, stack.Versions("kube-apiserver", "etcd", "prometheus"))
	var table strings.Builder
	demo.WriteTable(&table, run)
	t.Log("\n" + table.String())
	if path := os.Getenv("LOOPWATCH_E2E_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(table.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	// The whole matrix, and only it, rewrites the detection page's table: a run of some scenes
	// says nothing of the others.
	if root := os.Getenv("LOOPWATCH_E2E_RESULTS"); root != "" && len(scenarios) == len(demo.Scenarios()) {
		if err := demo.MatrixTable.Write(root, run, table.String()); err != nil {
			t.Error(err)
		}
	}
}
