//go:build amd64 && !purego

#include "textflag.h"

// func blockMasksAVX2(src *byte, blocks int, dst *uint64)
// For each 64-byte block of src, writes the quote mask and the special mask (backslash, control
// character or high bit) to dst, two uint64 words per block.
TEXT ·blockMasksAVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ dst+16(FP), DI
	TESTQ CX, CX
	JZ   done
	MOVQ $0x2222222222222222, AX
	MOVQ AX, X0
	VPBROADCASTQ X0, Y0 // '"'
	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	MOVQ AX, X1
	VPBROADCASTQ X1, Y1 // '\\'
	MOVQ $0x1f1f1f1f1f1f1f1f, AX
	MOVQ AX, X2
	VPBROADCASTQ X2, Y2 // 0x1f

loop:
	VMOVDQU (SI), Y3
	VMOVDQU 32(SI), Y4

	// quotes
	VPCMPEQB  Y0, Y3, Y5
	VPCMPEQB  Y0, Y4, Y6
	VPMOVMSKB Y5, AX
	VPMOVMSKB Y6, BX
	SHLQ      $32, BX
	ORQ       BX, AX
	MOVQ      AX, (DI)

	// specials: '\\', or min(x, 0x1f) == x (x < 0x20), or the high bit of x itself
	VPCMPEQB  Y1, Y3, Y5
	VPMINUB   Y2, Y3, Y7
	VPCMPEQB  Y7, Y3, Y7
	VPOR      Y5, Y7, Y5
	VPOR      Y3, Y5, Y5
	VPCMPEQB  Y1, Y4, Y6
	VPMINUB   Y2, Y4, Y8
	VPCMPEQB  Y8, Y4, Y8
	VPOR      Y6, Y8, Y6
	VPOR      Y4, Y6, Y6
	VPMOVMSKB Y5, AX
	VPMOVMSKB Y6, BX
	SHLQ      $32, BX
	ORQ       BX, AX
	MOVQ      AX, 8(DI)

	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET

// func blockMasksAVX512(src *byte, blocks int, dst *uint64)
// blockMasksAVX2 with one 64-byte compare per class, straight into mask registers.
TEXT ·blockMasksAVX512(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ dst+16(FP), DI
	TESTQ CX, CX
	JZ   done512
	MOVL $0x22, AX
	VPBROADCASTB AX, Z0 // '"'
	MOVL $0x5c, AX
	VPBROADCASTB AX, Z1 // '\\'
	MOVL $0x20, AX
	VPBROADCASTB AX, Z2 // 0x20

loop512:
	VMOVDQU8 (SI), Z3
	VPCMPEQB Z0, Z3, K1      // '"'
	VPCMPEQB Z1, Z3, K2      // '\\'
	VPCMPUB  $1, Z2, Z3, K3  // x < 0x20
	VPMOVB2M Z3, K4          // x ≥ 0x80
	KORQ     K2, K3, K2
	KORQ     K2, K4, K2
	KMOVQ    K1, (DI)
	KMOVQ    K2, 8(DI)
	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  loop512
	VZEROUPPER

done512:
	RET
