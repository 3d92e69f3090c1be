package managed

import (
	"bytes"
	"errors"
	"fmt"
)

// An Amazon Data Firehose HTTP endpoint request ("HTTP endpoint delivery request and response
// specifications") is
//
//	{"requestId":"<uuid>","timestamp":<ms>,"records":[{"data":"<base64>"}, …]}
//
// where each record, fed by a CloudWatch Logs subscription filter, is a gzip'd CloudWatch Logs
// payload (cloudwatch.go); with the stream's decompression on it is the payload itself, with
// message extraction too the bare log messages.

// FirehoseRequest is what a Firehose request says of itself.
type FirehoseRequest struct {
	// ID is requestId, the same on every attempt of one request; valid until the next call.
	ID []byte
	// Timestamp is the request's timestamp in Unix milliseconds.
	Timestamp int64
	// Records counts the records.
	Records int
}

// Firehose reads a Firehose request body, appending its events to d.Events and counting its
// records. An error wrapping ErrEnvelope means the body is not a Firehose request: the caller
// must refuse it whole and count none of it.
func (d *Decoder) Firehose(body []byte) (FirehoseRequest, error) {
	var req FirehoseRequest
	w := &d.outer
	// The envelope is checked whole before any record is read, so that nothing is handed on
	// (Flush) from a request that is refused.
	if err := d.checkFirehose(body); err != nil {
		return req, fmt.Errorf("%w: firehose request: %w", ErrEnvelope, err)
	}
	w.Reset(body)
	seenID, seenRecords := false, false
	err := w.Object(func(key []byte) error {
		switch string(key) {
		case "requestId":
			s, err := w.String()
			d.raw = append(d.raw[:0], s...)
			seenID = true
			return err
		case "timestamp":
			t, err := w.Int() // checked above
			req.Timestamp = t
			return err
		case "records":
			seenRecords = true
			return w.Array(func() error {
				req.Records++
				var data []byte
				err := w.Object(func(key []byte) error {
					if string(key) != "data" {
						return w.Skip()
					}
					s, err := w.String()
					data = s
					if err == nil {
						d.firehoseRecord(data)
					}
					return err
				})
				if data == nil && err == nil {
					d.count(RecordMalformed)
				}
				return err
			})
		}
		return w.Skip()
	})
	if err == nil {
		err = w.End()
	}
	if err == nil && (!seenID || !seenRecords) {
		err = fmt.Errorf("no requestId or records")
	}
	if err != nil {
		return req, fmt.Errorf("%w: firehose request: %w", ErrEnvelope, err)
	}
	req.ID = d.raw
	return req, nil
}

// errFirehose describes a body that is not a Firehose request.
var errFirehose = errors.New("want {requestId, timestamp, records: [{data: string}]}")

// checkFirehose checks a request's envelope: valid JSON, a non-empty requestId, an integer
// timestamp, records an array of objects whose data are strings.
func (d *Decoder) checkFirehose(body []byte) error {
	w := &d.outer
	w.Reset(body)
	seenID, seenRecords := false, false
	err := w.Object(func(key []byte) error {
		switch string(key) {
		case "requestId":
			if w.Peek() != '"' {
				return errFirehose
			}
			id, err := w.String()
			seenID = len(id) > 0
			return err
		case "timestamp":
			_, err := w.Int()
			return err
		case "records":
			seenRecords = w.Peek() == '['
			if !seenRecords {
				return errFirehose
			}
			return w.Array(func() error {
				if w.Peek() != '{' {
					return errFirehose
				}
				return w.Object(func(key []byte) error {
					if string(key) == "data" && w.Peek() != '"' {
						return errFirehose
					}
					return w.Skip()
				})
			})
		}
		return w.Skip()
	})
	if err == nil {
		err = w.End()
	}
	if err == nil && (!seenID || !seenRecords) {
		err = errFirehose
	}
	return err
}

// firehoseRecord undoes a record's base64 and gzip and reads what is inside.
func (d *Decoder) firehoseRecord(data []byte) {
	b, err := unbase64(d.b64, data, d.limits.MaxRecordBytes)
	d.b64 = b[:0]
	if err != nil {
		d.count(reasonOf(err))
		return
	}
	if isGzip(b) {
		budget := min(d.limits.MaxRecordBytes, d.limits.MaxDeliveryBytes-d.inflated)
		if budget <= 0 {
			d.count(RecordTooLarge)
			return
		}
		if b, err = d.gz.gunzip(b, budget); err != nil {
			d.count(reasonOf(err))
			return
		}
		d.inflated += len(b)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		d.count(RecordMalformed)
		return
	}
	d.cloudWatchRecord(b)
}
