/* goshmem device API: the per-module device-state pointer, error reporting
 * and symmetric addressing.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_STATE_H
#define GOSHMEM_STATE_H

#include "defs.h"

#if !GOSHMEMI_CUDA
#include <stdio.h>
#include <stdlib.h>
#endif

/* ---------------------------------------------------------------------------
 * The state pointer.
 *
 * CUDA: one `__constant__ goshmemi_device_state_t *goshmemi_device_state` per
 * loaded module. The Go host finds it with
 *     cuModuleGetGlobal(&dptr, &bytes, module, "goshmemi_device_state")
 * (bytes == 8) and writes the device address of this PE's state struct with
 * cuMemcpyHtoD, once per module, before the first launch.
 *
 * Why it is defined here (in a header) and how it stays findable by name
 * (checked with nvcc 11.8, `make hdrcheck` repeats the checks):
 *   - Without -rdc (whole-program mode) every .cu file is its own module with
 *     its own copy of every __device__/__constant__ variable: there is no
 *     device link, so one definition per translation unit is exactly right,
 *     and a kernel file is one translation unit.
 *   - Non-static, C language linkage (extern "C" block): the cubin's symbol
 *     is the plain name `goshmemi_device_state` (STB_LOCAL, as every
 *     whole-program global is; cuModuleGetGlobal finds those by name, as the
 *     runtime API's cudaMemcpyToSymbol does), and nvcc keeps it even in a
 *     module whose kernels never call goshmem (a `static` one is dropped
 *     when unused, and C++17 `inline __constant__` must be internal in
 *     whole-program mode).
 *   - nvcc's host-side shadow of the variable is internal (`static`) in
 *     whole-program mode, so several nvcc objects that include goshmem.h
 *     link into one host executable without duplicate symbols.
 *   - With -rdc (separate compilation) all TUs share one device image: define
 *     GOSHMEM_DEFINE_DEVICE_STATE before including goshmem.h in exactly one
 *     TU of the device link; the others see an extern declaration (then the
 *     symbol is STB_GLOBAL in the linked image).
 *
 * Host mode (gcc/g++): a thread-local pointer, so tests run several PEs as
 * threads of one process, each thread pointing at its own state with
 * goshmemx_host_set_state(). Weak, so several test TUs may include the
 * header. */
#if GOSHMEMI_CUDA
/* goshmemi_device_state_c: a copy of the same struct in constant memory,
 * also written by the host at module load (cuModuleGetGlobal by name, the
 * struct's size). Read-only fields on hot paths (my_pe, n_pes, heap_size,
 * heap_base[], teams, max_teams, all_peers_same_device) are read from it: the
 * constant cache is not invalidated by the fences that quiet and waits
 * issue, while an L1-cached copy of the global struct is (fence.sc.gpu ends
 * in CCTL.IVALL), which made every put after a quiet re-fetch its address
 * translation from L2. Fields the device writes (error_code, error_info)
 * are used only through the global struct; the team epochs and the team
 * table live in device memory that both copies point at (teams,
 * team_epoch), so their pointers come from the constant copy. */
#if defined(__CUDACC_RDC__) && !defined(GOSHMEM_DEFINE_DEVICE_STATE)
extern "C" {
extern __constant__ goshmemi_device_state_t *goshmemi_device_state;
extern __constant__ goshmemi_device_state_t goshmemi_device_state_c;
}
#else
extern "C" {
__constant__ goshmemi_device_state_t *goshmemi_device_state;
__constant__ goshmemi_device_state_t goshmemi_device_state_c;
}
#endif
#else /* host mode */
GOSHMEMI_EXTERN_C_BEGIN
#if defined(__cplusplus)
__attribute__((weak)) thread_local goshmemi_device_state_t *goshmemi_device_state;
#else
__attribute__((weak)) _Thread_local goshmemi_device_state_t *goshmemi_device_state;
#endif
/* Host-mode trap hook for tests: called instead of abort() when a device call
 * sees bad input, after error_code/error_info are recorded. It must not
 * return (longjmp or exit); if it does, abort() follows. */
typedef void (*goshmemx_host_trap_fn)(uint64_t code, uint64_t info, const char *what);
__attribute__((weak)) goshmemx_host_trap_fn goshmemx_host_trap_hook;
GOSHMEMI_EXTERN_C_END

