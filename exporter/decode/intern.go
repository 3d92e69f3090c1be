package decode

import "hash/maphash"

// Interner turns byte slices into strings, reusing the string for bytes it has seen recently.
//
// It is a 4-way set-associative cache: a fixed number of slots in sets of four, each set holding
// the four strings that most recently hashed there. Memory is bounded by the slot count whatever
// the input; a repeated value (a username, a resource, an object name being fought over) costs one
// hash and a few compares and no allocation.
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
