package exporter

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// WebhookPath is where the audit webhook posts (the kubeconfig's cluster.server URL should end
// with it; a POST to "/" is accepted too).
const WebhookPath = "/audit"

// DefaultMaxBodyBytes bounds a webhook request body: 400 Metadata-level events are ~400 KiB, the
// API server's own truncation limit for a batch is 10 MiB.
const DefaultMaxBodyBytes = 16 << 20

// ServerConfig configures the webhook server.
type ServerConfig struct {
	// Addr is the listen address, e.g. ":8443".
	Addr string
	// TLSCertFile and TLSKeyFile are the serving certificate; required unless InsecureHTTP.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile authenticates senders by client certificate.
	ClientCAFile string
	// TokenFile authenticates senders by bearer token (the file holds the token).
	TokenFile string
	// InsecureHTTP serves plain HTTP (tests and local experiments only); senders must then use
	// the bearer token.
	InsecureHTTP bool
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// MaxInFlight bounds concurrently processed batches (4 when 0); a request that finds no slot
	// within QueueWait (1s when 0) gets 429 and the API server retries later.
	MaxInFlight int
	QueueWait   time.Duration
	// Gatherer serves /metrics.
	Gatherer prometheus.Gatherer
	// DisableWebhook serves only /metrics, /healthz and /readyz (file ingest without a webhook);
	// no credentials are needed then.
	DisableWebhook bool
	// ShutdownTimeout bounds graceful shutdown (10s when 0).
	ShutdownTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the audit webhook endpoint plus /metrics, /healthz and /readyz.
type Server struct {
	cfg      ServerConfig
	exporter *Exporter
	clientCA *x509.CertPool
	token    []byte
	inFlight chan struct{}
	bodies   sync.Pool
	ready    atomic.Bool
	log      *slog.Logger
	// handled, when set (by benchmarks), receives each body-reading request's handling time.
	handled func(time.Duration)
}

// NewServer validates cfg and loads the credentials files.
func NewServer(cfg ServerConfig, e *Exporter) (*Server, error) {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 4
	}
	if cfg.QueueWait == 0 {
		cfg.QueueWait = time.Second
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var errs []error
	if e == nil {
		errs = append(errs, errors.New("server: exporter is required"))
	}
	if cfg.Addr == "" {
		errs = append(errs, errors.New("server: listen address is required"))
	}
	if !cfg.InsecureHTTP && (cfg.TLSCertFile == "" || cfg.TLSKeyFile == "") {
		errs = append(errs, errors.New("server: tls cert and key files are required (or insecure http)"))
	}
	if cfg.ClientCAFile == "" && cfg.TokenFile == "" && !cfg.DisableWebhook {
		errs = append(errs, errors.New("server: a client CA file or a bearer token file is required"))
	}
	if cfg.InsecureHTTP && cfg.ClientCAFile != "" {
		errs = append(errs, errors.New("server: client certificates need TLS"))
	}
	s := &Server{cfg: cfg, exporter: e, inFlight: make(chan struct{}, cfg.MaxInFlight), log: cfg.Logger}
	if cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("read client CA file: %w", err))
		} else {
			s.clientCA = x509.NewCertPool()
			if !s.clientCA.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("client CA file %q holds no PEM certificate", cfg.ClientCAFile))
			}
		}
	}
	if cfg.TokenFile != "" {
		b, err := os.ReadFile(cfg.TokenFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("read token file: %w", err))
		} else if s.token = []byte(strings.TrimSpace(string(b))); len(s.token) == 0 {
			errs = append(errs, fmt.Errorf("token file %q is empty", cfg.TokenFile))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.bodies.New = func() any { b := make([]byte, 0, 512<<10); return &b }
	return s, nil
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	if !s.cfg.DisableWebhook {
		mux.HandleFunc(WebhookPath, s.webhook)
		mux.HandleFunc("/{$}", s.webhook)
	}
	if s.cfg.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// connVerified caches, per TLS connection, whether its client certificate verified.
type connVerified struct {
	once sync.Once
	ok   bool
}

type connKey struct{}

// Serve serves on l until ctx is done, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connVerified{})
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if !s.cfg.InsecureHTTP {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("load serving certificate: %w", err)
		}
		tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if s.clientCA != nil {
			// Verified in the handler, not the handshake, so that a bad certificate is answered
			// 403 and counted rather than lost as a handshake error.
			tlsCfg.ClientAuth = tls.RequestClientCert
		}
		l = tls.NewListener(l, tlsCfg)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	s.ready.Store(true)
	s.log.Info("Serving audit webhook", "addr", l.Addr().String(), "tls", !s.cfg.InsecureHTTP)
	select {
	case err := <-errc:
		s.ready.Store(false)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.ready.Store(false)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	s.log.Info("Audit webhook stopped")
	return nil
}

// ListenAndServe listens on cfg.Addr and serves until ctx is done.
func (s *Server) ListenAndServe(ctx context.Context) error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return s.Serve(ctx, l)
}

