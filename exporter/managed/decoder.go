// Package managed reads Kubernetes audit events in the forms managed clusters hand them out —
// EKS (CloudWatch Logs through Amazon Data Firehose, S3 exports, `aws logs filter-log-events`),
// GKE (Cloud Audit Logs through Pub/Sub push, `gcloud logging read`, Cloud Storage sinks) and AKS
// (resource logs through Event Hubs, storage-account PT1H.json files) — into the same
// decode.Event the webhook yields, so that attribution, fights, hot objects, replica races and
// metrics are the same whatever the source.
//
// Every layer is bounded before it is undone (see layers.go), every record that yields no event
// is counted by reason (see Reason), and a record that cannot be mapped is skipped, never guessed.
package managed

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// Limits bound what one record may grow to once its layers are undone.
type Limits struct {
	// MaxRecordBytes bounds a record after base64 and gzip: a CloudWatch Logs payload, a Pub/Sub
	// message, an Event Hub body (DefaultMaxRecordBytes when 0).
	MaxRecordBytes int
	// MaxEventBytes bounds one audit event (DefaultMaxEventBytes when 0).
	MaxEventBytes int
	// MaxValueBytes bounds every string kept of an event (decode.DefaultMaxValueBytes when 0).
	MaxValueBytes int
	// MaxEvents bounds the events of one webhook EventList read by Read
	// (decode.DefaultMaxEvents when 0).
	MaxEvents int
	// MaxDeliveryBytes bounds what the gzip'd records of one delivery inflate to, together
	// (DefaultMaxDeliveryBytes when 0): the time a delivery takes is bounded by it, whatever its
	// records hold. A record past it is counted too_large.
	MaxDeliveryBytes int
}

// Defaults: a Firehose record holds at most 1000 KiB (a CloudWatch payload inflates about
// eightfold), a CloudWatch Logs event 256 KB, a Pub/Sub message 10 MB (a GKE entry at Metadata
// level a few KB), an Event Hubs event 1 MB (Premium and Dedicated tiers: 20 MB); the API server
// truncates events at 100 KiB when truncation is on.
const (
	DefaultMaxRecordBytes = 8 << 20
	DefaultMaxEventBytes  = 4 << 20
	// DefaultMaxDeliveryBytes lets a 16 MiB Firehose request of gzip'd records inflate about
	// sixteenfold (CloudWatch payloads compress about tenfold).
	DefaultMaxDeliveryBytes = 256 << 20
)

// flushEvents is how many events a decoder holds before it hands them to Flush, when set.
const flushEvents = 1000

func (l Limits) withDefaults() Limits {
	if l.MaxRecordBytes <= 0 {
		l.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = DefaultMaxEventBytes
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = decode.DefaultMaxEvents
	}
	if l.MaxDeliveryBytes <= 0 {
		l.MaxDeliveryBytes = DefaultMaxDeliveryBytes
	}
	return l
}

// ErrEnvelope is wrapped by errors about a delivery's envelope (the Firehose request, the push,
// the Event Hub body) as a whole: nothing in it was counted.
var ErrEnvelope = errors.New("malformed envelope")

// Decoder turns deliveries and export lines into events. It is not safe for concurrent use; it
// reuses its buffers, so at steady state it allocates nothing per event.
type Decoder struct {
	// Events are the events decoded since the last Reset (a delivery's, or a batch of lines').
	Events []decode.Event
	// Tally counts the records since the last Reset by what became of them.
	Tally Tally
	// Flush, when set, receives the events every thousand of them, so that a delivery's events
	// are never all held at once (the decoders of deliveries validate a delivery's envelope
	// before they decode any of it, so nothing flushed belongs to a delivery refused later).
	Flush func([]decode.Event)
	// inflated counts the bytes the current delivery's records inflated to.
	inflated int

	limits  Limits
	native  *decode.Decoder
	entries *decode.LogEntryDecoder
	// Walkers for the nesting levels: a delivery, a record inside it, a list inside a record.
	outer, inner, list decode.Walker
	gz, body           inflater
	b64, msg, raw      []byte
}

