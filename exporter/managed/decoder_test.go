package managed

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/exporter/decode"
	"github.com/loopwatch/loopwatch/exporter/managed/forms"
)

// nativeLine is an audit event as the log backend writes it.
func nativeLine(i int, user, pod string, code int) string {
	extra := ""
	if pod != "" {
		extra = fmt.Sprintf(`,"extra":{"authentication.kubernetes.io/pod-name":[%q]}`, pod)
	}
	ts := time.Date(2026, 11, 23, 16, 41, 2, 0, time.UTC).Add(time.Duration(i) * 100 * time.Millisecond).Format("2006-01-02T15:04:05.000000Z")
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"00000000-0000-0000-0000-%012d","stage":"ResponseComplete",`+
		`"requestURI":"/api/v1/namespaces/ns/configmaps/state","verb":"update","user":{"username":%q,"groups":["system:serviceaccounts"]%s},`+
		`"sourceIPs":["10.0.0.7"],"userAgent":"ctl/v1","objectRef":{"resource":"configmaps","namespace":"ns","name":"state","apiVersion":"v1"},`+
		`"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q,"annotations":{"authorization.k8s.io/decision":"allow"}}`,
		i, user, extra, code, ts, ts)
}

func nativeEvents(t testing.TB, n int) []forms.Event {
	t.Helper()
	var b strings.Builder
	for i := range n {
		b.WriteString(nativeLine(i, "system:serviceaccount:ns:ctl", fmt.Sprintf("ctl-%d", i%2), 200))
		b.WriteByte('\n')
	}
	evs, err := forms.ParseLines([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

func firehoseBody(records ...[]byte) []byte {
	var b strings.Builder
	b.WriteString(`{"requestId":"5b8a7b9c-0000-4000-8000-000000000001","timestamp":1795452062000,"records":[`)
	for i, r := range records {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"data":%q}`, base64.StdEncoding.EncodeToString(r))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func payload(stream string, messages ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"/aws/eks/c/cluster","logStream":%q,"subscriptionFilters":["f"],"logEvents":[`, stream)
	for i, m := range messages {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%056d","timestamp":1795452062000,"message":%q}`, i, m)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func TestFirehoseRecordsAreCountedByReason(t *testing.T) {
	audit := "kube-apiserver-audit-0123456789abcdef"
	ev := nativeLine(1, "system:serviceaccount:ns:ctl", "ctl-0", 200)
	bomb := gz(bytes.Repeat([]byte{'{'}, 64<<20))
	for _, tc := range []struct {
		name    string
		records [][]byte
		events  int
		want    Tally
	}{
		{"gzip'd payloads of audit events", [][]byte{gz(payload(audit, ev, ev))}, 2, Tally{RecordDecoded: 2}},
		{"a payload decompressed by Firehose", [][]byte{payload(audit, ev)}, 1, Tally{RecordDecoded: 1}},
		{"bare messages (message extraction)", [][]byte{[]byte(ev + "\n" + ev + "\n")}, 2, Tally{RecordDecoded: 2}},
		{"a control message is skipped", [][]byte{gz([]byte(`{"messageType":"CONTROL_MESSAGE","owner":"CloudwatchLogs","logGroup":"","logStream":"","subscriptionFilters":[],"logEvents":[{"id":"","timestamp":1,"message":"CWL CONTROL MESSAGE: Checking health of destination Firehose."}]}`))}, 0, Tally{RecordControl: 1}},
		{"another stream's events are not audit events", [][]byte{gz(payload("kube-apiserver-0123", "I1123 16:41:02.000000 1 trace.go:236] Trace", ev))}, 0, Tally{RecordNotAudit: 2}},
		{"a truncated event is counted apart", [][]byte{gz(payload(audit, ev[:200]+"[Truncated...]"))}, 0, Tally{RecordTruncated: 1}},
		{"a message that is not an event", [][]byte{gz(payload(audit, `{"level":"info","msg":"hello"}`, "plain text"))}, 0, Tally{RecordNotAudit: 2}},
		{"a broken event is malformed", [][]byte{gz(payload(audit, `{"kind":"Event","stage":`))}, 0, Tally{RecordMalformed: 1}},
		{"data that is not base64", nil, 0, Tally{RecordMalformed: 1}},
		{"a gzip bomb stops at the bound", [][]byte{bomb}, 0, Tally{RecordTooLarge: 1}},
		{"broken gzip", [][]byte{gz([]byte(ev))[:20]}, 0, Tally{RecordMalformed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(Limits{})
			body := firehoseBody(tc.records...)
			if tc.records == nil {
				body = []byte(`{"requestId":"r","timestamp":1,"records":[{"data":"!!not base64!!"}]}`)
			}
			req, err := d.Firehose(body)
			if err != nil {
				t.Fatal(err)
			}
			if len(req.ID) == 0 || len(d.Events) != tc.events || d.Tally != tc.want {
				t.Errorf("request %q: %d events, tally %v; want %d events, %v", req.ID, len(d.Events), d.Tally, tc.events, tc.want)
			}
		})
	}
}

func TestMalformedEnvelopesAreRefusedWhole(t *testing.T) {
	for name, tc := range map[string]struct {
		read func(d *Decoder, b []byte) error
		body string
	}{
		"firehose: not json":                       {firehose, `not json`},
		"firehose: no records":                     {firehose, `{"requestId":"r","timestamp":1}`},
		"firehose: no request id":                  {firehose, `{"timestamp":1,"records":[]}`},
		"firehose: trailing data":                  {firehose, `{"requestId":"r","timestamp":1,"records":[]} x`},
		"firehose: records not array":              {firehose, `{"requestId":"r","timestamp":1,"records":{}}`},
		"firehose: empty request id":               {firehose, `{"requestId":"","timestamp":1,"records":[]}`},
		"firehose: timestamp last, not an integer": {firehose, `{"requestId":"r","records":[{"data":"e30="}],"timestamp":1.5}`},
		"push: no message":                         {push, `{"subscription":"projects/p/subscriptions/s"}`},
		"push: no message id":                      {push, `{"message":{"data":"e30="}}`},
		"push: truncated":                          {push, `{"message":{"data":"e30=","messageId":"1"`},
		"event hub: no records":                    {eventHub, `{"value":[]}`},
		"event hub: records of text":               {eventHub, `{"records":["a",`},
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDecoder(Limits{})
			if err := tc.read(d, []byte(tc.body)); !errors.Is(err, ErrEnvelope) {
				t.Errorf("error %v, want ErrEnvelope", err)
			}
		})
	}
}

func TestAPushWithoutMessageIDIsRefusedAfterOneWithIt(t *testing.T) {
	d := NewDecoder(Limits{})
	if _, err := d.PubSubPush([]byte(`{"message":{"data":"e30=","messageId":"1"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PubSubPush([]byte(`{"message":{"data":"e30="}}`)); !errors.Is(err, ErrEnvelope) {
		t.Errorf("error %v, want ErrEnvelope: the ID of the push before must not be taken for its own", err)
	}
}

func firehose(d *Decoder, b []byte) error { _, err := d.Firehose(b); return err }
func push(d *Decoder, b []byte) error     { _, err := d.PubSubPush(b); return err }
func eventHub(d *Decoder, b []byte) error { return d.EventHubBody(b) }

func TestAzureRecordsOfOtherCategoriesAreNotAudit(t *testing.T) {
	ev := nativeLine(1, "u", "", 200)
	body := fmt.Sprintf(`{"records":[`+
		`{"time":"t","resourceId":"/SUBSCRIPTIONS/X","category":"kube-audit","operationName":"o","properties":{"log":%q,"stream":"stdout","pod":"kube-apiserver-1"}},`+
		`{"properties":{"log":%q},"category":"kube-audit-admin"},`+
		`{"time":"t","category":"kube-apiserver","properties":{"log":"I1123 16:41:02 1 flags.go:64] FLAG: --audit-log-path=\"\"","stream":"stderr"}},`+
		`{"time":"t","category":"kube-audit","properties":{"stream":"stdout"}},`+
		`{"time":"t","properties":{"log":%q}}]}`, ev, ev, ev)
	d := NewDecoder(Limits{})
	if err := d.EventHubBody([]byte(body)); err != nil {
		t.Fatal(err)
	}
	want := Tally{RecordDecoded: 2, RecordNotAudit: 1, RecordMalformed: 2}
	if len(d.Events) != 2 || d.Tally != want {
		t.Errorf("%d events, tally %v; want 2, %v", len(d.Events), d.Tally, want)
	}
}

func TestPushOfAnotherLogIsCountedNotGuessed(t *testing.T) {
	entry := `{"insertId":"x","logName":"projects/p/logs/stdout","resource":{"type":"k8s_container"},"textPayload":"hello","timestamp":"2026-11-23T16:41:02Z"}`
	body := fmt.Sprintf(`{"message":{"attributes":{},"data":%q,"messageId":"17","publishTime":"2026-11-23T16:41:03Z"},"subscription":"projects/p/subscriptions/s"}`,
		base64.StdEncoding.EncodeToString([]byte(entry)))
	d := NewDecoder(Limits{})
	msg, err := d.PubSubPush([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.ID) != "17" || len(d.Events) != 0 || d.Tally != (Tally{RecordNotAudit: 1}) {
		t.Errorf("message %q: %d events, tally %v; want none, one not_audit", msg.ID, len(d.Events), d.Tally)
	}
}

func TestDecodingDeliveriesAllocatesNothing(t *testing.T) {
	c := forms.DefaultCluster
	evs := nativeEvents(t, 50)
	entries, err := c.LogEntries(evs)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		read func(d *Decoder, b []byte) error
		body []byte
	}{
		"firehose":  {firehose, c.FirehoseBodies(evs, 25, 4)[0]},
		"pubsub":    {push, c.PubSubPushes(entries)[0]},
		"event hub": {eventHub, c.EventHubBodies(evs, 50)[0]},
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDecoder(Limits{})
			run := func() {
				d.Reset()
				if err := tc.read(d, tc.body); err != nil || len(d.Events) == 0 {
					t.Fatalf("%v, %d events", err, len(d.Events))
				}
			}
			run()
			if n := testing.AllocsPerRun(50, run); n != 0 {
				t.Errorf("%v allocations per delivery, want 0", n)
			}
		})
	}
}

func TestADeliveryIsBoundedInWorkAndHeldEvents(t *testing.T) {
	ev := nativeLine(1, "system:serviceaccount:ns:ctl", "ctl-0", 200)
	var msgs []string
	for range 2500 {
		msgs = append(msgs, ev)
	}
	record := gz(payload("kube-apiserver-audit-0", msgs...))
	d := NewDecoder(Limits{MaxDeliveryBytes: 3 * len(payload("kube-apiserver-audit-0", msgs...)) / 2})
	flushed, most := 0, 0
	d.Flush = func(evs []decode.Event) { flushed += len(evs); most = max(most, len(evs)) }
	if _, err := d.Firehose(firehoseBody(record, record, record)); err != nil {
		t.Fatal(err)
	}
	// The second record passes the delivery's inflating budget: it and the third are refused.
	if got := flushed + len(d.Events); got != 2500 || most > 1000 || d.Tally != (Tally{RecordDecoded: 2500, RecordTooLarge: 2}) {
		t.Errorf("%d events handed on (at most %d at once), tally %v; want 2500 in chunks of 1000, two records too large", got, most, d.Tally)
	}
	// A body whose envelope is refused hands nothing on, even when its records come first.
	flushed = 0
	d.Reset()
	body := firehoseBody(record)
	body = append(body[:len(body)-1], []byte(`,"records":5}`)...)
	if _, err := d.Firehose(body); !errors.Is(err, ErrEnvelope) || flushed != 0 {
		t.Errorf("error %v, %d events handed on; want ErrEnvelope and none", err, flushed)
	}
}
