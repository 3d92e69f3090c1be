//go:build amd64 && !purego

package decode

import "golang.org/x/sys/cpu"

// blockMasksAVX2 is blockMasks for CPUs with AVX2: 32 bytes per compare (masks_amd64.s).
//
//go:noescape
func blockMasksAVX2(src *byte, blocks int, dst *uint64)

// blockMasksAVX512 is blockMasks for CPUs with AVX-512BW: 64 bytes per compare.
//
//go:noescape
func blockMasksAVX512(src *byte, blocks int, dst *uint64)

func init() {
	var f func(src *byte, blocks int, dst *uint64)
	switch {
	case cpu.X86.HasAVX512BW:
		f = blockMasksAVX512
	case cpu.X86.HasAVX2:
		f = blockMasksAVX2
	default:
		return
	}
	blockMasks = func(src []byte, dst []uint64) {
		if n := len(src) / 64; n > 0 {
			_ = dst[2*n-1]
			f(&src[0], n, &dst[0])
		}
	}
}
