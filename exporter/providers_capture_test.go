package exporter

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/loopwatch/loopwatch/exporter/managed/forms"
	"github.com/loopwatch/loopwatch/internal/stack"
)

var captureProviders = flag.Bool("capture-providers", false,
	"run the incident scenario on a real kube-apiserver and rewrite testdata/providers: its audit log and every provider's form of it")

// TestCaptureProviderTestdata records the test data of the managed-cluster sources: a real
// kube-apiserver's audit log (log backend) of the integration scenario — a fight, a replica race
// with pod-bound tokens and 409s, a hot object — and each provider's form of it (package forms).
// It runs only with -capture-providers; package managed checks that the committed forms are
// what forms writes for the committed log.
func TestCaptureProviderTestdata(t *testing.T) {
	if !*captureProviders {
		t.Skip("rewrites testdata/providers: run with -capture-providers")
	}
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := stack.NewTestControlPlane(t, stack.ControlPlaneOptions{AuditLog: true})
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	provokeFight(ctx, t, cp, admin)
	provokeReplicaRace(ctx, t, cp, admin)
	provokeHotObject(ctx, t, cp, admin)

	// The log backend writes each event as its request completes; wait for the last patch.
	var log []byte
	for deadline := time.Now().Add(20 * time.Second); ; {
		b, err := os.ReadFile(cp.AuditLogPath())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte(`"name":"heartbeat"`)) >= 101 {
			log = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log lacks the hot object's writes after 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	dir := filepath.Join("testdata", "providers")
	if err := os.RemoveAll(dir + "/eks"); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"gke", "aks"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	files, err := forms.Files(forms.DefaultCluster, log)
	if err != nil {
		t.Fatal(err)
	}
	files["native/audit.jsonl"] = log
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("Wrote %d files from %d bytes of audit log", len(files), len(log))
}
