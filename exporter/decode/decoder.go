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
	query  []byte
	events []Event
	// last holds, per field, the previous value: consecutive events mostly repeat verb, user,
	// resource and namespace, and a compare is cheaper than hashing into the interner.
	last [numFields]string
	// hours caches the date and hour of the last timestamp.
	hours hourCache
	// generalOnly turns the fast path off (for the tests that compare the two); fallbacks counts
	// the events the fast path handed to the general path.
	generalOnly bool
	fallbacks   int
}

// Per-field slots of Decoder.last.
const (
	lastVerb = iota
	lastStage
	lastUser
	lastImpersonated
	lastPod
	lastUserAgent
	lastFieldManager
	lastGroup
	lastResource
	lastNamespace
	lastName
	lastSubresource
	numFields
)

// internField interns b, trying the field's previous value first.
func (d *Decoder) internField(field int, b []byte) string {
	if prev := d.last[field]; prev == string(b) {
		return prev
	}
	s := d.intern.Intern(b)
	d.last[field] = s
	return s
}

// NewDecoder returns a decoder with its own interner of internerSize slots
// (DefaultInternerSize when internerSize ≤ 0).
func NewDecoder(internerSize int) *Decoder {
	if internerSize <= 0 {
		internerSize = DefaultInternerSize
	}
	return &Decoder{intern: NewInterner(internerSize)}
}

var (
	listFields = []string{"items", "kind", "apiVersion", "metadata"}
	// eventFields lists the fields read, then fields known to be skipped (so that they match
	// exactly and never take the case-folding path).
	eventFields = []string{
		"auditID", "stage", "requestURI", "verb", "user", "impersonatedUser", "userAgent",
		"objectRef", "responseStatus", "requestReceivedTimestamp", "stageTimestamp",
		"level", "sourceIPs", "annotations", "requestObject", "responseObject", "kind", "apiVersion",
		"authenticationMetadata",
	}
	userFields      = []string{"username", "extra", "uid", "groups"}
	objectRefFields = []string{
		"apiGroup", "resource", "namespace", "name", "subresource", "uid", "apiVersion", "resourceVersion",
	}
	statusFields = []string{"code", "metadata", "status", "message", "reason", "details", "kind", "apiVersion"}
)

// eventField maps a key to its index in eventFields: a compiled switch for the exact names the
// API server writes, case folding only for anything else.
func eventField(key []byte) int {
	switch string(key) {
	case "auditID":
		return fAuditID
	case "stage":
		return fStage
	case "requestURI":
		return fRequestURI
	case "verb":
		return fVerb
	case "user":
		return fUser
	case "impersonatedUser":
		return fImpersonatedUser
	case "userAgent":
		return fUserAgent
	case "objectRef":
		return fObjectRef
	case "responseStatus":
		return fResponseStatus
	case "requestReceivedTimestamp":
		return fRequestReceived
	case "stageTimestamp":
		return fStageTimestamp
	case "level", "sourceIPs", "annotations", "requestObject", "responseObject", "kind", "apiVersion",
		"authenticationMetadata":
		return -1
	}
	return fieldIndex(key, eventFields)
}

// Field indexes into eventFields.
const (
	fAuditID = iota
	fStage
	fRequestURI
	fVerb
	fUser
	fImpersonatedUser
	fUserAgent
	fObjectRef
	fResponseStatus
	fRequestReceived
	fStageTimestamp
)

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
	d.fallbacks++
	return d.event(ev)
}

