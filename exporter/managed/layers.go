package managed

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"

	"github.com/klauspost/compress/gzip"
)

// The layers around audit events — base64 in JSON strings, gzip in Firehose records and
// CloudWatch exports — are undone into reused buffers whose size is checked before any byte is
// produced: base64 by its decoded length, gzip by stopping the inflater one byte past the bound,
// so a gzip bomb costs at most the bound in memory and in inflating time.

// errTooLarge is returned by a layer whose decoded size would pass its bound.
var errTooLarge = errors.New("decoded record too large")

// errBase64 is returned for data that is not standard base64.
var errBase64 = errors.New("record data is not base64")

// errGzip is returned for data that is not a gzip stream.
var errGzip = errors.New("record data is not valid gzip")

// unbase64 decodes standard base64 (with padding) into buf, refusing output longer than max.
func unbase64(buf, src []byte, max int) ([]byte, error) {
	if base64.StdEncoding.DecodedLen(len(src)) > max+2 { // +2: padding makes DecodedLen an upper bound
		return buf[:0], errTooLarge
	}
	n := base64.StdEncoding.DecodedLen(len(src))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	m, err := base64.StdEncoding.Decode(buf, src)
	if err != nil {
		return buf[:0], errBase64
	}
	if m > max {
		return buf[:0], errTooLarge
	}
	return buf[:m], nil
}

// isGzip reports whether b starts with the gzip magic number.
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// inflater undoes gzip with a reused reader and buffer.
type inflater struct {
	zr  *gzip.Reader
	src bytes.Reader
	buf []byte
}

// gunzip inflates src (one or more gzip members) into the inflater's buffer, refusing output
// longer than max. The result is valid until the next call.
func (f *inflater) gunzip(src []byte, max int) ([]byte, error) {
	f.src.Reset(src)
	if f.zr == nil {
		zr, err := gzip.NewReader(&f.src)
		if err != nil {
			return nil, errGzip
		}
		f.zr = zr
	} else if err := f.zr.Reset(&f.src); err != nil {
		return nil, errGzip
	}
	buf := f.buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > max {
				f.buf = buf[:0]
				return nil, errTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.zr.Read(buf[len(buf):min(cap(buf), max+1)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			f.buf = buf[:0]
			return nil, errTooLarge
		}
		if err == io.EOF {
			f.buf = buf
			return buf, nil
		}
		if err != nil {
			f.buf = buf[:0]
			return nil, errGzip
		}
	}
}
