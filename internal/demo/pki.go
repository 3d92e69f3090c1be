package demo

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
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
	c := &certs{caPEM: ca.CertPEM(), caFile: filepath.Join(dir, "exporter-ca.crt"), clientCertPEM: client.CertPEM, keyPEM: client.KeyPEM}
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

// webhook aims the API server's audit webhook at url, authenticating with the client certificate.
func (c *certs) webhook(url string) *stack.AuditWebhook {
	return &stack.AuditWebhook{URL: url, CAData: c.caPEM, ClientCertData: c.clientCertPEM, ClientKeyData: c.keyPEM}
}

// httpClient trusts the exporter's serving certificate and presents the client certificate:
// /metrics on the exporter's TLS listener takes the webhook's credentials.
func (c *certs) httpClient() (*http.Client, error) {
	pair, err := tls.X509KeyPair(c.clientCertPEM, c.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load the exporter client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
	}}}, nil
}
