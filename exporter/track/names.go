package track

// nameCache remembers the name behind a hash (an actor or a pod) for a bounded number of hashes,
// so that a detection can name the other party of a fight or race without the per-object state
// holding strings. A name evicted before it is needed is reported as unknownName.
//
// A hash has two slots, and a name put evicts the less recently put of them: the names of one
// write (its actor and its pod) both survive until the next write has read them, whatever their
// hashes, so only a name that other writes have pushed out since is unknown.
type nameCache struct {
	slots []nameSlot // the pair for a hash is slots[2i] (most recently put) and slots[2i+1]
	mask  uint64     // over pairs
}

type nameSlot struct {
	hash uint64
	name string
}

const unknownName = "unknown"

func newNameCache(size int) *nameCache {
	n := 2
	for n < size {
		n <<= 1
	}
	return &nameCache{slots: make([]nameSlot, n), mask: uint64(n/2 - 1)}
}

func (c *nameCache) pair(hash uint64) *[2]nameSlot {
	i := 2 * (hash & c.mask)
	return (*[2]nameSlot)(c.slots[i : i+2])
}

func (c *nameCache) put(hash uint64, name string) {
	p := c.pair(hash)
	if p[0].hash == hash {
		if p[0].name != name {
			p[0].name = name
		}
		return
	}
	// The other slot is dropped, whether it held this hash (now in front) or the older name.
	p[0], p[1] = nameSlot{hash: hash, name: name}, p[0]
}

func (c *nameCache) get(hash uint64) string {
	p := c.pair(hash)
	switch hash {
	case p[0].hash:
		return p[0].name
	case p[1].hash:
		return p[1].name
	}
	return unknownName
}
