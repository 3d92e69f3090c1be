package track

import "testing"

func TestNameCacheKeepsThePairLastPut(t *testing.T) {
	c := newNameCache(1) // one pair: every hash shares it
	get := func(want map[uint64]string) {
		t.Helper()
		for h, name := range want {
			if got := c.get(h); got != name {
				t.Errorf("get(%d) = %q, want %q", h, got, name)
			}
		}
	}
	c.put(1, "a")
	c.put(2, "b")
	get(map[uint64]string{1: "a", 2: "b"})
	c.put(3, "c") // evicts a, the less recently put
	get(map[uint64]string{1: unknownName, 2: "b", 3: "c"})
	c.put(2, "b") // b again: now c is the older
	c.put(4, "d")
	get(map[uint64]string{2: "b", 3: unknownName, 4: "d"})
	c.put(4, "d2") // a hash's name can change
	get(map[uint64]string{2: "b", 4: "d2"})
	if n := len(newNameCache(4096).slots); n != 4096 {
		t.Errorf("newNameCache(4096) has %d slots, want 4096", n)
	}
}
