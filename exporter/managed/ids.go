package managed

import (
	"hash/maphash"
	"sync"
)

// RecentIDs remembers the IDs of recently accepted deliveries (Firehose requestId, Pub/Sub
// messageId): both services deliver at least once and keep the ID on every attempt, so a
// delivery seen before is acknowledged again without being read twice. Two generations of at
// most size IDs each bound the memory (16 bytes per ID); an ID is remembered for at least size
// later deliveries. Events are deduplicated downstream anyway: this saves the work and counts
// the repeats.
type RecentIDs struct {
	mu        sync.Mutex
	size      int
	seed      maphash.Seed
	cur, prev map[uint64]struct{}
}

// NewRecentIDs returns a set remembering at least size IDs (4096 when size ≤ 0).
func NewRecentIDs(size int) *RecentIDs {
	if size <= 0 {
		size = 4096
	}
	return &RecentIDs{size: size, seed: maphash.MakeSeed(), cur: make(map[uint64]struct{}, size), prev: map[uint64]struct{}{}}
}

// Seen reports whether id was added before.
func (r *RecentIDs) Seen(id []byte) bool {
	h := maphash.Bytes(r.seed, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, a := r.cur[h]
	_, b := r.prev[h]
	return a || b
}

// Add remembers id.
func (r *RecentIDs) Add(id []byte) {
	h := maphash.Bytes(r.seed, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cur) >= r.size {
		r.prev, r.cur = r.cur, make(map[uint64]struct{}, r.size)
	}
	r.cur[h] = struct{}{}
}
