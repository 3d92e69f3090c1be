package decode

import "hash/maphash"

// Interner turns byte slices into strings, reusing the string for bytes it has seen recently.
//
// It is a direct-mapped cache: a fixed number of slots, each holding the last string that hashed
// there. Memory is bounded by the slot count whatever the input; a repeated value (a username, a
// resource, an object name being fought over) costs one hash and one compare and no allocation.
type Interner struct {
	seed  maphash.Seed
	mask  uint64
	slots []string
}

// NewInterner returns an interner with at least size slots (rounded up to a power of two).
func NewInterner(size int) *Interner {
	n := 1
	for n < size {
		n <<= 1
	}
	return &Interner{seed: maphash.MakeSeed(), mask: uint64(n - 1), slots: make([]string, n)}
}

// Intern returns a string equal to b.
func (in *Interner) Intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h := maphash.Bytes(in.seed, b)
	s := &in.slots[h&in.mask]
	if *s == string(b) {
		return *s
	}
	*s = string(b)
	return *s
}