/* Host mode only: make st the device state of the calling thread (the
 * calling "GPU thread" becomes PE st->my_pe). */
GOSHMEMI_FN void goshmemx_host_set_state(goshmemi_device_state_t *st)
{
    goshmemi_device_state = st;
}
#endif

/* ---------------------------------------------------------------------------
 * Error path: record the first error in the state, then trap.
 * CUDA: __trap() ends the kernel with an illegal-instruction error; the
 * context is unusable afterwards (no copy of device memory works), so the
 * first error is also written to the host-mapped record of error_host,
 * which the host reads and decodes after the fault.
 * Host: message on stderr, then goshmemx_host_trap_hook or abort(). */

/* Writes the host-mapped error record of st (error_host): called once,
 * by the thread whose compare-and-swap of st->error_code won; it marks the
 * record done after a fence, so the host sees it whole after the trap.
 * Plain stores: the writer is unique, and an atomic here would cost every
 * kernel registers (a kernel's count includes its callees'). */
GOSHMEMI_COLD void goshmemi_fail_record(goshmemi_device_state_t *st, uint64_t code, uint64_t info, const char *what)
{
    volatile goshmemi_error_record_t *v = (volatile goshmemi_error_record_t *)(uintptr_t)st->error_host;
    if (v == NULL) return;
    v->code = code;
    v->info = info;
    v->pe = st->my_pe;
#if GOSHMEMI_CUDA
    v->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    v->thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#else
    v->block = 0;
    v->thread = 0;
#endif
    unsigned i = 0;
    if (what != NULL)
        for (; i + 1 < sizeof v->what && what[i] != 0; i++) v->what[i] = what[i];
    v->what[i] = 0;
#if GOSHMEMI_CUDA
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
    v->done = 1;
}

GOSHMEMI_COLD void goshmemi_fail(goshmemi_device_state_t *st, uint64_t code, uint64_t info, const char *what)
{
#if GOSHMEMI_CUDA
    if (st != NULL) {
        /* First error wins: 64-bit CAS at system scope (the host polls it). */
        if (atomicCAS_system((unsigned long long *)&st->error_code, 0ull, (unsigned long long)code) == 0ull) {
            atomicExch_system((unsigned long long *)&st->error_info, (unsigned long long)info);
            goshmemi_fail_record(st, code, info, what);
        }
        __threadfence_system(); /* make the record visible to the host before the trap */
    }
    __trap();
#else
    if (st != NULL) {
        uint64_t zero = 0;
        if (__atomic_compare_exchange_n(&st->error_code, &zero, code, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            __atomic_store_n(&st->error_info, info, __ATOMIC_SEQ_CST);
            goshmemi_fail_record(st, code, info, what);
        }
    }
    fprintf(stderr, "goshmem: PE %d: device call failed: %s (code %llu, info 0x%llx)\n",
            st ? st->my_pe : -1, what, (unsigned long long)code, (unsigned long long)info);
    if (goshmemx_host_trap_hook != NULL) goshmemx_host_trap_hook(code, info, what);
    abort();
#endif
}

/* The calling PE's state; traps when the module's pointer was never set. */
GOSHMEMI_FN goshmemi_device_state_t *goshmemi_state(void)
{
    goshmemi_device_state_t *st = goshmemi_device_state;
    if (GOSHMEMI_UNLIKELY(st == NULL))
        goshmemi_fail(NULL, GOSHMEMI_ERR_NO_STATE, 0, "goshmemi_device_state is NULL (module not loaded by shmem.LoadModule?)");
    return st;
}

/* Traps on a signal operator other than GOSHMEM_SIGNAL_SET / _ADD (every
 * signal path checks before it encodes the update; info: op, pe). */
GOSHMEMI_FN void goshmemi_check_signal_op(int sig_op, int pe)
{
    if (GOSHMEMI_UNLIKELY(!GOSHMEMI_SIGNAL_OP_VALID(sig_op)))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(sig_op, pe),
                      "signal operator is not GOSHMEM_SIGNAL_SET (9) or GOSHMEM_SIGNAL_ADD (10)");
}

/* The read-only view of the state for hot paths (see goshmemi_device_state_c
 * above). Host mode: the thread's struct itself. */