// event is the general path: any valid JSON, with encoding/json's semantics.
func (d *Decoder) event(ev *Event) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if err := s.openObject(); err != nil {
		return err
	}
	cursor := 0
	for first := true; ; first = false {
		index, ok, err := s.field(first, eventKeys, &cursor)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch index {
		case fAuditID:
			err = d.auditID(ev)
		case fStage:
			err = d.string(&ev.Stage, lastStage)
		case fRequestURI:
			err = d.requestURI(ev)
		case fVerb:
			err = d.string(&ev.Verb, lastVerb)
		case fUser:
			err = d.user(&ev.Username, &ev.Pod, lastUser)
		case fImpersonatedUser:
			err = d.user(&ev.ImpersonatedUsername, nil, lastImpersonated)
		case fUserAgent:
			err = d.string(&ev.UserAgent, lastUserAgent)
		case fObjectRef:
			err = d.objectRef(ev)
		case fResponseStatus:
			err = d.status(ev)
		case fRequestReceived:
			err = d.time(&ev.RequestReceived)
		case fStageTimestamp:
			err = d.time(&ev.StageTimestamp)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// string reads a string into dst; null leaves dst unchanged, as encoding/json does.
func (d *Decoder) string(dst *string, field int) error {
	s := &d.s
	if p := s.pos; p < len(s.data) && s.data[p] == '"' {
		// The common case, a string right after the colon: scan it directly.
		b, err := s.str()
		if err != nil {
			return err
		}
		*dst = d.internField(field, b)
		return nil
	}
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	b, err := s.str()
	if err != nil {
		return err
	}
	*dst = d.internField(field, b)
	return nil
}

func (d *Decoder) auditID(ev *Event) error {
	if null, err := d.s.isNull(); null || err != nil {
		return err
	}
	b, err := d.s.str()
	if err != nil {
		return err
	}
	ev.AuditIDHash, ev.HasAuditID = 0, len(b) > 0
	if ev.HasAuditID {
		ev.AuditIDHash = HashAuditID(b)
	}
	return nil
}

func (d *Decoder) requestURI(ev *Event) error {
	if null, err := d.s.isNull(); null || err != nil {
		return err
	}
	b, err := d.s.str()
	if err != nil {
		return err
	}
	var fm []byte
	fm, d.query = FieldManager(b, d.query[:0])
	ev.FieldManager = d.internField(lastFieldManager, fm)
	return nil
}

// user reads a UserInfo into the field's slot. A null impersonatedUser clears it (it is a pointer
// in the API type); pod receives the first pod-name extra value when non-nil.
func (d *Decoder) user(username, pod *string, field int) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		if null && field == lastImpersonated {
			*username = ""
		}
		return err
	}
	if err := s.openObject(); err != nil {
		return err
	}
	cursor := 0
	for first := true; ; first = false {
		index, ok, err := s.field(first, userKeys, &cursor)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch index {
		case 0:
			err = d.string(username, field)
		case 1:
			if pod != nil {
				err = d.extra(pod)
			} else {
				err = s.skip()
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// extra reads user.extra and sets pod from the pod-name key.
func (d *Decoder) extra(pod *string) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		if null {
			*pod = ""
		}
		return err
	}
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
		if string(key) != PodNameExtraKey {
			if err := s.skip(); err != nil {
				return err
			}
			continue
		}
		if err := d.firstString(pod); err != nil {
			return err
		}
	}
}

// firstString reads a []string and keeps its first element ("" when null or empty).
func (d *Decoder) firstString(dst *string) error {
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
			err = d.string(dst, lastPod)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (d *Decoder) objectRef(ev *Event) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		if null {
			ev.APIGroup, ev.Resource, ev.Namespace, ev.Name, ev.Subresource = "", "", "", "", ""
		}
		return err
	}
	if err := s.openObject(); err != nil {
		return err
	}
	cursor := 0
	for first := true; ; first = false {
		index, ok, err := s.field(first, objectRefKeys, &cursor)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch index {
		case 0:
			err = d.string(&ev.APIGroup, lastGroup)
		case 1:
			err = d.string(&ev.Resource, lastResource)
		case 2:
			err = d.string(&ev.Namespace, lastNamespace)
		case 3:
			err = d.string(&ev.Name, lastName)
		case 4:
			err = d.string(&ev.Subresource, lastSubresource)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (d *Decoder) status(ev *Event) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		if null {
			ev.Code = 0
		}
		return err
	}
	if err := s.openObject(); err != nil {
		return err
	}
	cursor := 0
	for first := true; ; first = false {
		index, ok, err := s.field(first, statusKeys, &cursor)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if index == 0 {
			err = d.code(&ev.Code)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// code reads an int32; like encoding/json it refuses fractions, exponents and overflow.
func (d *Decoder) code(dst *int32) error {
	s := &d.s
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return s.errorf("responseStatus.code is not a number")
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
			return s.errorf("responseStatus.code is not an integer")
		}
		v = v*10 + int64(c-'0')
		if v > 1<<31 {
			return s.errorf("responseStatus.code overflows int32")
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -1<<31 {
		return s.errorf("responseStatus.code overflows int32")
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
