package exporter

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/loopwatch/loopwatch/exporter/track"
)

// The replication stream: what the leader sends a standby over one long HTTP/2 response
// (POST /replicate), and the standby's acknowledgements over the request body. A frame is a
// type byte, the payload's length (uvarint) and the payload; numbers are uvarints, strings and
// byte strings a uvarint length and the bytes. An acknowledgement is a frame of its own
// (frameAck) naming the last step or marker the standby has applied.

// frameType is the first byte of a frame.
type frameType byte

const (
	// frameHello opens the stream: the protocol version, the leader's identity and the settings
	// both must share (the reorder wait and bound).
	frameHello frameType = iota + 1
	// frameDefine names a shared series: id, family, label values.
	frameDefine
	// frameDrop forgets a series the leader deleted (an actor demoted).
	frameDrop
	// frameUnscraped is the leader's increments since Prometheus last scraped it, when the
	// standby joins: the standby holds them for the leader until the next scrape marker.
	frameUnscraped
	// frameWaiting is the leader's reorder buffer when the standby joins, and the event time
	// through which it has taken writes.
	frameWaiting
	// frameJoined ends the join: the standby is in step from here on (seq to acknowledge).
	frameJoined
	// frameStep is one step of the leader's pipeline: a batch (its body and which of its events
	// the leader's deduplicator let through; none for a step of the release timer), the event time
	// through which writes were then taken, and the increments it made.
	frameStep
	// frameMarker says Prometheus is being served the leader's counters as they stand: every
	// increment before it has been seen (the standby forgets them).
	frameMarker
	// frameBye says the leader is stepping down: nothing follows, and it counts nothing more.
	frameBye
	// frameAck is the standby's acknowledgement of a sequence number.
	frameAck
)

// streamVersion is frameHello's protocol version.
const streamVersion = 1

// frameOverhead bounds a step frame beyond its body: verdicts (a bit per event), the release
// time, and up to five increments per event of the batch's limit.
func frameOverhead(maxEvents int) int { return maxEvents/8 + 64 + 5*maxEvents*16 }

// frameWriter appends frames to a buffer.
type frameWriter struct{ buf []byte }

func (w *frameWriter) begin(t frameType) int {
	w.buf = append(w.buf, byte(t))
	// The length is written as a fixed 5-byte uvarint once the payload is known.
	w.buf = append(w.buf, 0x80, 0x80, 0x80, 0x80, 0)
	return len(w.buf)
}

func (w *frameWriter) end(start int) {
	n := uint32(len(w.buf) - start)
	l := w.buf[start-5 : start]
	for i := range 4 {
		l[i] = byte(n>>(7*i)) | 0x80
	}
	l[4] = byte(n >> 28)
}

func (w *frameWriter) uint(v uint64)     { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *frameWriter) int(v int64)       { w.buf = binary.AppendVarint(w.buf, v) }
func (w *frameWriter) bytes(b []byte)    { w.uint(uint64(len(b))); w.buf = append(w.buf, b...) }
func (w *frameWriter) string(s string)   { w.uint(uint64(len(s))); w.buf = append(w.buf, s...) }
func (w *frameWriter) reset()            { w.buf = w.buf[:0] }
func (w *frameWriter) frame(t frameType) { w.end(w.begin(t)) }

func (w *frameWriter) hello(leader string, wait int64, maxReorderBytes int64) {
	s := w.begin(frameHello)
	w.uint(streamVersion)
	w.string(leader)
	w.int(wait)
	w.int(maxReorderBytes)
	w.end(s)
}

func (w *frameWriter) define(sc *shared) {
	s := w.begin(frameDefine)
	w.uint(uint64(sc.id))
	w.uint(uint64(sc.fam))
	w.uint(uint64(len(sc.labels)))
	for _, l := range sc.labels {
		w.string(l)
	}
	w.end(s)
}

func (w *frameWriter) drop(id uint32) {
	s := w.begin(frameDrop)
	w.uint(uint64(id))
	w.end(s)
}

func (w *frameWriter) deltas(t frameType, ds []delta) {
	s := w.begin(t)
	w.deltaList(ds)
	w.end(s)
}

func (w *frameWriter) deltaList(ds []delta) {
	w.uint(uint64(len(ds)))
	for _, d := range ds {
		w.uint(uint64(d.id))
		w.uint(d.n)
	}
}

