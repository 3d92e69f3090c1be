package diagnose

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The JSON report is documented in docs/diagnose.md, one table per object: every field's name
// and JSON type. The tables must list exactly the fields the Go types emit, in order, each with
// a meaning; and every value of an emitted report must be a documented field of the documented
// type.

const (
	schemaDoc   = "../docs/diagnose.md"
	schemaBegin = "<!-- schema:begin -->"
	schemaEnd   = "<!-- schema:end -->"
)

// schemaField is one documented field of one object.
type schemaField struct{ name, typ string }

// schemaObject is one object's fields.
type schemaObject struct {
	name   string
	fields []schemaField
}

// schemaOf lists the objects of the report, Report first, then each object type in the order
// its first field appears, with their fields' JSON types.
func schemaOf(root reflect.Type) []schemaObject {
	var out []schemaObject
	queue := []reflect.Type{root}
	seen := map[reflect.Type]bool{root: true}
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		obj := schemaObject{name: t.Name()}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			ft := f.Type
			var typ string
			switch {
			case ft == reflect.TypeFor[time.Time]():
				typ = "string (RFC 3339 time)"
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Float64:
				typ = "number or null"
			case ft.Kind() == reflect.String:
				typ = "string"
			case ft.Kind() == reflect.Int:
				typ = "integer"
			case ft.Kind() == reflect.Float64:
				typ = "number"
			case ft.Kind() == reflect.Map:
				typ = "object of strings"
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
				typ = "array of strings"
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				typ = "array of " + ft.Elem().Name()
				ft = ft.Elem()
			case ft.Kind() == reflect.Struct:
				typ = ft.Name()
			default:
				panic(fmt.Sprintf("field %s.%s: no JSON type for %s", t.Name(), name, ft))
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() && !seen[ft] {
				seen[ft] = true
				queue = append(queue, ft)
			}
			obj.fields = append(obj.fields, schemaField{name, typ})
		}
		out = append(out, obj)
	}
	return out
}

// documentedSchema reads the tables between the schema markers of docs/diagnose.md: a
// "#### Name" heading per object, then its rows.
func documentedSchema(t *testing.T) ([]schemaObject, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(schemaDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), schemaBegin)
	section, _, ok2 := strings.Cut(rest, schemaEnd)
	if !ok || !ok2 {
		t.Fatalf("%s has no %s … %s section", schemaDoc, schemaBegin, schemaEnd)
	}
	var out []schemaObject
	meaning := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "#### "); ok {
			out = append(out, schemaObject{name: strings.TrimSpace(name)})
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") || len(out) == 0 {
			continue
		}
		o := &out[len(out)-1]
		f := schemaField{strings.Trim(strings.TrimSpace(cells[0]), "`"), strings.Trim(strings.TrimSpace(cells[1]), "`")}
		o.fields = append(o.fields, f)
		meaning[o.name+"."+f.name] = strings.TrimSpace(cells[2])
	}
	return out, meaning
}

func TestDocumentedSchemaMatchesTheReport(t *testing.T) {
	want := schemaOf(reflect.TypeFor[Report]())
	got, meaning := documentedSchema(t)
	equal := len(got) == len(want)
	for i := 0; equal && i < len(got); i++ {
		equal = got[i].name == want[i].name && slices.Equal(got[i].fields, want[i].fields)
	}
	if !equal {
		var b strings.Builder
		for _, o := range want {
			fmt.Fprintf(&b, "\n#### %s\n\n| field | type | meaning |\n|---|---|---|\n", o.name)
			for _, f := range o.fields {
				m := meaning[o.name+"."+f.name]
				if m == "" {
					m = "TODO"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.name, f.typ, m)
			}
		}
		t.Errorf("the schema tables of %s do not match the report's fields; they should read:\n%s", schemaDoc, b.String())
	}
	for field, m := range meaning {
		if m == "" || m == "TODO" {
			t.Errorf("%s: %s has no meaning", schemaDoc, field)
		}
	}

	// Every value of an emitted report is a documented field of the documented type.
	js, err := fixtureReport(t).JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]string{}
	for _, o := range want {
		objects[o.name] = map[string]string{}
		for _, f := range o.fields {
			objects[o.name][f.name] = f.typ
		}
	}
	var value func(v any, typ, path string)
	object := func(v any, name, path string) {
		m, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s is %T, documented as object %s", path, v, name)
			return
		}
		for k, x := range m {
			typ, ok := objects[name][k]
			if !ok {
				t.Errorf("%s.%s is not documented in %s", path, k, name)
				continue
			}
			value(x, typ, path+"."+k)
		}
		for k := range objects[name] {
			if _, ok := m[k]; !ok {
				t.Errorf("%s.%s is documented but missing", path, k)
			}
		}
	}
	value = func(v any, typ, path string) {
		switch {
		case typ == "string" || typ == "string (RFC 3339 time)":
			if _, ok := v.(string); !ok {
				t.Errorf("%s is %T, documented as %s", path, v, typ)
			}
		case typ == "number" || typ == "integer":
			if _, ok := v.(float64); !ok {
				t.Errorf("%s is %T, documented as %s", path, v, typ)
			}
		case typ == "number or null":
			if _, ok := v.(float64); !ok && v != nil {
				t.Errorf("%s is %T, documented as %s", path, v, typ)
			}
		case typ == "object of strings":
			m, ok := v.(map[string]any)
			if !ok {
				t.Errorf("%s is %T, documented as %s", path, v, typ)
			}
			for k, s := range m {
				if _, ok := s.(string); !ok {
					t.Errorf("%s.%s is %T, want a string", path, k, s)
				}
			}
		case strings.HasPrefix(typ, "array of "):
			list, ok := v.([]any)
			if !ok {
				t.Errorf("%s is %T, documented as %s", path, v, typ)
				return
			}
			elem := strings.TrimPrefix(typ, "array of ")
			for i, x := range list {
				if elem == "strings" {
					value(x, "string", fmt.Sprintf("%s[%d]", path, i))
				} else {
					object(x, elem, fmt.Sprintf("%s[%d]", path, i))
				}
			}
		default:
			object(v, typ, path)
		}
	}
	object(doc, "Report", "report")
}
