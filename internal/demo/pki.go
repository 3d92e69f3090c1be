package demo

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/loopwatch/loopwatch/internal/stack"
)

// certs are the TLS material of the audit webhook: a CA, the exporter's serving certificate
// (files, for `loopwatch exporter`) and the client certificate the API server presents to it.
type certs struct {
	caPEM                 []byte
	caFile                string
	serverCert, serverKey string
	clientCertPEM, keyPEM []byte
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
	c := &certs{caPEM: ca.CertPEM(), caFile: filepath.Join(dir, "exporter-ca.crt"), clientCertPEM: client.CertPEM, keyPEM: client.KeyPEM}
	if c.serverCert, c.serverKey, err = server.Write(dir, "exporter"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.caFile, c.caPEM, 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// webhook aims the API server's audit webhook at url, authenticating with the client certificate.
func (c *certs) webhook(url string) *stack.AuditWebhook {
	return &stack.AuditWebhook{URL: url, CAData: c.caPEM, ClientCertData: c.clientCertPEM, ClientKeyData: c.keyPEM}
}

// httpClient trusts the exporter's serving certificate (its /metrics needs no client certificate).
func (c *certs) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}
