package faults

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// The fault's endpoint answers scrapes (the target is up) with the Go and process metrics, and
// none of what controller-runtime's registry holds; it stops when its context ends.
func TestOwnRegistryMetricsServesNoneOfControllerRuntimes(t *testing.T) {
	addr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	marker := prometheus.NewCounter(prometheus.CounterOpts{Name: "loopwatch_faults_test_marker_total", Help: "a series of controller-runtime's registry"})
	if err := crmetrics.Registry.Register(marker); err != nil {
		t.Fatal(err)
	}
	defer crmetrics.Registry.Unregister(marker)

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- OwnRegistryMetrics{Addr: addr}.Start(ctx) }()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("scrape: %d %v", resp.StatusCode, rerr)
			}
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(body, "go_goroutines ") || !strings.Contains(body, "process_start_time_seconds ") {
		t.Errorf("the endpoint lacks the Go and process metrics:\n%s", body)
	}
	if strings.Contains(body, "loopwatch_faults_test_marker_total") {
		t.Error("the endpoint serves controller-runtime's registry")
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("stopped with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still serving 10s after its context ended")
	}
}
