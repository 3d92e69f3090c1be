package exporter

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
)

// Peers is how replicas recognise each other: they share one serving certificate (the
// Deployment mounts one Secret), present it as their client certificate to each other, and
// accept a peer whose certificate is that very one or, with a peer CA (certificates rotated one
// replica at a time), one the CA signed for the same DNS names.
type Peers struct {
	cert  tls.Certificate
	own   *x509.Certificate
	roots *x509.CertPool
}

// LoadPeers loads the serving certificate and key, and the optional peer CA bundle.
func LoadPeers(certFile, keyFile, caFile string) (*Peers, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load serving certificate for peers: %w", err)
	}
	own, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse serving certificate: %w", err)
	}
	p := &Peers{cert: cert, own: own}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read peer CA file: %w", err)
		}
		p.roots = x509.NewCertPool()
		if !p.roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("peer CA file %q holds no PEM certificate", caFile)
		}
	}
	return p, nil
}

// errNotPeer is a certificate that is no replica's.
var errNotPeer = errors.New("not the replicas' certificate")

// verify accepts a replica's certificate chain (leaf first).
func (p *Peers) verify(chain []*x509.Certificate) error {
	if len(chain) == 0 {
		return errNotPeer
	}
	leaf := chain[0]
	if bytes.Equal(leaf.Raw, p.own.Raw) {
		return nil
	}
	if p.roots == nil {
		return errNotPeer
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: p.roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("peer certificate: %w", err)
	}
	for _, name := range p.own.DNSNames {
		if !slices.Contains(leaf.DNSNames, name) {
			return fmt.Errorf("peer certificate lacks the DNS name %q of this replica's", name)
		}
	}
	return nil
}

// isPeer reports whether r comes from a replica (its TLS client certificate).
func (p *Peers) isPeer(r *http.Request) bool {
	return p != nil && r.TLS != nil && p.verify(r.TLS.PeerCertificates) == nil
}

// clientTLS is the configuration a replica reaches another with: its certificate, and the
// other's checked as a peer's (the address is a pod IP, which the certificate does not name).
func (p *Peers) clientTLS() *tls.Config {
	return &tls.Config{
		Certificates:       []tls.Certificate{p.cert},
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"h2"},
		InsecureSkipVerify: true, // verified by VerifyPeerCertificate, as a peer's
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			chain := make([]*x509.Certificate, 0, len(raw))
			for _, b := range raw {
				c, err := x509.ParseCertificate(b)
				if err != nil {
					return err
				}
				chain = append(chain, c)
			}
			return p.verify(chain)
		},
	}
}
