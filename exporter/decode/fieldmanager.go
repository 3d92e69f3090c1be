package decode

import "bytes"

// FieldManager returns the value of the fieldManager query parameter of a request URI, decoded
// like url.ParseQuery would (the first pair that decodes cleanly wins; pairs containing ';' are
// ignored). buf is scratch space for percent-decoding; the (possibly grown) buffer is returned
// for reuse.
func FieldManager(uri, buf []byte) (value, scratch []byte) {
	q := bytes.IndexByte(uri, '?')
	if q < 0 {
		return nil, buf
	}
	query := uri[q+1:]
	for len(query) > 0 {
		var pair []byte
		pair, query, _ = bytes.Cut(query, []byte{'&'})
		if bytes.IndexByte(pair, ';') >= 0 {
			continue
		}
		key, val, _ := bytes.Cut(pair, []byte{'='})
		if !keyIsFieldManager(key) {
			continue
		}
		if bytes.IndexByte(val, '%') < 0 && bytes.IndexByte(val, '+') < 0 {
			return val, buf
		}
		out, ok := unescapeQuery(val, buf[:0])
		buf = out
		if ok {
			return out, buf
		}
	}
	return nil, buf
}

const fieldManagerKey = "fieldManager"

// keyIsFieldManager reports whether the raw key decodes to "fieldManager" (it may be escaped).
func keyIsFieldManager(key []byte) bool {
	if string(key) == fieldManagerKey {
		return true
	}
	if bytes.IndexByte(key, '%') < 0 {
		return false
	}
	var tmp [64]byte
	if len(key) > len(tmp) {
		return false
	}
	out, ok := unescapeQuery(key, tmp[:0])
	return ok && string(out) == fieldManagerKey
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
