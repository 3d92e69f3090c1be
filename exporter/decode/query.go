package decode

import (
	"bytes"
	"unicode/utf8"
)

// params sets each query parameter that the rows of sch list (a request URI's, as uriQuery
// declares them) to its first value in uri, or to "" when uri has none. Values are decoded as
// url.ParseQuery decodes them (and Values.Get picks them): pairs containing ';' are ignored, and
// so are pairs whose key or value is not validly escaped. A value whose escapes decode to bytes
// that are not UTF-8 (fieldManager=%FF, which the API server accepts) has each such byte replaced
// by U+FFFD, as the event's JSON strings have: values become label values, and one that is not
// UTF-8 would fail every scrape of the exporter's metrics.
func (d *Decoder) params(ev *Event, sch *schema, uri []byte) {
	params := sch.members
	var found uint64
	if q := bytes.IndexByte(uri, '?'); q >= 0 {
		for query := uri[q+1:]; len(query) > 0; {
			var pair []byte
			pair, query, _ = bytes.Cut(query, []byte{'&'})
			key, val, _ := bytes.Cut(pair, []byte{'='})
			// (A key with a ';' names no parameter, so only the value needs that check.)
			i := paramIndex(params, key)
			if i < 0 || found&(1<<i) != 0 || bytes.IndexByte(val, ';') >= 0 {
				continue
			}
			if bytes.IndexByte(val, '%') >= 0 || bytes.IndexByte(val, '+') >= 0 {
				var ok bool
				if d.query, ok = unescapeQuery(val, d.query[:0]); !ok {
					continue
				}
				val = d.query
				if !utf8.Valid(val) {
					val = validUTF8(val)
				}
			}
			*params[i].str(ev) = d.internAt(params[i].slot, val)
			if found |= 1 << i; found == uint64(1)<<len(params)-1 {
				return
			}
		}
	}
	for i := range params {
		if found&(1<<i) == 0 {
			*params[i].str(ev) = ""
		}
	}
}

// paramIndex returns the index of the parameter whose name the raw key decodes to, or -1.
func paramIndex(params []member, key []byte) int {
	for i := range params {
		if params[i].name == string(key) {
			return i
		}
	}
	if bytes.IndexByte(key, '%') < 0 && bytes.IndexByte(key, '+') < 0 {
		return -1
	}
	return escapedParamIndex(params, key)
}

// escapedParamIndex is paramIndex for a key with escapes.
func escapedParamIndex(params []member, key []byte) int {
	// An escaped byte takes at most three: a longer key cannot decode to a parameter's name.
	var tmp [3 * maxParamLen]byte
	if len(key) > len(tmp) {
		return -1
	}
	out, ok := unescapeQuery(key, tmp[:0])
	if !ok {
		return -1
	}
	for i := range params {
		if params[i].name == string(out) {
			return i
		}
	}
	return -1
}

// unescapeQuery percent-decodes s (with '+' as space) into out; ok is false for a malformed
// escape, as url.QueryUnescape would report.
func unescapeQuery(s, out []byte) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return out, false
			}
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case '+':
			out = append(out, ' ')
		default:
			out = append(out, c)
		}
	}
	return out, true
}

// validUTF8 returns b with each byte that does not start a valid UTF-8 sequence replaced by
// U+FFFD, as encoding/json decodes such bytes in a string.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, 3*len(b)) // U+FFFD takes 3 bytes
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
