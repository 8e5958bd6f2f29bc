//go:build !race

#include "textflag.h"

// func StoreRelease64(p *uint64, v uint64)
TEXT ·StoreRelease64(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD v+8(FP), R1
	STLR R1, (R0)
	RET

// func StoreRelease32(p *uint32, v uint32)
TEXT ·StoreRelease32(SB), NOSPLIT, $0-12
	MOVD p+0(FP), R0
	MOVWU v+8(FP), R1
	STLRW R1, (R0)
	RET

// func StoreStoreFence()
// DMB ISHST: earlier stores before later stores, inner shareable domain.
TEXT ·StoreStoreFence(SB), NOSPLIT, $0-0
	DMB $0xa
	RET
