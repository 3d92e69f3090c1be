package decode

import (
	"encoding/binary"
)

// The fast path decodes an event written the way the API server writes it: compact, members in
// the order of the Go structs. It is speculative: at the first byte that does not fit that form it
// returns false, and the caller rewinds to the start of the event and decodes it with the general
// path (event), which alone decides what the input means and whether it is valid. So the fast path
// may only accept what the general path accepts, with the same result, and never reports an error
// of its own.
//
// What it accepts, it checks as strictly as the general path: member keys and punctuation byte
// for byte, strings through the index (masks.go: a plain string is valid as it stands) or the
// general string reader, numbers and timestamps with the general path's parsers, anything unusual
// in a skipped value with the general skip. The cursor lives in a local variable and the schema
// is a table walked by one loop: threading it through the scanner's fields, or a call per
// member, cost as much as the work itself.

// action says what the fast path does with a member's value.
type action uint8

const (
	actSkip       action = iota // any value
	actStrings                  // an array of strings, skipped
	actStringMap                // an object of strings, skipped
	actKeep                     // a kept string: field is its slot in Decoder.last
	actAuditID                  // auditID, hashed
	actRequestURI               // requestURI, for its fieldManager parameter
	actTime                     // a timestamp: field 0 is requestReceived, 1 the stage timestamp
	actCode                     // responseStatus.code
	actObject                   // a nested object described by schema
	actPodExtra                 // user.extra, for the pod name
)

// step is one member the fast path expects, in the order the API server writes them; any of
// them may be absent (as for the general path, no member is required).
type step struct {
	key    keyToken
	act    action
	field  int
	schema []step
}

// keyToken is a member key, quoted with its colon, as the first member and after a comma.
type keyToken struct{ bare, comma token }

// token is a literal of up to 32 bytes held as masked little-endian words (unused words have a
// zero mask), compared without a call to memequal.
type token struct {
	text string
	w, m [4]uint64
}

func newToken(text string) token {
	if len(text) > 32 {
		panic("decode: token too long: " + text)
	}
	t := token{text: text}
	var buf [32]byte
	copy(buf[:], text)
	for j := 0; 8*j < len(text); j++ {
		t.w[j] = binary.LittleEndian.Uint64(buf[8*j:])
		t.m[j] = ^uint64(0)
		if r := len(text) - 8*j; r < 8 {
			t.m[j] >>= 64 - 8*r
		}
	}
	return t
}

// matchNearEnd reports whether data, of which fewer than 32 bytes are left, continues with t at p.
func (t *token) matchNearEnd(data []byte, p int) bool {
	return len(data)-p >= len(t.text) && string(data[p:p+len(t.text)]) == t.text
}

func member(name string, act action, field int, schema []step) step {
	k := `"` + name + `":`
	return step{key: keyToken{bare: newToken(k), comma: newToken("," + k)}, act: act, field: field, schema: schema}
}

var (
	userSchema = []step{
		member("username", actKeep, lastUser, nil),
		member("uid", actSkip, 0, nil),
		member("groups", actStrings, 0, nil),
		member("extra", actPodExtra, 0, nil),
	}
	impersonatedSchema = []step{
		member("username", actKeep, lastImpersonated, nil),
		member("uid", actSkip, 0, nil),
		member("groups", actStrings, 0, nil),
		member("extra", actSkip, 0, nil),
	}
	objectRefSchema = []step{
		member("resource", actKeep, lastResource, nil),
		member("namespace", actKeep, lastNamespace, nil),
		member("name", actKeep, lastName, nil),
		member("uid", actSkip, 0, nil),
		member("apiGroup", actKeep, lastGroup, nil),
		member("apiVersion", actSkip, 0, nil),
		member("resourceVersion", actSkip, 0, nil),
		member("subresource", actKeep, lastSubresource, nil),
	}
	statusSchema = []step{
		member("metadata", actStringMap, 0, nil),
		member("status", actSkip, 0, nil),
		member("message", actSkip, 0, nil),
		member("reason", actSkip, 0, nil),
		member("details", actSkip, 0, nil),
		member("code", actCode, 0, nil),
	}
	eventSchema = []step{
		member("kind", actSkip, 0, nil), // the log backend writes the TypeMeta
		member("apiVersion", actSkip, 0, nil),
		member("level", actSkip, 0, nil),
		member("auditID", actAuditID, 0, nil),
		member("stage", actKeep, lastStage, nil),
		member("requestURI", actRequestURI, 0, nil),
		member("verb", actKeep, lastVerb, nil),
		member("user", actObject, 0, userSchema),
		member("impersonatedUser", actObject, 0, impersonatedSchema),
		member("authenticationMetadata", actSkip, 0, nil),
		member("sourceIPs", actStrings, 0, nil),
		member("userAgent", actKeep, lastUserAgent, nil),
		member("objectRef", actObject, 0, objectRefSchema),
		member("responseStatus", actObject, 0, statusSchema),
		member("requestObject", actSkip, 0, nil),
		member("responseObject", actSkip, 0, nil),
		member("requestReceivedTimestamp", actTime, 0, nil),
		member("stageTimestamp", actTime, 1, nil),
		member("annotations", actStringMap, 0, nil),
	}
)

// maxFastDepth bounds the objects the fast path nests (event, user or objectRef or status).
const maxFastDepth = 4

