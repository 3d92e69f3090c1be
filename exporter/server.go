package exporter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// WebhookPath is where the audit webhook posts (the kubeconfig's cluster.server URL should end
// with it; a POST to "/" is accepted too).
const WebhookPath = "/audit"

// Defaults of ServerConfig.
const (
	// DefaultMaxBodyBytes bounds a webhook request body. 400 Metadata-level events are ~330 KiB;
	// with --audit-webhook-truncate-enabled the API server cuts every event above
	// --audit-webhook-truncate-max-event-size to Metadata level, so a batch is at most
	// batch-max-size × max-event-size: 400 × 40 KiB in the deploy files, 15.6 MiB, fits.
	DefaultMaxBodyBytes = 16 << 20
	// DefaultMaxBufferedBytes bounds the bodies being received or processed at once: four
	// bodies of the largest size.
	DefaultMaxBufferedBytes = 4 * DefaultMaxBodyBytes
	// DefaultMaxInFlight is how many batches are decoded and tracked at once. A batch takes well
	// under a millisecond of CPU once received, so two keep two cores busy.
	DefaultMaxInFlight = 2
	// DefaultMinBodyBytesPerSecond is the slowest average rate at which a body may arrive (after
	// DefaultBodyGrace): a 400-event batch gets 2 + 5 s, a 15 MiB one 2 + 240 s, beyond the
	// API server's own 30 s request timeout. A slower sender is cut off.
	DefaultMinBodyBytesPerSecond = 64 << 10
	// DefaultBodyGrace is the time a body gets before the minimum rate applies.
	DefaultBodyGrace = 2 * time.Second
	// DefaultBodyTimeout bounds the time to receive a body, whatever its rate: the API server
	// gives up on a request after 30 s.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultMaxConnections bounds open connections. The API server's webhook client keeps one
	// (HTTP/2), Prometheus one, probes come and go.
	DefaultMaxConnections = 64
	// DefaultShutdownTimeout bounds a graceful shutdown (Kubernetes waits 30 s before SIGKILL).
	DefaultShutdownTimeout = 10 * time.Second
)

// HTTP/2 bounds: how many requests one connection may have open, and how many bytes it may have
// sent that the handlers have not read yet (per connection and per stream).
const (
	http2MaxStreams    = 16
	http2ReceiveWindow = 256 << 10
)

