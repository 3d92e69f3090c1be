package decode

import (
	"encoding/binary"
)

// The fast path decodes an event written the way the API server writes it: compact, members in
// the order of the Go structs, which is the order of the schema's rows (schema.go). It is speculative: at the first byte that does not fit that form it
// returns false, and the caller rewinds to the start of the event and decodes it with the general
// path (event), which alone decides what the input means and whether it is valid. So the fast path
// may only accept what the general path accepts, with the same result, and never reports an error
// of its own.
//
// What it accepts, it checks as strictly as the general path: member keys and punctuation byte
// for byte, strings through the index (masks.go: a plain string is valid as it stands) or the
// general string reader, numbers and timestamps with the general path's parsers, anything unusual
// in a skipped value with the general skip. The cursor lives in a local variable and the rows
// are walked by one loop that switches on their kind, writing kept values at the offsets the rows
// name: threading the cursor through the scanner's fields, or a call per member, cost as much as
// the work itself.

// maxFastDepth bounds the structs the fast path nests (the event, user or objectRef or status);
// compile refuses a schema that nests deeper.
const maxFastDepth = 4

// fastEvent decodes the event at the current position (see the top of the file) into ev, which
// is zero, walking the rows of d.schema.
func (d *Decoder) fastEvent(ev *Event) bool {
	s := &d.s
	data, masks := s.data, s.masks
	p := s.pos
	if p >= len(data) || data[p] != '{' {
		return false
	}
	p++
	var stack [maxFastDepth]struct {
		rows   []member
		cursor int
	}
	top := 0
	stack[0].rows = d.schema.members
	first := true
	for {
		if p < len(data) && data[p] == '}' {
			p++
			if top == 0 {
				s.pos = p
				return true
			}
			top--
			first = false
			continue
		}
		// The key: the next expected member, or one after it when some are absent.
		frame := &stack[top]
		rows := frame.rows
		k := frame.cursor
		if len(data)-p >= 32 {
			// The next 32 bytes, loaded once and compared with each candidate's words.
			b := data[p : p+32]
			w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
			w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
			if first {
				for ; k < len(rows); k++ {
					if t := &rows[k].key.bare; t.matchWords(w0, w1, w2, w3) {
						p += len(t.text)
						break
					}
				}
			} else {
				for ; k < len(rows); k++ {
					if t := &rows[k].key.comma; t.matchWords(w0, w1, w2, w3) {
						p += len(t.text)
						break
					}
				}
			}
		} else {
			for ; k < len(rows); k++ {
				t := &rows[k].key.comma
				if first {
					t = &rows[k].key.bare
				}
				if t.matchNearEnd(data, p) {
					p += len(t.text)
					break
				}
			}
		}
		if k == len(rows) {
			return false
		}
		frame.cursor = k + 1
		first = false
		m := &rows[k]

		// The value.
		switch m.kind {
		case kindString, kindHash, kindURI, kindParsed:
			if p >= len(data) || data[p] != '"' {
				return false // null (or not a string): the general path decides
			}
			var b []byte
			end := plainAt(masks, p+1)
			if end == -2 {
				end = plainFrom(masks, p+1)
			}
			if end >= 0 {
				b, p = data[p+1:end], end+1
			} else {
				s.pos = p
				var err error
				if b, err = s.str(); err != nil {
					return false
				}
				p = s.pos
			}
			switch m.kind {
			case kindString:
				if prev := d.last[m.slot%maxSlots]; prev == string(b) {
					*m.str(ev) = prev
				} else {
					*m.str(ev) = d.internAt(m.slot, b)
				}
			case kindHash:
				h, nonEmpty := m.hash(ev)
				if *nonEmpty = len(b) > 0; *nonEmpty {
					*h = HashAuditID(b)
				}
			case kindParsed:
				m.parse(d, ev, b)
			default:
				d.params(ev, m.sch, b)
			}
		case kindStruct, kindPointer:
			if p >= len(data) || data[p] != '{' || top+1 == maxFastDepth {
				return false
			}
			p++
			top++
			stack[top].rows, stack[top].cursor = m.sch.members, 0
			first = true
		case kindTimeRFC3339:
			return false // only in older event versions: the general path reads them
		case kindTime:
			if p+28 >= len(data) || data[p] != '"' || data[p+28] != '"' {
				return false
			}
			t, ok := d.hours.parse(data[p+1 : p+28])
			if !ok {
				return false
			}
			*m.time(ev), p = t, p+29
		case kindInt32:
			// A status code: up to four digits and a delimiter, else the general parser.
			if p+4 < len(data) && '1' <= data[p] && data[p] <= '9' {
				v, i := int32(data[p]-'0'), p+1
				for ; i < p+4 && '0' <= data[i] && data[i] <= '9'; i++ {
					v = v*10 + int32(data[i]-'0')
				}
				if c := data[i]; c == ',' || c == '}' {
					*m.int32(ev), p = v, i
					continue
				}
			}
			s.pos = p
			if d.int32(m.int32(ev), m.path) != nil {
				return false
			}
			p = s.pos
		case kindFirstString:
			if p = d.fastStringList(p, ev, m); p < 0 {
				return false
			}
		default:
			if m.sch != nil && len(m.sch.members) > 0 { // a map with kept entries
				if p = d.fastEntries(p, ev, m); p < 0 {
					return false
				}
				continue
			}
			if p+1 < len(data) {
				switch data[p] {
				case '"':
					if end := plainEndAt(masks, p+1); end >= 0 {
						p = end + 1
						continue
					}
				case '{':
					if data[p+1] == '}' {
						p += 2
						continue
					}
				}
			}
			if m.kind == kindStringList || m.kind == kindStringMap {
				if q := s.skipStrings(p, m.kind == kindStringMap); q >= 0 {
					p = q
					continue
				}
			}
			// Anything else: the general skip, at the depth the general path would be at (after
			// an error, the caller restores the depth).
			s.pos, s.depth = p, s.depth+1+top
			if s.skip() != nil {
				return false
			}
			p, s.depth = s.pos, s.depth-1-top
		}
	}
}

