package stack

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CertAuthority signs the API server's serving certificate and the test users' client
// certificates (one per control plane), and any other test TLS material, such as an audit
// webhook receiver's serving certificate and the client certificate the API server presents to
// it. Generated in memory: nothing to commit, nothing to expire.
type CertAuthority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// CertPEM returns the CA's certificate, PEM-encoded: what a peer must trust.
func (ca *CertAuthority) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// NewCertAuthority generates a self-signed CA named name, valid for a day.
func NewCertAuthority(name string) (*CertAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA: %w", err)
	}
	return &CertAuthority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// Serving issues a server certificate for the loopback addresses.
func (ca *CertAuthority) Serving(name string) (KeyPair, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
}

// ServingTLS issues a server certificate for the loopback addresses (Serving) and returns it as a
// server's TLS configuration.
func (ca *CertAuthority) ServingTLS(name string) (*tls.Config, error) {
	kp, err := ca.Serving(name)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("load certificate for %q: %w", name, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Pool returns a certificate pool that trusts the CA: a client's roots.
func (ca *CertAuthority) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Client issues a client certificate: kube-apiserver reads the user name from the common name and
// the groups from the organizations.
func (ca *CertAuthority) Client(user string, groups ...string) (KeyPair, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// issue completes tmpl's validity and usage and signs it with a fresh key.
func (ca *CertAuthority) issue(tmpl *x509.Certificate) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate key for %q: %w", tmpl.Subject.CommonName, err)
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// Write stores the pair as <dir>/<name>.crt and <dir>/<name>.key and returns both paths.
func (kp KeyPair) Write(dir, name string) (certFile, keyFile string, err error) {
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, kp.CertPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := os.WriteFile(keyFile, kp.KeyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", keyFile, err)
	}
	return certFile, keyFile, nil
}

// serviceAccountKeys writes the key pair kube-apiserver signs and verifies service-account tokens
// with, returning the private and public key file paths.
func serviceAccountKeys(dir string) (keyFile, pubFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("generate service-account key: %w", err)
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("marshal service-account public key: %w", err)
	}
	keyFile = filepath.Join(dir, "service-account.key")
	pubFile = filepath.Join(dir, "service-account.pub")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", keyFile, err)
	}
	if err := os.WriteFile(pubFile, pemBlock("PUBLIC KEY", pub), 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", pubFile, err)
	}
	return keyFile, pubFile, nil
}

func ecKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		// crypto/rand does not fail on Linux; a constant serial would still be a valid certificate.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// ServingCertificate writes a fresh CA and a serving certificate for 127.0.0.1, ::1 and localhost
// into dir, for a test server kube-apiserver must trust, such as an audit webhook receiver (put
// caPEM in AuditWebhook.CAData). It returns the certificate and key file paths and the CA.
func ServingCertificate(dir string) (certFile, keyFile string, caPEM []byte, err error) {
	ca, err := NewCertAuthority("loopwatch-test-serving-ca")
	if err != nil {
		return "", "", nil, err
	}
	kp, err := ca.Serving("loopwatch-test-server")
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile, err = kp.Write(dir, "serving")
	if err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, ca.certPEM, nil
}
