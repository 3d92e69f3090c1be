//go:build amd64 && !purego

package decode

import "golang.org/x/sys/cpu"

// blockMasksAVX2 is blockMasks for CPUs with AVX2: 32 bytes per compare (masks_amd64.s).
//
//go:noescape
func blockMasksAVX2(src *byte, blocks int, dst *uint64)

func init() {
	if cpu.X86.HasAVX2 {
		blockMasks = func(src []byte, dst []uint64) {
			if n := len(src) / 64; n > 0 {
				_ = dst[2*n-1]
				blockMasksAVX2(&src[0], n, &dst[0])
			}
		}
	}
}