// skipStrings skips an array of strings, or (asMap) an object of strings, starting at p, and
// returns the index after it; -1 when the value is anything else (or invalid). Plain strings are
// skipped through the index, others (RBAC reasons quote names) by the general string skipper.
func (s *scanner) skipStrings(p int, asMap bool) int {
	data, masks := s.data, s.masks
	open, end := byte('['), byte(']')
	if asMap {
		open, end = '{', '}'
	}
	if p >= len(data) || data[p] != open {
		return -1
	}
	p++
	for i := 0; ; i++ {
		if p < len(data) && data[p] == end {
			return p + 1
		}
		if i > 0 {
			if p >= len(data) || data[p] != ',' {
				return -1
			}
			p++
		}
		for j := 0; j <= btoi(asMap); j++ { // the key and ':' of a map member, then the string
			if p >= len(data) || data[p] != '"' {
				return -1
			}
			q := plainAt(masks, p+1)
			if q == -2 {
				q = plainFrom(masks, p+1)
			}
			if q >= 0 {
				p = q + 1
			} else {
				s.pos = p
				if s.skipString() != nil {
					return -1
				}
				p = s.pos
			}
			if j < btoi(asMap) {
				if p >= len(data) || data[p] != ':' {
					return -1
				}
				p++
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fastEntries reads a map at p whose listed entries m's rows describe, into ev, and returns the
// index after it; -1 when the map is not in the form the API server writes (plain keys, values
// strings or, for kindStringListMap, arrays of strings). Each occurrence of a listed key replaces
// what an earlier one kept, as the general path does.
func (d *Decoder) fastEntries(p int, ev *Event, m *member) int {
	data, masks := d.s.data, d.s.masks
	if p >= len(data) || data[p] != '{' {
		return -1
	}
	p++
	for i := 0; ; i++ {
		if p < len(data) && data[p] == '}' {
			return p + 1
		}
		if i > 0 {
			if p >= len(data) || data[p] != ',' {
				return -1
			}
			p++
		}
		if p >= len(data) || data[p] != '"' {
			return -1
		}
		q := plainEndAt(masks, p+1)
		if q < 0 || q+1 >= len(data) || data[q+1] != ':' {
			return -1
		}
		var e *member
		if q > p+1 && m.sch.mayName(data[p+1]) {
			e = m.sch.entry(data[p+1 : q])
		}
		if e == nil && m.kind == kindStringMap {
			// Most entries: a string no row keeps, skipped as skipStrings does.
			p = q + 2
			if p >= len(data) || data[p] != '"' {
				return -1
			}
			r := plainAt(masks, p+1)
			if r == -2 {
				r = plainFrom(masks, p+1)
			}
			if r >= 0 {
				p = r + 1
				continue
			}
			d.s.pos = p
			if d.s.skipString() != nil {
				return -1
			}
			p = d.s.pos
			continue
		}
		switch {
		case m.kind == kindStringListMap:
			p = d.fastStringList(q+2, ev, e)
		case e != nil && e.needle != "":
			p = d.fastStringContaining(q+2, ev, e)
		default:
			if e != nil {
				*e.str(ev) = ""
			}
			p = d.fastString(q+2, ev, e)
		}
		if p < 0 {
			return -1
		}
	}
}

// fastStringContaining reads a string at p into m's field when it contains m's needle, and returns
// the index after it; -1 when there is no string at p or it is invalid.
func (d *Decoder) fastStringContaining(p int, ev *Event, m *member) int {
	s := &d.s
	if p >= len(s.data) || s.data[p] != '"' {
		return -1
	}
	var b []byte
	if end := plainEndAt(s.masks, p+1); end >= 0 {
		b, p = s.data[p+1:end], end+1
	} else {
		s.pos = p
		var err error
		if b, err = s.str(); err != nil {
			return -1
		}
		p = s.pos
	}
	d.keepContaining(ev, m, b)
	return p
}

// fastStringList reads an array of strings at p, keeping the first in m's field when m is not
// nil ("" when the array is empty), and returns the index after it, or -1.
func (d *Decoder) fastStringList(p int, ev *Event, m *member) int {
	data := d.s.data
	if p >= len(data) || data[p] != '[' {
		return -1
	}
	if m != nil {
		*m.str(ev) = ""
	}
	p++
	for j := 0; ; j++ {
		if p < len(data) && data[p] == ']' {
			return p + 1
		}
		if j > 0 {
			if p >= len(data) || data[p] != ',' {
				return -1
			}
			p++
			m = nil
		}
		if p = d.fastString(p, ev, m); p < 0 {
			return -1
		}
	}
}

// fastString reads a string at p into m's field, or skips it when m is nil, and returns the index
// after it; -1 when there is no string at p or it is invalid.
func (d *Decoder) fastString(p int, ev *Event, m *member) int {
	s := &d.s
	if p >= len(s.data) || s.data[p] != '"' {
		return -1
	}
	end := plainEndAt(s.masks, p+1)
	switch {
	case end >= 0 && m == nil:
		return end + 1
	case end >= 0:
		*m.str(ev) = d.internAt(m.slot, s.data[p+1:end])
		return end + 1
	case m == nil:
		s.pos = p
		if s.skipString() != nil {
			return -1
		}
		return s.pos
	}
	s.pos = p
	b, err := s.str()
	if err != nil {
		return -1
	}
	*m.str(ev) = d.internAt(m.slot, b)
	return s.pos
}
