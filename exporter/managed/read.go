package managed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/gzip"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// Form is a form in which audit events are written down.
type Form uint8

// Forms, as Read recognises them.
const (
	FormUnknown Form = iota
	// FormNative: one audit.k8s.io Event per line, as the API server's log backend writes it.
	FormNative
	// FormEventList: an EventList, as the API server's webhook backend posts it.
	FormEventList
	// FormFirehose: an Amazon Data Firehose HTTP endpoint request body (EKS).
	FormFirehose
	// FormCloudWatch: a CloudWatch Logs subscription payload, decompressed (EKS).
	FormCloudWatch
	// FormS3Export: a line of a CloudWatch Logs export to S3, "<timestamp> <message>" (EKS).
	FormS3Export
	// FormLogEvents: `aws logs filter-log-events` or `get-log-events` JSON output (EKS).
	FormLogEvents
	// FormPubSubPush: a Pub/Sub push request body carrying a Cloud Logging entry (GKE).
	FormPubSubPush
	// FormLogEntry: a Cloud Logging entry: a line of a Cloud Storage sink file, or an element of
	// `gcloud logging read --format=json` (GKE).
	FormLogEntry
	// FormEventHub: an Event Hub event body of Azure resource logs, {"records":[…]} (AKS).
	FormEventHub
	// FormAzureRecord: one Azure resource-log record, a line of a storage account's PT1H.json (AKS).
	FormAzureRecord
	// FormLogEvent: one element of the events of FormLogEvents, in a document spread over lines.
	FormLogEvent
	numForms
)

var formNames = [numForms]string{
	FormUnknown: "unknown", FormNative: "audit log (JSON lines)", FormEventList: "webhook EventList",
	FormFirehose: "EKS Firehose request", FormCloudWatch: "EKS CloudWatch Logs payload",
	FormS3Export: "EKS CloudWatch export (S3)", FormLogEvents: "EKS aws logs JSON",
	FormPubSubPush: "GKE Pub/Sub push", FormLogEntry: "GKE Cloud Logging entry",
	FormEventHub: "AKS Event Hub body", FormAzureRecord: "AKS resource-log record",
	FormLogEvent: "EKS aws logs event",
}

// String names the form.
func (f Form) String() string { return formNames[f] }

// Canonical beginnings of the forms, as their writers start them: checked before the keys are
// scanned.
var prefixes = []struct {
	prefix string
	form   Form
}{
	{`{"kind":"Event",`, FormNative},
	{`{"kind":"EventList"`, FormEventList},
	{`{"insertId":`, FormLogEntry},
	{`{"requestId":`, FormFirehose},
	{`{"records":[`, FormEventHub},
	{`{"message":{`, FormPubSubPush},
	{`{"messageType":`, FormCloudWatch},
}

