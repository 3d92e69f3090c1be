// Package keyhash hashes the short strings and integers that make the exporter's in-process keys
// (deduplication keys, object hashes): a multiply-xorshift round per integer and one 128-bit
// multiply per sixteen bytes of a string, as wyhash does. Keys start from a random seed (Seed),
// so that nobody outside the process can choose inputs that collide. The hashes are never stored
// or compared across processes.
package keyhash

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Seed returns a random seed.
func Seed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// Mix folds v into h (a multiply-xorshift round: each step is a bijection of h for a fixed v).
func Mix(h, v uint64) uint64 {
	h = (h ^ v) * 0x9e3779b97f4a7c15
	return h ^ h>>32
}

// String folds s into h sixteen bytes at a time (one 128-bit multiply each, as wyhash does), the
// last block ending with its length so that the boundaries between consecutive strings count.
// Every byte of s is read: blocks, then an overlapping last block, or for short strings loads
// that together cover it.
func String(h uint64, s string) uint64 {
	n := len(s)
	b := unsafe.Slice(unsafe.StringData(s), n)
	var lo, hi uint64
	switch {
	case n > 16:
		for len(b) > 16 {
			h = mum(h^binary.LittleEndian.Uint64(b), k1^binary.LittleEndian.Uint64(b[8:]))
			b = b[16:]
		}
		b = unsafe.Slice(unsafe.StringData(s[n-16:]), 16)
		lo, hi = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	case n >= 8:
		lo, hi = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		lo = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
	case n > 0:
		lo = uint64(b[0]) | uint64(b[n/2])<<8 | uint64(b[n-1])<<16
	}
	return mum(h^lo, k2^hi^uint64(n))
}

const (
	k1 = 0xe7037ed1a0b428db
	k2 = 0xa0761d6478bd642f
)

// mum multiplies a and b to 128 bits and folds the halves.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
