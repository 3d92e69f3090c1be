package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// exporterProcess is `loopwatch exporter` receiving the API server's audit webhook over TLS
// (the API server authenticates with a client certificate) and serving /metrics on the same
// listener.
type exporterProcess struct {
	*process
	addr  string
	url   string
	certs *certs
}

func (d *demo) startExporter() error {
	c, err := newCerts(d.dir)
	if err != nil {
		return err
	}
	listen, err := stack.FreeAddr()
	if err != nil {
		return err
	}
	p, err := startProcess(d.dir, "loopwatch-exporter", filepath.Join(d.bin, "loopwatch"), nil, "exporter",
		"--listen-address="+listen,
		"--tls-cert-file="+c.serverCert,
		"--tls-key-file="+c.serverKey,
		"--client-ca-file="+c.caFile,
	)
	if err != nil {
		return err
	}
	d.exporter = &exporterProcess{process: p, addr: listen, url: "https://" + listen + "/", certs: c}
	d.say("loopwatch exporter started: webhook and /metrics at %s (TLS; the API server presents a client certificate)", d.exporter.url)
	return nil
}

func (e *exporterProcess) webhook() *stack.AuditWebhook {
	return &stack.AuditWebhook{URL: e.url, CAData: e.certs.caPEM, ClientCertData: e.certs.clientCertPEM, ClientKeyData: e.certs.keyPEM}
}

func (e *exporterProcess) scrapeTarget() stack.ScrapeTarget {
	return stack.ScrapeTarget{
		Job: exporterJob, Addresses: []string{e.addr}, Scheme: "https", TLS: &stack.TLSFiles{CAFile: e.certs.caFile},
		Labels: map[string]string{"namespace": "monitoring", "pod": "loopwatch-exporter-0"},
	}
}

// analyzeAuditLog runs the post-mortem on the API server's own audit log file: the same fight,
// found without Prometheus.
func (d *demo) analyzeAuditLog(ctx context.Context) error {
	log := d.cp.AuditLogPath()
	d.say("== post-mortem: loopwatch audit analyze %s", log)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(d.bin, "loopwatch"), "audit", "analyze", log)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("loopwatch audit analyze: %w", err)
	}
	return nil
}
