package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/loopwatch/loopwatch/internal/proc"
	"github.com/loopwatch/loopwatch/internal/stack"
)

// exporterProcess is `loopwatch exporter` receiving the API server's audit webhook over TLS
// (the API server authenticates with a client certificate) and serving /metrics on the same
// listener.
type exporterProcess struct {
	*proc.Process
	addr string
}

// startExporter starts a fresh exporter at the webhook's address, stopping the previous one, and
// waits until it has received an audit batch: its state (fight, hot-object and race windows,
// top-K actors) starts empty, and a scene's Prometheus never sees it before batches flow. The
// API server retries a batch refused while the exporter restarts (1s initial backoff), so
// nothing is lost or counted as a webhook error.
func (c *Cluster) startExporter(ctx context.Context, dir string) error {
	if c.exporter != nil {
		if err := c.drainAudit(ctx); err != nil {
			return err
		}
		c.exporter.Stop()
		c.exporter = nil
	}
	p, err := proc.Start(dir, "loopwatch-exporter", filepath.Join(c.bin, "loopwatch"), nil, "exporter",
		"--listen-address="+c.exporterAddr,
		"--tls-cert-file="+c.tls.serverCert,
		"--tls-key-file="+c.tls.serverKey,
		"--client-ca-file="+c.tls.caFile,
		// The demo's API server sends a batch every second and retries a refused one after 1 s.
		"--reorder-wait=3s",
	)
	if err != nil {
		return err
	}
	c.exporter = &exporterProcess{Process: p, addr: c.exporterAddr}
	// Writing something makes the API server send a batch.
	if err := c.touch(ctx); err != nil {
		return err
	}
	hc, err := c.tls.httpClient()
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if ended, err := p.Exited(); ended {
			return false, fmt.Errorf("loopwatch exporter exited: %v (log %s)", err, p.Log)
		}
		var n float64
		n, last = batches(ctx, hc, "https://"+c.exporterAddr+"/metrics")
		return n > 0, nil
	})
	if err != nil {
		return fmt.Errorf("loopwatch exporter received no audit batch: %w (last: %v)", err, last)
	}
	return nil
}

// drainAudit waits until the running exporter has received every audit event written so far:
// the API server buffers events and posts them in batches, so the last writes of a scene could
// otherwise reach the next scene's exporter (a replica race of the last scene's pods, say). It
// writes a heartbeat and waits for two more batches: batches are posted in order, at most a
// second apart.
func (c *Cluster) drainAudit(ctx context.Context) error {
	hc, err := c.tls.httpClient()
	if err != nil {
		return err
	}
	url := "https://" + c.exporterAddr + "/metrics"
	before, err := batches(ctx, hc, url)
	if err != nil {
		return fmt.Errorf("drain the audit pipeline: %w", err)
	}
	if err := c.touch(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Second)
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := batches(ctx, hc, url)
		return err == nil && n >= before+2 && time.Now().After(deadline), nil
	})
}

var batchesLine = regexp.MustCompile(`(?m)^loopwatch_audit_batches_total(?:\{\})? (\S+)$`)

// batches reads loopwatch_audit_batches_total from the exporter's /metrics.
func batches(ctx context.Context, hc *http.Client, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, err
	}
	m := batchesLine.FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("no loopwatch_audit_batches_total in %s", url)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func (c *Cluster) exporterTarget() stack.ScrapeTarget {
	return stack.ScrapeTarget{
		Job: exporterJob, Addresses: []string{c.exporterAddr}, Scheme: "https",
		TLS:    &stack.TLSFiles{CAFile: c.tls.caFile, CertFile: c.tls.clientCert, KeyFile: c.tls.clientKey},
		Labels: map[string]string{"namespace": "monitoring", "pod": "loopwatch-exporter-0"},
	}
}