GOSHMEMI_FN const goshmemi_device_state_t *goshmemi_cstate(void)
{
#if GOSHMEMI_CUDA
    return &goshmemi_device_state_c;
#else
    return goshmemi_state();
#endif
}

/* Nonzero when the state's version and size match this header. Cheap enough
 * to call once at kernel start (goshmemx_check_state) when debugging. */
GOSHMEMI_FN int goshmemx_state_ok(void)
{
    goshmemi_device_state_t *st = goshmemi_device_state;
    return st != NULL && st->version == GOSHMEMI_DEVICE_STATE_VERSION &&
           st->size == (uint32_t)sizeof(goshmemi_device_state_t);
}

/* Traps with GOSHMEMI_ERR_BAD_STATE when the host's struct does not match. */
GOSHMEMI_FN void goshmemx_check_state(void)
{
    goshmemi_device_state_t *st = goshmemi_state();
    if (GOSHMEMI_UNLIKELY(!goshmemx_state_ok()))
        goshmemi_fail(st, GOSHMEMI_ERR_BAD_STATE, GOSHMEMI_ERROR_INFO(st->version, GOSHMEMI_DEVICE_STATE_VERSION),
                      "device state version/size mismatch: header and host disagree");
}

/* ---------------------------------------------------------------------------
 * PE queries. */

/* This PE's number in GOSHMEM_TEAM_WORLD. Ref: OpenSHMEM 1.5 §9.2.2. */
GOSHMEMI_FN int goshmem_my_pe(void) { return goshmemi_cstate()->my_pe; }

/* Number of PEs in GOSHMEM_TEAM_WORLD. Ref: OpenSHMEM 1.5 §9.2.3. */
GOSHMEMI_FN int goshmem_n_pes(void) { return goshmemi_cstate()->n_pes; }

/* ---------------------------------------------------------------------------
 * Symmetric addressing: a symmetric address p of this PE maps to PE pe as
 *     heap_base[pe] + (p - heap_base[my_pe]).
 * heap_base[pe] == 0 means pe is not load/store reachable from this GPU. */

/* Address of [p, p+nbytes) on PE pe; traps on a PE out of range, an address
 * range outside this PE's heap, or an unreachable PE (error recorded). */
GOSHMEMI_FN void *goshmemi_peer(const void *p, int pe, size_t nbytes)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    if (GOSHMEMI_UNLIKELY((uint32_t)pe >= (uint32_t)cs->n_pes))
        goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_PE_OUT_OF_RANGE, GOSHMEMI_ERROR_INFO(pe, cs->n_pes),
                      "PE out of range [0, n_pes)");
    uint64_t off = (uint64_t)(uintptr_t)p - cs->heap_base[cs->my_pe];
    if (GOSHMEMI_UNLIKELY(off > cs->heap_size || (uint64_t)nbytes > cs->heap_size - off))
        goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_NOT_SYMMETRIC, GOSHMEMI_ERROR_INFO(pe, off),
                      "address range is not inside the symmetric heap");
    uint64_t base = cs->heap_base[pe];
    if (GOSHMEMI_UNLIKELY(base == 0))
        goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_PE_UNREACHABLE, GOSHMEMI_ERROR_INFO(pe, off),
                      "PE not reachable by load/store (heap_base[pe] == 0)");
    return (void *)(uintptr_t)(base + off);
}

/* Local address through which this thread can load/store PE pe's copy of
 * the symmetric object at p, or NULL when pe is out of range, not
 * load/store reachable, or p is not symmetric. Never traps.
 * Ref: OpenSHMEM 1.5 §9.4.3 (shmem_ptr). */
GOSHMEMI_FN void *goshmem_ptr(const void *p, int pe)
{
    const goshmemi_device_state_t *st = goshmemi_cstate();
    if ((uint32_t)pe >= (uint32_t)st->n_pes) return NULL;
    uint64_t off = (uint64_t)(uintptr_t)p - st->heap_base[st->my_pe];
    uint64_t base = st->heap_base[pe];
    if (off >= st->heap_size || base == 0) return NULL;
    return (void *)(uintptr_t)(base + off);
}

#endif /* GOSHMEM_STATE_H */
