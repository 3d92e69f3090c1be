package decode

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unsafe"
)

// What a row of the schema (schema.go) can say, and how the rows are compiled into the tables
// both paths walk.

// kind is what a member's value is in the API server's types, and what the decoder keeps of it.
// A null value does what encoding/json does with null for that Go type.
type kind uint8

const (
	kindSkip          kind = iota // any value; validated, nothing kept
	kindStringList                // []string, nothing kept
	kindString                    // a string, interned into a string field; null leaves it
	kindHash                      // a string kept as its HashAuditID and whether it was non-empty
	kindURI                       // a request URI: the query parameters its rows list, each into a string field
	kindTime                      // metav1.Time or MicroTime into a time.Time field; null is the zero time
	kindInt32                     // an int32 into an int32 field
	kindStruct                    // a struct: its members as its rows say; null leaves them
	kindPointer                   // a pointer to a struct: as kindStruct, but null clears what its rows keep
	kindStringMap                 // map[string]string: the entries its rows list (each kindString); null clears them
	kindStringListMap             // map[string][]string: the entries its rows list (each kindFirstString); null clears them
	kindFirstString               // []string, its first element interned into a string field ("" when empty or null)
	kindTimeRFC3339               // metav1.Time in RFC 3339 with seconds (older event versions) into a time.Time field; null is the zero time
	kindParsed                    // a string handed to a function that reads what it means (see parsed); null leaves it
)

// field is one row of the schema: a member's JSON name (an object's key, a map's key, or a
// query parameter's name) and what its value is.
type field struct {
	name string
	value
}

// value is what a member's value is and where what is kept of it goes.
type value struct {
	kind kind
	// to is the offset in Event of the field the value fills; flag (kindHash) that of the bool
	// saying the string was non-empty.
	to, flag uintptr
	// fields are the rows of a struct's members, a map's entries or a URI's query parameters.
	fields []field
	// legacy marks a member of an older version of the event (audit.k8s.io/v1beta1), absent from
	// the v1 types the schema test compares the rows with.
	legacy bool
	// needle (map entries only) keeps an entry's value only when it contains these bytes.
	needle string
	// parse (kindParsed) receives the string.
	parse parseFunc
}

// parseFunc receives the bytes of a string member (valid only during the call) and keeps what
// it means in the event or in the decoder's per-document state; nil bytes mean the member's
// enclosing pointer was null (clear what it keeps). It never fails: a value it cannot read is
// remembered in that state and reported when the document is complete, so both paths agree.
type parseFunc func(d *Decoder, ev *Event, b []byte)

// into is never written: the constructors below take the address of one of its fields, so that
// a row names the Event field it fills and the compiler checks that field's type.
var into Event

// offsetOf returns the offset in Event of the field of into at p, of the given size.
func offsetOf(p unsafe.Pointer, size uintptr) uintptr {
	off := uintptr(p) - uintptr(unsafe.Pointer(&into))
	if off >= unsafe.Sizeof(into) || off+size > unsafe.Sizeof(into) {
		panic("decode: schema target is not a field of Event")
	}
	return off
}

var (
	// skip is any value, of which nothing is kept.
	skip = value{kind: kindSkip}
	// stringList is a []string of which nothing is kept (the fast path skips it in one loop).
	stringList = value{kind: kindStringList}
)

// str keeps a string, interned, in *f.
func str(f *string) value {
	return value{kind: kindString, to: offsetOf(unsafe.Pointer(f), unsafe.Sizeof(*f))}
}

// strContaining keeps a map entry's string value, interned, in *f only when it contains needle;
// other values leave *f as it is. With a key prefix it picks, among several entries, the last one
// (in the document) whose value says what needle says, such as the mutating webhook annotation
// of a webhook that did change the object.
func strContaining(f *string, needle string) value {
	v := str(f)
	v.needle = needle
	return v
}

// firstOf keeps the first element of a []string, interned, in *f.
func firstOf(f *string) value {
	return value{kind: kindFirstString, to: offsetOf(unsafe.Pointer(f), unsafe.Sizeof(*f))}
}

// hashed keeps a string's HashAuditID in *h and whether it was non-empty in *nonEmpty.
func hashed(h *uint64, nonEmpty *bool) value {
	return value{kind: kindHash, to: offsetOf(unsafe.Pointer(h), unsafe.Sizeof(*h)),
		flag: offsetOf(unsafe.Pointer(nonEmpty), unsafe.Sizeof(*nonEmpty))}
}

// uriQuery keeps query parameters of a request URI: each of params (made with str) receives the
// parameter's first value, decoded as url.ParseQuery does, or "" when it is absent.
func uriQuery(params []field) value { return value{kind: kindURI, fields: params} }

// timestamp keeps a metav1.Time or MicroTime in *f.
func timestamp(f *time.Time) value {
	return value{kind: kindTime, to: offsetOf(unsafe.Pointer(f), unsafe.Sizeof(*f))}
}

