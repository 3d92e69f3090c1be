package managed

import (
	"bytes"
	"fmt"
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
	w := &d.outer
	// The envelope is checked whole first: nothing is handed on from a body that is refused.
	w.Reset(body)
	if err := w.Skip(); err != nil {
		return fmt.Errorf("%w: event hub body: %w", ErrEnvelope, err)
	}
	w.Reset(body)
	seen := false
	err := w.Object(func(key []byte) error {
		if string(key) != "records" {
			return w.Skip()
		}
		seen = true
		return w.Array(func() error {
			v, err := w.Value()
			if err == nil {
				d.AzureRecord(v)
			}
			return err
		})
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
	return nil
}

// AzureRecord reads one resource-log record: an element of an Event Hub body, or a line of a
// storage account's PT1H.json.
func (d *Decoder) AzureRecord(rec []byte) {
	w := &d.inner
	w.Reset(rec)
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
			return w.Object(func(key []byte) error {
				if string(key) != "log" {
					return w.Skip()
				}
				s, err := w.String()
				// Kept: the category may come after the properties.
				log, hasLog = append(d.msg[:0], s...), true
				d.msg = log[:0]
				return err
			})
		}
		return w.Skip()
	})
	if err == nil {
		err = w.End()
	}
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
}