// ServerConfig configures the webhook server.
type ServerConfig struct {
	// Addr is the listen address, e.g. ":8443".
	Addr string
	// TLSCertFile and TLSKeyFile are the serving certificate; required unless InsecureHTTP.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile authenticates webhook senders by client certificate.
	ClientCAFile string
	// TokenFile authenticates webhook senders by bearer token (the file holds the token).
	TokenFile string
	// MetricsClientCAFile and MetricsTokenFile are scrape credentials: /metrics accepts them, and
	// the webhook's.
	MetricsClientCAFile, MetricsTokenFile string
	// MetricsOpen serves /metrics to anyone. /metrics names users and objects: without it, it
	// needs the webhook's or the scrape credentials.
	MetricsOpen bool
	// InsecureHTTP serves plain HTTP (tests and local experiments only); senders must then use
	// the bearer token.
	InsecureHTTP bool
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes when 0): 413 beyond.
	MaxBodyBytes int64
	// MaxBufferedBytes bounds the bytes of the bodies being received or processed at once
	// (DefaultMaxBufferedBytes when 0; more than MaxBodyBytes): a request that finds no room
	// within QueueWait gets 429.
	MaxBufferedBytes int64
	// MaxInFlight bounds concurrently processed batches (DefaultMaxInFlight when 0); a received
	// batch that finds no slot within QueueWait (1s when 0) gets 429 and the API server retries.
	MaxInFlight int
	QueueWait   time.Duration
	// MinBodyBytesPerSecond, BodyGrace and BodyTimeout bound how long a body may take to arrive:
	// at most BodyGrace + received/MinBodyBytesPerSecond at any point, and at most BodyTimeout
	// (defaults DefaultMinBodyBytesPerSecond, DefaultBodyGrace, DefaultBodyTimeout). A slower
	// sender gets 408 and is counted as slow_body.
	MinBodyBytesPerSecond int64
	BodyGrace             time.Duration
	BodyTimeout           time.Duration
	// MaxConnections bounds open connections (DefaultMaxConnections when 0).
	MaxConnections int
	// Gatherer serves /metrics.
	Gatherer prometheus.Gatherer
	// DisableWebhook serves no webhook: only /metrics, /healthz, /readyz and the managed-cluster
	// sources configured (file ingest, or a managed cluster).
	DisableWebhook bool
	// Firehose, when set, serves EKS audit events delivered by Amazon Data Firehose on
	// FirehosePath; PubSub GKE's pushed by a Pub/Sub subscription on PubSubPath (sources.go).
	Firehose *FirehoseConfig
	PubSub   *PubSubConfig
	// ShutdownTimeout bounds graceful shutdown (DefaultShutdownTimeout when 0). Bodies still
	// arriving when shutdown begins are answered 503 at once.
	ShutdownTimeout time.Duration
	// SteppedDown, when set, is called on shutdown once a replica has stepped down (its standbys
	// hold everything it counted), before the server closes: where the lease is released, so that
	// a standby takes over only after it has it all.
	SteppedDown func()
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// withDefaults fills the zero fields.
func (cfg ServerConfig) withDefaults() ServerConfig {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxBufferedBytes <= 0 {
		cfg.MaxBufferedBytes = max(DefaultMaxBufferedBytes, 4*cfg.MaxBodyBytes)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = time.Second
	}
	if cfg.MinBodyBytesPerSecond <= 0 {
		cfg.MinBodyBytesPerSecond = DefaultMinBodyBytesPerSecond
	}
	if cfg.BodyGrace <= 0 {
		cfg.BodyGrace = DefaultBodyGrace
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

// Server is the audit webhook endpoint plus /metrics, /healthz and /readyz.
type Server struct {
	cfg      ServerConfig
	exporter *Exporter
	webhook  credentials
	scrape   credentials
	inFlight chan struct{}
	receiver *receiver
	sources  *sources
	ready    atomic.Bool
	peers    *Peers
	log      *slog.Logger
	// handled, when set (by benchmarks), receives each body-reading request's handling time.
	handled func(time.Duration)
	// httpServer is the serving http.Server, for tests that kill it without a shutdown.
	httpServer atomic.Pointer[http.Server]
}

// NewServer validates cfg and loads the credentials files.
func NewServer(cfg ServerConfig, e *Exporter) (*Server, error) {
	cfg = cfg.withDefaults()
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
	if cfg.InsecureHTTP && (cfg.ClientCAFile != "" || cfg.MetricsClientCAFile != "") {
		errs = append(errs, errors.New("server: client certificates need TLS"))
	}
	if cfg.MaxBufferedBytes <= cfg.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("server: max buffered bytes (%d) must exceed max body bytes (%d)", cfg.MaxBufferedBytes, cfg.MaxBodyBytes))
	}
	s := &Server{cfg: cfg, exporter: e, inFlight: make(chan struct{}, cfg.MaxInFlight), log: cfg.Logger}
	s.webhook = loadCredentials(cfg.ClientCAFile, cfg.TokenFile, "webhook", &errs)
	s.scrape = loadCredentials(cfg.MetricsClientCAFile, cfg.MetricsTokenFile, "metrics", &errs)
	if e != nil {
		s.sources = loadSources(cfg, e, &errs)
	}
	if cfg.Gatherer != nil && !cfg.MetricsOpen && cfg.ClientCAFile == "" && cfg.TokenFile == "" && cfg.MetricsClientCAFile == "" && cfg.MetricsTokenFile == "" {
		errs = append(errs, errors.New("server: /metrics needs credentials (a webhook or metrics client CA or token file) unless it is served open"))
	}
	if e != nil && e.repl != nil {
		if cfg.InsecureHTTP {
			errs = append(errs, errors.New("server: replicas need TLS (they recognise each other by the serving certificate)"))
		}
		if cfg.DisableWebhook || cfg.Firehose != nil || cfg.PubSub != nil {
			errs = append(errs, errors.New("server: replicas take the audit webhook only (no file ingest or managed-cluster source)"))
		}
		s.peers = e.repl.cfg.Peers
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.receiver = newReceiver(cfg)
	return s, nil
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	if !s.cfg.DisableWebhook {
		mux.HandleFunc(WebhookPath, s.serveWebhook)
		mux.HandleFunc("/{$}", s.serveWebhook)
	}
	if s.peers != nil {
		mux.HandleFunc("POST "+ReplicatePath, func(w http.ResponseWriter, r *http.Request) {
			if !s.peers.isPeer(r) {
				unauthorized(w, http.StatusForbidden)
				return
			}
			s.exporter.ServeStandby(w, r)
		})
	}
	if s.cfg.Firehose != nil {
		mux.HandleFunc(FirehosePath, s.serveFirehose)
	}
	if s.cfg.PubSub != nil {
		mux.HandleFunc(PubSubPath, s.servePubSub)
	}
	if s.cfg.Gatherer != nil {
		// A leader replica's Prometheus scrape is a marker for its standbys (Exporter.Gather).
		marker := promhttp.HandlerFor(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			return s.exporter.Gather(s.cfg.Gatherer)
		}), promhttp.HandlerOpts{})
		plain := promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{})
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			if !s.cfg.MetricsOpen {
				if status, reason := s.authenticate(r, s.webhook, s.scrape); status != 0 {
					s.exporter.metrics.scrapesRefused.WithLabelValues(reason).Inc()
					unauthorized(w, status)
					return
				}
			}
			if s.exporter.Role() == RoleStopping {
				// Stepping down: the replica taking over adopts what this one has not been
				// scraped for, so it must not be scraped again.
				http.Error(w, "stepping down", http.StatusServiceUnavailable)
				return
			}
			if r.Header.Get(PrometheusScrapeHeader) != "" {
				marker.ServeHTTP(w, r)
				return
			}
			plain.ServeHTTP(w, r)
		})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() || !s.exporter.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// unauthorized answers a refused authentication.
