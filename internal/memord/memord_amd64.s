//go:build !race

#include "textflag.h"

// func StoreRelease64(p *uint64, v uint64)
// x86-TSO: a plain store is a release store.
TEXT ·StoreRelease64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

// func StoreRelease32(p *uint32, v uint32)
TEXT ·StoreRelease32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func StoreStoreFence()
// x86-TSO keeps store order; the call itself is the compiler barrier.
TEXT ·StoreStoreFence(SB), NOSPLIT, $0-0
	RET
