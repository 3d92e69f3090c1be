package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/catalogue"
)

// TestBinaryRunsAndServesPlainMetricsOnRequest builds cmd/backup-operator,
// runs it as a process against the test API server the way the demo does
// (--kubeconfig, --metrics-insecure, leader election in a given namespace),
// and checks it reconciles and serves its metrics, then stops on SIGTERM.
func TestBinaryRunsAndServesPlainMetricsOnRequest(t *testing.T) {
	needCluster(t)
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin := operatorBinary(t)
	kubeconfig := testKubeconfigFile(t)
	ns := newNamespace(t, "binary")
	createAppObjects(t, ns, "shop")
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--metrics-insecure", "--metrics-bind-address="+addr,
		"--health-probe-bind-address=0", "--leader-election-namespace="+ns, "--store-dir="+filepath.Join(dir, "store"),
		"--namespace="+ns)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()

	if err := testClient.Create(ctx, newBackup(ns, "shop", "shop")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the binary to make the Backup Ready", func() (bool, error) {
		n, _, err := countReady(ctx, ns)
		return n == 1, err
	})
	var body string
	eventually(t, 10*time.Second, "plain-HTTP metrics", func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://%s/metrics", addr))
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && resp.StatusCode == http.StatusOK, err
	})
	for _, want := range []string{
		`loopwatch_controller_api_requests_total{access="write",controller="backup",verb="patch"}`,
		catalogue.ControllerFinalizerOldestPendingSeconds.Name + `{controller="snapshot"`,
		`controller_runtime_reconcile_total{controller="snapshot",result="success"}`,
		`leader_election_master_status`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("operator exited with %v; logs:\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("operator did not stop within 30s of SIGTERM; logs:\n%s", logs.String())
	}
}