// fastEvent decodes the event at the current position (see the top of the file) into ev, which
// is zero.
func (d *Decoder) fastEvent(ev *Event) bool {
	s := &d.s
	data, masks := s.data, s.masks
	p, depth := s.pos, s.depth
	if p >= len(data) || data[p] != '{' {
		return false
	}
	p++
	targets := [numFields]*string{
		lastVerb: &ev.Verb, lastStage: &ev.Stage, lastUser: &ev.Username,
		lastImpersonated: &ev.ImpersonatedUsername, lastPod: &ev.Pod, lastUserAgent: &ev.UserAgent,
		lastFieldManager: &ev.FieldManager, lastGroup: &ev.APIGroup, lastResource: &ev.Resource,
		lastNamespace: &ev.Namespace, lastName: &ev.Name, lastSubresource: &ev.Subresource,
	}
	var stack [maxFastDepth]struct {
		schema []step
		cursor int
	}
	top := 0
	stack[0].schema = eventSchema
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
		steps := frame.schema
		k := frame.cursor
		if len(data)-p >= 32 {
			// The next 32 bytes, loaded once and compared with each candidate's words.
			b := data[p : p+32]
			w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
			w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
			for ; k < len(steps); k++ {
				t := &steps[k].key.comma
				if first {
					t = &steps[k].key.bare
				}
				if w0&t.m[0] == t.w[0] && w1&t.m[1] == t.w[1] && w2&t.m[2] == t.w[2] && w3&t.m[3] == t.w[3] {
					p += len(t.text)
					break
				}
			}
		} else {
			for ; k < len(steps); k++ {
				t := &steps[k].key.comma
				if first {
					t = &steps[k].key.bare
				}
				if t.matchNearEnd(data, p) {
					p += len(t.text)
					break
				}
			}
		}
		if k == len(steps) {
			return false
		}
		frame.cursor = k + 1
		first = false
		st := &steps[k]

		// The value.
		switch st.act {
		case actKeep, actAuditID, actRequestURI:
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
			switch st.act {
			case actKeep:
				if prev := d.last[st.field]; prev == string(b) {
					*targets[st.field] = prev
				} else {
					*targets[st.field] = d.internField(st.field, b)
				}
			case actAuditID:
				ev.HasAuditID = len(b) > 0
				if ev.HasAuditID {
					ev.AuditIDHash = HashAuditID(b)
				}
			default:
				var fm []byte
				fm, d.query = FieldManager(b, d.query[:0])
				ev.FieldManager = d.internField(lastFieldManager, fm)
			}
		case actObject:
			if p >= len(data) || data[p] != '{' || top+1 == maxFastDepth {
				return false
			}
			p++
			top++
			stack[top].schema, stack[top].cursor = st.schema, 0
			first = true
		case actTime:
			dst := &ev.RequestReceived
			if st.field == 1 {
				dst = &ev.StageTimestamp
			}
			if p+28 >= len(data) || data[p] != '"' || data[p+28] != '"' {
				return false
			}
			t, ok := d.hours.parse(data[p+1 : p+28])
			if !ok {
				return false
			}
			*dst, p = t, p+29
		case actCode:
			// A status code: up to four digits and a delimiter, else the general parser.
			if p+4 < len(data) && '1' <= data[p] && data[p] <= '9' {
				v, i := int32(data[p]-'0'), p+1
				for ; i < p+4 && '0' <= data[i] && data[i] <= '9'; i++ {
					v = v*10 + int32(data[i]-'0')
				}
				if c := data[i]; c == ',' || c == '}' {
					ev.Code, p = v, i
					continue
				}
			}
			s.pos = p
			if d.code(&ev.Code) != nil {
				return false
			}
			p = s.pos
		case actPodExtra:
			if p = d.podExtra(p, &ev.Pod); p < 0 {
				return false
			}
		default:
			if p < len(data) && data[p] == '"' {
				if end := plainEndAt(masks, p+1); end >= 0 {
					p = end + 1
					continue
				}
			}
			if st.act == actStrings || st.act == actStringMap {
				if q := s.skipStrings(p, st.act == actStringMap); q >= 0 {
					p = q
					continue
				}
			}
			// Anything else: the general skip, at the depth the general path would be at.
			s.pos, s.depth = p, depth+1+top
			err := s.skip()
			s.depth = depth
			if err != nil {
				return false
			}
			p = s.pos
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

// podExtra reads user.extra at p, an object of plain keys to arrays of plain strings, setting
// pod from the pod-name key; it returns the index after the object, or -1.
func (d *Decoder) podExtra(p int, pod *string) int {
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
		if q < 0 || q+2 >= len(data) || data[q+1] != ':' || data[q+2] != '[' {
			return -1
		}
		isPod := string(data[p+1:q]) == PodNameExtraKey
		if isPod {
			*pod = ""
		}
		p = q + 3
		for j := 0; ; j++ {
			if p < len(data) && data[p] == ']' {
				p++
				break
			}
			if j > 0 {
				if p >= len(data) || data[p] != ',' {
					return -1
				}
				p++
			}
			if p >= len(data) || data[p] != '"' {
				return -1
			}
			end := plainEndAt(masks, p+1)
			if end < 0 {
				return -1
			}
			if j == 0 && isPod {
				*pod = d.internField(lastPod, data[p+1:end])
			}
			p = end + 1
		}
	}
}
