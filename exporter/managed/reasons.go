package managed

// Reason says what became of a record inside a delivery (a CloudWatch log event, a Pub/Sub
// message, an Azure resource-log record, a line of an export) that did not yield an event.
// Every record is counted under exactly one reason; RecordDecoded is the good one.
type Reason uint8

// Reasons, in the order of their label values (see ReasonLabels).
const (
	// RecordDecoded: an audit event was decoded from it.
	RecordDecoded Reason = iota
	// RecordControl: a CloudWatch Logs control message (a health check of the subscription).
	RecordControl
	// RecordNotAudit: another log's record: another CloudWatch stream, another AKS diagnostic
	// category, a Cloud Logging entry of another payload type, service or resource type.
	RecordNotAudit
	// RecordUnmappable: an audit record that cannot be mapped to an event without guessing (a
	// Cloud Audit Log entry whose method, resource name, status or time cannot be read).
	RecordUnmappable
	// RecordTruncated: CloudWatch Logs cut the event at its 256 KB limit ("[Truncated...]").
	RecordTruncated
	// RecordMalformed: not the JSON, base64 or gzip the form says.
	RecordMalformed
	// RecordTooLarge: a layer (base64, gzip, the event) would pass its bound.
	RecordTooLarge
	numReasons
)

// ReasonLabels are the label values of the reasons, indexed by Reason.
var ReasonLabels = [numReasons]string{
	RecordDecoded:    "decoded",
	RecordControl:    "control_message",
	RecordNotAudit:   "not_audit",
	RecordUnmappable: "unmappable",
	RecordTruncated:  "truncated",
	RecordMalformed:  "malformed",
	RecordTooLarge:   "too_large",
}

// String returns the reason's label value.
func (r Reason) String() string { return ReasonLabels[r] }

// Tally counts records by reason.
type Tally [numReasons]int

// Add adds other's counts.
func (t *Tally) Add(other *Tally) {
	for i := range t {
		t[i] += other[i]
	}
}

// Skipped is the number of records that yielded no event, control messages left out.
func (t *Tally) Skipped() int {
	n := 0
	for r := RecordNotAudit; r < numReasons; r++ {
		n += t[r]
	}
	return n
}
