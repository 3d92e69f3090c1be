package decode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ScanLines calls line for every non-blank line of r (the log backend's JSON-lines format) and
// tooLong for every line longer than maxLineBytes, which is skipped without being buffered; both
// get the line's number (from 1). The slice passed to line is only valid during the call. Only
// read errors are returned.
func ScanLines(r io.Reader, maxLineBytes int, line func(n int, b []byte), tooLong func(n int)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	long := false
	n := 1
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > maxLineBytes {
				long, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on
		}
		if long {
			tooLong(n)
		} else if trimmed := bytes.TrimSpace(buf); len(trimmed) > 0 {
			line(n, trimmed)
		}
		buf, long = buf[:0], false
		n++
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read audit log: %w", err)
		}
	}
}
