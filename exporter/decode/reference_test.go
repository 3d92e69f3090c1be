package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// reading is what a decoder reads (a schema) and what encoding/json's reading of the same input
// must then give (a projection of the API server's own types onto Event).
type reading struct {
	schema  *schema
	project func(*auditv1.Event) Event
}

// apiReading is the decoder's: eventSchema.
var apiReading = reading{eventSchema, project}

// referenceEvents decodes data with encoding/json into the API server's own types and projects
// each event onto the fields the decoder extracts.
func (r reading) referenceEvents(data []byte) ([]Event, error) {
	var list auditv1.EventList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, err
	}
	// The legacy members, as the older versions' types declare them, and each item as it is
	// written, for what depends on the order of its members.
	var legacy struct {
		Items []struct {
			Timestamp metav1.Time `json:"timestamp"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &legacy); err != nil {
		return nil, err
	}
	var raw struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(list.Items))
	for i := range list.Items {
		ev := r.project(&list.Items[i])
		ev.Timestamp = legacy.Items[i].Timestamp.Time
		ev.MutatingWebhook = lastMutation(raw.Items[i]) // every reading keeps eventRows' row
		out = append(out, shortened(ev))
	}
	return out, nil
}

// lastMutation is what the mutating-webhook row keeps of an event as written: walking its
// members in order (each member named "annotations" in any case, as encoding/json matches a
// field), the value of the last annotation whose key has the prefix and whose value says the
// webhook mutated the object; a null annotations member clears it, as it makes the map nil.
func lastMutation(item json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(item))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	kept := ""
	for dec.More() {
		key, _ := dec.Token()
		if k, _ := key.(string); !strings.EqualFold(k, "annotations") {
			var skip json.RawMessage
			_ = dec.Decode(&skip)
			continue
		}
		t, _ := dec.Token()
		if t == nil {
			kept = ""
			continue
		}
		for dec.More() {
			k, _ := dec.Token()
			v, _ := dec.Token()
			name, _ := k.(string)
			value, _ := v.(string)
			if strings.HasPrefix(name, MutationAnnotationPrefix+"round_") && len(name) > len(MutationAnnotationPrefix+"round_") &&
				strings.Contains(value, `"mutated":true`) {
				kept = value
			}
		}
		_, _ = dec.Token() // the map's end
	}
	return kept
}

// shortened is ev with every string shortened to the default value bound, as the decoder keeps
// them.
func shortened(ev Event) Event {
	v := reflect.ValueOf(&ev).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String {
			f.SetString(Shorten([]byte(f.String()), DefaultMaxValueBytes))
		}
	}
	return ev
}

// project is what eventSchema keeps, read from the API server's types.
func project(e *auditv1.Event) Event {
	ev := Event{
		Verb:            e.Verb,
		Stage:           string(e.Stage),
		Username:        e.User.Username,
		UserAgent:       e.UserAgent,
		RequestReceived: e.RequestReceivedTimestamp.Time,
		StageTimestamp:  e.StageTimestamp.Time,
	}
	if e.AuditID != "" {
		ev.AuditIDHash = HashAuditID([]byte(e.AuditID))
		ev.HasAuditID = true
	}
	if e.ImpersonatedUser != nil {
		ev.ImpersonatedUsername = e.ImpersonatedUser.Username
	}
	if pods := e.User.Extra[PodNameExtraKey]; len(pods) > 0 {
		ev.Pod = pods[0]
	}
	if _, query, ok := strings.Cut(e.RequestURI, "?"); ok {
		values, _ := url.ParseQuery(query)
		ev.FieldManager = queryParam(values, "fieldManager")
		ev.SendInitialEvents = queryParam(values, "sendInitialEvents")
	}
	if r := e.ObjectRef; r != nil {
		ev.APIGroup, ev.Resource, ev.Namespace, ev.Name, ev.Subresource = r.APIGroup, r.Resource, r.Namespace, r.Name, r.Subresource
	}
	if e.ResponseStatus != nil {
		ev.Code = e.ResponseStatus.Code
	}
	return ev
}

// sameEvent compares two projected events, timestamps by instant.
func sameEvent(a, b *Event) bool {
	ta, tb := a.RequestReceived, b.RequestReceived
	sa, sb := a.StageTimestamp, b.StageTimestamp
	la, lb := a.Timestamp, b.Timestamp
	x, y := *a, *b
	x.RequestReceived, y.RequestReceived, x.StageTimestamp, y.StageTimestamp = ta.UTC(), tb.UTC(), sa.UTC(), sb.UTC()
	x.Timestamp, y.Timestamp = la.UTC(), lb.UTC()
	return x == y && ta.Equal(tb) && sa.Equal(sb) && la.Equal(lb)
}

// queryParam is what the decoder reads of a query parameter: values.Get, with each byte that is
// not UTF-8 replaced by U+FFFD, as encoding/json replaces such bytes in strings.
func queryParam(values url.Values, key string) string {
	return string([]rune(values.Get(key)))
}

// checkAgainstReference is the differential check shared by the unit tests and FuzzDecode:
//   - when the decoder accepts a document, encoding/json must accept it too (or fail only on a
//     type mismatch in a field the decoder skips) and give the same events;
//   - when encoding/json accepts a document, so must the decoder (except a duplicate items member);
//   - syntactically invalid JSON is always refused.
//   - the fast path changes nothing: a decoder without it gives the same events or error.
func checkAgainstReference(t *testing.T, data []byte) {
	t.Helper()
	apiReading.check(t, data)
}

// check is checkAgainstReference for the reading r.
func (r reading) check(t *testing.T, data []byte) {
	t.Helper()
	got, err := newDecoder(64, r.schema).DecodeList(data)
	general := newDecoder(64, r.schema)
	general.generalOnly = true
	slow, slowErr := general.DecodeList(data)
	if fmt.Sprint(err) != fmt.Sprint(slowErr) || len(got) != len(slow) {
		t.Fatalf("fast path changed the outcome: %v, %d events; general path alone: %v, %d events\ninput: %q",
			err, len(got), slowErr, len(slow), data)
	}
	for i := range got {
		if !sameEvent(&got[i], &slow[i]) {
			t.Fatalf("fast path changed event %d:\n fast: %+v\n general: %+v\ninput: %q", i, got[i], slow[i], data)
		}
	}
	want, refErr := r.referenceEvents(data)
	valid := json.Valid(data)
	switch {
	case !valid && err == nil:
		t.Fatalf("decoder accepted invalid json %q", data)
	case err != nil && refErr == nil && !errors.Is(err, ErrDuplicateItems):
		t.Fatalf("decoder refused what encoding/json accepts: %v\ninput: %q", err, data)
	case err == nil && refErr != nil:
		var typeErr *json.UnmarshalTypeError
		if !errors.As(refErr, &typeErr) && !bytes.Contains([]byte(refErr.Error()), []byte("cannot unmarshal")) {
			t.Fatalf("decoder accepted what encoding/json refuses: %v\ninput: %q", refErr, data)
		}
	case err == nil && refErr == nil:
		if len(got) != len(want) {
			t.Fatalf("decoder gave %d events, encoding/json %d\ninput: %q", len(got), len(want), data)
		}
		for i := range got {
			if !sameEvent(&got[i], &want[i]) {
				t.Fatalf("event %d differs:\n decoder: %+v\n    json: %+v\ninput: %q", i, got[i], want[i], data)
			}
		}
	}
}
