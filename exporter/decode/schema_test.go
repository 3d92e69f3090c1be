package decode

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestSchemaFollowsTheAPITypes checks the schema against the API server's own types: every
// struct lists every JSON member of its Go type, in the Go struct's order (the order the API
// server writes and the fast path expects), and every row's kind decodes the member's Go type.
func TestSchemaFollowsTheAPITypes(t *testing.T) {
	checkRows(t, eventRows, reflect.TypeFor[auditv1.Event](), "")
}

func checkRows(t *testing.T, rows []field, typ reflect.Type, path string) {
	t.Helper()
	members := jsonMembers(typ)
	var names, want []string
	rows = slices.DeleteFunc(slices.Clone(rows), func(f field) bool { return f.legacy })
	for _, f := range rows {
		names = append(names, f.name)
	}
	for _, m := range members {
		want = append(want, m.name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s: rows %q, want the members of %s in order: %q", typeName(path), names, typ, want)
		return
	}
	for i, f := range rows {
		p := members[i].name
		if path != "" {
			p = path + "." + p
		}
		typ := members[i].typ
		if !kindDecodes(f.kind, typ) {
			t.Errorf("%s: a row made with %s cannot decode %s", p, kindNames[f.kind], typ)
			continue
		}
		switch f.kind {
		case kindStruct:
			checkRows(t, f.fields, typ, p)
		case kindPointer:
			checkRows(t, f.fields, typ.Elem(), p)
		}
	}
}

func typeName(path string) string {
	if path == "" {
		return "event"
	}
	return path
}

type jsonMember struct {
	name string
	typ  reflect.Type
}

// jsonMembers lists the JSON members of a struct type as encoding/json sees them: embedded
// structs without a name (TypeMeta) inline, in field order.
func jsonMembers(typ reflect.Type) []jsonMember {
	var out []jsonMember
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "":
			out = append(out, jsonMembers(f.Type)...)
		case name == "":
			out = append(out, jsonMember{f.Name, f.Type})
		default:
			out = append(out, jsonMember{name, f.Type})
		}
	}
	return out
}

// kindDecodes reports whether a row of kind k reads a member of Go type typ.
func kindDecodes(k kind, typ reflect.Type) bool {
	stringSlice := typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String
	switch k {
	case kindSkip:
		return true
	case kindStringList, kindFirstString:
		return stringSlice
	case kindString, kindHash, kindURI:
		return typ.Kind() == reflect.String
	case kindTime:
		return typ == reflect.TypeFor[metav1.Time]() || typ == reflect.TypeFor[metav1.MicroTime]()
	case kindTimeRFC3339:
		return typ == reflect.TypeFor[metav1.Time]()
	case kindInt32:
		return typ.Kind() == reflect.Int32
	case kindStruct:
		return typ.Kind() == reflect.Struct
	case kindPointer:
		return typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Struct
	case kindStringMap, kindStringListMap:
		if typ.Kind() != reflect.Map || typ.Key().Kind() != reflect.String {
			return false
		}
		elem := typ.Elem()
		if k == kindStringMap {
			return elem.Kind() == reflect.String
		}
		return elem.Kind() == reflect.Slice && elem.Elem().Kind() == reflect.String
	}
	return false
}

// withRow returns a copy of rows in which the row at path (names through nested rows) holds v:
// replaced where it exists, else added at the end of its parent's rows.
func withRow(rows []field, path []string, v value) []field {
	rows = slices.Clone(rows)
	for i := range rows {
		if rows[i].name != path[0] {
			continue
		}
		if len(path) == 1 {
			rows[i].value = v
		} else {
			rows[i].fields = withRow(rows[i].fields, path[1:], v)
		}
		return rows
	}
	if len(path) != 1 {
		panic("withRow: no row " + path[0])
	}
	return append(rows, field{path[0], v})
}

