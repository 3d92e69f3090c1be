package decode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readBatches(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob("../testdata/batch-*.json")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no audit batches in ../testdata: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

func TestDecodeListMatchesEncodingJSONOnRealBatches(t *testing.T) {
	for name, data := range readBatches(t) {
		t.Run(name, func(t *testing.T) {
			checkAgainstReference(t, data)
			events, err := NewDecoder(0).DecodeList(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 {
				t.Fatal("no events decoded")
			}
		})
	}
}

// TestFastPathTakesRealEvents guards the fast path's reason to exist: the events a real API
// server sends (including escaped request URIs and error statuses with details) never fall back.
func TestFastPathTakesRealEvents(t *testing.T) {
	for name, data := range readBatches(t) {
		d := NewDecoder(0)
		events, err := d.DecodeList(data)
		if err != nil {
			t.Fatal(err)
		}
		if d.fallbacks != 0 {
			t.Errorf("%s: %d of %d events fell back to the general path", name, d.fallbacks, len(events))
		}
	}
	// And a log-backend line, with its TypeMeta.
	line := []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps/c?fieldManager=m","verb":"update","user":{"username":"system:serviceaccount:default:w","uid":"u","groups":["system:serviceaccounts"],"extra":{"authentication.kubernetes.io/credential-id":["JTI=x"],"authentication.kubernetes.io/pod-name":["w-1"]}},"sourceIPs":["10.0.0.1"],"userAgent":"w/v0","objectRef":{"resource":"configmaps","namespace":"default","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":409},"requestReceivedTimestamp":"2026-11-21T04:04:45.744196Z","stageTimestamp":"2026-11-21T04:04:45.745733Z","annotations":{"authorization.k8s.io/decision":"allow"}}`)
	d := NewDecoder(0)
	var ev Event
	if err := d.DecodeEvent(line, &ev); err != nil {
		t.Fatal(err)
	}
	if d.fallbacks != 0 || ev.Pod != "w-1" || ev.Code != 409 || ev.FieldManager != "m" || ev.Name != "c" {
		t.Errorf("log line: %d fallbacks, event %+v", d.fallbacks, ev)
	}
}

func TestDecodeListExtractsFields(t *testing.T) {
	events, err := NewDecoder(0).DecodeList(readBatches(t)["batch-03.json"])
	if err != nil {
		t.Fatal(err)
	}
	e := events[1]
	want := Event{
		AuditIDHash: HashAuditID([]byte("31477514-1507-4500-9db9-32554dee9314")), HasAuditID: true,
		Verb: "patch", Stage: StageResponseComplete, Username: "admin",
		UserAgent:    "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07",
		FieldManager: "kubectl-annotate", Resource: "serviceaccounts", Namespace: "default", Name: "fighter",
		Code:            200,
		RequestReceived: time.Date(2026, 11, 21, 4, 4, 45, 744196000, time.UTC),
		StageTimestamp:  time.Date(2026, 11, 21, 4, 4, 45, 745733000, time.UTC),
	}
	if !sameEvent(&e, &want) {
		t.Fatalf("got %+v\nwant %+v", e, want)
	}
}

func TestDecodeListEdgeCases(t *testing.T) {
	cases := []struct {
		name  string
		input string
	}{
		{"accepts null list", `null`},
		{"accepts empty items", `{"items":[]}`},
		{"accepts null items", `{"items":null}`},
		{"accepts null event", `{"items":[null]}`},
		{"decodes escapes in kept strings", `{"items":[{"user":{"username":"system:serviceaccount:a\u003ab\n\"q\"\\\/"},"verb":"p\u00e4tch"}]}`},
		{"decodes surrogate pairs", `{"items":[{"verb":"\ud83d\ude00"}]}`},
		{"replaces lone surrogates", `{"items":[{"verb":"\ud83dx\ude00"}]}`},
		{"replaces invalid utf-8", "{\"items\":[{\"verb\":\"a\xffb\xc3\"}]}"},
		{"keeps valid utf-8", `{"items":[{"objectRef":{"name":"größe-名前"}}]}`},
		{"matches keys case-insensitively", `{"ITEMS":[{"Verb":"patch","USER":{"UserName":"x"}}]}`},
		{"matches keys with kelvin sign", "{\"items\":[{\"objectRef\":{\"\u212aind\":1,\"name\":\"n\"}}]}"},
		{"last duplicate key wins", `{"items":[{"verb":"a","verb":"b"}]}`},
		{"null string leaves value", `{"items":[{"verb":"a","verb":null}]}`},
		{"null impersonatedUser clears it", `{"items":[{"impersonatedUser":{"username":"i"},"impersonatedUser":null}]}`},
		{"duplicate user merges", `{"items":[{"user":{"username":"a"},"user":{"uid":"u"}}]}`},
		{"null objectRef clears it", `{"items":[{"objectRef":{"name":"n"},"objectRef":null}]}`},
		{"null responseStatus clears code", `{"items":[{"responseStatus":{"code":409},"responseStatus":null}]}`},
		{"reads negative code", `{"items":[{"responseStatus":{"code":-5}}]}`},
		{"reads pod from bound token", `{"items":[{"user":{"username":"system:serviceaccount:ns:sa","extra":{"authentication.kubernetes.io/pod-name":["pod-a"],"authentication.kubernetes.io/pod-uid":["u"]}}}]}`},
		{"null extra clears pod", `{"items":[{"user":{"extra":{"authentication.kubernetes.io/pod-name":["p"]},"extra":null}}]}`},
		{"empty pod list", `{"items":[{"user":{"extra":{"authentication.kubernetes.io/pod-name":[]}}}]}`},
		{"null timestamp is zero", `{"items":[{"stageTimestamp":null}]}`},
		{"timestamp with offset", `{"items":[{"stageTimestamp":"2026-11-21T05:04:45.745733+01:00"}]}`},
		{"timestamps sharing the cached hour", `{"items":[{"requestReceivedTimestamp":"2026-11-21T04:04:30.286101Z","stageTimestamp":"2026-11-21T04:59:59.999999Z"},{"stageTimestamp":"2026-11-21T04:00:00.000000Z"}]}`},
		{"timestamps across hours and days", `{"items":[{"stageTimestamp":"2026-11-21T23:59:59.999999Z"},{"stageTimestamp":"2026-11-22T00:00:00.000001Z"},{"stageTimestamp":"2024-02-29T12:00:00.000000Z"}]}`},
		{"refuses minute 60 within the cached hour", `{"items":[{"stageTimestamp":"2026-11-21T04:04:30.286101Z"},{"stageTimestamp":"2026-11-21T04:60:30.286101Z"}]}`},
		{"refuses second 60 within the cached hour", `{"items":[{"stageTimestamp":"2026-11-21T04:04:30.286101Z"},{"stageTimestamp":"2026-11-21T04:04:60.286101Z"}]}`},
		{"refuses a letter in microseconds within the cached hour", `{"items":[{"stageTimestamp":"2026-11-21T04:04:30.286101Z"},{"stageTimestamp":"2026-11-21T04:04:30.28x101Z"}]}`},
		{"reads an escaped digit in a timestamp", `{"items":[{"stageTimestamp":"2026-11-21T04:04:30.286101Z"},{"stageTimestamp":"2026-11-21T04:04:3\u0030.286101Z"}]}`},
		{"decodes escapes between long plain runs", `{"items":[{"requestURI":"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt/status?fieldManager=api-priority-and-fairness-config-consumer-v1\u0026force=true\u0026x=\u00e9\u00e9\u00e9 and a long tail of plain ascii"}]}`},
		{"matches predicted keys at the very end of input", `{"items":[{"verb":"x","user":{"username":"u"}}]}`},
		{"refuses a predicted key without its colon", `{"items":[{"verb" "x"}]}`},
		{"fieldManager escaped", `{"items":[{"requestURI":"/api?x=1&fieldManager=a%2Fb+c&fieldManager=z"}]}`},
		{"fieldManager bad escape skipped", `{"items":[{"requestURI":"/api?fieldManager=%zz&fieldManager=ok"}]}`},
		{"fieldManager escaping bytes that are not utf-8", `{"items":[{"requestURI":"/api?fieldManager=a%FFb%C3&fieldValidation=%E2%82"}]}`},
		{"fieldManager escaping utf-8", `{"items":[{"requestURI":"/api?fieldManager=gr%C3%B6%C3%9Fe"}]}`},
		{"fieldManager semicolon pair skipped", `{"items":[{"requestURI":"/api?fieldManager=a;b&fieldManager=ok"}]}`},
		{"skips nested request objects", `{"items":[{"requestObject":{"a":[1,2.5e3,-0.1,true,false,null,{"b":"\u0041"}]},"verb":"x"}]}`},
		{"refuses truncated document", `{"items":[{"verb":"x"`},
		{"refuses trailing data", `{"items":[]} x`},
		{"refuses control character", "{\"items\":[{\"verb\":\"a\tb\"}]}"},
		{"refuses bad escape", `{"items":[{"verb":"\x"}]}`},
		{"refuses trailing comma", `{"items":[{"verb":"x"},]}`},
		{"refuses string code", `{"items":[{"responseStatus":{"code":"409"}}]}`},
		{"refuses fractional code", `{"items":[{"responseStatus":{"code":409.5}}]}`},
		{"refuses overflowing code", `{"items":[{"responseStatus":{"code":2147483648}}]}`},
		{"refuses bad timestamp", `{"items":[{"stageTimestamp":"2026-02-30T00:00:00.000000Z"}]}`},
		{"refuses leading zero number", `{"items":[{"level":01}]}`},
		{"refuses empty input", ``},
		{"refuses deep nesting", `{"items":[{"requestObject":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAgainstReference(t, []byte(tc.input))
		})
	}
}

func TestDecodeListRefusesDuplicateItems(t *testing.T) {
	_, err := NewDecoder(0).DecodeList([]byte(`{"items":[],"Items":[]}`))
	if err != ErrDuplicateItems {
		t.Fatalf("got %v, want ErrDuplicateItems", err)
	}
}

func TestDecodeEventReadsOneLine(t *testing.T) {
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"Panic","verb":"update","user":{"username":"u"},"impersonatedUser":{"username":"i"},"objectRef":{"resource":"configmaps","namespace":"n","name":"c","subresource":"status"},"responseStatus":{"code":500}}`
	var ev Event
	if err := NewDecoder(0).DecodeEvent([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Actor() != "i" || !ev.Counts() || !ev.IsWrite() || ev.Subresource != "status" || ev.Code != 500 {
		t.Fatalf("unexpected event %+v", ev)
	}
	if err := NewDecoder(0).DecodeEvent([]byte(line+"}"), &ev); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestDecodeListDoesNotAllocateAtSteadyState(t *testing.T) {
	data := readBatches(t)["batch-00.json"]
	d := NewDecoder(0)
	if _, err := d.DecodeList(data); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := d.DecodeList(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch at steady state, want 0", allocs)
	}
}

// TestFastPathAgreesUnderMutation mutates real events at every position (a byte deleted, a space
// inserted, a letter's case flipped, a quote or backslash put in) and checks each result as
// FuzzDecode does: the fast path leaves wherever the input stops fitting the API server's form,
// and the outcome must be the general path's (and encoding/json's).
func TestFastPathAgreesUnderMutation(t *testing.T) {
	data := readBatches(t)["batch-03.json"]
	d := NewDecoder(0)
	if _, err := d.DecodeList(data); err != nil || d.fallbacks != 0 {
		t.Fatalf("the unmutated batch: %v, %d fallbacks", err, d.fallbacks)
	}
	for i := range data {
		for _, m := range mutations {
			checkAgainstReference(t, m(data, i))
		}
	}
}

// mutations each change a document at one position: a byte deleted, a space inserted, a letter's
// case flipped, a quote put in, a backslash put in.
var mutations = []func(b []byte, i int) []byte{
	func(b []byte, i int) []byte { return append(b[:i:i], b[i+1:]...) },
	func(b []byte, i int) []byte { return append(append(b[:i:i], ' '), b[i:]...) },
	func(b []byte, i int) []byte {
		c := b[i]
		if 'a' <= c|0x20 && c|0x20 <= 'z' {
			c ^= 0x20
		}
		return append(append(b[:i:i], c), b[i+1:]...)
	},
	func(b []byte, i int) []byte { return append(append(b[:i:i], '"'), b[i+1:]...) },
	func(b []byte, i int) []byte { return append(append(b[:i:i], '\\'), b[i:]...) },
}
