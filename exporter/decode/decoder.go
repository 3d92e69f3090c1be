package decode

import (
	"bytes"
	"errors"
	"hash/maphash"
	"strconv"
	"time"
	"unsafe"
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
	// limits bound what is kept; long holds a shortened value while it is interned.
	limits Limits
	long   []byte
	// sawItems records that the list being decoded had an items array.
	sawItems bool
}

// Limits bound what one decoder keeps and accepts, whatever the input.
type Limits struct {
	// MaxValueBytes bounds every string kept (DefaultMaxValueBytes when 0; at least
	// MinMaxValueBytes): a longer value is kept as Shorten makes it. The interner then holds at
	// most its slots times this many bytes.
	MaxValueBytes int
	// MaxEvents bounds the items of one EventList (no bound when 0): DecodeList refuses a longer
	// list with ErrTooManyEvents as soon as it reaches the item after the last allowed, so what a
	// batch costs is bounded by this count, not by how many tiny items its bytes can hold.
	MaxEvents int
	// RequireItems makes DecodeList refuse a document that has no "items" array with
	// ErrNotEventList: {} or another service's JSON posted to the webhook is not an empty batch.
	RequireItems bool
}

// DefaultMaxEvents is the default per-batch event limit of the exporter and of `audit analyze`:
// 25 times the API server's default batch (--audit-webhook-batch-max-size 400).
const DefaultMaxEvents = 10000

// ErrTooManyEvents is returned by DecodeList for an EventList longer than Limits.MaxEvents.
var ErrTooManyEvents = errors.New("event list holds more events than the per-batch limit")

// ErrNotEventList is returned by DecodeList, under Limits.RequireItems, for a document without an
// "items" array.
var ErrNotEventList = errors.New("not an audit event list: no items array")

// internAt interns b, shortened to the value bound, trying the previous value in the cache slot
// first.
func (d *Decoder) internAt(slot uint, b []byte) string {
	if prev := d.last[slot%maxSlots]; prev == string(b) {
		return prev
	}
	if len(b) > d.limits.MaxValueBytes {
		d.long = appendShortened(d.long[:0], b, d.limits.MaxValueBytes)
		b = d.long
		if prev := d.last[slot%maxSlots]; prev == string(b) {
			return prev
		}
	}
	s := d.intern.Intern(b)
	d.last[slot%maxSlots] = s
	return s
}

// NewDecoder returns a decoder with its own interner of internerSize slots
// (DefaultInternerSize when internerSize ≤ 0) and the default limits.
func NewDecoder(internerSize int) *Decoder {
	return newDecoder(internerSize, eventSchema)
}

// NewLimitedDecoder is NewDecoder with limits.
func NewLimitedDecoder(internerSize int, limits Limits) *Decoder {
	d := newDecoder(internerSize, eventSchema)
	d.SetLimits(limits)
	return d
}

func newDecoder(internerSize int, sch *schema) *Decoder {
	if internerSize <= 0 {
		internerSize = DefaultInternerSize
	}
	d := &Decoder{intern: NewInterner(internerSize), schema: sch}
	d.SetLimits(Limits{})
	return d
}

// SetLimits replaces the decoder's limits, filling the defaults.
func (d *Decoder) SetLimits(l Limits) {
	if l.MaxValueBytes == 0 {
		l.MaxValueBytes = DefaultMaxValueBytes
	}
	l.MaxValueBytes = max(l.MaxValueBytes, MinMaxValueBytes)
	d.limits = l
}

// Limits returns the decoder's limits, defaults filled.
func (d *Decoder) Limits() Limits { return d.limits }

// listFields are the members of an EventList; only items is read.
var listFields = []string{"items", "kind", "apiVersion", "metadata"}

// DecodeList decodes an EventList (the body of an audit webhook request). The returned events
// are valid until the next call. On error no event should be used: the whole batch is malformed.
func (d *Decoder) DecodeList(data []byte) ([]Event, error) {
	d.s.reset(data)
	d.events = d.events[:0]
	d.sawItems = false
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
	if d.limits.RequireItems && !d.sawItems {
		return nil, ErrNotEventList
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
	d.sawItems = true
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil || !ok {
			return err
		}
		if d.limits.MaxEvents > 0 && len(d.events) == d.limits.MaxEvents {
			return ErrTooManyEvents
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
		case kindTimeRFC3339:
			err = d.timeRFC3339(m.time(ev))
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
		case e.needle != "":
			err = d.stringContaining(ev, e)
		default: // a fresh string: null leaves it empty
			*e.str(ev) = ""
			err = d.string(e.str(ev), e.slot)
		}
		if err != nil {
			return err
		}
	}
}

// stringContaining reads a map entry's string value into e's field when it contains e's needle;
// any other value (null included) leaves the field as it is.
func (d *Decoder) stringContaining(ev *Event, e *member) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	d.keepContaining(ev, e, b)
	return nil
}

// keepContaining keeps b in e's field when it contains e's needle.
func (d *Decoder) keepContaining(ev *Event, e *member, b []byte) {
	if bytes.Contains(b, []byte(e.needle)) {
		*e.str(ev) = d.internAt(e.slot, b)
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

// timeRFC3339 reads a metav1.Time as its UnmarshalJSON does (time.RFC3339); null sets the zero
// time.
func (d *Decoder) timeRFC3339(dst *time.Time) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		if null {
			*dst = time.Time{}
		}
		return err
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, string(b))
	if err != nil {
		return s.errorf("invalid timestamp %s: %v", strconv.Quote(string(b)), err)
	}
	*dst = t
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

// MemoryBound is the most memory a decoder holds after decoding bodies of up to maxBodyBytes
// with these limits and internerSize slots, whatever their content: its interner full of values
// of the bound's length, its event slice grown to twice the event limit (or to what a body of
// that size can hold), the index of the largest body, the nesting stack of encoding/json's depth
// limit, and the scratch buffers an escaped string or query value is decoded into (as long as the
// longest such value, so at most a body each).
func MemoryBound(internerSize int, l Limits, maxBodyBytes int64) int64 {
	if internerSize <= 0 {
		internerSize = DefaultInternerSize
	}
	if l.MaxValueBytes == 0 {
		l.MaxValueBytes = DefaultMaxValueBytes
	}
	slots := int64(NewInterner(internerSize).Slots())
	stringHeader := int64(unsafe.Sizeof(""))
	events := maxBodyBytes / 3 // `{},` is the shortest item
	if l.MaxEvents > 0 {
		events = min(events, int64(l.MaxEvents))
	}
	return slots*(stringHeader+int64(l.MaxValueBytes)) + // interner
		maxSlots*stringHeader + // last-value caches (their strings are the interner's)
		2*events*int64(unsafe.Sizeof(Event{})) + // events, grown by append
		2*maxBodyBytes/64*8 + // index: two 64-bit masks per 64 bytes
		maxDepth + // nesting stack
		2*maxBodyBytes + // unescaped string and query value scratch
		int64(l.MaxValueBytes) // shortened value
}
