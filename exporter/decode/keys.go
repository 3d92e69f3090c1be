package decode

import "encoding/binary"

// Member keys are predicted: the API server writes the members of an audit object in the order
// of the Go struct, which is the order of the schema's rows, so the next key is almost always one
// of the next few rows. A predicted key is matched with one compare of `"name":` against the
// input, without scanning the key as a string.

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

// matchWords reports whether the 32 bytes held in w0…w3 start with t.
func (t *token) matchWords(w0, w1, w2, w3 uint64) bool {
	return w0&t.m[0] == t.w[0] && w1&t.m[1] == t.w[1] && w2&t.m[2] == t.w[2] && w3&t.m[3] == t.w[3]
}

// matchNearEnd reports whether data, of which fewer than 32 bytes are left, continues with t at p.
func (t *token) matchNearEnd(data []byte, p int) bool {
	return len(data)-p >= len(t.text) && string(data[p:p+len(t.text)]) == t.text
}

// lookahead is how many upcoming rows the general path tries, covering omitted optional members.
const lookahead = 6

// field advances to the next member of the current object, consumes its key and colon, and
// returns its row in sch, matched as encoding/json matches keys to struct fields (exactly, else
// under case folding), or nil for a key sch does not list; ok is false after the closing '}'.
// cursor carries the position in sch between calls and starts at 0.
func (s *scanner) field(first bool, sch *schema, cursor *int) (m *member, ok bool, err error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return nil, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, s.errorf("want ',' or '}' in object")
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		return nil, false, s.errorf("want string key")
	}
	if rest := s.data[s.pos:]; len(rest) >= 32 {
		w0, w1 := binary.LittleEndian.Uint64(rest), binary.LittleEndian.Uint64(rest[8:])
		w2, w3 := binary.LittleEndian.Uint64(rest[16:]), binary.LittleEndian.Uint64(rest[24:])
		end := min(*cursor+lookahead, len(sch.members))
		for k := *cursor; k < end; k++ {
			if m := &sch.members[k]; m.key.bare.matchWords(w0, w1, w2, w3) {
				s.pos += len(m.key.bare.text)
				*cursor = k + 1
				return m, true, nil
			}
		}
	}
	key, err := s.str()
	if err != nil {
		return nil, false, err
	}
	if s.peek() != ':' {
		return nil, false, s.errorf("want ':' after key")
	}
	s.pos++
	if k := sch.exact(key); k >= 0 {
		*cursor = k + 1
		return &sch.members[k], true, nil
	}
	if k := sch.folded(key); k >= 0 {
		return &sch.members[k], true, nil
	}
	return nil, true, nil
}
