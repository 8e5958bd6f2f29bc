// Package devhost runs goshmem's device API (include/goshmem.h) compiled
// for the host (gcc, __atomic builtins): each call sets the calling OS
// thread's device state and "block index", runs one device call, and turns
// a device trap (goshmemi_fail) into its error code instead of abort().
// It is how the proxy path is tested end to end on a CPU: host-mode device
// calls -> remote.h -> proxy.h rings -> the Go worker -> memory.
// Test support only: nothing in the library imports it.
//
// The go command does not track headers outside a package's directory: after
// editing include/goshmem/*.h, `go clean -cache` (or go test -a) before
// trusting a cached test binary of this package's users.
package devhost

/*
#cgo CFLAGS: -std=c11 -O1 -I${SRCDIR}/../../../include
#include <setjmp.h>
#include <stdint.h>
#include <goshmem.h>

static _Thread_local jmp_buf gh_jb;
static _Thread_local uint64_t gh_code;
static void gh_trap(uint64_t code, uint64_t info, const char *what)
{
	(void)info;
	(void)what;
	gh_code = code;
	longjmp(gh_jb, 1);
}
#define GH_BEGIN(st, blk)                                        \
	goshmemx_host_trap_hook = gh_trap;                       \
	goshmemx_host_set_state((goshmemi_device_state_t *)(st)); \
	goshmemx_host_set_block(blk);                            \
	if (setjmp(gh_jb)) return (int)gh_code;

static int gh_putmem(uintptr_t st, int blk, uintptr_t d, uintptr_t s, size_t n, int pe, int nbi)
{
	GH_BEGIN(st, blk);
	if (nbi) goshmem_putmem_nbi((void *)d, (const void *)s, n, pe); else goshmem_putmem((void *)d, (const void *)s, n, pe);
	return 0;
}
static int gh_getmem(uintptr_t st, int blk, uintptr_t d, uintptr_t s, size_t n, int pe, int nbi)
{
	GH_BEGIN(st, blk);
	if (nbi) goshmem_getmem_nbi((void *)d, (const void *)s, n, pe); else goshmem_getmem((void *)d, (const void *)s, n, pe);
	return 0;
}
static int gh_ctx_putmem(uintptr_t st, int blk, int ctx, uintptr_t d, uintptr_t s, size_t n, int pe)
{
	GH_BEGIN(st, blk);
	goshmemx_ctx_putmem_nbi(ctx, (void *)d, (const void *)s, n, pe);
	return 0;
}
static int gh_p64(uintptr_t st, int blk, uintptr_t d, uint64_t v, int pe)
{
	GH_BEGIN(st, blk);
	goshmem_uint64_p((uint64_t *)d, v, pe);
	return 0;
}
static int gh_p16(uintptr_t st, int blk, uintptr_t d, uint16_t v, int pe)
{
	GH_BEGIN(st, blk);
	goshmem_uint16_p((uint16_t *)d, v, pe);
	return 0;
}
static int gh_g64(uintptr_t st, int blk, uintptr_t s, int pe, uint64_t *out)
{
	GH_BEGIN(st, blk);
	*out = goshmem_uint64_g((const uint64_t *)s, pe);
	return 0;
}
static int gh_amo64(uintptr_t st, int blk, int op, uintptr_t d, uint64_t v, uint64_t c, int pe, uint64_t *out)
{
	GH_BEGIN(st, blk);
	uint64_t *p = (uint64_t *)d;
	switch (op) {
	case 0: *out = goshmem_uint64_atomic_fetch(p, pe); break;
	case 1: goshmem_uint64_atomic_set(p, v, pe); break;
	case 2: *out = goshmem_uint64_atomic_swap(p, v, pe); break;
	case 3: *out = goshmem_uint64_atomic_compare_swap(p, c, v, pe); break;
	case 4: *out = goshmem_uint64_atomic_fetch_add(p, v, pe); break;
	case 5: goshmem_uint64_atomic_add(p, v, pe); break;
	case 6: *out = goshmem_uint64_atomic_fetch_or(p, v, pe); break;
	default: *out = goshmem_uint64_atomic_fetch_xor(p, v, pe); break;
	}
	return 0;
}
static int gh_fetch_add32(uintptr_t st, int blk, uintptr_t d, int32_t v, int pe, int32_t *out)
{
	GH_BEGIN(st, blk);
	*out = goshmem_int32_atomic_fetch_add((int32_t *)d, v, pe);
	return 0;
}
static int gh_put_signal(uintptr_t st, int blk, uintptr_t d, uintptr_t s, size_t n, uintptr_t sig, uint64_t v, int op, int pe, int nbi)
{
	GH_BEGIN(st, blk);
	if (nbi) goshmem_putmem_signal_nbi((void *)d, (const void *)s, n, (uint64_t *)sig, v, op, pe);
	else goshmem_putmem_signal((void *)d, (const void *)s, n, (uint64_t *)sig, v, op, pe);
	return 0;
}
static int gh_signal_op(uintptr_t st, int blk, uintptr_t sig, uint64_t v, int op, int pe)
{
	GH_BEGIN(st, blk);
	goshmem_signal_op((uint64_t *)sig, v, op, pe);
	return 0;
}
static int gh_wait_ge(uintptr_t st, int blk, uintptr_t sig, uint64_t v, uint64_t *out)
{
	GH_BEGIN(st, blk);
	*out = goshmem_signal_wait_until((uint64_t *)sig, GOSHMEM_CMP_GE, v);
	return 0;
}
static int gh_quiet(uintptr_t st, int blk, int ctx)
{
	GH_BEGIN(st, blk);
	if (ctx < 0) goshmem_quiet(); else goshmem_ctx_quiet(ctx);
	return 0;
}
static int gh_fence(uintptr_t st, int blk)
{
	GH_BEGIN(st, blk);
	goshmem_fence();
	return 0;
}
static int gh_barrier_all(uintptr_t st, int blk)
{
	GH_BEGIN(st, blk);
	goshmem_barrier_all();
	return 0;
}
static int gh_post_raw(uintptr_t st, int blk, int ctx, uint64_t w0, uint64_t w1, uint64_t *ticket)
{
	GH_BEGIN(st, blk);
	goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
	goshmemi_proxy_ringcfg_t ring = goshmemi_proxy_ring_for(ps, ctx);
	*ticket = goshmemi_proxy_post(ps, &ring, w0, w1, 0, 0, 0, 0);
	return 0;
}
static int gh_producer_p64(uintptr_t st, int blk, int ctx, uintptr_t d, uint64_t first, int n, int pe)
{
	GH_BEGIN(st, blk);
	goshmemx_proxy_producer_t p = goshmemx_proxy_producer_open(ctx);
	for (int i = 0; i < n; i++) goshmemx_proxy_producer_uint64_p(&p, (uint64_t *)d + (i & 7), first + (uint64_t)i, pe);
	return 0;
}
static uint64_t gh_error_code(uintptr_t st) { return ((goshmemi_device_state_t *)st)->error_code; }
static uint64_t gh_error_info(uintptr_t st) { return ((goshmemi_device_state_t *)st)->error_info; }
*/
import "C"

