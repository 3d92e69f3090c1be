package demo

import (
	"os"
	"path/filepath"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// certs are the demo's TLS material for the audit webhook: a CA, the exporter's serving
// certificate (files, for `loopwatch exporter`) and the client certificate the API server
// presents to it.
type certs struct {
	caPEM                 []byte
	caFile                string
	serverCert, serverKey string
	clientCertPEM, keyPEM []byte
	// clientCert and clientKey are the client certificate's files: Prometheus presents it to
	// scrape /metrics, which takes the webhook's credentials.
	clientCert, clientKey string
}

func newCerts(dir string) (*certs, error) {
	ca, err := stack.NewCertAuthority("loopwatch-demo-ca")
	if err != nil {
		return nil, err
	}
	server, err := ca.Serving("loopwatch-exporter")
	if err != nil {
		return nil, err
	}
	client, err := ca.Client("kube-apiserver-audit")
	if err != nil {
		return nil, err
	}
	c := &certs{caPEM: ca.CertPEM(), caFile: filepath.Join(dir, "ca.crt"), clientCertPEM: client.CertPEM, keyPEM: client.KeyPEM}
	if c.serverCert, c.serverKey, err = server.Write(dir, "exporter"); err != nil {
		return nil, err
	}
	if c.clientCert, c.clientKey, err = client.Write(dir, "exporter-client"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.caFile, c.caPEM, 0o600); err != nil {
		return nil, err
	}
	return c, nil
}