// Sniff tells the form of one line or document element from its top-level keys (or, for an
// export line, its leading timestamp). It reads no further than it must: canonical beginnings
// decide at once, anything else costs one pass over the top level.
func (d *Decoder) Sniff(b []byte) Form {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return FormUnknown
	}
	if b[0] >= '0' && b[0] <= '9' {
		if ts, _, ok := bytes.Cut(b, []byte{' '}); ok && isExportTimestamp(ts) {
			return FormS3Export
		}
		return FormUnknown
	}
	if b[0] != '{' {
		return FormUnknown
	}
	for _, p := range prefixes {
		if bytes.HasPrefix(b, []byte(p.prefix)) {
			return p.form
		}
	}
	const (
		kAuditID = 1 << iota
		kStage
		kItems
		kKindList
		kProto
		kInsertID
		kMessage
		kSubscription
		kRequestID
		kRecords
		kCategory
		kProperties
		kMessageType
		kLogEvents
		kEvents
	)
	keys := 0
	w := &d.inner
	w.Reset(b)
	err := w.Object(func(key []byte) error {
		switch string(key) {
		case "auditID":
			keys |= kAuditID
		case "stage":
			keys |= kStage
		case "items":
			keys |= kItems
		case "kind":
			s, err := w.String()
			if string(s) == "EventList" {
				keys |= kKindList
			}
			return err
		case "protoPayload":
			keys |= kProto
		case "insertId":
			keys |= kInsertID
		case "message":
			keys |= kMessage
		case "subscription":
			keys |= kSubscription
		case "requestId":
			keys |= kRequestID
		case "records":
			keys |= kRecords
		case "category":
			keys |= kCategory
		case "properties":
			keys |= kProperties
		case "messageType":
			keys |= kMessageType
		case "logEvents":
			keys |= kLogEvents
		case "events":
			keys |= kEvents
		}
		return w.Skip()
	})
	has := func(k int) bool { return keys&k == k }
	switch {
	case err != nil || w.End() != nil:
		return FormUnknown
	case has(kProto):
		return FormLogEntry
	case has(kMessage | kSubscription):
		return FormPubSubPush
	case has(kRequestID | kRecords):
		return FormFirehose
	case has(kRecords):
		return FormEventHub
	case has(kCategory | kProperties):
		return FormAzureRecord
	case has(kMessageType | kLogEvents):
		return FormCloudWatch
	case has(kItems) || has(kKindList):
		return FormEventList
	case has(kAuditID | kStage):
		return FormNative
	case has(kEvents):
		return FormLogEvents
	}
	return FormUnknown
}

// Record reads one line or document element of the given form, appending its events to
// d.Events and counting its records. It returns the envelope error of a delivery form that is
// not what its form says (its records are then not counted).
func (d *Decoder) Record(form Form, b []byte) error {
	switch form {
	case FormNative:
		d.count(d.nativeEvent(b))
	case FormEventList:
		events, err := d.native.DecodeList(b)
		if err != nil {
			return fmt.Errorf("%w: event list: %w", ErrEnvelope, err)
		}
		for i := range events {
			if events[i].IsAuditEvent() {
				d.Events = append(d.Events, events[i])
				d.count(RecordDecoded)
			} else {
				d.count(RecordNotAudit)
			}
		}
	case FormFirehose:
		_, err := d.Firehose(b)
		return err
	case FormCloudWatch:
		if err := d.cloudWatchPayload(b); err != nil {
			d.count(RecordMalformed)
		}
	case FormS3Export:
		d.S3ExportLine(b)
	case FormLogEvents:
		return d.logEventsDocument(b)
	case FormLogEvent:
		d.LogEventsElement(b)
	case FormPubSubPush:
		_, err := d.PubSubPush(b)
		return err
	case FormLogEntry:
		d.LogEntryLine(b)
	case FormEventHub:
		return d.EventHubBody(b)
	case FormAzureRecord:
		d.AzureRecord(b)
	default:
		d.count(d.unknown(b))
	}
	return nil
}

// unknown classifies what Sniff did not recognise: a JSON object is another log's record, the
// rest is malformed.
func (d *Decoder) unknown(b []byte) Reason {
	w := &d.inner
	w.Reset(b)
	if w.Peek() == '{' && w.Skip() == nil && w.End() == nil {
		return RecordNotAudit
	}
	return RecordMalformed
}

// logEventsDocument reads a one-line `aws logs` JSON document: its events.
func (d *Decoder) logEventsDocument(b []byte) error {
	w := &d.outer
	w.Reset(b)
	err := w.Object(func(key []byte) error {
		if string(key) != "events" {
			return w.Skip()
		}
		return w.Array(func() error {
			v, err := w.Value()
			if err == nil {
				d.LogEventsElement(v)
			}
			return err
		})
	})
	if err == nil {
		err = w.End()
	}
	if err != nil {
		return fmt.Errorf("%w: aws logs output: %w", ErrEnvelope, err)
	}
	return nil
}

// ReadOptions bound Read.
type ReadOptions struct {
	Limits
	// MaxLineBytes bounds one line, or one element of a JSON document (DefaultMaxRecordBytes
	// when 0).
	MaxLineBytes int
	// MaxDocumentEvents bounds the events of a JSON document spread over lines
	// (DefaultMaxDocumentEvents when 0): they are ordered by time before they are handed on, as
	// `gcloud logging read` prints the newest first.
	MaxDocumentEvents int
}

