// Package e2e runs goshmem's IBGDA device header in host mode against the
// SoftNIC emulation: C threads (posters.c) post through
// include/goshmem/ibgda/ into SQ rings in C memory; ibgda.SoftNIC executes
// them and writes CQEs the threads poll.
//
// This is the package's only cgo file: it allocates the shared memory in C
// (never the Go heap) and exposes it to the SoftNIC as byte slices.
package e2e

/*
#cgo CFLAGS: -std=c11 -O2 -Wall -Wextra -Werror -pthread -I${SRCDIR}/../../../include
#cgo LDFLAGS: -pthread
#include <stdlib.h>
#include "posters.h"
#include "backend.h"
#include "race.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/goshmem/goshmem/internal/ibgda"
)

// env wraps a C e2e_env_t.
type env struct {
	c        *C.e2e_env_t
	sqWQEBBs uint32
	cqes     uint32
}

func newEnv(nqp int, sqWQEBBs, cqes uint32, threads, iters int, lkey, rkey uint32) (*env, error) {
	c := C.e2e_env_new(C.int(nqp), C.uint32_t(sqWQEBBs), C.uint32_t(cqes), C.int(threads), C.int(iters),
		C.uint32_t(lkey), C.uint32_t(rkey))
	if c == nil {
		return nil, errors.New("e2e: e2e_env_new failed")
	}
	return &env{c: c, sqWQEBBs: sqWQEBBs, cqes: cqes}, nil
}

func (e *env) free() { C.e2e_env_free(e.c) }

func bytesAt(p unsafe.Pointer, n uintptr) []byte { return unsafe.Slice((*byte)(p), n) }

// local and remote regions as bytes, and as 64-bit words.
func (e *env) remote() []byte {
	return bytesAt(unsafe.Pointer(e.c.remote), uintptr(e.c.l.remote_words)*8)
}
func (e *env) local() []byte { return bytesAt(unsafe.Pointer(e.c.local), uintptr(e.c.l.local_words)*8) }

func (e *env) layout() C.e2e_layout_t { return e.c.l }

// qpConfig describes QP q to the SoftNIC.
func (e *env) qpConfig(q int) ibgda.QPConfig {
	qp := e.c.qp[q]
	return ibgda.QPConfig{
		QPN:     uint32(qp.qpn),
		SQ:      ibgda.SQ{Buf: bytesAt(qp.sq_buf, uintptr(e.sqWQEBBs)*64), WQEBBs: e.sqWQEBBs},
		DBRec:   bytesAt(unsafe.Pointer(e.c.dbrec[q]), 8),
		DB:      bytesAt(unsafe.Pointer(e.c.db[q]), 8),
		CQ:      bytesAt(qp.cq_buf, uintptr(e.cqes)*64),
		CQEs:    e.cqes,
		CQDBRec: bytesAt(unsafe.Pointer(e.c.cq_dbrec[q]), 4),
	}
}

func (e *env) qpn(q int) uint32   { return uint32(e.c.qp[q].qpn) }
func (e *env) qpErr(q int) uint64 { return uint64(e.c.qp[q].err) }
func (e *env) peErr() uint64      { return uint64(e.c.err_word) }
func (e *env) casOK(t int) uint64 { return uint64(e.c.cas_ok[t]) }
func (e *env) faOps(t int) uint64 { return uint64(e.c.fa_ops[t]) }
func (e *env) msg() string        { return C.GoString(&e.c.msg[0]) }
func (e *env) qpVersionOK() bool  { return e.c.qp[0].version == C.GOSHMEMI_IBGDA_QP_VERSION }
func qpStructSize() uintptr       { return unsafe.Sizeof(C.goshmemi_ibgda_qp_t{}) }

func (e *env) runThreads(nqpWork int) error {
	if C.e2e_run_threads(e.c, C.int(nqpWork)) != 0 {
		return fmt.Errorf("e2e: threads failed: %s (PE error word %#x)", e.msg(), e.peErr())
	}
	return nil
}

func (e *env) scopeCheck(qa, qb int) error {
	if C.e2e_scope_check(e.c, C.int(qa), C.int(qb)) != 0 {
		return fmt.Errorf("e2e: scope check: %s", e.msg())
	}
	return nil
}

func (e *env) exclRun(q, batch int) error {
	if C.e2e_excl_run(e.c, C.int(q), C.int(batch)) != 0 {
		return fmt.Errorf("e2e: exclusive owner on QP %d: %s", q, e.msg())
	}
	return nil
}

func (e *env) pollRace(q int) error {
	if C.e2e_poll_race(e.c, C.int(q)) != 0 {
		return fmt.Errorf("e2e: poll race: %s", e.msg())
	}
	return nil
}

func (e *env) quietStorm(q, threads, rounds, hookNS int) error {
	if C.e2e_quiet_storm(e.c, C.int(q), C.int(threads), C.int(rounds), C.int(hookNS)) != 0 {
		return fmt.Errorf("e2e: quiet storm: %s", e.msg())
	}
	return nil
}

func (e *env) errorPost(q, kind int) int { return int(C.e2e_error_post(e.c, C.int(q), C.int(kind))) }
func (e *env) postAfterError(q int) int  { return int(C.e2e_post_after_error(e.c, C.int(q))) }

// Error-word fields (GOSHMEMI_IBGDA_ERR_* in qp.h).
func errQPN(w uint64) uint32      { return uint32(w>>32) & 0xffffff }
func errSyndrome(w uint64) uint8  { return uint8(w >> 24) }
func errCQEOpcode(w uint64) uint8 { return uint8(w>>56) & 0xf }

const errCQE = int(C.GOSHMEMI_IBGDA_ERR_CQE)

// qpFieldsByC reads the bytes b (ibgda.EncodeQP's output) through the C
// struct goshmemi_ibgda_qp_t, field by field.
func qpFieldsByC(b []byte) map[string]uint64 {
	p := C.malloc(C.size_t(len(b)))
	defer C.free(p)
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	q := (*C.goshmemi_ibgda_qp_t)(p)
	return map[string]uint64{
		"version": uint64(q.version), "qpn": uint64(q.qpn), "sq_buf": uint64(uintptr(q.sq_buf)),
		"sq_wqebb_cnt": uint64(q.sq_wqebb_cnt), "cq_cqe_cnt": uint64(q.cq_cqe_cnt),
		"dbrec": uint64(uintptr(unsafe.Pointer(q.dbrec))), "db": uint64(uintptr(unsafe.Pointer(q.db))),
		"cq_buf": uint64(uintptr(q.cq_buf)), "cq_dbrec": uint64(uintptr(unsafe.Pointer(q.cq_dbrec))),
		"err_word": uint64(uintptr(unsafe.Pointer(q.err_word))), "lkey_tab": uint64(uintptr(unsafe.Pointer(q.lkey_tab))),
		"rkey_tab": uint64(uintptr(unsafe.Pointer(q.rkey_tab))), "n_lkeys": uint64(q.n_lkeys), "n_rkeys": uint64(q.n_rkeys),
		"scratch_laddr": uint64(q.scratch_laddr), "scratch_lkey": uint64(q.scratch_lkey),
		"sq_nbb": uint64(uintptr(unsafe.Pointer(q.sq_nbb))), "sq_ready_idx": uint64(q.sq_ready_idx),
		"timeout_ns": uint64(q.timeout_ns),
	}
}

// bkEnv wraps a C bk_env_t: two PEs as threads, each calling the IBGDA
// backend's six functions (include/goshmem/ibgda/backend.h).
type bkEnv struct{ c *C.bk_env_t }

const (
	bkPEs     = int(C.BK_PES)
	bkCtx     = int(C.BK_CTX)
	bkHeap    = int(C.BK_HEAP)
	bkSlots   = int(C.BK_SLOTS)
	bkSlotLen = int(C.GOSHMEMI_IBGDA_SLOT_BYTES)
	bkSig     = int(C.BK_SIG)
	bkW8      = int(C.BK_W8)
	bkW4      = int(C.BK_W4)
)

func bkHeapKey(pe int) uint32 { return uint32(0x1000 + pe) }
func bkSlotKey(pe int) uint32 { return uint32(0x2000 + pe) }

func newBkEnv(sqWQEBBs, cqes uint32) (*bkEnv, error) {
	c := C.bk_env_new(C.uint32_t(sqWQEBBs), C.uint32_t(cqes))
	if c == nil {
		return nil, errors.New("e2e: bk_env_new failed")
	}
	return &bkEnv{c: c}, nil
}

func (e *bkEnv) free() { C.bk_env_free(e.c) }

func (e *bkEnv) heap(pe int) []byte {
	return bytesAt(unsafe.Pointer(e.c.pe[pe].heap), uintptr(bkHeap))
}

func (e *bkEnv) slots(pe int) []byte {
	return bytesAt(unsafe.Pointer(e.c.pe[pe].slots), uintptr((bkSlots+bkCtx)*bkSlotLen))
}

// qpConfig describes PE pe's QP for context ctx to the SoftNIC.
func (e *bkEnv) qpConfig(pe, ctx int) ibgda.QPConfig {
	p := &e.c.pe[pe]
	qp := (*C.goshmemi_ibgda_qp_t)(unsafe.Add(unsafe.Pointer(p.qps), uintptr(ctx)*unsafe.Sizeof(C.goshmemi_ibgda_qp_t{})))
	n, cq := uint32(e.c.sq_wqebb), uint32(e.c.cqe_cnt)
	return ibgda.QPConfig{
		QPN:     uint32(qp.qpn),
		SQ:      ibgda.SQ{Buf: bytesAt(qp.sq_buf, uintptr(n)*64), WQEBBs: n},
		DBRec:   bytesAt(unsafe.Pointer(p.dbrec[ctx]), 8),
		DB:      bytesAt(unsafe.Pointer(p.db[ctx]), 8),
		CQ:      bytesAt(qp.cq_buf, uintptr(cq)*64),
		CQEs:    cq,
		CQDBRec: bytesAt(unsafe.Pointer(p.cq_dbrec[ctx]), 4),
	}
}

func (e *bkEnv) run() error {
	if C.bk_run(e.c) != 0 {
		return fmt.Errorf("e2e: IBGDA backend: %s", C.GoString(&e.c.msg[0]))
	}
	return nil
}

func (e *bkEnv) runDevAPI() error {
	if C.dv_run(e.c) != 0 {
		return fmt.Errorf("e2e: device API over IBGDA: %s", C.GoString(&e.c.msg[0]))
	}
	return nil
}

func bkStateSize() uintptr { return unsafe.Sizeof(C.goshmemi_ibgda_state_t{}) }

// stateFieldsByC reads b (ibgda.EncodeState's output) through the C struct
// goshmemi_ibgda_state_t, field by field.
func stateFieldsByC(b []byte) map[string]uint64 {
	p := C.malloc(C.size_t(len(b)))
	defer C.free(p)
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	s := (*C.goshmemi_ibgda_state_t)(p)
	ptr := func(q unsafe.Pointer) uint64 { return uint64(uintptr(q)) }
	return map[string]uint64{
		"version": uint64(s.version), "size": uint64(s.size), "my_pe": uint64(s.my_pe), "n_pes": uint64(s.n_pes),
		"n_ctx": uint64(s.n_ctx), "n_qps": uint64(s.n_qps), "inline_max": uint64(s.inline_max),
		"heap_lkey": uint64(s.heap_lkey), "heap_base": uint64(s.heap_base), "heap_size": uint64(s.heap_size),
		"qps": ptr(unsafe.Pointer(s.qps)), "qp_index": ptr(unsafe.Pointer(s.qp_index)),
		"rkey": ptr(unsafe.Pointer(s.rkey)), "remote_base": ptr(unsafe.Pointer(s.remote_base)),
		"slots": ptr(unsafe.Pointer(s.slots)), "slot_busy": ptr(unsafe.Pointer(s.slot_busy)),
		"n_slots": uint64(s.n_slots), "slot_lkey": uint64(s.slot_lkey),
		"fence_pending": ptr(unsafe.Pointer(s.fence_pending)), "slot_cursor": uint64(s.slot_cursor),
		"flags": uint64(s.flags), "timeout_ns": uint64(s.timeout_ns), "report": ptr(unsafe.Pointer(s.report)),
		"regs": ptr(unsafe.Pointer(s.regs)),
	}
}

// regsLayoutByC is the C layout of the registered-buffer table
// (goshmemi_ibgda_regs_t, goshmemi_ibgda_reg_t), GOSHMEMI_IBGDA_MAX_REGS,
// and the state's fields a growing heap rewrites.
func regsLayoutByC() map[string]uint64 {
	var rs C.goshmemi_ibgda_regs_t
	var r C.goshmemi_ibgda_reg_t
	var st C.goshmemi_ibgda_state_t
	return map[string]uint64{
		"state.heap_lkey": uint64(unsafe.Offsetof(st.heap_lkey)), "state.heap_size": uint64(unsafe.Offsetof(st.heap_size)),
		"max": C.GOSHMEMI_IBGDA_MAX_REGS, "size": uint64(unsafe.Sizeof(rs)), "n": uint64(unsafe.Offsetof(rs.n)),
		"reg": uint64(unsafe.Offsetof(rs.reg)), "reg.size": uint64(unsafe.Sizeof(r)), "reg.base": uint64(unsafe.Offsetof(r.base)),
		"reg.end": uint64(unsafe.Offsetof(r.end)), "reg.lkey": uint64(unsafe.Offsetof(r.lkey)),
	}
}

// Failure paths (backend.c, order_gpu.c): each runs PE 0's script on the
// calling thread with the host trap hook and returns the trap code (0: no
// trap) and the report word the backend wrote for the host.

func (e *bkEnv) timeoutRun(timeoutNS uint64) (code, report uint64) {
	r := (*C.uint64_t)(C.calloc(1, 8))
	defer C.free(unsafe.Pointer(r))
	code = uint64(C.bk_timeout_run(e.c, C.uint64_t(timeoutNS), r))
	return code, uint64(*r)
}

func (e *bkEnv) orderRun(gpuScope bool, flags uint32) (code, report uint64) {
	r := (*C.uint64_t)(C.calloc(1, 8))
	defer C.free(unsafe.Pointer(r))
	if gpuScope {
		code = uint64(C.bk_order_run_gpu(e.c, C.uint32_t(flags), r))
	} else {
		code = uint64(C.bk_order_run(e.c, C.uint32_t(flags), r))
	}
	return code, uint64(*r)
}

func (e *bkEnv) qpn(pe, ctx int) uint32 {
	p := &e.c.pe[pe]
	qp := (*C.goshmemi_ibgda_qp_t)(unsafe.Add(unsafe.Pointer(p.qps), uintptr(ctx)*unsafe.Sizeof(C.goshmemi_ibgda_qp_t{})))
	return uint32(qp.qpn)
}

const (
	errIBGDATimeout = uint64(C.GOSHMEMI_ERR_IBGDA_TIMEOUT)
	errIBGDAOrder   = uint64(C.GOSHMEMI_ERR_IBGDA_ORDER)
	stateHostQueues = uint32(C.GOSHMEMI_IBGDA_STATE_HOST_QUEUES)
)

func orderOfBuilds() (dflt, gpu int) { return int(C.bk_order_default()), int(C.bk_order_gpu()) }