// legacyTime keeps a metav1.Time, as older event versions write it (RFC 3339, seconds), in *f:
// the member exists only in those versions.
func legacyTime(f *time.Time) value {
	return value{kind: kindTimeRFC3339, to: offsetOf(unsafe.Pointer(f), unsafe.Sizeof(*f)), legacy: true}
}

// integer keeps an int32 in *f; like encoding/json it refuses fractions, exponents and overflow.
func integer(f *int32) value {
	return value{kind: kindInt32, to: offsetOf(unsafe.Pointer(f), unsafe.Sizeof(*f))}
}

// parsed hands a string's bytes to f, for members whose value must be taken apart (a method
// name naming verb, group and resource) rather than kept whole.
func parsed(f parseFunc) value { return value{kind: kindParsed, parse: f} }

// object is a struct whose members are described by members.
func object(members []field) value { return value{kind: kindStruct, fields: members} }

// pointer is a pointer to a struct whose members are described by members.
func pointer(members []field) value { return value{kind: kindPointer, fields: members} }

// stringMap is a map[string]string of which the listed entries (made with str) are kept.
func stringMap(entries []field) value { return value{kind: kindStringMap, fields: entries} }

// stringListMap is a map[string][]string of which the listed entries (made with firstOf) are kept.
func stringListMap(entries []field) value {
	return value{kind: kindStringListMap, fields: entries}
}

// schema is a compiled list of rows: the members of one struct, the entries of one map or the
// parameters of one query, in the order declared.
type schema struct {
	members []member
	// firsts has bit c set when a member's name starts with byte c (map entries): most keys of a
	// map are then passed over with one test, not compared with every row.
	firsts [4]uint64
	// slots (the root only) is the number of Decoder.last slots the rows use; parse functions
	// may use the slots after them.
	slots uint
}

// mayName reports whether a key starting with byte c can name one of the rows.
func (sch *schema) mayName(c byte) bool { return sch.firsts[c>>6]&(1<<(c&63)) != 0 }

// member is a compiled row.
type member struct {
	// key is the member's key as the fast path and the key prediction compare it, `"name":`
	// with and without a leading comma (struct members only).
	key  keyToken
	kind kind
	// slot is the member's slot in Decoder.last (kinds keeping an interned string).
	slot     uint
	to, flag uintptr
	// sch holds the rows of a struct's members, a map's entries or a URI's parameters.
	sch  *schema
	name string
	// prefix (map entries) says the row matches every key that starts with name.
	prefix bool
	// needle (map entries) keeps a value only when it contains these bytes.
	needle string
	// path names the member in error messages, e.g. "responseStatus.code".
	path string
	// parse (kindParsed) receives the string.
	parse parseFunc
}

// maxKeyLen bounds struct member names: `,"name":` must fit the fast path's 32-byte compare.
const maxKeyLen = 32 - len(`,"":`)

// maxParamLen bounds query parameter names, so that an escaped key is decoded in a fixed buffer.
const maxParamLen = 32

// maxSlots bounds the interned members (the size of Decoder.last).
const maxSlots = 32

// maxParams is the number of query parameters one bitmask tracks.
const maxParams = 64

// compile turns the rows of the event object into its schema, numbering the cache slots.
func compile(rows []field) *schema {
	c := &compiler{}
	sch := c.schema(rows, "", kindStruct, 0)
	sch.slots = c.slots
	return sch
}

// compiler numbers the members that keep an interned string: each has its own slot in
// Decoder.last.
type compiler struct{ slots uint }

