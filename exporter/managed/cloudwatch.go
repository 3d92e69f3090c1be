package managed

import (
	"bytes"
	"errors"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// EKS writes the API server's audit log to CloudWatch Logs: log group /aws/eks/<cluster>/cluster,
// streams kube-apiserver-audit-<id>, one audit event per log event, the log line unchanged. A
// subscription filter hands log events on in CloudWatch Logs payloads (gzip'd JSON):
//
//	{"messageType":"DATA_MESSAGE","owner":"…","logGroup":"…","logStream":"…",
//	 "subscriptionFilters":["…"],"logEvents":[{"id":"…","timestamp":1700000000000,"message":"…"}]}
//
// and a CONTROL_MESSAGE when the subscription checks its destination.

// auditStreamPrefix starts the name of every stream EKS writes audit events to; the log group
// also holds the API server's, the authenticator's, the controller manager's and the
// scheduler's logs when those are enabled.
const auditStreamPrefix = "kube-apiserver-audit"

// truncatedSuffix ends a log event CloudWatch Logs cut at its 256 KB limit.
const truncatedSuffix = "[Truncated...]"

var errPayload = errors.New("not a CloudWatch Logs payload")

// cloudWatchRecord reads one Firehose record once base64 and gzip are undone: a CloudWatch Logs
// payload, or — when the stream's decompression and message extraction are on — the bare
// messages, one per line.
func (d *Decoder) cloudWatchRecord(b []byte) {
	head := b[:min(len(b), 64)]
	if !bytes.Contains(head, []byte(`"messageType"`)) {
		for len(b) > 0 {
			var line []byte
			line, b, _ = bytes.Cut(b, []byte{'\n'})
			if line = bytes.TrimSpace(line); len(line) > 0 {
				d.count(d.cloudWatchMessage(line))
			}
		}
		return
	}
	if err := d.cloudWatchPayload(b); err != nil {
		d.count(RecordMalformed)
	}
}

// cloudWatchPayload reads a CloudWatch Logs subscription payload. CloudWatch writes messageType
// and logStream before logEvents: then the log events are read where they stand; in any other
// order they are read once the whole payload has been.
func (d *Decoder) cloudWatchPayload(b []byte) error {
	w := &d.inner
	w.Reset(b)
	var typ byte // 'D' data, 'C' control
	audit, seenStream, done := false, false, false
	var logEvents []byte
	err := w.Object(func(key []byte) error {
		switch string(key) {
		case "messageType":
			s, err := w.String()
			switch string(s) {
			case "DATA_MESSAGE":
				typ = 'D'
			case "CONTROL_MESSAGE":
				typ = 'C'
			}
			return err
		case "logStream":
			s, err := w.String()
			audit, seenStream = bytes.HasPrefix(s, []byte(auditStreamPrefix)), true
			return err
		case "logEvents":
			if typ == 'D' && seenStream && !done {
				done = true
				return d.logEvents(w, audit)
			}
			v, err := w.Value()
			logEvents = v
			return err
		}
		return w.Skip()
	})
	if err == nil {
		err = w.End()
	}
	switch {
	case err != nil:
		return err
	case typ == 'C':
		d.count(RecordControl)
		return nil
	case typ != 'D' || logEvents == nil && !done:
		return errPayload
	case done:
		return nil
	}
	l := &d.list
	l.Reset(logEvents)
	return d.logEvents(l, audit)
}

// logEvents reads the array of log events at the walker's position, counting each.
func (d *Decoder) logEvents(w *decode.Walker, audit bool) error {
	return w.Array(func() error {
		reason := RecordNotAudit
		err := w.Object(func(key []byte) error {
			if string(key) != "message" {
				return w.Skip()
			}
			msg, err := w.String()
			if err == nil && audit {
				reason = d.cloudWatchMessage(msg)
			}
			return err
		})
		if err != nil {
			reason = RecordMalformed
		}
		d.count(reason)
		return err
	})
}

// cloudWatchMessage reads the message of one log event: an audit event, unless CloudWatch Logs
// truncated it.
func (d *Decoder) cloudWatchMessage(msg []byte) Reason {
	if bytes.HasSuffix(msg, []byte(truncatedSuffix)) {
		return RecordTruncated
	}
	return d.nativeEvent(msg)
}

// S3ExportLine reads one line of a CloudWatch Logs export to S3 (CreateExportTask): the log
// event's timestamp in ISO 8601, a space, the message.
func (d *Decoder) S3ExportLine(line []byte) {
	ts, msg, ok := bytes.Cut(line, []byte{' '})
	if !ok || !isExportTimestamp(ts) {
		d.count(RecordMalformed)
		return
	}
	d.count(d.cloudWatchMessage(bytes.TrimSpace(msg)))
}

// isExportTimestamp reports whether b looks like the timestamp an export writes before each
// message, e.g. 2026-11-23T16:41:02.123Z.
func isExportTimestamp(b []byte) bool {
	if len(b) < 20 || b[len(b)-1] != 'Z' || b[4] != '-' || b[7] != '-' || b[10] != 'T' {
		return false
	}
	for _, c := range b[:len(b)-1] {
		if (c < '0' || c > '9') && c != '-' && c != 'T' && c != ':' && c != '.' {
			return false
		}
	}
	return true
}

// LogEventsElement reads one element of the events of `aws logs filter-log-events` (or
// get-log-events) JSON output: {"logStreamName","timestamp","message","ingestionTime","eventId"}.
// get-log-events names no stream: its events are taken as audit events.
func (d *Decoder) LogEventsElement(elem []byte) {
	w := &d.inner
	w.Reset(elem)
	stream := byte(0) // 0 unnamed, 'a' audit, 'o' other
	var msg []byte
	err := w.Object(func(key []byte) error {
		switch string(key) {
		case "logStreamName":
			s, err := w.String()
			stream = 'o'
			if bytes.HasPrefix(s, []byte(auditStreamPrefix)) {
				stream = 'a'
			}
			return err
		case "message":
			v, err := w.Value() // unescaped below: the stream name may come after it
			msg = v
			return err
		}
		return w.Skip()
	})
	if err == nil {
		err = w.End()
	}
	switch {
	case err != nil || msg == nil:
		d.count(RecordMalformed)
	case stream == 'o':
		d.count(RecordNotAudit)
	default:
		l := &d.list
		l.Reset(msg)
		s, err := l.String()
		if err != nil {
			d.count(RecordMalformed)
			return
		}
		d.count(d.cloudWatchMessage(s))
	}
}
