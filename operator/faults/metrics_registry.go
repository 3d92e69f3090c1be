package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OwnRegistryMetrics serves /metrics in place of controller-runtime's metrics
// server, from a registry of its own that holds only the Go runtime and
// process collectors: what a binary serves when it exposes a registry other
// than controller-runtime's (promhttp.Handler() and client_golang's default
// registry, say). The target stays up and answers every scrape, while every
// controller_runtime_*, workqueue_*, rest_client_* and leader_election_*
// series goes to a registry nobody serves. It runs on every replica, leader
// or not, as a metrics server does.
type OwnRegistryMetrics struct {
	// Addr is where /metrics is served (host:port).
	Addr string
}

// NeedLeaderElection reports false: every replica serves its metrics.
func (m OwnRegistryMetrics) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (m OwnRegistryMetrics) Start(ctx context.Context) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	lis, err := net.Listen("tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("own-registry metrics: listen on %s: %w", m.Addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	select {
	case err := <-done:
		return fmt.Errorf("own-registry metrics: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("own-registry metrics: shut down: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("own-registry metrics: %w", err)
	}
	return nil
}
