package decode

import (
	"strings"
	"testing"
)

// FuzzDecode checks the decoder against encoding/json on arbitrary input: it must never panic,
// must refuse invalid JSON and must extract the same fields, with eventSchema and with
// widerReading's rows (the kinds of row a later kept field adds). Seeds are the real batches.
// Run longer with: go test ./exporter/decode -run '^$' -fuzz FuzzDecode -fuzztime 5m -fuzzminimizetime 20x
// (without a count limit, minimizing each new input grown from the 100 KB real batches takes the
// default 60 s, during which nothing else runs).
func FuzzDecode(f *testing.F) {
	for _, data := range readBatches(f) {
		f.Add(data)
	}
	f.Add([]byte(`{"items":[{"user":{"username":"a\u00e9","extra":{"authentication.kubernetes.io/pod-name":["p"]}},"impersonatedUser":null,"requestURI":"/x?fieldManager=a%20b","responseStatus":{"code":409},"stageTimestamp":"2026-11-21T04:04:45.745733Z"}]}`))
	for _, seed := range []string{
		`null`, `{"items":null}`, `{"items":[null,{}]}`, `{"ITEMS":[{"Verb":"x","verb":null}]}`,
		`{"items":[{"objectRef":null,"responseStatus":{"code":-0}}]}`,
		`{"items":[{"user":{"extra":{"authentication.kubernetes.io/pod-name":[null,"b"]}}}]}`,
		`{"items":[{"stageTimestamp":"2026-11-21T04:04:45.745733+01:00","requestURI":"/a?fieldManager=%41&x;y"}]}`,
		`{"items":[{"requestObject":[1,-2.5e+3,{"a":[true,false,null]}],"verb":"\ud83d\ude00"}]}`,
		`{"items":[{"stageTimestamp":"2026-11-21T04:04:30.286101Z"},{"stageTimestamp":"2026-11-21T04:59:59.999999Z"}]}`,
		`{"items":[{"requestURI":"/apis/x/v1/flowschemas/exempt/status?fieldManager=api-priority\u0026force=true"}]}`,
		// The fast path's boundaries: each of these leaves it somewhere, or must not.
		`{"items":[{"level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":"patch","responseStatus":{"metadata":{},"code":2010}}]}`,
		`{"items":[{"level":"Metadata","responseStatus":{"code":20100}},{"responseStatus":{"code":201.0}},{"responseStatus":{"code":0}},{"responseStatus":{"code":1e2}},{"responseStatus":{"code":-409}},{"responseStatus":{"code":409 }}]}`,
		`{"items":[{"level":"Metadata","verb":"a","verb":"b"},{"level":"Metadata","Verb":"c"},{"level":"Metadata","x":1,"verb":"d"},{ "level":"Metadata"}]}`,
		`{"items":[{"user":{"username":"u","extra":{"authentication.kubernetes.io/pod-name":["p1","p2"],"authentication.kubernetes.io/pod-name":[]}}}]}`,
		`{"items":[{"user":{"username":"u","extra":{"authentication.kubernetes.io/pod-name":["p\u0031"]}},"impersonatedUser":{"username":"v","extra":{"a":["b"]}}}]}`,
		`{"items":[{"objectRef":{"resource":"r","namespace":"n","name":"01234567890123456789012345678901234567890123456789012345678901234567890123456789","apiGroup":"g","subresource":"s"},"annotations":{"k":"v","k2":"\"v\""}}]}`,
		`{"items":[{"requestReceivedTimestamp":"2026-11-21T04:04:45.744196+00:00","stageTimestamp":null},{"requestReceivedTimestamp":"2026-02-30T04:04:45.744196Z"}]}`,
		`{"items":[{"level":"Metadata","sourceIPs":["1",2],"user":{"groups":["a",null]},"responseStatus":{"metadata":{"x":1},"details":{"causes":[{"a":"b"}]}}}]}`,
		`{"items":[{"level":"Metadata","verb":"a"	}, {"level":"Metadata","verb":"é"},{"level":"Metadata","verb":"a\/b"}]}`,
		// Mutating webhook annotations: several, repeated, null, in other cases.
		`{"items":[{"level":"Metadata","annotations":{"mutation.webhook.admission.k8s.io/round_0_index_0":"{\"configuration\":\"a\",\"webhook\":\"w.a\",\"mutated\":true}","mutation.webhook.admission.k8s.io/round_0_index_1":"{\"configuration\":\"b\",\"webhook\":\"w.b\",\"mutated\":false}"}},{"annotations":{"mutation.webhook.admission.k8s.io/round_1_index_0":"\"mutated\":true","mutation.webhook.admission.k8s.io/round_1_index_0":null},"ANNOTATIONS":null,"Annotations":{"mutation.webhook.admission.k8s.io/round_":"\"mutated\":true","mutation.webhook.admission.k8s.io/round_2":"x\"mutated\":true"}}]}`,
		// Legacy members and values over the bound.
		`{"items":[{"level":"Metadata","timestamp":"2018-01-10T10:21:55Z"},{"TIMESTAMP":"2018-01-10T10:21:55.5+02:00","timestamp":null},{"stageTimestamp":"2026-11-21T04:04:30.286101Z","timestamp":"2018-01-10T10:21:55Z"}]}`,
		`{"items":[{"verb":"` + strings.Repeat("v", DefaultMaxValueBytes) + `é","user":{"username":"` + strings.Repeat("é", DefaultMaxValueBytes) + `"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range widerInputs {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, data)
		widerReading.check(t, data)
		var ev Event
		_ = NewDecoder(16).DecodeEvent(data, &ev)
	})
}
