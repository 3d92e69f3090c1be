package decode

import (
	"hash/maphash"
	"strconv"
	"time"
)

// DefaultInternerSize is the interner slot count used by NewDecoder when none is given.
const DefaultInternerSize = 1 << 14

var auditIDSeed = maphash.MakeSeed()

// HashAuditID returns the hash the decoder stores in Event.AuditIDHash for id.
func HashAuditID(id []byte) uint64 {
	return maphash.Bytes(auditIDSeed, id)
}

// Decoder decodes audit events. It is not safe for concurrent use; give each goroutine its own
// (they may share an Interner only if access is serialised, so by default each has one).
type Decoder struct {
	s      scanner
	intern *Interner
	// schema is what is read and kept: eventSchema, or in tests a variant of it.
	schema *schema
	query  []byte
	events []Event
	// last holds, per interned member of the schema (member.slot), its previous value:
	// consecutive events mostly repeat verb, user, resource and namespace, and a compare is
	// cheaper than hashing into the interner.
	last [maxSlots]string
	// hours caches the date and hour of the last timestamp.
	hours hourCache
	// entry is what the parse functions of a Cloud Logging entry (logentry.go) keep.
	entry logEntryState
	// generalOnly turns the fast path off (for the tests that compare the two); fallbacks counts
	// the events the fast path handed to the general path.
	generalOnly bool
	fallbacks   int
}

// internAt interns b, trying the previous value in the cache slot first.
func (d *Decoder) internAt(slot uint, b []byte) string {
	if prev := d.last[slot%maxSlots]; prev == string(b) {
		return prev
	}
	s := d.intern.Intern(b)
	d.last[slot%maxSlots] = s
	return s
}

// NewDecoder returns a decoder with its own interner of internerSize slots
// (DefaultInternerSize when internerSize ≤ 0).
func NewDecoder(internerSize int) *Decoder {
	return newDecoder(internerSize, eventSchema)
}

func newDecoder(internerSize int, sch *schema) *Decoder {
	if internerSize <= 0 {
		internerSize = DefaultInternerSize
	}
	return &Decoder{intern: NewInterner(internerSize), schema: sch}
}

// listFields are the members of an EventList; only items is read.
var listFields = []string{"items", "kind", "apiVersion", "metadata"}

// DecodeList decodes an EventList (the body of an audit webhook request). The returned events
// are valid until the next call. On error no event should be used: the whole batch is malformed.
func (d *Decoder) DecodeList(data []byte) ([]Event, error) {
	d.s.reset(data)
	d.events = d.events[:0]
	s := &d.s
	null, err := s.isNull()
	if err != nil {
		return nil, err
	}
	if !null {
		if err := s.openObject(); err != nil {
			return nil, err
		}
		seenItems := false
		for first := true; ; first = false {
			key, ok, err := s.member(first)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			if fieldIndex(key, listFields) != 0 {
				if err := s.skip(); err != nil {
					return nil, err
				}
				continue
			}
			if seenItems {
				return nil, ErrDuplicateItems
			}
			seenItems = true
			if err := d.items(); err != nil {
				return nil, err
			}
		}
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	return d.events, nil
}

func (d *Decoder) items() error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if err := s.openArray(); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil || !ok {
			return err
		}
		d.events = append(d.events, Event{})
		if err := d.decodeEvent(&d.events[len(d.events)-1]); err != nil {
			return err
		}
	}
}

// DecodeEvent decodes a single Event object, as written one per line by the log backend.
func (d *Decoder) DecodeEvent(data []byte, ev *Event) error {
	d.s.reset(data)
	*ev = Event{}
	if err := d.decodeEvent(ev); err != nil {
		return err
	}
	return d.s.end()
}

// decodeEvent decodes the event at the current position into ev, which is zero: by the fast path
// when the event is in the API server's canonical form, else by the general path from its start.
func (d *Decoder) decodeEvent(ev *Event) error {
	s := &d.s
	pos, depth, stack := s.pos, s.depth, len(s.stack)
	if !d.generalOnly && s.pos < len(s.data) && s.data[s.pos] == '{' && d.fastEvent(ev) {
		return nil
	}
	s.pos, s.depth, s.stack = pos, depth, s.stack[:stack]
	*ev = Event{}
	d.entry.reset()
	d.fallbacks++
	return d.event(ev)
}

// event is the general path: any valid JSON, with encoding/json's semantics.
func (d *Decoder) event(ev *Event) error {
	if null, err := d.s.isNull(); null || err != nil {
		return err
	}
	return d.object(ev, d.schema)
}

