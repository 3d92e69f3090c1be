package decode

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"unicode/utf8"
)

// Interner turns byte slices into strings, reusing the string for bytes it has seen recently.
//
// It is a 4-way set-associative cache: a fixed number of slots in sets of four, each set holding
// the four strings that most recently hashed there. Its memory is bounded by the slot count times
// the longest value it is given: the decoder gives it values of at most Limits.MaxValueBytes
// (longer ones are shortened first, see Shorten). A repeated value (a username, a resource, an
// object name being fought over) costs one hash and a few compares and no allocation.
type Interner struct {
	seed  maphash.Seed
	mask  uint64
	slots []string
}

// NewInterner returns an interner with at least size slots (rounded up to a power of two, at
// least 4).
func NewInterner(size int) *Interner {
	n := 4
	for n < size {
		n <<= 1
	}
	return &Interner{seed: maphash.MakeSeed(), mask: uint64(n - 1), slots: make([]string, n)}
}

// Slots is the interner's slot count.
func (in *Interner) Slots() int { return len(in.slots) }

// Intern returns a string equal to b.
func (in *Interner) Intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := maphash.Bytes(in.seed, b)
	set := in.slots[h&in.mask&^3:][:4]
	for _, s := range set {
		if s == string(b) {
			return s
		}
	}
	copy(set[1:], set[:3])
	set[0] = string(b)
	return set[0]
}

// DefaultMaxValueBytes is the default bound on every string the decoder keeps (Limits): Kubernetes
// names are at most 253 bytes, a service account's username at most 339, so only hostile or
// broken input reaches it.
const DefaultMaxValueBytes = 512

// MinMaxValueBytes is the smallest bound Limits.MaxValueBytes may set: room for a readable prefix
// besides the digest.
const MinMaxValueBytes = 64

// shortenedDigestLen is what Shorten appends: '~' and 16 hexadecimal digits.
const shortenedDigestLen = 1 + 16

// Shorten returns b when it is at most max bytes long, else a string of at most max bytes: the
// longest prefix of b that ends on a UTF-8 character boundary and leaves room for the digest,
// then '~' and the first 16 hexadecimal digits of b's SHA-256. Distinct long values stay distinct
// (and the same value always gets the same form, in every process), so a label value or a report
// built from them never merges two actors or two objects, and none is longer than max. The hash
// is a cryptographic one so that nobody can choose a long name that passes for another's.
func Shorten(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	return string(appendShortened(nil, b, max))
}

func appendShortened(dst, b []byte, max int) []byte {
	cut := max - shortenedDigestLen
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	// A cut inside an invalid sequence would leave a lone lead byte: the decoder only hands over
	// valid UTF-8, and a prefix of it ending on a character start is valid.
	sum := sha256.Sum256(b)
	dst = append(dst, b[:cut]...)
	dst = append(dst, '~')
	return hex.AppendEncode(dst, sum[:8])
}