// TestOneRowKeepsAField keeps one more value of the event, from each kind of place a later field
// can come from, by changing only the rows (into Event.UserAgent, whose own row becomes a skip,
// so that no Event field is added for the test). Both paths must keep it, alike and as
// encoding/json reads it, on the real batches (all still on the fast path), on events that carry
// it in other forms, and under mutation.
func TestOneRowKeepsAField(t *testing.T) {
	cases := []struct {
		name string
		path []string
		row  value
		want func(e *auditv1.Event) string
	}{
		{
			name: "an annotation", path: []string{"annotations", "authorization.k8s.io/decision"}, row: str(&into.UserAgent),
			want: func(e *auditv1.Event) string { return e.Annotations["authorization.k8s.io/decision"] },
		},
		{
			name: "annotations by key prefix", path: []string{"annotations", "authorization.k8s.io/d*"}, row: str(&into.UserAgent),
			want: func(e *auditv1.Event) string {
				for k, v := range e.Annotations { // (one key at most has the prefix, in these inputs)
					if len(k) > len("authorization.k8s.io/d") && strings.HasPrefix(k, "authorization.k8s.io/d") {
						return v
					}
				}
				return ""
			},
		},
		{
			name: "a query parameter of the request URI", path: []string{"requestURI", "fieldValidation"}, row: str(&into.UserAgent),
			want: func(e *auditv1.Event) string {
				_, query, _ := strings.Cut(e.RequestURI, "?")
				values, _ := url.ParseQuery(query)
				return queryParam(values, "fieldValidation")
			},
		},
		{
			name: "a member of a nested object", path: []string{"objectRef", "apiVersion"}, row: str(&into.UserAgent),
			want: func(e *auditv1.Event) string {
				if e.ObjectRef == nil {
					return ""
				}
				return e.ObjectRef.APIVersion
			},
		},
		{
			name: "a user.extra entry", path: []string{"user", "extra", "authentication.kubernetes.io/credential-id"}, row: firstOf(&into.UserAgent),
			want: func(e *auditv1.Event) string {
				if v := e.User.Extra["authentication.kubernetes.io/credential-id"]; len(v) > 0 {
					return v[0]
				}
				return ""
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := withRow(withRow(eventRows, []string{"userAgent"}, skip), tc.path, tc.row)
			r := reading{compile(rows), func(e *auditv1.Event) Event {
				ev := project(e)
				ev.UserAgent = tc.want(e)
				return ev
			}}
			kept := 0
			for name, data := range readBatches(t) {
				r.check(t, data)
				d := newDecoder(0, r.schema)
				events, err := d.DecodeList(data)
				if err != nil {
					t.Fatal(err)
				}
				if d.fallbacks != 0 {
					t.Errorf("%s: %d of %d events fell back to the general path", name, d.fallbacks, len(events))
				}
				for i := range events {
					if events[i].UserAgent != "" {
						kept++
					}
				}
			}
			for _, data := range widerInputs {
				r.check(t, []byte(data))
				d := newDecoder(0, r.schema)
				events, err := d.DecodeList([]byte(data)) // (some are refused: r.check has compared the refusals)
				if err == nil && events[0].UserAgent != "" {
					kept++
				}
			}
			if kept == 0 {
				t.Fatal("no event kept the value: the test proves nothing")
			}
			if testing.Short() {
				return
			}
			data := readBatches(t)["batch-03.json"]
			for i := range data {
				for _, m := range mutations {
					r.check(t, m(data, i))
				}
			}
		})
	}
}

// widerInputs carry the values the rows of TestOneRowKeepsAField and widerReading keep, in forms
// the real batches lack: escaped, repeated, null, in a null parent.
var widerInputs = []string{
	`{"items":[{"level":"Metadata","requestURI":"/api/v1/pods?fieldValidation=a%20b\u0026fieldValidation=c","user":{"username":"u","extra":{"authentication.kubernetes.io/credential-id":["JTI=\u0078","y"],"authentication.kubernetes.io/pod-name":["p"]}},"objectRef":{"resource":"pods","apiVersion":"v\u0031"},"annotations":{"authorization.k8s.io/decision":"al\"low\"","authorization.k8s.io/reason":"x"}}]}`,
	`{"items":[{"level":"Metadata","user":{"extra":{"authentication.kubernetes.io/credential-id":["a"],"authentication.kubernetes.io/credential-id":[]}},"objectRef":null,"annotations":{"authorization.k8s.io/decision":"a","authorization.k8s.io/decision":null}}]}`,
	`{"items":[{"level":"Metadata","annotations":"x"}]}`,
	`{"items":[{"level":"Metadata","user":{"extra":"x"}}]}`,
	`{"items":[{"level":"Metadata","user":{"extra":{}},"annotations":{}}]}`,
	`{"items":[{"level":"Metadata","user":{"extra":{"authentication.kubernetes.io/credential-id":["a"]},"extra":null},"annotations":{"authorization.k8s.io/decision":"a"},"annotations":null},{"level":"Metadata","requestURI":"/x?%66ieldValidation=Strict"}]}`,
}

