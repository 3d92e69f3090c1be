package track

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestSelectOldestPutsTheNOldestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		size := 1 + rng.IntN(80)
		all := make([]aged, size)
		for i := range all {
			// Few distinct times, so that ties are broken by key.
			all[i] = aged{seen: int64(rng.IntN(8)), key: uint64(i)*7919 + uint64(trial)}
		}
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b aged) int {
			if a.older(b) {
				return -1
			}
			return 1
		})
		n := 1 + rng.IntN(size)
		selectOldest(all, n)
		got := slices.Clone(all[:n])
		slices.SortFunc(got, func(a, b aged) int {
			if a.older(b) {
				return -1
			}
			return 1
		})
		if !slices.Equal(got, want[:n]) {
			t.Fatalf("size %d, n %d: got %v, want %v", size, n, got, want[:n])
		}
	}
}

func TestOffenderTableEvictsTheOldestQuarterWhenFull(t *testing.T) {
	tab := newOffenderTable[int](8, time.Hour)
	for i := range 8 {
		tab.add(uint64(i+1), i, t0.Add(time.Duration(i)*time.Second))
	}
	// Refresh the two oldest, so that 3, 4 (and not 1, 2) are the oldest now.
	tab.get(1, t0.Add(time.Minute))
	tab.get(2, t0.Add(time.Minute))
	tab.add(100, 100, t0.Add(2*time.Minute))
	for key, live := range map[uint64]bool{1: true, 2: true, 3: false, 4: false, 5: true, 8: true, 100: true} {
		if got := tab.get(key, t0.Add(2*time.Minute)) != nil; got != live {
			t.Errorf("key %d live = %v, want %v", key, got, live)
		}
	}
	if tab.evictions != 2 {
		t.Errorf("evictions = %d, want 2", tab.evictions)
	}
	if v := tab.get(100, t0.Add(2*time.Minute)); v == nil || *v != 100 {
		t.Errorf("new entry = %v, want 100", v)
	}
}

func TestOffenderTableExpiresEntriesAfterTTL(t *testing.T) {
	tab := newOffenderTable[int](4, time.Minute)
	tab.add(1, 1, t0)
	tab.add(2, 2, t0.Add(50*time.Second))
	if tab.get(1, t0.Add(61*time.Second)) != nil {
		t.Error("entry 1 outlived its TTL")
	}
	if v := tab.get(2, t0.Add(61*time.Second)); v == nil || *v != 2 {
		t.Errorf("entry 2 = %v, want 2 (moved into the freed slot)", v)
	}
	if len(tab.entries) != 1 || len(tab.index) != 1 {
		t.Errorf("entries %d, index %d, want 1 and 1", len(tab.entries), len(tab.index))
	}
}
