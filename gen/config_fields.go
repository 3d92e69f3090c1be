package gen

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// checkFields walks a decoded YAML document against the Config type and reports every unknown
// field and every value of the wrong type with its path, so that a config with several typos
// gets all of them in one run, not the first one encoding/json stops at.
func checkFields(v *validator, doc any, t reflect.Type, path string) {
	name := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch t {
	case reflect.TypeFor[Duration]():
		checkDuration(v, doc, path)
		return
	case reflect.TypeFor[AlertsConfig]():
		checkAlerts(v, doc, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			v.add(path, "must be a mapping, got %v", doc)
			return
		}
		fields := jsonFields(t)
		for _, key := range sortedKeys(m) {
			ft, ok := fields[key]
			if !ok {
				v.add(name(key), "unknown field (known: %s)", strings.Join(sortedKeys(fields), ", "))
				continue
			}
			checkFields(v, m[key], ft, name(key))
		}
	case reflect.Map:
		m, ok := doc.(map[string]any)
		if !ok {
			v.add(path, "must be a mapping, got %v", doc)
			return
		}
		for _, key := range sortedKeys(m) {
			checkFields(v, m[key], t.Elem(), name(key))
		}
	case reflect.Slice:
		s, ok := doc.([]any)
		if !ok {
			v.add(path, "must be a list, got %v", doc)
			return
		}
		for i, e := range s {
			checkFields(v, e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if _, ok := doc.(string); !ok {
			v.add(path, "must be a string, got %v", doc)
		}
	case reflect.Float64:
		if _, ok := doc.(float64); !ok {
			v.add(path, "must be a number, got %v", doc)
		}
	case reflect.Int32:
		if f, ok := doc.(float64); !ok || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			v.add(path, "must be a whole number, got %v", doc)
		}
	case reflect.Bool:
		if _, ok := doc.(bool); !ok {
			v.add(path, "must be true or false, got %v", doc)
		}
	}
}

// jsonFields returns a struct's fields by JSON name, with inlined embedded structs flattened.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if tag == "" || tag == "-" {
			continue
		}
		out[tag] = f.Type
	}
	return out
}
