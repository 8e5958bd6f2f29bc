// Package cxihost runs the CXI device header (include/goshmem/cxi.h)
// compiled for the host: the calling OS thread is the "GPU thread" of one
// PE, against that PE's cxi.Rank (its monitor and libfabric deferred work).
// The CPU flavour of goshmem-perf cxi and the multi-process CXI test use it.
//
// This is the package's only cgo file.
package cxihost

/*
#cgo CFLAGS: -std=c11 -O2 -Wall -Wextra -Werror -pthread -I${SRCDIR}/../../../include
#cgo LDFLAGS: -pthread
#include "cxihost.h"
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// Result is what one call reports (cxih_result_t).
type Result struct {
	RC           int // GOSHMEMX_CXI_* (0: OK, 1: timed out / monitor stopped); -1: Check's board is too short
	Done         uint64
	Total        time.Duration
	Max, Min     time.Duration
	AMGot, AMBad uint64
	Sink         float64
	// Early counts the barriers of Check that returned before some PE had
	// stored its arrival on the board; EarlyIter, EarlyPE and EarlySeen
	// describe the first (barrier, PE, its board value then).
	Early              uint64
	EarlyIter, EarlyPE int
	EarlySeen          uint64
}

// BoardStride is the distance in uint64 words between two PEs' slots of
// Check's board (one 64-byte line each).
const BoardStride = C.CXIH_BOARD_STRIDE

func conv(r *C.cxih_result_t) Result {
	mn := time.Duration(r.min_ns)
	if uint64(r.min_ns) == ^uint64(0) {
		mn = 0
	}
	return Result{RC: int(r.rc), Done: uint64(r.done), Total: time.Duration(r.total_ns), Max: time.Duration(r.max_ns),
		Min: mn, AMGot: uint64(r.am_got), AMBad: uint64(r.am_bad), Sink: float64(r.sink),
		Early: uint64(r.early), EarlyIter: int(r.early_iter), EarlyPE: int(r.early_pe), EarlySeen: uint64(r.early_seen)}
}

// Thread is a "GPU thread" bound to one PE's CXI state. Its methods must
// run on the goroutine that made it (the OS thread is locked until Close).
type Thread struct {
	state unsafe.Pointer
	pe, n int
}

// NewThread locks the calling goroutine to its OS thread and makes state
// (cxi.Rank.State) its CXI state as PE pe of n.
func NewThread(state unsafe.Pointer, pe, n int) *Thread {
	runtime.LockOSThread()
	t := &Thread{state: state, pe: pe, n: n}
	C.cxih_attach(state, C.int(pe), C.int(n))
	return t
}

// Close unlocks the OS thread.
func (t *Thread) Close() { runtime.UnlockOSThread() }

// Compute runs iters dependent FMAs (one "kernel" of the phase workload).
func Compute(iters int64) float64 { return float64(C.cxih_compute(C.int64_t(iters))) }

// Phases runs the GPU-triggered phase workload in one call: phases x
// (iters FMAs, then goshmemx_cxi_barrier).
func (t *Thread) Phases(iters int64, phases int) Result {
	var r C.cxih_result_t
	C.cxih_phases(C.int64_t(iters), C.int(phases), &r)
	return conv(&r)
}

// Barriers runs count goshmemx_cxi_barrier calls back to back.
func (t *Thread) Barriers(count int64) Result {
	var r C.cxih_result_t
	C.cxih_barriers(C.int64_t(count), &r)
	return conv(&r)
}

// Triggers rings the state's bench_doorbell count times (the emulated
// trigger's one store: release, system scope) and reports the total time.
func (t *Thread) Triggers(count int64) Result {
	var r C.cxih_result_t
	C.cxih_triggers(C.int64_t(count), &r)
	return conv(&r)
}

// Check runs iters barriers, each PE storing its arrival number on board
// (memory every PE of the job maps, n*BoardStride words, zeroed before the
// first call) before it enters and reading every PE's after the barrier
// returns: Result.Early counts barriers that returned before some PE
// arrived. PE i mod n sleeps skew before its store for barrier i, so a
// barrier that does not wait is caught. Then am active messages to every
// PE with contents and order checked. board is C or mmap'd memory.
func (t *Thread) Check(iters int, skew time.Duration, am int, board []uint64) Result {
	var r C.cxih_result_t
	if len(board) < t.n*BoardStride {
		r.rc = C.int(-1)
		return conv(&r)
	}
	C.cxih_check(C.int(iters), C.uint64_t(skew), C.int(am), (*C.uint64_t)(unsafe.Pointer(&board[0])), &r)
	return conv(&r)
}