import (
	"fmt"
)

// Error codes of the device API (defs.h, proxy.h) the tests check.
const (
	ErrPEUnreachable = 1
	ErrInvalidArg    = 7
	ErrRemoteUnavail = 16
	ErrProxyDead     = 17
	ErrProxyTimeout  = 18
	ErrProxyRejected = 19
)

// Trap is a device call that trapped: its error code and info.
type Trap struct {
	Code, Info uint64
}

func (t *Trap) Error() string { return fmt.Sprintf("device trap: code %d info %#x", t.Code, t.Info) }

// PE is one "GPU" of host-mode device code: the address of its device
// state (a goshmemi_device_state_t in memory C may use) and its block index.
type PE struct {
	State uintptr
	Block int
}

func (p PE) res(rc C.int) error {
	if rc == 0 {
		return nil
	}
	return &Trap{Code: uint64(C.gh_error_code(C.uintptr_t(p.State))), Info: uint64(C.gh_error_info(C.uintptr_t(p.State)))}
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Putmem runs goshmem_putmem[_nbi](dst, src, n, pe).
func (p PE) Putmem(dst, src uintptr, n int, pe int, nbi bool) error {
	return p.res(C.gh_putmem(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(pe), b2i(nbi)))
}

// Getmem runs goshmem_getmem[_nbi](dst, src, n, pe).
func (p PE) Getmem(dst, src uintptr, n int, pe int, nbi bool) error {
	return p.res(C.gh_getmem(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(pe), b2i(nbi)))
}

// CtxPutmemNBI runs goshmemx_ctx_putmem_nbi(ctx, dst, src, n, pe).
func (p PE) CtxPutmemNBI(ctx int, dst, src uintptr, n int, pe int) error {
	return p.res(C.gh_ctx_putmem(C.uintptr_t(p.State), C.int(p.Block), C.int(ctx), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(pe)))
}

// P64 runs goshmem_uint64_p.
func (p PE) P64(dst uintptr, v uint64, pe int) error {
	return p.res(C.gh_p64(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(dst), C.uint64_t(v), C.int(pe)))
}

// P16 runs goshmem_uint16_p.
func (p PE) P16(dst uintptr, v uint16, pe int) error {
	return p.res(C.gh_p16(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(dst), C.uint16_t(v), C.int(pe)))
}

// G64 runs goshmem_uint64_g.
func (p PE) G64(src uintptr, pe int) (uint64, error) {
	var out C.uint64_t
	err := p.res(C.gh_g64(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(src), C.int(pe), &out))
	return uint64(out), err
}

// AMO ops of AMO64.
const (
	AMOFetch = iota
	AMOSet
	AMOSwap
	AMOCompareSwap
	AMOFetchAdd
	AMOAdd
	AMOFetchOr
	AMOFetchXor
)

// AMO64 runs a goshmem_uint64_atomic_* call (op: AMO*; cmp for compare-swap).
func (p PE) AMO64(op int, dst uintptr, v, cmp uint64, pe int) (uint64, error) {
	var out C.uint64_t
	err := p.res(C.gh_amo64(C.uintptr_t(p.State), C.int(p.Block), C.int(op), C.uintptr_t(dst), C.uint64_t(v), C.uint64_t(cmp), C.int(pe), &out))
	return uint64(out), err
}

// FetchAdd32 runs goshmem_int32_atomic_fetch_add.
func (p PE) FetchAdd32(dst uintptr, v int32, pe int) (int32, error) {
	var out C.int32_t
	err := p.res(C.gh_fetch_add32(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(dst), C.int32_t(v), C.int(pe), &out))
	return int32(out), err
}

// Signal operators of the header (GOSHMEM_SIGNAL_*).
const (
	SignalSet = C.GOSHMEM_SIGNAL_SET
	SignalAdd = C.GOSHMEM_SIGNAL_ADD
)

func sigOp(add bool) int {
	if add {
		return SignalAdd
	}
	return SignalSet
}

// PutSignal runs goshmem_putmem_signal[_nbi] (add: GOSHMEM_SIGNAL_ADD, else SET).
func (p PE) PutSignal(dst, src uintptr, n int, sig uintptr, v uint64, add bool, pe int, nbi bool) error {
	return p.PutSignalOp(dst, src, n, sig, v, sigOp(add), pe, nbi)
}

// PutSignalOp is PutSignal with the raw signal operator op (a bad one traps).
func (p PE) PutSignalOp(dst, src uintptr, n int, sig uintptr, v uint64, op, pe int, nbi bool) error {
	return p.res(C.gh_put_signal(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n),
		C.uintptr_t(sig), C.uint64_t(v), C.int(op), C.int(pe), b2i(nbi)))
}

