//go:build amd64 && !purego

package decode

import (
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestVectorMasks checks each vector implementation this CPU has against the definition, whichever
// one blockMasks picked.
func TestVectorMasks(t *testing.T) {
	impls := map[string]struct {
		ok bool
		f  func(*byte, int, *uint64)
	}{
		"avx2":   {cpu.X86.HasAVX2, blockMasksAVX2},
		"avx512": {cpu.X86.HasAVX512BW, blockMasksAVX512},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 64*37)
	for i := range data {
		data[i] = byte(rng.IntN(256))
		if rng.IntN(3) == 0 {
			data[i] = "\"\\\x00\x1f\x20\x7f\x80"[rng.IntN(7)]
		}
	}
	want := referenceMasks(data)
	for name, impl := range impls {
		if !impl.ok {
			t.Logf("%s: not on this CPU", name)
			continue
		}
		got := make([]uint64, len(want))
		impl.f(&data[0], len(data)/64, &got[0])
		if !slices.Equal(got, want) {
			t.Errorf("%s masks differ from the definition", name)
		}
	}
}
