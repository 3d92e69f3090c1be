package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/exporter"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// exporterJob is the job label the generated audit rules and dashboards select the exporter by.
const exporterJob = "loopwatch-exporter"

// startExporter runs loopwatch's audit exporter in-process, the real kube-apiserver being its
// webhook client: TLS on a loopback port, the API server authenticated by a bearer token. It
// returns the webhook to give the control plane, the address serving /metrics (https, for
// Prometheus) and the file holding the token, which /metrics takes too; it stops in t.Cleanup.
func startExporter(t *testing.T) (*stack.AuditWebhook, string, string) {
	t.Helper()
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	token := hex.EncodeToString(secret)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "exporter.log"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(logFile, nil))
	reg := prometheus.NewRegistry()
	e, err := exporter.New(exporter.Config{Registerer: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, caPEM, err := stack.ServingCertificate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := exporter.NewServer(exporter.ServerConfig{
		Addr:        l.Addr().String(),
		TLSCertFile: certFile,
		TLSKeyFile:  keyFile,
		TokenFile:   tokenFile,
		// A managed-cluster source (EKS's Firehose endpoint; nothing delivers to it here): its
		// series exist, so the dashboard's source panels and the alerts reading them are checked
		// against Prometheus too.
		Firehose: &exporter.FirehoseConfig{AccessKeyFile: tokenFile},
		Gatherer: reg,
		Logger:   logger,
	}, e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("exporter: %v", err)
		}
		_ = logFile.Close()
		if t.Failed() {
			t.Logf("exporter log, last lines:\n%s", tailFile(logFile.Name(), 40))
		}
	})
	addr := l.Addr().String()
	return &stack.AuditWebhook{URL: "https://" + addr + exporter.WebhookPath, CAData: caPEM, Token: token}, addr, tokenFile
}
