package managed

import "fmt"

// GKE writes Kubernetes audit events to Cloud Logging as Cloud Audit Logs entries (see
// decode.LogEntryDecoder). A log sink routes them to a Pub/Sub topic, and a push subscription
// POSTs each message ("Push subscriptions", wrapped payload, the default):
//
//	{"message":{"attributes":{…},"data":"<base64 of the LogEntry JSON>","messageId":"…",
//	 "message_id":"…","publishTime":"…","publish_time":"…"},"subscription":"projects/P/subscriptions/S"}

// PushMessage is what a push says of its message.
type PushMessage struct {
	// ID is message.messageId, the same on every redelivery; valid until the next call.
	ID []byte
}

// PubSubPush reads a Pub/Sub push body, appending its event to d.Events and counting its
// record. An error wrapping ErrEnvelope means the body is not a push.
func (d *Decoder) PubSubPush(body []byte) (PushMessage, error) {
	var msg PushMessage
	w := &d.outer
	w.Reset(body)
	d.raw = d.raw[:0]
	var data []byte
	seenMessage, seenData := false, false
	err := w.Object(func(key []byte) error {
		if string(key) != "message" {
			return w.Skip()
		}
		seenMessage = true
		return w.Object(func(key []byte) error {
			switch string(key) {
			case "data":
				s, err := w.String()
				data, seenData = append(d.msg[:0], s...), true //nolint:gocritic // data reuses d.msg's buffer
				d.msg = data[:0]
				return err
			case "messageId":
				s, err := w.String()
				d.raw = append(d.raw[:0], s...)
				return err
			}
			return w.Skip()
		})
	})
	if err == nil {
		err = w.End()
	}
	if err == nil && (!seenMessage || !seenData || len(d.raw) == 0) {
		err = fmt.Errorf("no message, data or messageId")
	}
	if err != nil {
		return msg, fmt.Errorf("%w: pub/sub push: %w", ErrEnvelope, err)
	}
	msg.ID = d.raw
	b, err := unbase64(d.b64, data, d.limits.MaxRecordBytes)
	d.b64 = b[:0]
	if err != nil {
		d.count(reasonOf(err))
		return msg, nil
	}
	d.count(d.logEntry(b))
	return msg, nil
}

// LogEntryLine reads one Cloud Logging entry: a line of a Cloud Storage sink file, or an element
// of `gcloud logging read --format=json`.
func (d *Decoder) LogEntryLine(b []byte) { d.count(d.logEntry(b)) }
