package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the nesting limit of encoding/json, kept so that both accept the same documents.
const maxDepth = 10000

// ErrDuplicateItems is returned for an EventList with more than one "items" member. encoding/json
// merges the second list into the first element by element; the API server never sends one, so
// the decoder refuses it rather than guess.
var ErrDuplicateItems = errors.New("duplicate items member in event list")

// SyntaxError reports malformed input and where it was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid audit json at offset %d: %s", e.Offset, e.Msg)
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialInString flags, per byte, '"', '\\', control characters and (when withHigh) non-ASCII.
// The lowest flagged byte is always a true match (the classic has-zero-byte trick: a borrow only
// ever propagates upwards from a true match).
func specialInString(w uint64, withHigh bool) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	m := (q - lsb) &^ q
	m |= (b - lsb) &^ b
	if withHigh {
		// Bytes ≥ 0x80 are flagged by w itself, so the control-character test needs no &^ w.
		m |= (w - lsb*0x20) | w
	} else {
		m |= (w - lsb*0x20) &^ w
	}
	return m & msb
}

// scanSpecial returns the index of the first byte of data at or after i that specialInString
// flags, or len(data) rounded down to the last 8-byte boundary it could check (the caller then
// checks the tail byte by byte). (A vectorised bytes.IndexByte for the closing quote followed by
// a check of the bytes before it measured slower: most strings here are shorter than 48 bytes.)
func scanSpecial(data []byte, i int, withHigh bool) int {
	for i+16 <= len(data) {
		m1 := specialInString(binary.LittleEndian.Uint64(data[i:]), withHigh)
		m2 := specialInString(binary.LittleEndian.Uint64(data[i+8:]), withHigh)
		if m1 != 0 {
			return i + bits.TrailingZeros64(m1)>>3
		}
		if m2 != 0 {
			return i + 8 + bits.TrailingZeros64(m2)>>3
		}
		i += 16
	}
	if i+8 <= len(data) {
		if m := specialInString(binary.LittleEndian.Uint64(data[i:]), withHigh); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// scanner walks one JSON document held in memory.
type scanner struct {
	data    []byte
	pos     int
	depth   int
	scratch []byte
	stack   []bool
	masks   []uint64 // the index of data: see masks.go
}

func (s *scanner) reset(data []byte) {
	s.data = data
	s.masks = buildMasks(data, s.masks)
	s.pos = 0
	s.depth = 0
	s.stack = s.stack[:0]
}

func (s *scanner) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at the end.
func (s *scanner) peek() byte {
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return s.data[s.pos]
	}
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) push() error {
	s.depth++
	if s.depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	return nil
}

// literal consumes the literal word (null, true or false).
func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.errorf("invalid literal, want %s", word)
	}
	s.pos += len(word)
	return nil
}

// isNull consumes a null literal when one is next.
func (s *scanner) isNull() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

// openObject consumes '{'.
func (s *scanner) openObject() error {
	if s.peek() != '{' {
		return s.errorf("want object")
	}
	s.pos++
	return s.push()
}

// member advances to the next member of the current object and returns its key, or ok=false
// after consuming the closing '}'. The key is valid until the next string is read.
func (s *scanner) member(first bool) (key []byte, ok bool, err error) {
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
	key, err = s.str()
	if err != nil {
		return nil, false, err
	}
	if s.peek() != ':' {
		return nil, false, s.errorf("want ':' after key")
	}
	s.pos++
	return key, true, nil
}

// openArray consumes '['.
func (s *scanner) openArray() error {
	if s.peek() != '[' {
		return s.errorf("want array")
	}
	s.pos++
	return s.push()
}

// element advances to the next array element, or returns ok=false after consuming ']'.
func (s *scanner) element(first bool) (bool, error) {
	c := s.peek()
	if c == ']' {
		s.pos++
		s.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.errorf("want ',' or ']' in array")
		}
		s.pos++
		if s.peek() == 0 {
			return false, s.errorf("unexpected end of input")
		}
	}
	return true, nil
}

