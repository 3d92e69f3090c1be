package exporter

import (
	"io"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// DefaultMaxLineBytes bounds one line of a JSON-lines audit log: the API server truncates events
// at 100 KiB when truncation is on, but Request-level events can be larger.
const DefaultMaxLineBytes = 4 << 20

// ingestBatch is how many events file ingest tracks per lock acquisition.
const ingestBatch = 400

// IngestLines reads an audit log in the log backend's format (one Event JSON object per line)
// and tracks its events. Malformed and over-long lines, and lines that are no audit event, are
// skipped and counted in loopwatch_audit_dropped_events_total; only read errors stop it.
func (e *Exporter) IngestLines(r io.Reader, maxLineBytes int) error {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	d := decode.NewLimitedDecoder(0, decode.Limits{MaxValueBytes: e.limits.MaxValueBytes})
	events := make([]decode.Event, 0, ingestBatch)
	err := decode.ScanLines(r, maxLineBytes, func(n int, line []byte) {
		events = append(events, decode.Event{})
		ev := &events[len(events)-1]
		if err := d.DecodeEvent(line, ev); err != nil || !ev.IsAuditEvent() {
			events = events[:len(events)-1]
			reason := ReasonNotAuditEvent
			if err != nil {
				reason = ReasonMalformed
			}
			e.metrics.dropped.WithLabelValues(reason).Inc()
			e.log.Debug("Dropped audit log line", "line", n, "reason", reason, "err", err)
			return
		}
		if len(events) == ingestBatch {
			e.ObserveEvents(events)
			events = events[:0]
		}
	}, func(int) { e.metrics.dropped.WithLabelValues(ReasonLineTooLong).Inc() })
	if len(events) > 0 {
		e.ObserveEvents(events)
	}
	// The end of the log: no later batch can come, so the writes still waiting are taken now.
	e.tracker.Flush()
	return err
}
