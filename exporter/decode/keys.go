package decode

import "encoding/binary"

// keyTable speeds up member keys of one object type: the API server writes the fields of an
// audit object in the order of the Go struct, so the next key is almost always one of the next
// few in that order. A predicted key is matched with one compare of `"name":` against the input,
// without scanning the key as a string; anything else takes the general path.
type keyTable struct {
	order   []keyEntry
	resolve func(key []byte) int
}

type keyEntry struct {
	name   string
	quoted string // `"name":`
	index  int    // resolve(name)
	// words and masks hold quoted as little-endian words (the last one masked), so that a
	// candidate is ruled out with one compare and confirmed with a few more, without a call.
	words, masks [4]uint64
	nwords       int
}

// lookahead is how many upcoming keys are tried, covering omitted optional fields.
const lookahead = 6

func newKeyTable(order []string, resolve func(key []byte) int) *keyTable {
	t := &keyTable{resolve: resolve}
	for _, name := range order {
		e := keyEntry{name: name, quoted: `"` + name + `":`, index: resolve([]byte(name))}
		if len(e.quoted) > 8*len(e.words) {
			panic("decode: key too long for keyTable: " + name)
		}
		var buf [8 * 4]byte
		copy(buf[:], e.quoted)
		e.nwords = (len(e.quoted) + 7) / 8
		for j := range e.nwords {
			e.words[j] = binary.LittleEndian.Uint64(buf[8*j:])
			e.masks[j] = ^uint64(0)
			if n := len(e.quoted) - 8*j; n < 8 {
				e.masks[j] >>= 64 - 8*n
			}
		}
		t.order = append(t.order, e)
	}
	return t
}

var (
	eventKeys = newKeyTable([]string{
		"kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "impersonatedUser",
		"authenticationMetadata", "sourceIPs", "userAgent", "objectRef", "responseStatus", "requestObject",
		"responseObject", "requestReceivedTimestamp", "stageTimestamp", "annotations",
	}, eventField)
	userKeys = newKeyTable([]string{"username", "uid", "groups", "extra"},
		func(k []byte) int { return fieldIndex(k, userFields) })
	objectRefKeys = newKeyTable([]string{
		"resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion", "subresource",
	}, func(k []byte) int { return fieldIndex(k, objectRefFields) })
	statusKeys = newKeyTable([]string{"kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"},
		func(k []byte) int { return fieldIndex(k, statusFields) })
)

// field advances to the next member of the current object, consumes its key and colon, and
// returns the key's index as t resolves it; ok is false after the closing '}'. cursor carries the
// position in t.order between calls and starts at 0.
func (s *scanner) field(first bool, t *keyTable, cursor *int) (index int, ok bool, err error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return 0, false, nil
	}
	if !first {
		if c != ',' {
			return 0, false, s.errorf("want ',' or '}' in object")
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		return 0, false, s.errorf("want string key")
	}
	rest := s.data[s.pos:]
	if len(rest) >= 8*len(t.order[0].words) {
		w := binary.LittleEndian.Uint64(rest)
		end := min(*cursor+lookahead, len(t.order))
		for k := *cursor; k < end; k++ {
			e := &t.order[k]
			if w&e.masks[0] != e.words[0] || !e.matchTail(rest) {
				continue
			}
			s.pos += len(e.quoted)
			*cursor = k + 1
			return e.index, true, nil
		}
	}
	key, err := s.str()
	if err != nil {
		return 0, false, err
	}
	if s.peek() != ':' {
		return 0, false, s.errorf("want ':' after key")
	}
	s.pos++
	for k := range t.order {
		if t.order[k].name == string(key) {
			*cursor = k + 1
			break
		}
	}
	return t.resolve(key), true, nil
}

// matchTail compares words 1.. of e.quoted with rest, which holds at least 32 bytes.
func (e *keyEntry) matchTail(rest []byte) bool {
	for j := 1; j < e.nwords; j++ {
		if binary.LittleEndian.Uint64(rest[8*j:])&e.masks[j] != e.words[j] {
			return false
		}
	}
	return true
}
