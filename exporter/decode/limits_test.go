package decode

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestShortenKeepsDistinctLongValuesDistinctAndBounded(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	cases := []struct {
		name string
		a, b string
	}{
		{"values differing only at the end", long + "a", long + "b"},
		{"values differing only in length", long, long + "x"},
		{"multi-byte characters across the cut", strings.Repeat("é", 400), strings.Repeat("é", 401)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, max := range []int{MinMaxValueBytes, DefaultMaxValueBytes, 1000} {
				a, b := Shorten([]byte(tc.a), max), Shorten([]byte(tc.b), max)
				if a == b {
					t.Fatalf("max %d: both shortened to %q", max, a)
				}
				for _, s := range []string{a, b} {
					if len(s) > max || !utf8.ValidString(s) {
						t.Fatalf("max %d: %q is %d bytes or not UTF-8", max, s, len(s))
					}
				}
				if again := Shorten([]byte(tc.a), max); again != a {
					t.Fatalf("the same value shortened twice differs: %q, %q", a, again)
				}
			}
		})
	}
	if s := Shorten([]byte("system:serviceaccount:a:b"), MinMaxValueBytes); s != "system:serviceaccount:a:b" {
		t.Fatalf("a short value changed: %q", s)
	}
}

func TestDecoderShortensEveryKeptString(t *testing.T) {
	long := strings.Repeat("u", 1<<20)
	body := fmt.Sprintf(`{"items":[{"level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/x?fieldManager=%s","verb":"patch","user":{"username":"%s","extra":{"authentication.kubernetes.io/pod-name":["%s"]}},"userAgent":"%s","objectRef":{"resource":"%s","namespace":"%s","name":"%s","apiGroup":"%s","subresource":"%s"}}]}`,
		long, long, long, long, long, long, long, long, long)
	d := NewLimitedDecoder(0, Limits{MaxValueBytes: 100})
	for range 2 { // the second time through the last-value caches
		events, err := d.DecodeList([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		ev := events[0]
		for name, v := range map[string]string{
			"username": ev.Username, "pod": ev.Pod, "userAgent": ev.UserAgent, "fieldManager": ev.FieldManager,
			"resource": ev.Resource, "namespace": ev.Namespace, "name": ev.Name, "apiGroup": ev.APIGroup, "subresource": ev.Subresource,
		} {
			if want := Shorten([]byte(long), 100); v != want {
				t.Errorf("%s kept as %d bytes %.40q…, want %q", name, len(v), v, want)
			}
		}
	}
}

func TestDecodeListLimits(t *testing.T) {
	items := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"kind":"EventList","items":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{}`)
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	cases := []struct {
		name   string
		limits Limits
		body   []byte
		want   error
		events int
	}{
		{"accepts a list at the event limit", Limits{MaxEvents: 3}, items(3), nil, 3},
		{"refuses a list over the event limit", Limits{MaxEvents: 3}, items(4), ErrTooManyEvents, 0},
		{"refuses a million empty events without decoding them all", Limits{MaxEvents: 10000}, items(1 << 20), ErrTooManyEvents, 0},
		{"accepts an empty items array", Limits{RequireItems: true}, []byte(`{"items":[]}`), nil, 0},
		{"refuses an object without items", Limits{RequireItems: true}, []byte(`{}`), ErrNotEventList, 0},
		{"refuses null items", Limits{RequireItems: true}, []byte(`{"items":null}`), ErrNotEventList, 0},
		{"refuses another service's envelope", Limits{RequireItems: true}, []byte(`{"message":{"data":"e30="},"subscription":"s"}`), ErrNotEventList, 0},
		{"takes an object without items as empty by default", Limits{}, []byte(`{}`), nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events, err := NewLimitedDecoder(0, tc.limits).DecodeList(tc.body)
			if !errors.Is(err, tc.want) || err == nil && len(events) != tc.events {
				t.Fatalf("got %d events, %v; want %d, %v", len(events), err, tc.events, tc.want)
			}
		})
	}
}

// TestDecodeKeepsTheTimestampOfOlderVersions: audit.k8s.io/v1beta1 events of API servers before
// requestReceivedTimestamp existed carry only "timestamp" (RFC 3339, seconds).
func TestDecodeKeepsTheTimestampOfOlderVersions(t *testing.T) {
	line := []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1","metadata":{"creationTimestamp":"2018-01-10T10:21:55Z"},"level":"Metadata","timestamp":"2018-01-10T10:21:55Z","auditID":"5c8d2e7a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps/c","verb":"update","user":{"username":"system:serviceaccount:default:w","groups":["system:serviceaccounts"]},"sourceIPs":["10.0.0.1"],"objectRef":{"resource":"configmaps","namespace":"default","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}}`)
	var ev Event
	if err := NewDecoder(0).DecodeEvent(line, &ev); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2018, 1, 10, 10, 21, 55, 0, time.UTC)
	if !ev.Timestamp.Equal(want) || !ev.When().Equal(want) || !ev.StageTimestamp.IsZero() {
		t.Fatalf("timestamp %v, when %v, stage timestamp %v; want %v", ev.Timestamp, ev.When(), ev.StageTimestamp, want)
	}
	if ev.Verb != "update" || ev.Name != "c" || !ev.Attributable() {
		t.Fatalf("event %+v", ev)
	}
	checkAgainstReference(t, append(append([]byte(`{"items":[`), line...), "]}"...))
	for _, bad := range []string{`"2018-01-10 10:21:55"`, `""`, `5`} {
		doc := []byte(`{"items":[{"timestamp":` + bad + `}]}`)
		checkAgainstReference(t, doc)
		if _, err := NewDecoder(0).DecodeList(doc); err == nil {
			t.Errorf("timestamp %s accepted", bad)
		}
	}
}