// DefaultMaxDocumentEvents bounds the events Read orders in memory (about 300 bytes each).
const DefaultMaxDocumentEvents = 1 << 20

// Unreadable is a line (or document element) that yielded no event, or some of whose records
// did not, for a reason other than a control message.
type Unreadable struct {
	// Line is the 1-based line number where it starts.
	Line int
	Form Form
	// Reason is what became of it (one report per reason and line), Records how many of its
	// records it befell; Err, when set, is why a delivery form's envelope or a webhook EventList
	// was refused as a whole.
	Reason  Reason
	Records int
	Err     error
}

// Summary is what Read found.
type Summary struct {
	// Forms counts the lines or document elements of each form.
	Forms [numForms]int
	// Tally counts the records by what became of them.
	Tally Tally
}

// Read reads audit events from r in any form it recognises, by itself and line by line (a file
// may mix forms): JSON lines of any form above, gzip'd or not, or one JSON document spread over
// lines (`gcloud logging read --format=json`, `aws logs filter-log-events`). It hands on the
// events of each line or element with its line number (valid during the call) and reports every
// line or element that yields nothing, or some of whose records yield nothing, other than
// control messages: a line it does not recognise is reported, never read as something else.
// Memory is bounded by MaxLineBytes and the limits, whatever the input.
func Read(r io.Reader, opts ReadOptions, events func(line int, evs []decode.Event), unreadable func(Unreadable)) (Summary, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxRecordBytes
	}
	d := NewDecoder(opts.Limits)
	var sum Summary
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(2); isGzip(head) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return sum, fmt.Errorf("read gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	// handle reads one line or element, hands its events on and reports what it could not read.
	handle := func(b []byte, line int, form Form) {
		if form == FormUnknown {
			form = d.Sniff(b)
		}
		sum.Forms[form]++
		d.Reset()
		if err := d.Record(form, b); err != nil {
			sum.Tally[RecordMalformed]++
			unreadable(Unreadable{Line: line, Form: form, Reason: RecordMalformed, Records: 1, Err: err})
			return
		}
		if len(d.Events) > 0 {
			events(line, d.Events)
		}
		sum.Tally.Add(&d.Tally)
		for r := RecordNotAudit; r < numReasons; r++ {
			if d.Tally[r] > 0 {
				unreadable(Unreadable{Line: line, Form: form, Reason: r, Records: d.Tally[r]})
			}
		}
	}
	tooLong := func(line int) {
		sum.Tally[RecordTooLarge]++
		unreadable(Unreadable{Line: line, Reason: RecordTooLarge, Records: 1})
	}
	first, document := peekStart(br)
	if first == '[' || first == '{' && document {
		// A document's events are ordered by time first: `gcloud logging read` prints the newest
		// entry first, and the tracker needs them in the order they happened.
		if opts.MaxDocumentEvents <= 0 {
			opts.MaxDocumentEvents = DefaultMaxDocumentEvents
		}
		var held []heldEvent
		deliver := events
		events = func(line int, evs []decode.Event) {
			for i := range evs {
				held = append(held, heldEvent{line: line, ev: evs[i]})
			}
		}
		err := splitDocument(br, opts.MaxLineBytes, func(member string, elem []byte, line int) {
			form := FormUnknown
			switch member {
			case "events":
				form = FormLogEvent
			case "", "items", "records":
			default:
				return // searchedLogStreams and the like: not records
			}
			if len(held) >= opts.MaxDocumentEvents {
				return
			}
			handle(elem, line, form)
		}, tooLong)
		if err == nil && len(held) >= opts.MaxDocumentEvents {
			err = fmt.Errorf("the document holds more than %d events to order: split it, or print it oldest first (gcloud logging read --order=asc) as JSON lines", opts.MaxDocumentEvents)
		}
		if n := len(held); n > 1 && held[0].ev.When().After(held[n-1].ev.When()) {
			slices.Reverse(held) // newest first: events of one instant keep their true order
		}
		slices.SortStableFunc(held, func(a, b heldEvent) int { return a.ev.When().Compare(b.ev.When()) })
		for i := range held {
			deliver(held[i].line, []decode.Event{held[i].ev})
		}
		return sum, err
	}
	line := 0
	err := scanLines(br, opts.MaxLineBytes, func(b []byte) {
		line++
		if len(bytes.TrimSpace(b)) > 0 {
			handle(b, line, FormUnknown)
		}
	}, func() { line++; tooLong(line) })
	return sum, err
}

