package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// TestExporterCommandStopsWhenTheEventHubRefusesItsCredentials: Event Hubs answers a wrong or
// revoked key with SASL_AUTHENTICATION_FAILED. The exporter then exits at once with an error that
// points to the connection string, instead of retrying for ever or serving /metrics with no
// source behind it. The endpoint is franz-go's in-process Kafka-protocol cluster (kfake) with TLS
// and SASL PLAIN, made to answer every authentication as Event Hubs answers a revoked key.
func TestExporterCommandStopsWhenTheEventHubRefusesItsCredentials(t *testing.T) {
	const hub = "aks-audit"
	dir := t.TempDir()
	ca, err := stack.NewCertAuthority("loopwatch-eventhub-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.ServingTLS("loopwatch-test.servicebus.windows.net")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, hub), kfake.EnableSASL(), kfake.TLS(serving))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var refusals atomic.Int32
	cluster.ControlKey(kmsg.SASLAuthenticate.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		refusals.Add(1)
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Authentication failed: the shared access key was revoked")
		return resp, nil, true
	})

	caFile := filepath.Join(dir, "eventhub-ca.crt")
	connFile := filepath.Join(dir, "eventhub-connection-string")
	tokenFile := filepath.Join(dir, "scrape-token")
	for file, content := range map[string][]byte{
		caFile:    ca.CertPEM(),
		connFile:  []byte("Endpoint=sb://loopwatch-test.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=cmV2b2tlZA==;EntityPath=aks-audit\n"),
		tokenFile: []byte("scrape-secret\n"),
	} {
		if err := os.WriteFile(file, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cmd := NewExporterCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{
		"--listen-address=" + addr, "--insecure-http", "--metrics-token-file=" + tokenFile,
		"--eventhub-brokers=" + strings.Join(cluster.ListenAddrs(), ","), "--eventhub-name=" + hub,
		"--eventhub-connection-string-file=" + connFile, "--eventhub-ca-file=" + caFile,
	})
	// Any other failure to reach the hub is retried every 5 s, so a minute without an answer
	// means the refusal was not recognised.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err = cmd.ExecuteContext(ctx)
	t.Logf("the exporter stopped after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the exporter still ran after a minute of refused credentials (%d refusals)", refusals.Load())
	}
	if err == nil || !strings.Contains(err.Error(), "authentication refused (check the connection string)") {
		t.Fatalf("the exporter stopped with %v, want an error that points to the connection string", err)
	}
	if refusals.Load() == 0 {
		t.Fatal("the hub never refused an authentication: the error came from somewhere else")
	}
}