func (s *Server) reject(w http.ResponseWriter, code int, reason, msg string) {
	s.exporter.metrics.requests.WithLabelValues(OutcomeRejected, reason).Inc()
	http.Error(w, msg, code)
}

// authenticate checks the client certificate, then the bearer token. It returns 0 when the
// request is authenticated, else the status to answer.
func (s *Server) authenticate(r *http.Request) (status int, reason string) {
	presented := false
	if s.clientCA != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		presented = true
		if s.verifyClientCert(r) {
			return 0, ""
		}
	}
	if s.token != nil {
		if h := r.Header.Get("Authorization"); h != "" {
			presented = true
			tok, ok := strings.CutPrefix(h, "Bearer ")
			if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), s.token) == 1 {
				return 0, ""
			}
		}
	}
	if presented {
		return http.StatusForbidden, ReasonForbidden
	}
	return http.StatusUnauthorized, ReasonUnauthenticated
}

func (s *Server) verifyClientCert(r *http.Request) bool {
	check := func() bool {
		certs := r.TLS.PeerCertificates
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{
			Roots: s.clientCA, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
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
	cv.once.Do(func() { cv.ok = check() })
	return cv.ok
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	if status, reason := s.authenticate(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="loopwatch-audit"`)
		}
		s.reject(w, status, reason, http.StatusText(status))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.reject(w, http.StatusMethodNotAllowed, ReasonMethodNotAllowed, "audit events must be posted")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		s.reject(w, http.StatusUnsupportedMediaType, ReasonUnsupportedMediaType, "content type must be application/json")
		return
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		s.reject(w, http.StatusRequestEntityTooLarge, ReasonTooLarge, "body too large")
		return
	}
	if !s.acquire(r.Context()) {
		w.Header().Set("Retry-After", "1")
		s.reject(w, http.StatusTooManyRequests, ReasonOverloaded, "too many batches in flight")
		return
	}
	defer func() { <-s.inFlight }()
	start := time.Now()
	defer func() {
		d := time.Since(start)
		s.exporter.metrics.request.Observe(d.Seconds())
		if s.handled != nil {
			s.handled(d)
		}
	}()
	bp := s.bodies.Get().(*[]byte)
	defer s.bodies.Put(bp)
	body, err := readBody((*bp)[:0], http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	*bp = body[:0]
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.reject(w, http.StatusRequestEntityTooLarge, ReasonTooLarge, "body too large")
			return
		}
		s.reject(w, http.StatusBadRequest, ReasonMalformed, "read body: "+err.Error())
		return
	}
	if _, err := s.exporter.IngestList(body); err != nil {
		s.log.Debug("Malformed audit batch", "err", err, "bytes", len(body))
		s.reject(w, http.StatusBadRequest, ReasonMalformed, err.Error())
		return
	}
	s.exporter.metrics.requests.WithLabelValues(OutcomeAccepted, ReasonOK).Inc()
	w.WriteHeader(http.StatusOK)
}

// acquire takes an in-flight slot, waiting up to QueueWait for one: a momentary burst waits a
// little instead of being sent into the API server's 10 s retry backoff.
func (s *Server) acquire(ctx context.Context) bool {
	select {
	case s.inFlight <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(s.cfg.QueueWait)
	defer t.Stop()
	select {
	case s.inFlight <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// readBody reads r to the end into buf, growing it as needed.
func readBody(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
