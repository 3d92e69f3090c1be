// Package exporter receives Kubernetes audit events (webhook batches, or JSON lines from a file
// or stdin), attributes them to actors, tracks objects for fights, hot objects and replica races,
// and exposes the result as Prometheus metrics. See docs/exporter.md for the metrics.
package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/dedupe"
	"github.com/loopwatch/loopwatch/exporter/managed"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// DefaultDedupeSize is the default number of events remembered per generation: enough for 10 API
// servers × 4000 events/s over the ~80 s the webhook backend spends retrying.
const DefaultDedupeSize = dedupe.DefaultSize

// DefaultMaxBatchEvents is the default per-batch event limit: 25 times the API server's default
// batch (--audit-webhook-batch-max-size 400).
const DefaultMaxBatchEvents = decode.DefaultMaxEvents

// Config assembles an Exporter.
type Config struct {
	// Tracker tunes attribution and detection.
	Tracker track.Config
	// DedupeSize is the number of events remembered per generation (two generations are kept, see
	// package dedupe); DefaultDedupeSize when 0, deduplication off when negative.
	DedupeSize int
	// MaxBatchEvents bounds the events of one webhook batch (DefaultMaxBatchEvents when 0): a
	// longer batch is refused whole.
	MaxBatchEvents int
	// MaxValueBytes bounds every string kept from an event, so every label value and report
	// entry (decode.DefaultMaxValueBytes when 0; see decode.Shorten).
	MaxValueBytes int
	// MaxSeries bounds the series of each per-actor family (DefaultMaxSeries when 0): beyond it a
	// new label combination is counted under actor and resource "other".
	MaxSeries int
	// Replicas says the exporter will run as a replica (EnableReplication): its memory bound
	// then counts the replication streams.
	Replicas bool
	// Registerer receives the metrics (required).
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; time.Now when nil. It is also given to the tracker unless that has one.
	Now func() time.Time
}

// Exporter is the decode → dedupe → track → metrics pipeline. It is safe for concurrent use.
type Exporter struct {
	// mu is the pipeline: batches are taken one at a time, and a replica's scrape marker, a
	// standby's join and a takeover fall between two of them (replicate.go).
	mu         sync.Mutex
	repl       *replication
	reg        prometheus.Registerer
	trackerCfg track.Config

	tracker  *track.Tracker
	metrics  *Metrics
	dedupe   *dedupe.Window
	decoders sync.Pool
	limits   decode.Limits
	sources  *managed.Metrics
	now      func() time.Time
	log      *slog.Logger
}

// New builds an exporter.
func New(cfg Config) (*Exporter, error) {
	if cfg.Registerer == nil {
		return nil, errors.New("exporter config: registerer is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tracker.Now == nil {
		cfg.Tracker.Now = cfg.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg = cfg.withDefaults()
	e := &Exporter{dedupe: dedupe.New(cfg.DedupeSize), now: cfg.Now, log: cfg.Logger, reg: cfg.Registerer}
	e.limits = decode.Limits{MaxValueBytes: cfg.MaxValueBytes, MaxEvents: cfg.MaxBatchEvents, RequireItems: true}
	e.decoders.New = func() any { return decode.NewLimitedDecoder(0, e.limits) }
	m, err := NewMetrics(cfg.Registerer, func() *track.Tracker { return e.tracker }, cfg.MaxSeries)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	e.metrics = m
	if e.sources, err = managed.NewMetrics(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("register source metrics: %w", err)
	}
	t, err := track.New(cfg.Tracker, m)
	if err != nil {
		return nil, fmt.Errorf("tracker config: %w", err)
	}
	e.tracker = t
	e.trackerCfg = t.Config()
	return e, nil
}

// withDefaults fills the zero fields of the decoding and deduplication bounds.
func (cfg Config) withDefaults() Config {
	switch {
	case cfg.DedupeSize == 0:
		cfg.DedupeSize = DefaultDedupeSize
	case cfg.DedupeSize < 0:
		cfg.DedupeSize = 0
	}
	if cfg.MaxBatchEvents <= 0 {
		cfg.MaxBatchEvents = DefaultMaxBatchEvents
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = decode.DefaultMaxValueBytes
	}
	cfg.MaxValueBytes = max(cfg.MaxValueBytes, decode.MinMaxValueBytes)
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	return cfg
}

// Tracker returns the exporter's tracker (for reports and tests).
func (e *Exporter) Tracker() *track.Tracker { return e.tracker }

// Metrics returns the exporter's metrics.
func (e *Exporter) Metrics() *Metrics { return e.metrics }

// IngestList decodes an EventList body and tracks its events. A malformed body is refused as a
// whole (nothing is counted), so the API server's retry cannot count anything twice; so is a
// body without an items array (decode.ErrNotEventList) and one holding more events than the
// per-batch limit (decode.ErrTooManyEvents).
//
// On a leader replica the batch is streamed to the standbys, and IngestList returns once they
// applied it (or were dropped for not doing so in time): the API server is answered only when
// a standby could take over without losing it. A replica that does not lead returns
// errNotLeader.
func (e *Exporter) IngestList(body []byte) (counted int, err error) {
	start := time.Now()
	d := e.decoders.Get().(*decode.Decoder)
	defer e.decoders.Put(d)
	events, err := d.DecodeList(body)
	if err != nil {
		return 0, err
	}
	if e.repl == nil {
		e.mu.Lock()
		counted = e.observe(events)
		e.mu.Unlock()
		e.metrics.decode.Observe(time.Since(start).Seconds())
		return counted, nil
	}
	e.mu.Lock()
	if e.Role() != RoleLeader {
		e.mu.Unlock()
		return 0, errNotLeader
	}
	v := &e.repl.verdicts
	v.lead(e.dedupe, len(events))
	r := e.tracker.ObserveBatch(events, v)
	e.metrics.countBatch(r)
	e.metrics.lastBatch.Set(float64(e.now().UnixNano()) / 1e9)
	seq, standbys := e.stepLocked(body, v.bits)
	e.mu.Unlock()
	e.metrics.decode.Observe(time.Since(start).Seconds())
	e.awaitStandbys(seq, standbys)
	return r.Counted, nil
}

// ObserveEvents dedupes and tracks events decoded by a managed-cluster source (package managed)
// and counts them, exactly as a webhook batch's. (Replicas take webhook batches only.)
func (e *Exporter) ObserveEvents(events []decode.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(events)
}

// SourceMetrics are the counters of the managed-cluster sources.
func (e *Exporter) SourceMetrics() *managed.Metrics { return e.sources }

// observe dedupes and tracks decoded events and counts them by outcome (e.mu held). The
// deduplicator is called under the tracker's lock, which so guards it too.
func (e *Exporter) observe(events []decode.Event) int {
	r := e.tracker.ObserveBatch(events, e.dedupe)
	e.metrics.countBatch(r)
	e.metrics.lastBatch.Set(float64(e.now().UnixNano()) / 1e9)
	return r.Counted
}
