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

// plainAt returns the index of the closing quote of the string whose body starts at start, when
// the body is plain and that quote is in the block the body starts in. Otherwise it returns -1
// when the body is not plain (the caller takes the general reader) and -2 when it is plain up to
// the end of its block (the caller continues with plainFrom). Small enough to be inlined.
func plainAt(masks []uint64, start int) int {
	k := 2 * uint(start>>6)
	if k+1 >= uint(len(masks)) {
		return -1
	}
	sh := uint(start & 63)
	q, sp := masks[k]>>sh, masks[k+1]>>sh
	// With no quote in the block, t is 64 and the mask below all ones (Go shifts saturate).
	t := bits.TrailingZeros64(q)
	if sp&(1<<t-1) != 0 {
		return -1
	}
	if q == 0 {
		return -2
	}
	return start + t
}

// plainFrom continues plainAt in the blocks after the one holding start.
func plainFrom(masks []uint64, start int) int {
	for k := 2 * (start>>6 + 1); k+1 < len(masks); k += 2 {
		q, sp := masks[k], masks[k+1]
		if q != 0 {
			t := bits.TrailingZeros64(q)
			if sp&(1<<t-1) != 0 {
				return -1
			}
			return (k/2)*64 + t
		}
		if sp != 0 {
			return -1
		}
	}
	return -1
}

// plainEndAt is plainAt followed, when needed, by plainFrom: the closing quote of a plain string
// whose body starts at start, or -1.
func plainEndAt(masks []uint64, start int) int {
	end := plainAt(masks, start)
	if end == -2 {
		end = plainFrom(masks, start)
	}
	return end
}
