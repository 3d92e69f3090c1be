package decode

import "testing"

// FuzzDecode checks the decoder against encoding/json on arbitrary input: it must never panic,
// must refuse invalid JSON and must extract the same fields. Seeds are the real batches.
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
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, data)
		var ev Event
		_ = NewDecoder(16).DecodeEvent(data, &ev)
	})
}
