package demo

import (
	"path/filepath"

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

func (e *Environment) startExporter() error {
	c, err := newCerts(e.dir)
	if err != nil {
		return err
	}
	listen, err := stack.FreeAddr()
	if err != nil {
		return err
	}
	p, err := startProcess(e.dir, "loopwatch-exporter", filepath.Join(e.bin, "loopwatch"), nil, "exporter",
		"--listen-address="+listen,
		"--tls-cert-file="+c.serverCert,
		"--tls-key-file="+c.serverKey,
		"--client-ca-file="+c.caFile,
	)
	if err != nil {
		return err
	}
	e.exporter = &exporterProcess{process: p, addr: listen, url: "https://" + listen + "/", certs: c}
	e.say("loopwatch exporter started: webhook and /metrics at %s (TLS; the API server presents a client certificate)", e.exporter.url)
	return nil
}

func (x *exporterProcess) webhook() *stack.AuditWebhook {
	return &stack.AuditWebhook{URL: x.url, CAData: x.certs.caPEM, ClientCertData: x.certs.clientCertPEM, ClientKeyData: x.certs.keyPEM}
}

func (x *exporterProcess) scrapeTarget() stack.ScrapeTarget {
	return stack.ScrapeTarget{
		Job: exporterJob, Addresses: []string{x.addr}, Scheme: "https",
		TLS:    &stack.TLSFiles{CAFile: x.certs.caFile, CertFile: x.certs.clientCert, KeyFile: x.certs.clientKey},
		Labels: map[string]string{"namespace": "monitoring", "pod": "loopwatch-exporter-0"},
	}
}