// SignalOp runs goshmem_signal_op (add: GOSHMEM_SIGNAL_ADD, else SET).
func (p PE) SignalOp(sig uintptr, v uint64, add bool, pe int) error {
	return p.SignalOpRaw(sig, v, sigOp(add), pe)
}

// SignalOpRaw runs goshmem_signal_op with the raw signal operator op (a bad one traps).
func (p PE) SignalOpRaw(sig uintptr, v uint64, op, pe int) error {
	return p.res(C.gh_signal_op(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(sig), C.uint64_t(v), C.int(op), C.int(pe)))
}

// WaitGE runs goshmem_signal_wait_until(sig, GOSHMEM_CMP_GE, v).
func (p PE) WaitGE(sig uintptr, v uint64) (uint64, error) {
	var out C.uint64_t
	err := p.res(C.gh_wait_ge(C.uintptr_t(p.State), C.int(p.Block), C.uintptr_t(sig), C.uint64_t(v), &out))
	return uint64(out), err
}

// Quiet runs goshmem_quiet (ctx < 0) or goshmem_ctx_quiet(ctx).
func (p PE) Quiet(ctx int) error {
	return p.res(C.gh_quiet(C.uintptr_t(p.State), C.int(p.Block), C.int(ctx)))
}

// Fence runs goshmem_fence.
func (p PE) Fence() error { return p.res(C.gh_fence(C.uintptr_t(p.State), C.int(p.Block))) }

// BarrierAll runs goshmem_barrier_all.
func (p PE) BarrierAll() error { return p.res(C.gh_barrier_all(C.uintptr_t(p.State), C.int(p.Block))) }

// ProducerP64 opens goshmemx_proxy_producer_open(ctx) and posts n values
// first, first+1, ... with goshmemx_proxy_producer_uint64_p to dst[i%8] on pe.
func (p PE) ProducerP64(ctx int, dst uintptr, first uint64, n int, pe int) error {
	return p.res(C.gh_producer_p64(C.uintptr_t(p.State), C.int(p.Block), C.int(ctx), C.uintptr_t(dst), C.uint64_t(first), C.int(n), C.int(pe)))
}

// PostRaw posts a raw descriptor (w0 without phase, w1) on ctx's ring and
// returns its ticket: how tests hand the worker an invalid request.
func (p PE) PostRaw(ctx int, w0, w1 uint64) (uint64, error) {
	var t C.uint64_t
	err := p.res(C.gh_post_raw(C.uintptr_t(p.State), C.int(p.Block), C.int(ctx), C.uint64_t(w0), C.uint64_t(w1), &t))
	return uint64(t), err
}