func (w *frameWriter) waiting(ws []track.WaitingWrite, released int64) {
	s := w.begin(frameWaiting)
	w.int(released)
	w.uint(uint64(len(ws)))
	for i := range ws {
		ww := &ws[i]
		w.int(ww.At)
		w.uint(uint64(ww.Code))
		if ww.Impersonated {
			w.uint(1)
		} else {
			w.uint(0)
		}
		for _, str := range [...]string{ww.Verb, ww.Actor, ww.ActorLabel, ww.Group, ww.Resource, ww.Pod, ww.Manager, ww.Agent,
			ww.Webhook, ww.Object.Group, ww.Object.Resource, ww.Object.Namespace, ww.Object.Name, ww.Object.Subresource} {
			w.string(str)
		}
	}
	w.end(s)
}

func (w *frameWriter) seq(t frameType, seq uint64) {
	s := w.begin(t)
	w.uint(seq)
	w.end(s)
}

// step writes a step frame; body is nil for a step of the release timer.
func (w *frameWriter) step(seq uint64, body, verdicts []byte, released int64, ds []delta) {
	s := w.begin(frameStep)
	w.uint(seq)
	w.bytes(body)
	w.bytes(verdicts)
	w.int(released)
	w.deltaList(ds)
	w.end(s)
}

// errFrame is a frame that does not parse.
var errFrame = errors.New("malformed replication frame")

// frameReader reads frames, each at most max bytes.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next reads a frame; its payload is valid until the next call.
func (fr *frameReader) next() (frameType, *payload, error) {
	t, err := fr.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(fr.r)
	if err != nil {
		return 0, nil, fmt.Errorf("read frame length: %w", err)
	}
	if n > uint64(fr.max) {
		return 0, nil, fmt.Errorf("replication frame of %d bytes, more than %d", n, fr.max)
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n)
	}
	fr.buf = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, fr.buf); err != nil {
		return 0, nil, fmt.Errorf("read frame: %w", err)
	}
	return frameType(t), &payload{b: fr.buf}, nil
}

// payload reads a frame's fields; the first error sticks.
type payload struct {
	b   []byte
	err error
}

func (p *payload) uint() uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.err = errFrame
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *payload) int() int64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.err = errFrame
		return 0
	}
	p.b = p.b[n:]
	return v
}

// bytes returns a byte string aliasing the frame.
func (p *payload) bytes() []byte {
	n := p.uint()
	if p.err != nil || n > uint64(len(p.b)) {
		p.err = errFrame
		return nil
	}
	b := p.b[:n:n]
	p.b = p.b[n:]
	return b
}

func (p *payload) string() string { return string(p.bytes()) }

func (p *payload) id() uint32 {
	v := p.uint()
	if v > math.MaxUint32 {
		p.err = errFrame
	}
	return uint32(v)
}

func (p *payload) deltaList(out []delta) []delta {
	n := p.uint()
	if n > uint64(len(p.b)) { // every delta takes at least two bytes
		p.err = errFrame
		return out
	}
	for range n {
		id := p.id()
		out = append(out, delta{id, p.uint()})
	}
	return out
}

func (p *payload) waiting() (ws []track.WaitingWrite, released int64) {
	released = p.int()
	n := p.uint()
	if n > uint64(len(p.b)) {
		p.err = errFrame
		return nil, 0
	}
	ws = make([]track.WaitingWrite, 0, n)
	for range n {
		var w track.WaitingWrite
		w.At = p.int()
		code := p.uint()
		if code > math.MaxInt32 {
			p.err = errFrame
		}
		w.Code = int32(code)
		w.Impersonated = p.uint() == 1
		for _, s := range [...]*string{&w.Verb, &w.Actor, &w.ActorLabel, &w.Group, &w.Resource, &w.Pod, &w.Manager, &w.Agent,
			&w.Webhook, &w.Object.Group, &w.Object.Resource, &w.Object.Namespace, &w.Object.Name, &w.Object.Subresource} {
			*s = p.string()
		}
		ws = append(ws, w)
	}
	return ws, released
}

// done reports the payload's error, or one for bytes left over.
func (p *payload) done() error {
	if p.err == nil && len(p.b) != 0 {
		return errFrame
	}
	return p.err
}
