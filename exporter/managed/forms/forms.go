// Package forms writes audit events, as the API server's log backend writes them, in the forms
// managed clusters hand them out — each as its provider documents it (see
// exporter/testdata/providers/README.md for the documents) — so that the readers in package
// managed are tested and benchmarked on faithful input. Output is deterministic: identifiers and
// times the providers add are derived from the events.
package forms

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Cluster names the cluster and the accounts around it in every form.
type Cluster struct {
	Name string
	// AWS
	AccountID, Region string
	// GCP
	Project, Location, Subscription string
	// Azure
	SubscriptionID, ResourceGroup string
}

// DefaultCluster is the cluster the test data is written for.
var DefaultCluster = Cluster{
	Name: "loopwatch-it", AccountID: "123456789012", Region: "eu-west-1",
	Project: "loopwatch-test", Location: "europe-west1", Subscription: "loopwatch-audit",
	SubscriptionID: "00000000-0000-0000-0000-000000000000", ResourceGroup: "loopwatch-rg",
}

// Event is one native audit event: its line as the log backend wrote it, and the line decoded.
type Event struct {
	Line  []byte
	Event auditv1.Event
}

// ParseLines decodes the lines of a native audit log.
func ParseLines(log []byte) ([]Event, error) {
	var out []Event
	for i, line := range bytes.Split(log, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, Event{Line: line, Event: ev})
	}
	return out, nil
}

// id derives a deterministic identifier of n hex digits from parts.
func id(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:n]
}

// uuid derives a deterministic UUID-shaped identifier from parts.
func uuid(parts ...string) string {
	s := id(32, parts...)
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// digits derives a deterministic decimal identifier of n digits from parts.
func digits(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d", binary.BigEndian.Uint64(h[(i%4)*8:])%10000000000)
	}
	return b.String()[:n]
}

// marshal writes v as compact JSON without HTML escaping (as the providers' writers do).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only values built here are written
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// marshalIndent writes v as JSON indented by indent, without HTML escaping.
func marshalIndent(v any, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// gzipped compresses b (no name, no time in the header, so the output depends on b alone).
func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

// millis is t in Unix milliseconds.
func millis(t time.Time) int64 { return t.UnixMilli() }

// protoTime formats t as protobuf's JSON mapping of Timestamp does: UTC, "Z", and 0, 3, 6 or 9
// fractional digits.
func protoTime(t time.Time) string {
	t = t.UTC()
	ns := t.Nanosecond()
	base := t.Format("2006-01-02T15:04:05")
	switch {
	case ns == 0:
		return base + "Z"
	case ns%1e6 == 0:
		return fmt.Sprintf("%s.%03dZ", base, ns/1e6)
	case ns%1e3 == 0:
		return fmt.Sprintf("%s.%06dZ", base, ns/1e3)
	}
	return fmt.Sprintf("%s.%09dZ", base, ns)
}

// chunks splits n items into runs of at most size.
func chunks(n, size int) [][2]int {
	var out [][2]int
	for i := 0; i < n; i += size {
		out = append(out, [2]int{i, min(n, i+size)})
	}
	return out
}

// byTime returns the events ordered by stage timestamp (stable).
func byTime(events []Event) []Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b Event) int {
		return a.Event.StageTimestamp.Compare(b.Event.StageTimestamp.Time)
	})
	return out
}

// b64 is standard base64 with padding.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
