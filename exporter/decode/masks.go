package decode

import (
	"encoding/binary"
	"math/bits"
)

// The scanner finds the ends of strings from a bitmap index of its input, built once per
// document before parsing (the first stage of simdjson-style parsers, reduced to what this
// decoder needs). For every 64-byte block of the input, two words hold one bit per byte:
//
//	masks[2k]   — the byte is '"'
//	masks[2k+1] — the byte is '\\', a control character (< 0x20) or not ASCII (≥ 0x80)
//
// A string whose body has no "special" byte before its first quote ends at that quote and needs
// neither unescaping, nor UTF-8 validation, nor a control-character check; any other string
// takes the byte-by-byte path, which decides everything (escaped quotes, invalid escapes,
// control characters, UTF-8 replacement) exactly as before. The index therefore only ever
// selects a path: it never accepts or refuses anything on its own.

// blockMasks fills dst[2k], dst[2k+1] for each whole 64-byte block k of src; len(src) is a
// multiple of 64 and len(dst) ≥ len(src)/32. It is set to the fastest implementation the CPU
// supports (see masks_amd64.go); blockMasksGeneric is the portable one.
var blockMasks = blockMasksGeneric

// buildMasks returns the index of data in dst's storage, growing it when needed. The last
// partial block is indexed as if padded with spaces, which are neither quotes nor special.
func buildMasks(data []byte, dst []uint64) []uint64 {
	blocks := (len(data) + 63) / 64
	if cap(dst) < 2*blocks {
		dst = make([]uint64, 2*blocks, 2*blocks+2*blocks/4)
	}
	dst = dst[:2*blocks]
	whole := len(data) &^ 63
	blockMasks(data[:whole], dst)
	if whole < len(data) {
		var tail [64]byte
		for i := range tail {
			tail[i] = ' '
		}
		copy(tail[:], data[whole:])
		blockMasksGeneric(tail[:], dst[2*(whole/64):])
	}
	return dst
}

// blockMasksGeneric computes the index eight bytes at a time with exact per-byte tests (no
// borrow propagation between bytes) and gathers each byte's flag into one bit.
func blockMasksGeneric(src []byte, dst []uint64) {
	const (
		low7 = 0x7f7f7f7f7f7f7f7f
		msb  = 0x8080808080808080
	)
	for k := 0; k+64 <= len(src); k += 64 {
		var quote, special uint64
		for j := 0; j < 64; j += 8 {
			w := binary.LittleEndian.Uint64(src[k+j:])
			// isZero(t): the high bit of each byte of ^(((t&low7)+low7)|t) is set iff the byte is 0.
			q := w ^ (lsb * '"')
			b := w ^ (lsb * '\\')
			qm := ^(((q & low7) + low7) | q) & msb
			bm := ^(((b & low7) + low7) | b) & msb
			// A byte is < 0x20 iff its high bit is clear and its low seven bits plus 0x60 stay below 0x80.
			cm := ^(((w & low7) + lsb*0x60) | w) & msb
			sm := bm | cm | w&msb
			quote |= gather(qm) << j
			special |= gather(sm) << j
		}
		dst[2*(k/64)] = quote
		dst[2*(k/64)+1] = special
	}
}

// gather moves the high bit of each byte of m (all other bits clear) into the low byte: bit i of
// the result is the high bit of byte i.
func gather(m uint64) uint64 {
	return (m >> 7) * 0x0102040810204080 >> 56
}

// plainEnd returns the index of the first '"' at or after start when no special byte precedes
// it; ok is false when one does (or no quote follows), and the caller takes the byte-by-byte path.
// The common case, a quote within the same block, is small enough to be inlined.
func (s *scanner) plainEnd(start int) (end int, ok bool) {
	k := 2 * uint(start>>6)
	if m := s.masks; k+1 < uint(len(m)) {
		sh := uint(start & 63)
		if q := m[k] >> sh; q != 0 {
			t := bits.TrailingZeros64(q)
			return start + t, (m[k+1]>>sh)&(1<<t-1) == 0
		}
	}
	return s.plainEndFar(start)
}

// plainEndFar is plainEnd for a string that does not end in its first block.
func (s *scanner) plainEndFar(start int) (end int, ok bool) {
	m := s.masks
	k := 2 * (start >> 6)
	if k+1 >= len(m) || m[k+1]>>uint(start&63) != 0 {
		return 0, false
	}
	for k += 2; k+1 < len(m); k += 2 {
		q, sp := m[k], m[k+1]
		if q != 0 {
			t := bits.TrailingZeros64(q)
			return (k/2)*64 + t, sp&(1<<t-1) == 0
		}
		if sp != 0 {
			return 0, false
		}
	}
	return 0, false
}
