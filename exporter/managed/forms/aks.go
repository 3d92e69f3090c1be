package forms

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// AKS: resource logs of the cluster's diagnostic settings, category kube-audit (Azure docs, "AKS
// monitoring data reference" and "Resource logs"), streamed to an Event Hub as bodies of
// {"records":[…]} ("Stream Azure monitoring data to an event hub") or archived to a storage
// account as PT1H.json files with one record per line ("Prepare for format change to Azure
// Monitor resource logs archived to a storage account").

// ResourceID is the cluster's Azure resource ID, upper case as resource logs write it.
func (c Cluster) ResourceID() string {
	return strings.ToUpper("/subscriptions/" + c.SubscriptionID + "/resourceGroups/" + c.ResourceGroup +
		"/providers/Microsoft.ContainerService/managedClusters/" + c.Name)
}

type azureProperties struct {
	Log         string `json:"log"`
	Stream      string `json:"stream"`
	Pod         string `json:"pod"`
	ContainerID string `json:"containerID"`
}

type azureRecord struct {
	Time          string          `json:"time"`
	ResourceID    string          `json:"resourceId"`
	Category      string          `json:"category"`
	OperationName string          `json:"operationName"`
	Properties    azureProperties `json:"properties"`
}

func (c Cluster) azureRecord(e Event) azureRecord {
	return azureRecord{
		Time:          e.Event.StageTimestamp.Time.UTC().Format("2006-01-02T15:04:05.0000000Z"),
		ResourceID:    c.ResourceID(),
		Category:      "kube-audit",
		OperationName: "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
		Properties: azureProperties{
			Log: string(e.Line), Stream: "stdout",
			Pod:         "kube-apiserver-" + id(10, c.Name, "pod"),
			ContainerID: id(64, c.Name, "container"),
		},
	}
}

// EventHubBodies are the Event Hub event bodies carrying the events, at most perBody records each.
func (c Cluster) EventHubBodies(events []Event, perBody int) [][]byte {
	var out [][]byte
	for _, r := range chunks(len(events), perBody) {
		body := struct {
			Records []azureRecord `json:"records"`
		}{}
		for _, e := range events[r[0]:r[1]] {
			body.Records = append(body.Records, c.azureRecord(e))
		}
		out = append(out, marshal(body))
	}
	return out
}

// PT1H is the content of the storage account's hourly file: one record per line.
func (c Cluster) PT1H(events []Event) []byte {
	var b bytes.Buffer
	for _, e := range events {
		b.Write(marshal(c.azureRecord(e)))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// PT1HPath is where the storage account keeps the hour's file.
func (c Cluster) PT1HPath(hour time.Time) string {
	h := hour.UTC()
	return fmt.Sprintf("insights-logs-kube-audit/resourceId=%s/y=%d/m=%02d/d=%02d/h=%02d/m=00/PT1H.json",
		c.ResourceID(), h.Year(), h.Month(), h.Day(), h.Hour())
}
