package forms

import (
	"bytes"
	"path"
	"time"
)

// Batching of the live forms in the test data: CloudWatch Logs payloads of at most 25 log
// events, Firehose requests of at most 4 records, Event Hub bodies of at most 50 records.
const (
	PerPayload = 25
	PerRequest = 4
	PerBody    = 50
)

// Files are the test data files for a native audit log, by path under testdata/providers: each
// provider's forms of the same events.
func Files(c Cluster, native []byte) (map[string][]byte, error) {
	events, err := ParseLines(native)
	if err != nil {
		return nil, err
	}
	entries, err := c.LogEntries(events)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"eks/firehose-requests.jsonl":         lines(c.FirehoseBodies(events, PerPayload, PerRequest)),
		path.Join("eks/s3", c.S3ExportPath()): c.S3ExportFile(events),
		"eks/filter-log-events.json":          c.FilterLogEvents(events),
		"gke/pubsub-push.jsonl":               lines(c.PubSubPushes(entries)),
		"gke/gcloud-logging-read.json":        c.GcloudRead(entries),
		"aks/eventhub-bodies.jsonl":           lines(c.EventHubBodies(events, PerBody)),
	}
	for hour, evs := range byHour(events) {
		files[path.Join("aks/storage", c.PT1HPath(hour))] = c.PT1H(evs)
		hourEntries, err := c.LogEntries(evs)
		if err != nil {
			return nil, err
		}
		files[path.Join("gke/storage", c.StorageSinkPath(hour))] = c.StorageSink(hourEntries)
	}
	return files, nil
}

func lines(bodies [][]byte) []byte {
	return append(bytes.Join(bodies, []byte{'\n'}), '\n')
}

// byHour groups events by the hour of their stage timestamp, keeping their order.
func byHour(events []Event) map[time.Time][]Event {
	out := map[time.Time][]Event{}
	for _, e := range events {
		h := e.Event.StageTimestamp.Time.UTC().Truncate(time.Hour)
		out[h] = append(out[h], e)
	}
	return out
}