// widerReading keeps more than eventSchema, through rows of each kind a later field may use (a
// map entry, a second query parameter, a user.extra entry), into Event fields whose own rows
// become skips; FuzzDecode checks it beside eventSchema.
var widerReading = func() reading {
	rows := eventRows
	for _, r := range []struct {
		path []string
		v    value
	}{
		{[]string{"userAgent"}, skip},
		{[]string{"annotations", "authorization.k8s.io/decision"}, str(&into.UserAgent)},
		{[]string{"objectRef", "subresource"}, skip},
		{[]string{"requestURI", "fieldValidation"}, str(&into.Subresource)},
		{[]string{"impersonatedUser", "username"}, skip},
		{[]string{"user", "extra", "authentication.kubernetes.io/credential-id"}, firstOf(&into.ImpersonatedUsername)},
	} {
		rows = withRow(rows, r.path, r.v)
	}
	return reading{compile(rows), func(e *auditv1.Event) Event {
		ev := project(e)
		ev.UserAgent = e.Annotations["authorization.k8s.io/decision"]
		_, query, _ := strings.Cut(e.RequestURI, "?")
		values, _ := url.ParseQuery(query)
		ev.Subresource = queryParam(values, "fieldValidation")
		ev.ImpersonatedUsername = ""
		if v := e.User.Extra["authentication.kubernetes.io/credential-id"]; len(v) > 0 {
			ev.ImpersonatedUsername = v[0]
		}
		return ev
	}}
}()

// TestCompileRefusesRowsTheDecoderCannotHonour: a schema the decoder could not read as declared
// fails at init, not on the first event that needs it.
func TestCompileRefusesRowsTheDecoderCannotHonour(t *testing.T) {
	cases := []struct {
		name string
		rows func() []field
	}{
		{"a target outside Event", func() []field { return []field{{"verb", str(new(string))}} }},
		{"a repeated member", func() []field { return []field{{"verb", str(&into.Verb)}, {"verb", skip}} }},
		{"a member name longer than the fast path compares", func() []field { return []field{{strings.Repeat("x", maxKeyLen+1), skip}} }},
		{"a name that needs escaping", func() []field { return []field{{`ve"rb`, skip}} }},
		{"a string map entry that is not a string", func() []field { return []field{{"annotations", stringMap([]field{{"k", integer(&into.Code)}})}} }},
		{"a string list map entry that is not a list", func() []field { return []field{{"extra", stringListMap([]field{{"k", str(&into.Pod)}})}} }},
		{"a query parameter that is not a string", func() []field {
			return []field{{"requestURI", uriQuery([]field{{"watch", timestamp(&into.StageTimestamp)}})}}
		}},
		{"a query parameter name with a separator", func() []field {
			return []field{{"requestURI", uriQuery([]field{{"a;b", str(&into.FieldManager)}})}}
		}},
		{"more interned members than the last-value cache holds", func() []field {
			var rows []field
			for i := range maxSlots + 1 {
				rows = append(rows, field{fmt.Sprint("m", i), str(&into.Verb)})
			}
			return rows
		}},
		{"structs nested deeper than the fast path's stack", func() []field {
			return []field{{"a", object([]field{{"b", object([]field{{"c", object([]field{{"d", object(nil)}})}})}})}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("compiled")
				}
			}()
			compile(tc.rows())
		})
	}
}