func unauthorized(w http.ResponseWriter, status int) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="loopwatch-audit"`)
	}
	http.Error(w, http.StatusText(status), status)
}

// Serve serves on l until ctx is done, then shuts down gracefully: bodies still arriving are
// answered 503 at once, batches being processed finish, and after ShutdownTimeout the remaining
// connections are closed. A shutdown is not an error.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second, // also bounds the TLS handshake
		WriteTimeout:      s.cfg.BodyTimeout + 15*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          http2MaxStreams,
			MaxReceiveBufferPerConnection: http2ReceiveWindow,
			MaxReceiveBufferPerStream:     http2ReceiveWindow,
		},
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connVerified{})
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	l = newLimitListener(l, s.cfg.MaxConnections, func() { s.refused(ReasonTooManyConnections) })
	if !s.cfg.InsecureHTTP {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("load serving certificate: %w", err)
		}
		tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
		if s.webhook.clientCA != nil || s.scrape.clientCA != nil || s.peers != nil {
			// Verified in the handler, not the handshake, so that a bad certificate is answered
			// 403 and counted rather than lost as a handshake error.
			tlsCfg.ClientAuth = tls.RequestClientCert
		}
		l = tls.NewListener(&plainHTTPListener{Listener: l, plain: func() { s.refused(ReasonPlainHTTP) }}, tlsCfg)
	}
	s.httpServer.Store(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	releaseCtx, stopRelease := context.WithCancel(ctx)
	defer stopRelease()
	go s.exporter.releaseEvery(releaseCtx, ReleaseInterval)
	s.ready.Store(true)
	s.log.Info("Serving audit webhook", "addr", l.Addr().String(), "tls", !s.cfg.InsecureHTTP, "metricsOpen", s.cfg.MetricsOpen)
	select {
	case err := <-errc:
		s.ready.Store(false)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.ready.Store(false)
	if s.peers != nil {
		// Stop counting first: batches arriving now are answered 503 (the API server resends
		// them to the replica that takes over), the standbys get every step, then the lease goes.
		s.exporter.StepDown()
		if s.cfg.SteppedDown != nil {
			s.cfg.SteppedDown()
		}
	}
	s.receiver.stop()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("Audit webhook shutdown timed out: closing the remaining connections", "timeout", s.cfg.ShutdownTimeout, "err", err)
		_ = srv.Close()
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

// refused counts a webhook request refused for reason.
func (s *Server) refused(reason string) {
	s.exporter.metrics.requests.WithLabelValues(OutcomeRejected, reason).Inc()
}

func (s *Server) reject(w http.ResponseWriter, code int, reason, msg string) {
	s.refused(reason)
	http.Error(w, msg, code)
}

// serveWebhook takes one batch: authenticate, check method and type, receive the body (under
// the byte budget, deadline and minimum rate, before holding a processing slot), then take a slot,
// decode and track.
func (s *Server) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if !s.peers.isPeer(r) {
		if status, reason := s.authenticate(r, s.webhook); status != 0 {
			s.refused(reason)
			unauthorized(w, status)
			return
		}
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
	start := time.Now()
	b, rerr := s.receiver.receive(w, r)
	if rerr != nil {
		if rerr.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		s.log.Debug("Audit batch not received", "reason", rerr.reason, "err", rerr.err)
		s.reject(w, rerr.status, rerr.reason, rerr.Error())
		return
	}
	defer b.release()
	s.exporter.metrics.requestBytes.Observe(float64(len(b.data)))
	switch s.exporter.Role() {
	case RoleStandby:
		if !s.forward(w, r, b.data) {
			s.exporter.repl.metrics.forwarded.WithLabelValues(ForwardNoLeader).Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "no leader to take the batch yet", http.StatusServiceUnavailable)
		}
		return
	case RoleStopping:
		s.refuseNotLeader(w)
		return
	}
	if !s.acquire(r.Context()) {
		w.Header().Set("Retry-After", "1")
		s.reject(w, http.StatusTooManyRequests, ReasonOverloaded, "too many batches in flight")
		return
	}
	defer func() { <-s.inFlight }()
	defer func() {
		d := time.Since(start)
		s.exporter.metrics.request.Observe(d.Seconds())
		if s.handled != nil {
			s.handled(d)
		}
	}()
	if _, err := s.exporter.IngestList(b.data); err != nil {
		if errors.Is(err, errNotLeader) {
			s.refuseNotLeader(w)
			return
		}
		status, reason := http.StatusBadRequest, ReasonMalformed
		switch {
		case errors.Is(err, decode.ErrTooManyEvents):
			status, reason = http.StatusRequestEntityTooLarge, ReasonTooManyEvents
		case errors.Is(err, decode.ErrNotEventList):
			reason = ReasonNotEventList
		}
		s.log.Debug("Audit batch refused", "reason", reason, "err", err, "bytes", len(b.data))
		s.reject(w, status, reason, err.Error())
		return
	}
	s.exporter.metrics.requests.WithLabelValues(OutcomeAccepted, ReasonOK).Inc()
	w.WriteHeader(http.StatusOK)
}

// refuseNotLeader answers a batch that reached a replica stepping down (or one that just lost
// the lease) 503: the API server sends it again, and the replica taking over counts it.
func (s *Server) refuseNotLeader(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	s.reject(w, http.StatusServiceUnavailable, ReasonShuttingDown, "this replica is stepping down")
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