// schema compiles the rows of a value of kind parent found at path; depth counts the structs
// around it. A row the decoder could not honour is a programming error: it panics, at init.
func (c *compiler) schema(rows []field, path string, parent kind, depth int) *schema {
	if depth >= maxFastDepth {
		panic(fmt.Sprintf("decode: schema nests structs deeper than %d at %s", maxFastDepth, path))
	}
	if parent == kindURI && len(rows) > maxParams {
		panic(fmt.Sprintf("decode: more than %d query parameters at %s", maxParams, path))
	}
	sch := &schema{members: make([]member, len(rows))}
	seen := map[string]bool{}
	for i, f := range rows {
		m := &sch.members[i]
		m.kind, m.to, m.flag, m.name, m.needle = f.kind, f.to, f.flag, f.name, f.needle
		if m.needle != "" && parent != kindStringMap {
			panic(fmt.Sprintf("decode: %s: only string map entries keep values by content", f.name))
		}
		m.kind, m.to, m.flag, m.name, m.parse = f.kind, f.to, f.flag, f.name, f.parse
		if parent == kindStringMap || parent == kindStringListMap {
			m.name, m.prefix = strings.CutSuffix(f.name, "*")
		}
		m.path = m.name
		if path != "" {
			m.path = path + "." + m.name
		}
		if seen[f.name] || m.name == "" || strings.ContainsAny(m.name, "\"\\") || hasControl(m.name) {
			panic(fmt.Sprintf("decode: bad or repeated name in schema: %q", m.path))
		}
		seen[f.name] = true
		sch.firsts[m.name[0]>>6] |= 1 << (m.name[0] & 63)
		want := kindString
		switch parent {
		case kindStruct, kindPointer:
			if len(m.name) > maxKeyLen {
				panic(fmt.Sprintf("decode: member name longer than %d bytes: %s", maxKeyLen, m.path))
			}
			m.key = keyToken{bare: newToken(`"` + m.name + `":`), comma: newToken(`,"` + m.name + `":`)}
			want = m.kind
		case kindStringListMap:
			want = kindFirstString
		case kindURI:
			if len(m.name) > maxParamLen || strings.ContainsAny(m.name, "&=;%+") {
				panic(fmt.Sprintf("decode: query parameter name longer than %d bytes or with a separator: %s", maxParamLen, m.path))
			}
		}
		if m.kind != want {
			panic(fmt.Sprintf("decode: %s: a %s holds only rows made with %s", m.path, kindNames[parent], kindNames[want]))
		}
		switch m.kind {
		case kindString, kindFirstString:
			if c.slots == maxSlots {
				panic(fmt.Sprintf("decode: more than %d interned members at %s", maxSlots, m.path))
			}
			m.slot = c.slots
			c.slots++
		case kindStruct, kindPointer:
			m.sch = c.schema(f.fields, m.path, m.kind, depth+1)
		case kindURI, kindStringMap, kindStringListMap:
			m.sch = c.schema(f.fields, m.path, m.kind, depth)
		}
	}
	return sch
}

var kindNames = [...]string{
	kindSkip: "skip", kindStringList: "stringList", kindString: "str", kindFirstString: "firstOf",
	kindHash: "hashed", kindURI: "uriQuery", kindTime: "timestamp", kindInt32: "integer",
	kindStruct: "object", kindPointer: "pointer", kindStringMap: "stringMap",
	kindStringListMap: "stringListMap", kindTimeRFC3339: "legacyTime", kindParsed: "parsed",
}

func hasControl(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}

// exact returns the index of the struct member named key, or -1.
func (sch *schema) exact(key []byte) int {
	for i := range sch.members {
		if sch.members[i].name == string(key) {
			return i
		}
	}
	return -1
}

// folded returns the index of the struct member whose name equals key under Unicode case
// folding, as encoding/json matches keys that name no field exactly, or -1.
func (sch *schema) folded(key []byte) int {
	for i := range sch.members {
		if bytes.EqualFold(key, []byte(sch.members[i].name)) {
			return i
		}
	}
	return -1
}

// entry returns the first map entry matching key (map keys match exactly, or by a prefix that
// key extends: "round_*" matches "round_0_index_0", not "round_"), or nil.
func (sch *schema) entry(key []byte) *member {
	for i := range sch.members {
		m := &sch.members[i]
		if m.prefix && len(key) > len(m.name) && string(key[:len(m.name)]) == m.name || !m.prefix && string(key) == m.name {
			return m
		}
	}
	return nil
}

// The fields of ev that m fills.

func (m *member) str(ev *Event) *string {
	return (*string)(unsafe.Add(unsafe.Pointer(ev), m.to))
}

func (m *member) time(ev *Event) *time.Time {
	return (*time.Time)(unsafe.Add(unsafe.Pointer(ev), m.to))
}

func (m *member) int32(ev *Event) *int32 {
	return (*int32)(unsafe.Add(unsafe.Pointer(ev), m.to))
}

func (m *member) hash(ev *Event) (h *uint64, nonEmpty *bool) {
	return (*uint64)(unsafe.Add(unsafe.Pointer(ev), m.to)), (*bool)(unsafe.Add(unsafe.Pointer(ev), m.flag))
}

// setHash keeps the hash of b and whether it is non-empty.
func (m *member) setHash(ev *Event, b []byte) {
	var h uint64
	if len(b) > 0 {
		h = HashAuditID(b)
	}
	hp, nonEmpty := m.hash(ev)
	*hp, *nonEmpty = h, len(b) > 0
}

// clearKept zeroes every field of ev that the rows of sch fill (a null pointer or map), and
// tells parse functions to forget what they kept.
func (d *Decoder) clearKept(ev *Event, sch *schema) {
	for i := range sch.members {
		m := &sch.members[i]
		switch m.kind {
		case kindString, kindFirstString:
			*m.str(ev) = ""
		case kindHash:
			m.setHash(ev, nil)
		case kindTime, kindTimeRFC3339:
			*m.time(ev) = time.Time{}
		case kindInt32:
			*m.int32(ev) = 0
		case kindParsed:
			m.parse(d, ev, nil)
		case kindURI, kindStruct, kindPointer, kindStringMap, kindStringListMap:
			d.clearKept(ev, m.sch)
		}
	}
}
