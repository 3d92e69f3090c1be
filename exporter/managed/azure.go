package managed

import (
	"bytes"
	"fmt"

	"github.com/loopwatch/loopwatch/exporter/decode"
)

// AKS hands out the API server's audit events as Azure Monitor resource logs (diagnostic setting
// categories kube-audit and kube-audit-admin). Each record is
//
//	{"time":"…","resourceId":"/SUBSCRIPTIONS/…/MANAGEDCLUSTERS/…","category":"kube-audit",
//	 "operationName":"Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
//	 "properties":{"log":"<the audit event JSON, as a string>","stream":"stdout","pod":"kube-apiserver-…",…}}
//
// streamed to an Event Hub as bodies {"records":[…]}, or archived to a storage account as
// PT1H.json files with one record per line. Other categories (kube-apiserver,
// kube-controller-manager, …) may share the hub; their logs are klog text.

// isAuditCategory reports whether an AKS diagnostic category holds audit events.
func isAuditCategory(c []byte) bool {
	return string(c) == "kube-audit" || string(c) == "kube-audit-admin"
}

// EventHubBody reads an Event Hub event body of Azure resource logs, appending its events to
// d.Events and counting its records. An error wrapping ErrEnvelope means the body is not one.
func (d *Decoder) EventHubBody(body []byte) error {
	// An event body is bounded (1 MB on Standard): its events are handed on after it is read
	// whole, so that nothing is handed on from a body refused half-way.
	flush := d.Flush
	d.Flush = nil
	defer func() { d.Flush = flush }()
	w := &d.outer
	w.Reset(body)
	seen := false
	err := w.Object(func(key []byte) error {
		if string(key) != "records" {
			return w.Skip()
		}
		seen = true
		return w.Array(func() error { return d.azureRecord(w) })
	})
	if err == nil {
		err = w.End()
	}
	if err == nil && !seen {
		err = fmt.Errorf("no records")
	}
	if err != nil {
		return fmt.Errorf("%w: event hub body: %w", ErrEnvelope, err)
	}
	if flush != nil && len(d.Events) >= flushEvents {
		flush(d.Events)
		d.Events = d.Events[:0]
	}
	return nil
}

// AzureRecord reads one resource-log record: a line of a storage account's PT1H.json.
func (d *Decoder) AzureRecord(rec []byte) {
	w := &d.inner
	w.Reset(rec)
	if w.Skip() != nil || w.End() != nil {
		d.count(RecordMalformed)
		return
	}
	w.Reset(rec)
	_ = d.azureRecord(w) // checked above: it reads the whole line
}

// azureRecord reads the record at the walker's position (an element of an Event Hub body, or a
// whole PT1H.json line) and counts it. It returns the walker's error: the enclosing document is
// then not JSON.
func (d *Decoder) azureRecord(w *decode.Walker) error {
	if w.Peek() != '{' {
		d.count(RecordMalformed)
		return w.Skip()
	}
	category := byte(0) // 0 none, 'a' audit, 'o' other
	var log []byte
	hasLog := false
	err := w.Object(func(key []byte) error {
		switch string(key) {
		case "category":
			s, err := w.String()
			category = 'o'
			if isAuditCategory(s) {
				category = 'a'
			}
			return err
		case "properties":
			if w.Peek() != '{' {
				return w.Skip()
			}
			return w.Object(func(key []byte) error {
				if string(key) != "log" {
					return w.Skip()
				}
				s, err := w.String()
				// Kept: the category may come after the properties.
				log, hasLog = append(d.msg[:0], s...), true //nolint:gocritic // log reuses d.msg's buffer
				d.msg = log[:0]
				return err
			})
		}
		return w.Skip()
	})
	switch {
	case err != nil || category == 0:
		d.count(RecordMalformed)
	case category == 'o':
		d.count(RecordNotAudit)
	case !hasLog || len(bytes.TrimSpace(log)) == 0:
		d.count(RecordMalformed)
	default:
		d.count(d.nativeEvent(log))
	}
	return err
}
