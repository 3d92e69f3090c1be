package forms

import (
	"fmt"
	"time"
)

// EKS: CloudWatch Logs group /aws/eks/<cluster>/cluster, stream kube-apiserver-audit-<id>, one
// log event per audit event with the log line as its message (EKS user guide, "Send control
// plane logs to CloudWatch Logs"); a subscription filter to Amazon Data Firehose, which posts to
// an HTTP endpoint (Firehose developer guide, "HTTP endpoint delivery request and response
// specifications"; CloudWatch Logs user guide, "Log group-level subscription filters" for the
// payload); exports to S3 (CloudWatch Logs user guide, "Exporting log data to Amazon S3") and
// `aws logs filter-log-events` (AWS CLI reference).

// LogGroup is the cluster's CloudWatch Logs group.
func (c Cluster) LogGroup() string { return "/aws/eks/" + c.Name + "/cluster" }

// AuditStream is the stream the test data's API server writes to.
func (c Cluster) AuditStream() string { return "kube-apiserver-audit-" + id(32, c.Name, "stream") }

type logEvent struct {
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"`
	Message   string `json:"message"`
}

type cloudWatchPayload struct {
	MessageType         string     `json:"messageType"`
	Owner               string     `json:"owner"`
	LogGroup            string     `json:"logGroup"`
	LogStream           string     `json:"logStream"`
	SubscriptionFilters []string   `json:"subscriptionFilters"`
	LogEvents           []logEvent `json:"logEvents"`
}

func (c Cluster) logEvents(events []Event) []logEvent {
	out := make([]logEvent, len(events))
	for i, e := range events {
		ts := e.Event.StageTimestamp.Time
		out[i] = logEvent{
			ID:        fmt.Sprintf("%d%s", ts.UnixMilli(), digits(43, string(e.Event.AuditID))),
			Timestamp: millis(ts),
			Message:   string(e.Line),
		}
	}
	return out
}

// ControlPayload is the message CloudWatch Logs sends when a subscription checks its destination.
func (c Cluster) ControlPayload(at time.Time) []byte {
	return marshal(cloudWatchPayload{
		MessageType: "CONTROL_MESSAGE", Owner: "CloudwatchLogs", SubscriptionFilters: []string{},
		LogEvents: []logEvent{{Timestamp: millis(at), Message: "CWL CONTROL MESSAGE: Checking health of destination Firehose."}},
	})
}

// CloudWatchPayloads groups the events' log events into subscription payloads of at most
// perPayload log events (CloudWatch Logs batches by stream).
func (c Cluster) CloudWatchPayloads(events []Event, perPayload int) [][]byte {
	les := c.logEvents(events)
	var out [][]byte
	for _, r := range chunks(len(les), perPayload) {
		out = append(out, marshal(cloudWatchPayload{
			MessageType: "DATA_MESSAGE", Owner: c.AccountID, LogGroup: c.LogGroup(), LogStream: c.AuditStream(),
			SubscriptionFilters: []string{"loopwatch-audit"}, LogEvents: les[r[0]:r[1]],
		}))
	}
	return out
}

type firehoseRecord struct {
	Data string `json:"data"`
}

type firehoseRequest struct {
	RequestID string           `json:"requestId"`
	Timestamp int64            `json:"timestamp"`
	Records   []firehoseRecord `json:"records"`
}

// FirehoseBodies are the HTTP endpoint requests Firehose posts for the events: the subscription's
// control message first, then the events' payloads, each gzip'd and base64'd as a record, at most
// perRequest records per request.
func (c Cluster) FirehoseBodies(events []Event, perPayload, perRequest int) [][]byte {
	if len(events) == 0 {
		return nil
	}
	first := events[0].Event.StageTimestamp.Time
	payloads := append([][]byte{c.ControlPayload(first.Add(-time.Minute))}, c.CloudWatchPayloads(events, perPayload)...)
	var out [][]byte
	for i, r := range chunks(len(payloads), perRequest) {
		req := firehoseRequest{
			RequestID: uuid(c.Name, "firehose", fmt.Sprint(i)),
			Timestamp: millis(first) + int64(i)*1000,
		}
		for _, p := range payloads[r[0]:r[1]] {
			req.Records = append(req.Records, firehoseRecord{Data: b64(gzipped(p))})
		}
		out = append(out, marshal(req))
	}
	return out
}

// S3Export is the content of an export task's file for the stream (before its gzip): one line
// per log event, its timestamp in ISO 8601 with milliseconds, a space, the message.
func (c Cluster) S3Export(events []Event) []byte {
	var b []byte
	for _, e := range byTime(events) {
		b = fmt.Appendf(b, "%s %s\n", e.Event.StageTimestamp.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Line)
	}
	return b
}

// S3ExportPath is where an export task writes the stream's first file.
func (c Cluster) S3ExportPath() string {
	return "exportedlogs/" + uuid(c.Name, "export-task") + "/" + c.AuditStream() + "/000000.gz"
}

// S3ExportFile is the export's file as written to S3, gzip'd.
func (c Cluster) S3ExportFile(events []Event) []byte { return gzipped(c.S3Export(events)) }

type filteredEvent struct {
	LogStreamName string `json:"logStreamName"`
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	IngestionTime int64  `json:"ingestionTime"`
	EventID       string `json:"eventId"`
}

type searchedStream struct {
	LogStreamName      string `json:"logStreamName"`
	SearchedCompletely bool   `json:"searchedCompletely"`
}

// FilterLogEvents is the output of `aws logs filter-log-events --log-group-name <group>
// --log-stream-name-prefix kube-apiserver-audit --output json`: the AWS CLI's JSON, indented by
// four spaces, events in time order.
func (c Cluster) FilterLogEvents(events []Event) []byte {
	les := c.logEvents(byTime(events))
	doc := struct {
		Events             []filteredEvent  `json:"events"`
		SearchedLogStreams []searchedStream `json:"searchedLogStreams"`
	}{SearchedLogStreams: []searchedStream{{LogStreamName: c.AuditStream(), SearchedCompletely: true}}}
	for _, le := range les {
		doc.Events = append(doc.Events, filteredEvent{
			LogStreamName: c.AuditStream(), Timestamp: le.Timestamp, Message: le.Message,
			IngestionTime: le.Timestamp + 700, EventID: le.ID,
		})
	}
	return marshalIndent(doc, "    ")
}
