// Package e2e runs the CXI device header (include/goshmem/cxi.h) in host
// mode: C threads are the "GPU threads", the Go monitor (cxi.Rank) and the
// libfabric sockets provider's deferred work do the rest.
//
// This is the package's only cgo file.
package e2e

/*
#cgo CFLAGS: -std=c11 -O2 -Wall -Wextra -Werror -pthread -I${SRCDIR}/../../../include
#cgo LDFLAGS: -pthread
#include <stdlib.h>
#include "gputhreads.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// result mirrors e2e_result_t.
type result struct {
	RC             int
	Violations     uint64
	AMBad, AMGot   uint64
	MaxNS, TotalNS uint64
}

// arrivals is C memory shared by the ranks' threads.
type arrivals struct{ p *C.int64_t }

func newArrivals(n int) arrivals {
	return arrivals{p: (*C.int64_t)(C.calloc(C.size_t(n), 8))}
}

func (a arrivals) free() { C.free(unsafe.Pointer(a.p)) }

// run runs e2e_run on a locked OS thread (a "GPU thread").
func run(cxi unsafe.Pointer, pe, n, iters, am int, a arrivals) result {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var r C.e2e_result_t
	C.e2e_run(cxi, C.int(pe), C.int(n), C.int(iters), C.int(am), (*C.int64_t)(unsafe.Pointer(a.p)), &r)
	return result{RC: int(r.rc), Violations: uint64(r.violations), AMBad: uint64(r.am_bad), AMGot: uint64(r.am_got),
		MaxNS: uint64(r.max_ns), TotalNS: uint64(r.total_ns)}
}
