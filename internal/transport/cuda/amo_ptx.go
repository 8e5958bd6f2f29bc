package cudatr

import (
	"fmt"
	"strings"

	"github.com/goshmem/goshmem/internal/transport"
)

// amoPTX is a module of one-thread kernels that perform the host API's
// atomics on device memory (a CPU cannot issue an atomic on GPU memory).
// Each kernel runs atom.global.sys on the target address (a local or a
// peer-mapped device address) and stores the old value to out, a mapped
// pinned host word. Handwritten PTX: the driver JIT-compiles it, so the Go
// build needs no nvcc. Ref: PTX ISA 7.0, atom (.sys scope needs sm_60+).
func amoPTX() string {
	var b strings.Builder
	b.WriteString(".version 7.0\n.target sm_70\n.address_size 64\n\n")
	for _, w := range []int{32, 64} {
		for op := transport.AMOFetch; op <= transport.AMOXor; op++ {
			fmt.Fprintf(&b, ".visible .entry %s(.param .u64 pa, .param .u64 pv, .param .u64 pc, .param .u64 po)\n{\n", amoKernel(op, w))
			fmt.Fprintf(&b, "\t.reg .b64 %%a, %%o, %%v64, %%c64;\n\t.reg .b%d %%v, %%c, %%r;\n", w)
			b.WriteString("\tld.param.u64 %a, [pa];\n\tld.param.u64 %o, [po];\n\tld.param.u64 %v64, [pv];\n\tld.param.u64 %c64, [pc];\n")
			if w == 32 {
				b.WriteString("\tcvt.u32.u64 %v, %v64;\n\tcvt.u32.u64 %c, %c64;\n")
			} else {
				b.WriteString("\tmov.b64 %v, %v64;\n\tmov.b64 %c, %c64;\n")
			}
			switch op {
			case transport.AMOFetch:
				fmt.Fprintf(&b, "\tatom.global.sys.or.b%d %%r, [%%a], 0;\n", w)
			case transport.AMOSet, transport.AMOSwap:
				fmt.Fprintf(&b, "\tatom.global.sys.exch.b%d %%r, [%%a], %%v;\n", w)
			case transport.AMOCompareSwap:
				fmt.Fprintf(&b, "\tatom.global.sys.cas.b%d %%r, [%%a], %%c, %%v;\n", w)
			case transport.AMOAdd:
				fmt.Fprintf(&b, "\tatom.global.sys.add.u%d %%r, [%%a], %%v;\n", w)
			case transport.AMOAnd:
				fmt.Fprintf(&b, "\tatom.global.sys.and.b%d %%r, [%%a], %%v;\n", w)
			case transport.AMOOr:
				fmt.Fprintf(&b, "\tatom.global.sys.or.b%d %%r, [%%a], %%v;\n", w)
			case transport.AMOXor:
				fmt.Fprintf(&b, "\tatom.global.sys.xor.b%d %%r, [%%a], %%v;\n", w)
			}
			fmt.Fprintf(&b, "\tst.global.b%d [%%o], %%r;\n\tret;\n}\n\n", w)
		}
	}
	return b.String()
}

func amoKernel(op transport.AMO, width int) string {
	return fmt.Sprintf("goshmemi_host_amo_%s_%d", op, width)
}