// object reads a struct's members, as the rows of sch say. null does what encoding/json does with
// null for the member's Go type (see kind): for a nested struct nothing, for a pointer to one or a
// map it clears what their rows keep.
func (d *Decoder) object(ev *Event, sch *schema) error {
	s := &d.s
	if err := s.openObject(); err != nil {
		return err
	}
	cursor := 0
	for first := true; ; first = false {
		m, ok, err := s.field(first, sch, &cursor)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if m == nil {
			if err := s.skip(); err != nil {
				return err
			}
			continue
		}
		switch m.kind {
		case kindString:
			err = d.string(m.str(ev), m.slot)
		case kindTime:
			err = d.time(m.time(ev))
		case kindHash, kindURI, kindParsed:
			err = d.hashOrURI(ev, m)
		case kindInt32:
			err = d.int32(m.int32(ev), m.path)
		case kindStruct, kindPointer, kindStringMap, kindStringListMap:
			var null bool
			switch null, err = s.isNull(); {
			case err != nil:
			case null:
				if m.kind != kindStruct {
					d.clearKept(ev, m.sch)
				}
			case m.kind == kindStruct || m.kind == kindPointer:
				err = d.object(ev, m.sch)
			case len(m.sch.members) == 0:
				err = s.skip()
			default:
				err = d.entries(ev, m.sch)
			}
		case kindFirstString:
			err = d.firstString(m.str(ev), m.slot)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// hashOrURI reads a string kept as a hash, a URI kept as query parameters, or a string handed
// to a parse function.
func (d *Decoder) hashOrURI(ev *Event, m *member) error {
	if null, err := d.s.isNull(); null || err != nil {
		return err
	}
	b, err := d.s.str()
	if err != nil {
		return err
	}
	switch m.kind {
	case kindHash:
		m.setHash(ev, b)
	case kindParsed:
		m.parse(d, ev, b)
	default:
		d.params(ev, m.sch, b)
	}
	return nil
}

// string reads a string into dst; null leaves dst unchanged, as encoding/json does.
func (d *Decoder) string(dst *string, slot uint) error {
	s := &d.s
	if p := s.pos; p < len(s.data) && s.data[p] == '"' {
		// The common case, a string right after the colon: scan it directly.
		b, err := s.str()
		if err != nil {
			return err
		}
		*dst = d.internAt(slot, b)
		return nil
	}
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	*dst = d.internAt(slot, b)
	return nil
}

// entries reads a map's members: the keys sch lists (matched exactly, as map keys are) into their
// fields, each occurrence into a fresh value as encoding/json decodes map values; the rest skipped.
func (d *Decoder) entries(ev *Event, sch *schema) error {
	s := &d.s
	if err := s.openObject(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch e := sch.entry(key); {
		case e == nil:
			err = s.skip()
		case e.kind == kindFirstString:
			err = d.firstString(e.str(ev), e.slot)
		default: // a fresh string: null leaves it empty
			*e.str(ev) = ""
			err = d.string(e.str(ev), e.slot)
		}
		if err != nil {
			return err
		}
	}
}

// firstString reads a []string and keeps its first element ("" when null or empty).
func (d *Decoder) firstString(dst *string, slot uint) error {
	s := &d.s
	*dst = ""
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if err := s.openArray(); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil || !ok {
			return err
		}
		if first {
			err = d.string(dst, slot)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// int32 reads an int32; like encoding/json it refuses fractions, exponents and overflow. path
// names the member in errors.
func (d *Decoder) int32(dst *int32, path string) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return s.errorf("%s is not a number", path)
	}
	num, err := s.number()
	if err != nil {
		return err
	}
	var v int64
	neg := false
	for i, c := range num {
		if i == 0 && c == '-' {
			neg = true
			continue
		}
		if c < '0' || c > '9' {
			return s.errorf("%s is not an integer", path)
		}
		v = v*10 + int64(c-'0')
		if v > 1<<31 {
			return s.errorf("%s overflows int32", path)
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -1<<31 {
		return s.errorf("%s overflows int32", path)
	}
	*dst = int32(v)
	return nil
}

// time reads a MicroTime; null sets the zero time, as metav1.MicroTime does.
func (d *Decoder) time(dst *time.Time) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		if null {
			*dst = time.Time{}
		}
		return err
	}
	// The canonical form is 27 plain bytes between quotes: parse it in place, without scanning it
	// as a string first (a successful parse proves it holds no quote, escape or control byte).
	if p := s.pos; p+28 < len(s.data) && s.data[p] == '"' && s.data[p+28] == '"' {
		if t, ok := d.hours.parse(s.data[p+1 : p+28]); ok {
			s.pos = p + 29
			*dst = t
			return nil
		}
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	t, ok := d.hours.parse(b)
	if !ok {
		t, err = time.Parse(metav1RFC3339Micro, string(b))
		if err != nil {
			return s.errorf("invalid timestamp %s: %v", strconv.Quote(string(b)), err)
		}
	}
	*dst = t
	return nil
}
