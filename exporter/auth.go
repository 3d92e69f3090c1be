package exporter

import (
	"crypto/subtle"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
)

// credentials are what a sender (the API server's webhook) or a scraper (Prometheus) may
// authenticate with: a client certificate signed by clientCA, or the bearer token.
type credentials struct {
	clientCA *x509.CertPool
	token    []byte
}

// loadCredentials reads a CA bundle and a token file; either may be "". Problems are appended to
// errs, naming the flag (what) they came from.
func loadCredentials(caFile, tokenFile, what string, errs *[]error) credentials {
	var c credentials
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("read %s client CA file: %w", what, err))
		} else {
			c.clientCA = x509.NewCertPool()
			if !c.clientCA.AppendCertsFromPEM(pem) {
				*errs = append(*errs, fmt.Errorf("%s client CA file %q holds no PEM certificate", what, caFile))
			}
		}
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("read %s token file: %w", what, err))
		} else if c.token = []byte(strings.TrimSpace(string(b))); len(c.token) == 0 {
			*errs = append(*errs, fmt.Errorf("%s token file %q is empty", what, tokenFile))
		}
	}
	return c
}

// authenticate checks the request against each set of credentials: a client certificate that
// verifies against one set's CA, or a bearer token equal to one set's token (constant-time). It
// returns 0 when the request is authenticated, else the status to answer and the reason to
// count: 401 when nothing was presented, 403 when what was presented is wrong.
func (s *Server) authenticate(r *http.Request, sets ...credentials) (status int, reason string) {
	presented := false
	hasCert := r.TLS != nil && len(r.TLS.PeerCertificates) > 0
	tok, hasToken := bearerToken(r)
	for _, c := range sets {
		if c.clientCA != nil && hasCert {
			presented = true
			if s.verifyClientCert(r, c.clientCA) {
				return 0, ""
			}
		}
		if c.token != nil && hasToken {
			presented = true
			if subtle.ConstantTimeCompare(tok, c.token) == 1 {
				return 0, ""
			}
		}
	}
	if presented {
		return http.StatusForbidden, ReasonForbidden
	}
	return http.StatusUnauthorized, ReasonUnauthenticated
}

// bearerToken returns the request's bearer token, if it has an Authorization header.
func bearerToken(r *http.Request) ([]byte, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, false
	}
	tok, _ := strings.CutPrefix(h, "Bearer ")
	return []byte(strings.TrimSpace(tok)), true
}

// connVerified caches, per TLS connection, whether its client certificate verified against each
// CA pool it was checked against (HTTP/2 streams of one connection ask concurrently).
type connVerified struct {
	mu sync.Mutex
	ok map[*x509.CertPool]bool
}

type connKey struct{}

func (s *Server) verifyClientCert(r *http.Request, pool *x509.CertPool) bool {
	check := func() bool {
		certs := r.TLS.PeerCertificates
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{
			Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			s.log.Debug("Client certificate refused", "subject", certs[0].Subject.String(), "err", err)
		}
		return err == nil
	}
	cv, _ := r.Context().Value(connKey{}).(*connVerified)
	if cv == nil {
		return check()
	}
	cv.mu.Lock()
	defer cv.mu.Unlock()
	ok, done := cv.ok[pool]
	if !done {
		if cv.ok == nil {
			cv.ok = map[*x509.CertPool]bool{}
		}
		ok = check()
		cv.ok[pool] = ok
	}
	return ok
}
