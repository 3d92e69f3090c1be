package forms

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
)

// GKE: Cloud Audit Logs entries in Cloud Logging (GKE docs, "GKE audit logging information";
// Cloud Logging "LogEntry" reference; Cloud Audit Logs "AuditLog" reference), routed by a log
// sink to Pub/Sub and pushed (Pub/Sub docs, "Push subscriptions": the wrapped push body), to
// Cloud Storage (Cloud Logging docs, "View logs routed to Cloud Storage": JSON lines, hourly
// files), or read with `gcloud logging read --format=json` (one JSON array, newest first).

// methodGroup is the group part of a methodName: "io.k8s.core" for the core group,
// "io.k8s.<g>" for a one-label group, the labels reversed for a DNS group.
func methodGroup(group string) string {
	if group == "" {
		return "io.k8s.core"
	}
	if !strings.Contains(group, ".") {
		return "io.k8s." + group
	}
	labels := strings.Split(group, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

// rpcCode maps an HTTP status to the google.rpc code google/rpc/code.proto maps to it; a 409 is
// ALREADY_EXISTS for a create answered AlreadyExists, ABORTED (a concurrency conflict) otherwise.
func rpcCode(code int32, reason string) int {
	switch {
	case code >= 200 && code < 300:
		return 0
	case code == 409 && reason == "AlreadyExists":
		return 6
	case code == 409:
		return 10
	}
	switch code {
	case 400, 422:
		return 3
	case 401:
		return 16
	case 403:
		return 7
	case 404:
		return 5
	case 412:
		return 9
	case 429:
		return 8
	case 499:
		return 1
	case 501:
		return 12
	case 503:
		return 14
	case 504:
		return 4
	}
	return 2 // UNKNOWN (500 and the rest)
}

// LogEntry converts one native event to the Cloud Audit Logs entry GKE writes for it, or returns
// nil for an event GKE does not write (another stage than ResponseComplete).
func (c Cluster) LogEntry(e Event) (map[string]any, error) {
	ev := e.Event
	if ev.Stage != "ResponseComplete" {
		return nil, nil
	}
	ref := ev.ObjectRef
	if ref == nil || ref.Resource == "" || ref.APIVersion == "" {
		return nil, fmt.Errorf("event %s: no object reference (a non-resource request)", ev.AuditID)
	}
	group := ref.APIGroup
	resourcePath := "core"
	if group != "" {
		resourcePath = group
	}
	resourcePath += "/" + ref.APIVersion
	switch {
	case ref.Resource == "namespaces":
		resourcePath += "/namespaces"
	case ref.Namespace != "":
		resourcePath += "/namespaces/" + ref.Namespace + "/" + ref.Resource
	default:
		resourcePath += "/" + ref.Resource
	}
	if ref.Name != "" {
		resourcePath += "/" + ref.Name
		if ref.Subresource != "" {
			resourcePath += "/" + ref.Subresource
		}
	}
	method := methodGroup(group) + "." + ref.APIVersion + "." + ref.Resource
	if ref.Subresource != "" {
		method += "." + ref.Subresource
	}
	method += "." + ev.Verb

	status := map[string]any{}
	if rs := ev.ResponseStatus; rs != nil && (rs.Code < 200 || rs.Code >= 300) {
		status["code"] = rpcCode(rs.Code, string(rs.Reason))
		status["message"] = rs.Message
	}
	callerIP := ""
	if len(ev.SourceIPs) > 0 {
		callerIP = ev.SourceIPs[0]
	}
	decision := ev.Annotations["authorization.k8s.io/decision"]
	log, severity := "activity", "NOTICE"
	switch ev.Verb {
	case "get", "list", "watch":
		log, severity = "data_access", "INFO"
	}
	at := ev.StageTimestamp.Time
	labels := map[string]any{}
	for k, v := range ev.Annotations {
		labels[k] = v
	}
	return map[string]any{
		"insertId": string(ev.AuditID),
		"labels":   labels,
		"logName":  "projects/" + c.Project + "/logs/cloudaudit.googleapis.com%2F" + log,
		"operation": map[string]any{
			"first": true, "id": string(ev.AuditID), "last": true, "producer": "k8s.io",
		},
		"protoPayload": map[string]any{
			"@type":              "type.googleapis.com/google.cloud.audit.AuditLog",
			"authenticationInfo": map[string]any{"principalEmail": ev.User.Username},
			"authorizationInfo": []any{map[string]any{
				"granted": decision == "allow", "permission": method, "resource": resourcePath,
			}},
			"methodName": method,
			"requestMetadata": map[string]any{
				"callerIp": callerIP, "callerSuppliedUserAgent": ev.UserAgent,
			},
			"resourceName": resourcePath,
			"serviceName":  "k8s.io",
			"status":       status,
		},
		"receiveTimestamp": protoTime(at.Add(850 * time.Millisecond)),
		"resource": map[string]any{
			"labels": map[string]any{"cluster_name": c.Name, "location": c.Location, "project_id": c.Project},
			"type":   "k8s_cluster",
		},
		"severity":  severity,
		"timestamp": protoTime(at),
	}, nil
}

// LogEntries converts the events GKE writes, in their order.
func (c Cluster) LogEntries(events []Event) ([]map[string]any, error) {
	var out []map[string]any
	for _, e := range events {
		entry, err := c.LogEntry(e)
		if err != nil {
			return nil, err
		}
		if entry != nil {
			out = append(out, entry)
		}
	}
	return out, nil
}

// PubSubPushes are the bodies a push subscription posts, one entry per message (wrapped
// payload: message.data is the entry's JSON, base64'd).
func (c Cluster) PubSubPushes(entries []map[string]any) [][]byte {
	var out [][]byte
	for i, entry := range entries {
		received, _ := time.Parse(time.RFC3339Nano, entry["receiveTimestamp"].(string))
		published := protoTime(received.Add(120 * time.Millisecond).Truncate(time.Millisecond))
		msgID := digits(16, c.Project, "message", fmt.Sprint(i), entry["insertId"].(string))
		out = append(out, marshal(struct {
			Message struct {
				Attributes  map[string]string `json:"attributes"`
				Data        string            `json:"data"`
				MessageID   string            `json:"messageId"`
				MessageID2  string            `json:"message_id"`
				PublishTime string            `json:"publishTime"`
				Publish2    string            `json:"publish_time"`
			} `json:"message"`
			Subscription string `json:"subscription"`
		}{
			Message: struct {
				Attributes  map[string]string `json:"attributes"`
				Data        string            `json:"data"`
				MessageID   string            `json:"messageId"`
				MessageID2  string            `json:"message_id"`
				PublishTime string            `json:"publishTime"`
				Publish2    string            `json:"publish_time"`
			}{
				Attributes: map[string]string{"logging.googleapis.com/timestamp": entry["timestamp"].(string)},
				Data:       b64(marshal(entry)),
				MessageID:  msgID, MessageID2: msgID, PublishTime: published, Publish2: published,
			},
			Subscription: "projects/" + c.Project + "/subscriptions/" + c.Subscription,
		}))
	}
	return out
}

// GcloudRead is the output of `gcloud logging read --format=json`: one JSON array, newest entry
// first, keys sorted, indented by two spaces.
func (c Cluster) GcloudRead(entries []map[string]any) []byte {
	newest := slices.Clone(entries)
	slices.SortStableFunc(newest, func(a, b map[string]any) int {
		return strings.Compare(b["timestamp"].(string), a["timestamp"].(string))
	})
	return marshalIndent(newest, "  ")
}

// StorageSink is a Cloud Storage sink file's content: one entry per line.
func (c Cluster) StorageSink(entries []map[string]any) []byte {
	var b bytes.Buffer
	for _, e := range entries {
		b.Write(marshal(e))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// StorageSinkPath is where a sink writes the hour's file of the activity log:
// cloudaudit.googleapis.com/activity/YYYY/MM/DD/HH:00:00_HH:59:59_S0.json, with the colons of
// the file name written as dashes (a colon is not allowed in a Go module's file names).
func (c Cluster) StorageSinkPath(hour time.Time) string {
	h := hour.UTC()
	return fmt.Sprintf("cloudaudit.googleapis.com/activity/%s/%02d-00-00_%02d-59-59_S0.json", h.Format("2006/01/02"), h.Hour(), h.Hour())
}
