// Package exporter receives Kubernetes audit events (webhook batches, or JSON lines from a file
// or stdin), attributes them to actors, tracks objects for fights, hot objects and replica races,
// and exposes the result as Prometheus metrics. See README.md for the metrics.
package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/track"
)

// DefaultDedupeSize is the default number of auditID+stage pairs remembered per generation:
// enough for 10 API servers × 4000 events/s over the ~80 s the webhook backend spends retrying.
const DefaultDedupeSize = 1 << 19

// Config assembles an Exporter.
type Config struct {
	// Tracker tunes attribution and detection.
	Tracker track.Config
	// DedupeSize is the number of auditID+stage pairs remembered per generation (two generations
	// are kept); DefaultDedupeSize when 0, deduplication off when negative.
	DedupeSize int
	// Registerer receives the metrics (required).
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; time.Now when nil. It is also given to the tracker unless that has one.
	Now func() time.Time
}

// Exporter is the decode → dedupe → track → metrics pipeline. It is safe for concurrent use.
type Exporter struct {
	tracker  *track.Tracker
	metrics  *Metrics
	dedupe   *dedupe
	decoders sync.Pool
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
	switch {
	case cfg.DedupeSize == 0:
		cfg.DedupeSize = DefaultDedupeSize
	case cfg.DedupeSize < 0:
		cfg.DedupeSize = 0
	}
	e := &Exporter{dedupe: newDedupe(cfg.DedupeSize), now: cfg.Now, log: cfg.Logger}
	e.decoders.New = func() any { return decode.NewDecoder(0) }
	m, err := NewMetrics(cfg.Registerer, func() *track.Tracker { return e.tracker })
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	e.metrics = m
	t, err := track.New(cfg.Tracker, m)
	if err != nil {
		return nil, fmt.Errorf("tracker config: %w", err)
	}
	e.tracker = t
	return e, nil
}

// Tracker returns the exporter's tracker (for reports and tests).
func (e *Exporter) Tracker() *track.Tracker { return e.tracker }

// Metrics returns the exporter's metrics.
func (e *Exporter) Metrics() *Metrics { return e.metrics }

// IngestList decodes an EventList body and tracks its events. A malformed body is refused as a
// whole (nothing is counted), so the API server's retry cannot count anything twice.
func (e *Exporter) IngestList(body []byte) (counted int, err error) {
	start := time.Now()
	d := e.decoders.Get().(*decode.Decoder)
	defer e.decoders.Put(d)
	events, err := d.DecodeList(body)
	if err != nil {
		return 0, err
	}
	counted = e.observe(events)
	e.metrics.decode.Observe(time.Since(start).Seconds())
	return counted, nil
}

// observe dedupes and tracks decoded events and counts them.
func (e *Exporter) observe(events []decode.Event) int {
	duplicates := 0
	counted := e.tracker.ObserveBatch(events, func(ev *decode.Event) bool {
		if e.dedupe.seen(ev) {
			duplicates++
			return true
		}
		return false
	})
	e.metrics.events.WithLabelValues(EventCounted).Add(float64(counted))
	e.metrics.events.WithLabelValues(EventDuplicate).Add(float64(duplicates))
	e.metrics.events.WithLabelValues(EventIgnoredStage).Add(float64(len(events) - counted - duplicates))
	e.metrics.batches.Inc()
	e.metrics.lastBatch.Set(float64(e.now().UnixNano()) / 1e9)
	return counted
}