// str reads a string at the current position and returns its unescaped bytes: a slice of the
// input when there is nothing to unescape, else of the scratch buffer. Invalid UTF-8 is replaced
// with U+FFFD, as encoding/json does.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("want string")
	}
	start := s.pos + 1
	i := start
	ascii := true
	data := s.data
	if j := plainEndAt(s.masks, start); j >= 0 {
		s.pos = j + 1
		return data[start:j], nil
	}
	for {
		i = scanSpecial(data, i, true)
		if i >= len(data) {
			s.pos = i
			return nil, s.errorf("unterminated string")
		}
		c := data[i]
		switch {
		case c == '"':
			out := data[start:i]
			s.pos = i + 1
			if ascii || utf8.Valid(out) {
				return out, nil
			}
			return s.unescape(start)
		case c == '\\':
			return s.unescape(start)
		case c < 0x20:
			s.pos = i
			return nil, s.errorf("control character in string")
		default:
			ascii = false
			i++
		}
	}
}

// unescape decodes the string starting at start (just after the opening quote) into scratch.
func (s *scanner) unescape(start int) ([]byte, error) {
	data := s.data
	out := s.scratch[:0]
	i := start
	for {
		// Copy the run of plain ASCII up to the next quote, escape, control or non-ASCII byte.
		j := scanSpecial(data, i, true)
		for j < len(data) && data[j] >= 0x20 && data[j] < utf8.RuneSelf && data[j] != '"' && data[j] != '\\' {
			j++
		}
		out = append(out, data[i:j]...)
		i = j
		if i >= len(data) {
			s.pos = i
			return nil, s.errorf("unterminated string")
		}
		c := data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			s.scratch = out
			return out, nil
		case c == '\\':
			if i+1 >= len(data) {
				s.pos = i
				return nil, s.errorf("unterminated escape")
			}
			switch e := data[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				i += 2
			case 'b':
				out = append(out, '\b')
				i += 2
			case 'f':
				out = append(out, '\f')
				i += 2
			case 'n':
				out = append(out, '\n')
				i += 2
			case 'r':
				out = append(out, '\r')
				i += 2
			case 't':
				out = append(out, '\t')
				i += 2
			case 'u':
				r := hex4(data, i+2)
				if r < 0 {
					s.pos = i
					return nil, s.errorf("invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
						if r2 := hex4(data, i+2); r2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								out = utf8.AppendRune(out, dec)
								i += 6
								break
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				s.pos = i
				return nil, s.errorf("invalid escape")
			}
		case c < 0x20:
			s.pos = i
			return nil, s.errorf("control character in string")
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, data[i:i+size]...)
			}
			i += size
		}
	}
}

