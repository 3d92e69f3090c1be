package decode

// Walker reads the JSON documents that carry audit events inside them — a Firehose request, a
// CloudWatch Logs payload, a Pub/Sub push, an Event Hub body — with the decoder's scanner:
// encoding/json's syntax and nesting limit, strings unescaped into a reused buffer, nothing
// allocated at steady state. The caller says what each member means; the walker only reads.
//
// Each method consumes one value at the current position. Byte slices it returns (keys and
// strings) are valid until the walker reads the next string.
type Walker struct {
	s scanner
}

// Reset starts reading data, which must stay unchanged while it is read.
func (w *Walker) Reset(data []byte) { w.s.reset(data) }

// Offset is the position reached in the document (for error messages).
func (w *Walker) Offset() int { return w.s.pos }

// Object reads an object, calling member with each key; member must consume the value with one
// of the walker's methods. A null is read as an empty object.
func (w *Walker) Object(member func(key []byte) error) error {
	s := &w.s
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if err := s.openObject(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, ok, err := s.member(first)
		if err != nil || !ok {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
	}
}

// Array reads an array, calling elem for each element; elem must consume it. A null is read as
// an empty array.
func (w *Walker) Array(elem func() error) error {
	s := &w.s
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
		if err := elem(); err != nil {
			return err
		}
	}
}

// String reads a string (null reads as empty) and returns its unescaped bytes.
func (w *Walker) String() ([]byte, error) {
	if null, err := w.s.isNull(); null || err != nil {
		return nil, err
	}
	return w.s.str()
}

// Int reads an integer that fits in 63 bits (null reads as 0).
func (w *Walker) Int() (int64, error) {
	s := &w.s
	if null, err := s.isNull(); null || err != nil {
		return 0, err
	}
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, s.errorf("want a number")
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	var v int64
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, s.errorf("want an integer")
		}
		if v > (1<<63-1-9)/10 {
			return 0, s.errorf("integer overflows int64")
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, nil
}

// Skip reads any value, validating it.
func (w *Walker) Skip() error { return w.s.skip() }

// Value reads any value, validating it, and returns its bytes as they stand in the document.
func (w *Walker) Value() ([]byte, error) {
	s := &w.s
	s.ws()
	start := s.pos
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

// Peek returns the first byte of the next value ('{', '[', '"', a digit, 'n' …) or 0 at the end.
func (w *Walker) Peek() byte { return w.s.peek() }

// End checks that nothing but whitespace follows.
func (w *Walker) End() error { return w.s.end() }