// NewDecoder returns a decoder with the given limits.
func NewDecoder(l Limits) *Decoder {
	l = l.withDefaults()
	return &Decoder{
		limits:  l,
		native:  decode.NewLimitedDecoder(0, decode.Limits{MaxValueBytes: l.MaxValueBytes, MaxEvents: l.MaxEvents, RequireItems: true}),
		entries: decode.NewLogEntryDecoder(0, decode.Limits{MaxValueBytes: l.MaxValueBytes}),
	}
}

// Reset forgets the events and counts.
func (d *Decoder) Reset() {
	d.Events = d.Events[:0]
	d.Tally = Tally{}
	d.inflated = 0
}

// kept hands the events on when enough are held and a Flush is set.
func (d *Decoder) kept() {
	if d.Flush != nil && len(d.Events) >= flushEvents {
		d.Flush(d.Events)
		d.Events = d.Events[:0]
	}
}

// Inflate undoes a delivery's Content-Encoding: gzip, refusing more than max bytes; the result
// is valid until the next call.
func (d *Decoder) Inflate(body []byte, max int) ([]byte, error) {
	b, err := d.body.gunzip(body, max)
	if err != nil {
		return nil, fmt.Errorf("%w: content encoding: %w", ErrEnvelope, err)
	}
	return b, nil
}

// IsTooLarge reports whether err is a layer's bound being passed.
func IsTooLarge(err error) bool { return errors.Is(err, errTooLarge) }

// count records one record's fate.
func (d *Decoder) count(r Reason) { d.Tally[r]++ }

// reasonOf classifies a layer's error.
func reasonOf(err error) Reason {
	if errors.Is(err, errTooLarge) {
		return RecordTooLarge
	}
	return RecordMalformed
}

// nativeEvent decodes one audit.k8s.io event as the log backend writes it (the message of a
// CloudWatch log event, the log of an Azure record, the rest of an S3 export line) and keeps it.
// A JSON object that is not an audit event (no stage) is another log's record.
func (d *Decoder) nativeEvent(b []byte) Reason {
	if len(b) > d.limits.MaxEventBytes {
		return RecordTooLarge
	}
	d.Events = append(d.Events, decode.Event{})
	ev := &d.Events[len(d.Events)-1]
	if err := d.native.DecodeEvent(b, ev); err != nil {
		d.Events = d.Events[:len(d.Events)-1]
		if trimmed := bytes.TrimSpace(b); len(trimmed) == 0 || trimmed[0] != '{' {
			return RecordNotAudit // klog text and the like, routed to the same place
		}
		return RecordMalformed
	}
	if !ev.IsAuditEvent() {
		d.Events = d.Events[:len(d.Events)-1]
		return RecordNotAudit
	}
	d.kept()
	return RecordDecoded
}

// logEntry decodes one Cloud Logging entry (GKE) and keeps it.
func (d *Decoder) logEntry(b []byte) Reason {
	if len(b) > d.limits.MaxEventBytes {
		return RecordTooLarge
	}
	d.Events = append(d.Events, decode.Event{})
	err := d.entries.Decode(b, &d.Events[len(d.Events)-1])
	if err == nil {
		d.kept()
		return RecordDecoded
	}
	d.Events = d.Events[:len(d.Events)-1]
	if ee, ok := err.(*decode.EntryError); ok { // Decode returns them unwrapped
		if ee.NotAudit {
			return RecordNotAudit
		}
		return RecordUnmappable
	}
	return RecordMalformed
}

// MemoryBound is the most memory a decoder holds after reading deliveries of up to
// maxDeliveryBytes with these limits, whatever their content: its two event decoders (each a
// decode.MemoryBound for a record), the buffers base64 and gzip are undone into (a record each,
// and a delivery for the Content-Encoding layer), the copy of a message or a push's data, the
// walkers' scratch (a delivery, a record and a record), and events up to twice the flush size.
func MemoryBound(l Limits, maxDeliveryBytes int64) int64 {
	l = l.withDefaults()
	record := int64(l.MaxRecordBytes)
	limits := decode.Limits{MaxValueBytes: l.MaxValueBytes, MaxEvents: l.MaxEvents}
	return 2*decode.MemoryBound(0, limits, record) + // native and log entry decoders
		3*record + maxDeliveryBytes + // b64, gz, msg; the body inflater
		maxDeliveryBytes + 2*record + // walkers' scratch: outer, inner, list
		2*flushEvents*int64(unsafe.Sizeof(decode.Event{}))
}