// hex4 parses four hex digits at data[i:], or returns -1.
func hex4(data []byte, i int) rune {
	if i+4 > len(data) {
		return -1
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// skipString validates and skips a string without decoding it.
func (s *scanner) skipString() error {
	data := s.data
	i := s.pos + 1
	if j := plainEndAt(s.masks, i); j >= 0 {
		s.pos = j + 1
		return nil
	}
	for {
		i = scanSpecial(data, i, false)
		if i >= len(data) {
			s.pos = i
			return s.errorf("unterminated string")
		}
		switch c := data[i]; {
		case c == '"':
			s.pos = i + 1
			return nil
		case c == '\\':
			if i+1 >= len(data) {
				s.pos = i
				return s.errorf("unterminated escape")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(data, i+2) < 0 {
					s.pos = i
					return s.errorf("invalid \\u escape")
				}
				i += 6
			default:
				s.pos = i
				return s.errorf("invalid escape")
			}
		case c < 0x20:
			s.pos = i
			return s.errorf("control character in string")
		default:
			i++
		}
	}
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, error) {
	data := s.data
	start := s.pos
	i := start
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return nil, s.errorf("invalid number")
	}
	if i < len(data) && data[i] == '.' {
		i++
		d := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		if i == d {
			s.pos = i
			return nil, s.errorf("invalid number fraction")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		d := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		if i == d {
			s.pos = i
			return nil, s.errorf("invalid number exponent")
		}
	}
	s.pos = i
	return data[start:i], nil
}

// Byte classes for skip: what a byte can start where a value is expected.
const (
	clsBad = iota
	clsSpace
	clsString
	clsObject
	clsArray
	clsNumber
	clsTrue
	clsFalse
	clsNull
)

// valueClass classifies the first byte of a value (and whitespace) for skip.
var valueClass = func() (t [256]uint8) {
	for _, c := range " \t\n\r" {
		t[c] = clsSpace
	}
	t['"'], t['{'], t['['] = clsString, clsObject, clsArray
	t['-'] = clsNumber
	for c := '0'; c <= '9'; c++ {
		t[c] = clsNumber
	}
	t['t'], t['f'], t['n'] = clsTrue, clsFalse, clsNull
	return t
}()

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

// skip validates and skips any value, exactly as strictly as encoding/json's scanner: one
// iterative loop over a byte-class table, with a stack of container kinds (true for objects),
// so that skipping a large request object costs a byte loop, not a call per token.
func (s *scanner) skip() error {
	data := s.data
	i := s.pos
	base := len(s.stack)
	for {
		// A value is expected at i.
		for i < len(data) && isSpace(data[i]) {
			i++
		}
		if i >= len(data) {
			s.pos = i
			return s.errorf("unexpected end of input")
		}
		switch valueClass[data[i]] {
		case clsString:
			s.pos = i
			if err := s.skipString(); err != nil {
				return err
			}
			i = s.pos
		case clsObject, clsArray:
			obj := data[i] == '{'
			i++
			s.depth++
			if s.depth > maxDepth {
				s.pos = i
				return s.errorf("exceeded max depth")
			}
			for i < len(data) && isSpace(data[i]) {
				i++
			}
			if i < len(data) && (obj && data[i] == '}' || !obj && data[i] == ']') {
				i++
				s.depth--
				break
			}
			s.stack = append(s.stack, obj)
			if obj {
				var err error
				if i, err = s.skipKey(i); err != nil {
					return err
				}
			}
			continue
		case clsNumber:
			s.pos = i
			if _, err := s.number(); err != nil {
				return err
			}
			i = s.pos
		case clsTrue:
			if len(data)-i < 4 || string(data[i:i+4]) != "true" {
				s.pos = i
				return s.errorf("invalid literal, want true")
			}
			i += 4
		case clsFalse:
			if len(data)-i < 5 || string(data[i:i+5]) != "false" {
				s.pos = i
				return s.errorf("invalid literal, want false")
			}
			i += 5
		case clsNull:
			if len(data)-i < 4 || string(data[i:i+4]) != "null" {
				s.pos = i
				return s.errorf("invalid literal, want null")
			}
			i += 4
		default:
			s.pos = i
			return s.errorf("invalid character %q looking for a value", data[i])
		}
		// After a value: close containers, or move on to the next member or element.
	after:
		for {
			if len(s.stack) == base {
				s.pos = i
				return nil
			}
			for i < len(data) && isSpace(data[i]) {
				i++
			}
			if i >= len(data) {
				s.pos = i
				return s.errorf("unexpected end of input")
			}
			obj := s.stack[len(s.stack)-1]
			switch c := data[i]; {
			case c == ',':
				i++
				if obj {
					var err error
					if i, err = s.skipKey(i); err != nil {
						return err
					}
				}
				break after
			case obj && c == '}', !obj && c == ']':
				i++
				s.depth--
				s.stack = s.stack[:len(s.stack)-1]
			default:
				s.pos = i
				return s.errorf("want ',' or end of container")
			}
		}
	}
}

// skipKey skips an object key and its colon starting at i, and returns the index after them.
func (s *scanner) skipKey(i int) (int, error) {
	data := s.data
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	s.pos = i
	if i >= len(data) || data[i] != '"' {
		return i, s.errorf("want string key")
	}
	if err := s.skipString(); err != nil {
		return s.pos, err
	}
	i = s.pos
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i >= len(data) || data[i] != ':' {
		s.pos = i
		return i, s.errorf("want ':' after key")
	}
	return i + 1, nil
}

// end checks that only whitespace follows the document.
func (s *scanner) end() error {
	if s.peek() != 0 || s.pos != len(s.data) {
		return s.errorf("unexpected data after value")
	}
	return nil
}

// fieldIndex returns the index of key in fields, matching exactly first and then under Unicode
// case folding as encoding/json does, or -1.
func fieldIndex(key []byte, fields []string) int {
	for i, f := range fields {
		if len(f) == len(key) && string(key) == f {
			return i
		}
	}
	for i, f := range fields {
		if bytes.EqualFold(key, []byte(f)) {
			return i
		}
	}
	return -1
}
