package decode

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// referenceMasks computes the index one byte at a time, as its definition reads.
func referenceMasks(data []byte) []uint64 {
	out := make([]uint64, 2*((len(data)+63)/64))
	for i, c := range data {
		bit := uint64(1) << (i % 64)
		if c == '"' {
			out[2*(i/64)] |= bit
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			out[2*(i/64)+1] |= bit
		}
	}
	return out
}

func TestMasksMatchTheirDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Bytes drawn mostly from the ones that matter, so that every mask bit is exercised.
	alphabet := []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xff, 'a', '{', ' ', '\n', 0x5b, 0x5d, 0x22 ^ 0x80, 0x5c ^ 0x80}
	for _, n := range []int{0, 1, 7, 8, 63, 64, 65, 127, 128, 129, 1000, 4096 + 17} {
		for range 20 {
			data := make([]byte, n)
			for i := range data {
				if rng.IntN(2) == 0 {
					data[i] = alphabet[rng.IntN(len(alphabet))]
				} else {
					data[i] = byte(rng.IntN(256))
				}
			}
			want := referenceMasks(data)
			if got := buildMasks(data, nil); !slices.Equal(got, want) {
				t.Fatalf("buildMasks(%d bytes) = %x, want %x", n, got, want)
			}
			generic := make([]uint64, len(want))
			whole := n &^ 63
			blockMasksGeneric(data[:whole], generic)
			if !slices.Equal(generic[:2*(whole/64)], want[:2*(whole/64)]) {
				t.Fatalf("blockMasksGeneric(%d bytes) = %x, want %x", n, generic, want)
			}
		}
	}
}

func TestPlainEndAt(t *testing.T) {
	for _, tc := range []struct {
		body string // string body after the opening quote
		end  int    // index of the closing quote, or -1 when the slow path must decide
	}{
		{`abc"`, 3},
		{`"`, 0},
		{`a\"b"`, -1},
		{"a\tb\"", -1},
		{"é\"", -1},
		{`abc`, -1},
		{"0123456789012345678901234567890123456789012345678901234567890123456789\"", 70},
		{"0123456789012345678901234567890123456789012345678901234567890123456789\\\"", -1},
	} {
		for pad := range 70 { // every alignment of the string in its block
			data := []byte(strings.Repeat(" ", pad+1))
			start := len(data)
			data = append(data, tc.body...)
			end := plainEndAt(buildMasks(data, nil), start)
			ok := end >= 0
			if tc.end < 0 {
				if ok {
					t.Fatalf("%q at %d: plainEndAt = %d, want the slow path", tc.body, start, end)
				}
				continue
			}
			if !ok || end != start+tc.end {
				t.Fatalf("%q at %d: plainEndAt = %d, %v, want %d", tc.body, start, end, ok, start+tc.end)
			}
		}
	}
}