// heldEvent is a document's event waiting to be ordered.
type heldEvent struct {
	line int
	ev   decode.Event
}

// peekStart returns the first byte of the input that is not whitespace (0 if none within the
// read buffer) and whether it starts a document spread over lines: "{" or "[" alone on its
// line, as pretty printers write them, rather than the first of JSON lines.
func peekStart(br *bufio.Reader) (first byte, document bool) {
	head, _ := br.Peek(br.Size())
	rest := bytes.TrimLeft(head, " \t\r\n")
	if len(rest) == 0 {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte{'\n'})
	return rest[0], len(bytes.TrimSpace(line)) == 1
}

// scanLines calls line for every line of br (without the newline), and tooLong for every line
// longer than max, which is skipped without being buffered.
func scanLines(br *bufio.Reader, max int, line func([]byte), tooLong func()) error {
	var buf []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > max+1 {
				long, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if long {
			tooLong()
		} else if len(buf) > 0 {
			line(bytes.TrimRight(buf, "\r\n"))
		}
		buf, long = buf[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
	}
}

// splitDocument streams one JSON document and hands on, with the line each starts on, the
// object elements of its records: the elements of a top-level array, or of the arrays that are
// members of a top-level object (with the member's name). Elements are checked by their readers;
// the splitter only follows strings and nesting. An element longer than max is skipped unbuffered.
func splitDocument(br *bufio.Reader, max int, emit func(member string, elem []byte, line int), tooLong func(line int)) error {
	var (
		line             = 1
		depth            int
		stack            [2]byte // the containers at depths 1 and 2
		inStr, esc       bool
		expectKey        bool
		keyCapture       bool
		key, member      []byte
		elem             []byte
		capturing, long  bool
		capDepth, capAt  int
		topIsArray, seen bool
	)
	for {
		c, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if c == '\n' {
			line++
		}
		if capturing && !long {
			if len(elem) >= max {
				long, elem = true, elem[:0]
			} else {
				elem = append(elem, c)
			}
		}
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				if keyCapture {
					member, keyCapture = append(member[:0], key...), false
				}
				continue
			}
			if keyCapture && len(key) < 256 {
				key = append(key, c)
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			if depth == 1 && !topIsArray && expectKey {
				keyCapture, key = true, key[:0]
			}
		case '{', '[':
			if !seen {
				seen, topIsArray = true, c == '['
			}
			elementLevel := topIsArray && depth == 1 || !topIsArray && depth == 2 && stack[1] == '['
			if c == '{' && !capturing && elementLevel {
				capturing, long, capDepth, capAt = true, false, depth, line
				elem = append(elem[:0], c)
			}
			if depth < len(stack) {
				stack[depth] = c
			}
			depth++
			if depth == 1 && c == '{' {
				expectKey = true
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return fmt.Errorf("line %d: unbalanced %q", line, c)
			}
			if capturing && depth == capDepth {
				capturing = false
				if long {
					tooLong(capAt)
				} else {
					emit(string(member), elem, capAt)
				}
			}
		case ',':
			if depth == 1 && !topIsArray {
				expectKey = true
			}
		case ':':
			if depth == 1 {
				expectKey = false
			}
		}
	}
	if depth != 0 || inStr {
		return fmt.Errorf("line %d: document ends inside a value", line)
	}
	return nil
}
