package track

// nameCache remembers the name behind a hash (an actor or a pod) for a bounded number of hashes,
// so that a detection can name the other party of a fight or race without the per-object state
// holding strings. A name evicted before it is needed is reported as unknownName.
type nameCache struct {
	slots []nameSlot
	mask  uint64
}

type nameSlot struct {
	hash uint64
	name string
}

const unknownName = "unknown"

func newNameCache(size int) *nameCache {
	n := 1
	for n < size {
		n <<= 1
	}
	return &nameCache{slots: make([]nameSlot, n), mask: uint64(n - 1)}
}

func (c *nameCache) put(hash uint64, name string) {
	s := &c.slots[hash&c.mask]
	if s.hash != hash || s.name != name {
		*s = nameSlot{hash: hash, name: name}
	}
}

func (c *nameCache) get(hash uint64) string {
	if s := &c.slots[hash&c.mask]; s.hash == hash {
		return s.name
	}
	return unknownName
}
