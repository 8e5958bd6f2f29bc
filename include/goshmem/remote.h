/* goshmem device API: remote dispatch, for PEs this GPU cannot reach by
 * load/store (heap_base[pe] == 0).
 *
 * Every device operation (rma.h, amo.h, signal.h, coll.h) resolves its
 * target with goshmemi_peer_or_remote(): a peer address on the load/store
 * path (CUDA IPC / NVLink: unchanged, as fast as before: the remote branch
 * is one UNLIKELY test of the heap_base[pe] it already loaded from the
 * __constant__ copy, and everything behind it is out of line), or NULL plus
 * the symmetric offset, and then one of the goshmemi_remote_* calls below,
 * which route on goshmemi_device_state_c.remote_transport:
 *   GOSHMEMI_REMOTE_NONE   trap GOSHMEMI_ERR_PE_UNREACHABLE (as before)
 *   GOSHMEMI_REMOTE_PROXY  proxy.h: descriptors to CPU workers
 *   GOSHMEMI_REMOTE_IBGDA  goshmemi_ibgda_* from include/goshmem/ibgda/backend.h
 *                          when that file exists (found with __has_include);
 *                          until then a stub traps GOSHMEMI_ERR_REMOTE_UNAVAILABLE
 * quiet.h calls goshmemi_remote_quiet/fence after its own fence when a remote
 * transport is configured, so quiet, ctx_quiet, fence and barrier (which
 * quiets) cover remote requests; waits need nothing (they poll local memory
 * that the remote path writes in order, data before signal).
 *
 * Backend contract: a backend <b> provides exactly these (static inline
 * device functions, host-compilable like the rest of the header):
 *
 *   void goshmemi_<b>_put(int ctx, int pe, uint64_t dst_off, const void *src, size_t n, int nbi);
 *   void goshmemi_<b>_get(int ctx, int pe, void *dst, uint64_t src_off, size_t n, int nbi);
 *   uint64_t goshmemi_<b>_amo(int ctx, int pe, uint64_t off, int op, int bytes, uint64_t v, uint64_t cmp,
 *                             int want_result);
 *   void goshmemi_<b>_put_signal(int ctx, int pe, uint64_t dst_off, const void *src, size_t n,
 *                                uint64_t sig_off, uint64_t sig_val, int sig_op, int nbi);
 *   void goshmemi_<b>_fence(int ctx);
 *   void goshmemi_<b>_quiet(int ctx);
 *
 *   off: symmetric byte offset on the target (p - heap_base[my_pe]); already
 *        range-checked against heap_size by the caller, pe against n_pes.
 *   ctx: device context index, 0 = GOSHMEM_CTX_DEFAULT; for fence and quiet
 *        ctx < 0 means PE-wide (every context, every queue).
 *   nbi: 1 = the source (put) / destination (get) is reusable / valid only
 *        after a quiet; 0 = on return.
 *   src/dst: local addresses of the calling thread, in the symmetric heap or
 *        not (a backend that needs registered memory handles the other case,
 *        as proxy.h does with inline chunks and reply slots).
 *   amo: op is GOSHMEMI_AMO_* (ordering.h), bytes 4 or 8, cmp used by CSWAP
 *        only; returns the old value when want_result (FETCH and CSWAP always
 *        want it); SET without result is an atomic store.
 *   put_signal: payload, then the signal (GOSHMEM_SIGNAL_SET / _ADD) such
 *        that a PE that sees the signal sees the payload.
 *   Calls come from ONE thread: for _warp/_block operations the group syncs,
 *   its leader calls the backend, and the group syncs again.
 * goshmemi_remote_put_value(ctx, pe, off, v, n) is dispatch, not contract: a
 * put of v's n low-order bytes for p and barrier arrivals, so the value is
 * not spilled to the stack to be passed by address; the proxy has its own
 * entry (goshmemi_proxy_put_value), other backends get &v through _put.
 * Changes from the brief's first draft, and why: none to the six signatures;
 * fence takes ctx < 0 for the PE-wide goshmem_fence (as quiet does), since
 * a backend with per-context queues must order all of them.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_REMOTE_H
#define GOSHMEM_REMOTE_H

/* Compile-time gate (CUDA only). The remote backends (proxy rings, IBGDA
 * WQE builders) are large: compiled into a kernel they raise its register
 * count for every thread, whether a remote PE is ever addressed or not
 * (ptxas counts a kernel's callees: enough to stop a 1024-thread launch and
 * make Jacobi's kernel spill; docs/gpu.md). So on CUDA they are compiled
 * only when the kernel asks for them with -DGOSHMEM_REMOTE_TRANSPORTS (or
 * #define before including goshmem.h); otherwise a PE without load/store access traps with
 * GOSHMEMI_ERR_REMOTE_UNAVAILABLE and a message naming the macro. Host mode
 * always has them (the CPU tests exercise them). */
#if !GOSHMEMI_CUDA || defined(GOSHMEM_REMOTE_TRANSPORTS)
#define GOSHMEMI_REMOTE_ENABLED 1
#else
#define GOSHMEMI_REMOTE_ENABLED 0
#endif

#include "proxy.h"

#if defined(__has_include)
#if __has_include("ibgda/backend.h")
#include "ibgda/backend.h" /* defines GOSHMEMI_IBGDA_BACKEND and goshmemi_ibgda_* */
#endif
#endif

/* Address of [p, p+nbytes) on PE pe, or NULL when pe is reached through a
 * remote transport (then *off is the symmetric offset). Traps on a PE out
 * of range, an address range outside the heap, or an unreachable PE with
 * no remote transport. The load/store path's cost is goshmemi_peer's. */
GOSHMEMI_FN void *goshmemi_peer_or_remote(const void *p, int pe, size_t nbytes, uint64_t *off)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    if (GOSHMEMI_UNLIKELY((uint32_t)pe >= (uint32_t)cs->n_pes))
        goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_PE_OUT_OF_RANGE, GOSHMEMI_ERROR_INFO(pe, cs->n_pes),
                      "PE out of range [0, n_pes)");
    uint64_t o = (uint64_t)(uintptr_t)p - cs->heap_base[cs->my_pe];
    if (GOSHMEMI_UNLIKELY(o > cs->heap_size || (uint64_t)nbytes > cs->heap_size - o))
        goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_NOT_SYMMETRIC, GOSHMEMI_ERROR_INFO(pe, o),
                      "address range is not inside the symmetric heap");
    uint64_t base = cs->heap_base[pe];
    *off = o;
    if (GOSHMEMI_UNLIKELY(base == 0)) {
        if (cs->remote_transport == GOSHMEMI_REMOTE_NONE)
            goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_PE_UNREACHABLE, GOSHMEMI_ERROR_INFO(pe, o),
                          "PE not reachable by load/store (heap_base[pe] == 0) and no remote transport configured");
#if !GOSHMEMI_REMOTE_ENABLED
        goshmemi_fail(goshmemi_device_state, GOSHMEMI_ERR_REMOTE_UNAVAILABLE, GOSHMEMI_ERROR_INFO(pe, o),
                      "PE reached through a remote transport, but this kernel was compiled without "
                      "-DGOSHMEM_REMOTE_TRANSPORTS");
#endif
        return NULL;
    }
    return (void *)(uintptr_t)(base + o);
}

#if !GOSHMEMI_REMOTE_ENABLED
/* Without GOSHMEM_REMOTE_TRANSPORTS: goshmemi_peer_or_remote never returns
 * NULL (it traps), so these are never called; they stay tiny so the
 * kernel's register count is the load/store path's. */
GOSHMEMI_COLD void goshmemi_remote_disabled(void)
{
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_REMOTE_UNAVAILABLE, 0,
                  "remote transport call in a kernel compiled without -DGOSHMEM_REMOTE_TRANSPORTS");
}
GOSHMEMI_COLD void goshmemi_remote_put(int, int, uint64_t, const void *, size_t, int) { goshmemi_remote_disabled(); }
GOSHMEMI_COLD void goshmemi_remote_get(int, int, void *, uint64_t, size_t, int) { goshmemi_remote_disabled(); }
GOSHMEMI_COLD uint64_t goshmemi_remote_amo(int, int, uint64_t, int, int, uint64_t, uint64_t, int)
{
    goshmemi_remote_disabled();
    return 0;
}
GOSHMEMI_COLD void goshmemi_remote_put_signal(int, int, uint64_t, const void *, size_t, uint64_t, uint64_t, int, int)
{
    goshmemi_remote_disabled();
}
GOSHMEMI_COLD void goshmemi_remote_put_value(int, int, uint64_t, uint64_t, size_t) { goshmemi_remote_disabled(); }
GOSHMEMI_COLD void goshmemi_remote_fence(int) {}
GOSHMEMI_COLD void goshmemi_remote_quiet(int) {}
#else
/* ---- the IBGDA backend, or its stub ---------------------------------------- */
#if !defined(GOSHMEMI_IBGDA_BACKEND)
GOSHMEMI_COLD void goshmemi_ibgda_unavailable(int pe, uint64_t off)
{
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_REMOTE_UNAVAILABLE, GOSHMEMI_ERROR_INFO(pe, off),
                  "remote_transport is IBGDA but this build has no device IBGDA backend "
                  "(include/goshmem/ibgda/backend.h): rebuild the kernels, or use GOSHMEM_GPU_TRANSPORT=proxy");
}
#define GOSHMEMI_IBGDA_CALL_PUT(ctx, pe, off, src, n, nbi) goshmemi_ibgda_unavailable(pe, off)
#define GOSHMEMI_IBGDA_CALL_GET(ctx, pe, dst, off, n, nbi) goshmemi_ibgda_unavailable(pe, off)
#define GOSHMEMI_IBGDA_CALL_AMO(ctx, pe, off, op, bytes, v, cmp, want) (goshmemi_ibgda_unavailable(pe, off), (uint64_t)0)
#define GOSHMEMI_IBGDA_CALL_PUT_SIGNAL(ctx, pe, off, src, n, soff, sval, sop, nbi) goshmemi_ibgda_unavailable(pe, off)
#define GOSHMEMI_IBGDA_CALL_FENCE(ctx) goshmemi_ibgda_unavailable(-1, 0)
#define GOSHMEMI_IBGDA_CALL_QUIET(ctx) goshmemi_ibgda_unavailable(-1, 0)
#else
#define GOSHMEMI_IBGDA_CALL_PUT goshmemi_ibgda_put
#define GOSHMEMI_IBGDA_CALL_GET goshmemi_ibgda_get
#define GOSHMEMI_IBGDA_CALL_AMO goshmemi_ibgda_amo
#define GOSHMEMI_IBGDA_CALL_PUT_SIGNAL goshmemi_ibgda_put_signal
#define GOSHMEMI_IBGDA_CALL_FENCE goshmemi_ibgda_fence
#define GOSHMEMI_IBGDA_CALL_QUIET goshmemi_ibgda_quiet
#endif

GOSHMEMI_COLD void goshmemi_remote_none(int pe, uint64_t off)
{
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_REMOTE_UNAVAILABLE, GOSHMEMI_ERROR_INFO(pe, off),
                  "remote_transport is not one of GOSHMEMI_REMOTE_PROXY / _IBGDA");
}

/* ---- dispatch: out of line, so the load/store path stays small ------------ */

GOSHMEMI_COLD void goshmemi_remote_put(int ctx, int pe, uint64_t dst_off, const void *src, size_t n, int nbi)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: goshmemi_proxy_put(ctx, pe, dst_off, src, n, nbi); return;
    case GOSHMEMI_REMOTE_IBGDA: GOSHMEMI_IBGDA_CALL_PUT(ctx, pe, dst_off, src, n, nbi); return;
    default: goshmemi_remote_none(pe, dst_off);
    }
}

/* A put of the n (1..8) low-order bytes of v (little-endian, as memory
 * holds them): p, barrier arrivals. The value stays in a register across
 * the call (goshmemi_remote_put would take its address: a store to the
 * stack and a load back on the enqueue path). */
GOSHMEMI_COLD void goshmemi_remote_put_value(int ctx, int pe, uint64_t dst_off, uint64_t v, size_t n)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: goshmemi_proxy_put_value(ctx, pe, dst_off, v, n); return;
    case GOSHMEMI_REMOTE_IBGDA: GOSHMEMI_IBGDA_CALL_PUT(ctx, pe, dst_off, &v, n, 1); return;
    default: goshmemi_remote_none(pe, dst_off);
    }
}

GOSHMEMI_COLD void goshmemi_remote_get(int ctx, int pe, void *dst, uint64_t src_off, size_t n, int nbi)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: goshmemi_proxy_get(ctx, pe, dst, src_off, n, nbi); return;
    case GOSHMEMI_REMOTE_IBGDA: GOSHMEMI_IBGDA_CALL_GET(ctx, pe, dst, src_off, n, nbi); return;
    default: goshmemi_remote_none(pe, src_off);
    }
}

GOSHMEMI_COLD uint64_t goshmemi_remote_amo(int ctx, int pe, uint64_t off, int op, int bytes, uint64_t v, uint64_t cmp,
                                           int want_result)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: return goshmemi_proxy_amo(ctx, pe, off, op, bytes, v, cmp, want_result);
    case GOSHMEMI_REMOTE_IBGDA: return GOSHMEMI_IBGDA_CALL_AMO(ctx, pe, off, op, bytes, v, cmp, want_result);
    default: goshmemi_remote_none(pe, off); return 0;
    }
}

GOSHMEMI_COLD void goshmemi_remote_put_signal(int ctx, int pe, uint64_t dst_off, const void *src, size_t n,
                                              uint64_t sig_off, uint64_t sig_val, int sig_op, int nbi)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: goshmemi_proxy_put_signal(ctx, pe, dst_off, src, n, sig_off, sig_val, sig_op, nbi); return;
    case GOSHMEMI_REMOTE_IBGDA:
        GOSHMEMI_IBGDA_CALL_PUT_SIGNAL(ctx, pe, dst_off, src, n, sig_off, sig_val, sig_op, nbi);
        return;
    default: goshmemi_remote_none(pe, dst_off);
    }
}

GOSHMEMI_COLD void goshmemi_remote_fence(int ctx)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: goshmemi_proxy_fence(ctx); return;
    case GOSHMEMI_REMOTE_IBGDA: GOSHMEMI_IBGDA_CALL_FENCE(ctx); return;
    default: return;
    }
}

GOSHMEMI_COLD void goshmemi_remote_quiet(int ctx)
{
    switch (goshmemi_cstate()->remote_transport) {
    case GOSHMEMI_REMOTE_PROXY: goshmemi_proxy_quiet(ctx); return;
    case GOSHMEMI_REMOTE_IBGDA: GOSHMEMI_IBGDA_CALL_QUIET(ctx); return;
    default: return;
    }
}

#endif /* GOSHMEMI_REMOTE_ENABLED */

/* Nonzero when a remote transport is configured (one __constant__ load). */
GOSHMEMI_FN int goshmemi_remote_configured(void)
{
#if GOSHMEMI_REMOTE_ENABLED
    return GOSHMEMI_UNLIKELY(goshmemi_cstate()->remote_transport != GOSHMEMI_REMOTE_NONE);
#else
    return 0;
#endif
}

/* goshmemx_ctx_uint64_p(ctx, dest, value, pe) through an open producer
 * (proxy.h, goshmemx_proxy_producer_t): on its tuned ring, no load but the
 * (cached) constant-bank words of the checks, one 16-byte posted store
 * (plus the posted head store). The common case -- pe in range and reached
 * through the proxy, dest inside the heap, a free slot -- is one test of
 * flags computed side by side; anything else (a bad argument, a PE reached
 * by load/store, a full ring) takes the general path below, which reports
 * errors and waits. Each post is a short dependent chain of single-thread
 * instructions, so its issue cost is their count, far above the posted
 * store's own (bench/proxy/enqueue_floor.cu measures that floor; numbers in
 * docs/proxy.md). */
GOSHMEMI_FN void goshmemx_proxy_producer_uint64_p(goshmemx_proxy_producer_t *p, uint64_t *dest, uint64_t value, int pe)
{
#if GOSHMEMI_REMOTE_ENABLED
    if (GOSHMEMI_LIKELY(p->tuned)) {
        const goshmemi_device_state_t *cs = goshmemi_cstate();
        const uint32_t upe = (uint32_t)pe;
        const int in_range = upe < (uint32_t)cs->n_pes;
        const uint64_t o = (uint64_t)(uintptr_t)dest - p->base, t = p->head;
        const int remote = cs->heap_base[in_range ? upe : 0u] == 0;
        if (GOSHMEMI_LIKELY(in_range & remote & (o <= p->last) & (t < p->limit))) {
            /* w0 of goshmemi_proxy_w0(PUT_INLINE, pe, 8, o) without the
             * masks: o < heap_size < 2^40 (the host's proxy setup checks)
             * and pe < n_pes <= GOSHMEMI_MAX_PES < 2^10 fit their fields */
            goshmemi_proxy_producer_store(p, t,
                                          goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_PUT_INLINE, 0, 8, 0) | ((uint64_t)upe << 6) | (o << 24),
                                          value);
            return;
        }
    }
#endif
    uint64_t off;
    void *d = goshmemi_peer_or_remote(dest, pe, sizeof(uint64_t), &off);
    if (GOSHMEMI_LIKELY(d == NULL)) {
#if GOSHMEMI_REMOTE_ENABLED
        if (GOSHMEMI_LIKELY(p->tuned)) {
            const uint64_t t = p->head;
            if (GOSHMEMI_UNLIKELY(t + 1 > p->limit)) p->limit = goshmemi_proxy_producer_wait(p->c.ring, t, p->c.lg);
            goshmemi_proxy_producer_store(p, t, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_PUT_INLINE, pe, 8, off), value);
            return;
        }
#endif
        goshmemi_remote_put_value(p->ctx, pe, off, value, sizeof(uint64_t));
        return;
    }
    goshmemi_relaxed_store_u64(d, value, goshmemi_sys_scope());
}

/* Runs call on one thread of GROUP (thread, warp, block), with group syncs
 * before and after (the GOSHMEMI_SYNC_* / GOSHMEMI_LEADER_* helpers of rma.h). */
#define GOSHMEMI_REMOTE_GROUP(GROUP, call)                                                                            \
    do {                                                                                                              \
        GOSHMEMI_SYNC_##GROUP();                                                                                      \
        if (GOSHMEMI_LEADER_##GROUP()) {                                                                              \
            call;                                                                                                     \
        }                                                                                                             \
        GOSHMEMI_SYNC_##GROUP();                                                                                      \
    } while (0)

/* Store of one word to pe (p, barrier arrival): relaxed on the load/store
 * path, an inline put on the remote one. */
#define GOSHMEMI_STORE_AT_DEF(BITS)                                                                                   \
    GOSHMEMI_FN void goshmemi_store_at_u##BITS(void *p, int pe, uint##BITS##_t v)                                     \
    {                                                                                                                 \
        uint64_t off;                                                                                                 \
        void *a = goshmemi_peer_or_remote(p, pe, BITS / 8, &off);                                                     \
        if (GOSHMEMI_UNLIKELY(a == NULL)) {                                                                           \
            goshmemi_remote_put_value(0, pe, off, (uint64_t)v, BITS / 8);                                             \
            return;                                                                                                   \
        }                                                                                                             \
        goshmemi_relaxed_store_u##BITS(a, v, goshmemi_sys_scope());                                                   \
    }                                                                                                                 \
    GOSHMEMI_FN uint##BITS##_t goshmemi_load_at_u##BITS(const void *p, int pe)                                        \
    {                                                                                                                 \
        uint64_t off;                                                                                                 \
        void *a = goshmemi_peer_or_remote(p, pe, BITS / 8, &off);                                                     \
        if (GOSHMEMI_UNLIKELY(a == NULL)) {                                                                           \
            uint##BITS##_t v;                                                                                         \
            goshmemi_remote_get(0, pe, &v, off, BITS / 8, 0);                                                         \
            return v;                                                                                                 \
        }                                                                                                             \
        return goshmemi_relaxed_load_u##BITS(a, goshmemi_sys_scope());                                               \
    }
GOSHMEMI_STORE_AT_DEF(8)
GOSHMEMI_STORE_AT_DEF(16)
GOSHMEMI_STORE_AT_DEF(32)
GOSHMEMI_STORE_AT_DEF(64)
#undef GOSHMEMI_STORE_AT_DEF

#define GOSHMEMI_AMO_AT_DEF(BITS)                                                                                     \
    /* AMO on pe: op GOSHMEMI_AMO_*; want = the old value is used. */                                                 \
    GOSHMEMI_FN uint##BITS##_t goshmemi_amo_at_u##BITS(int op, const void *p, int pe, uint##BITS##_t v,               \
                                                       uint##BITS##_t cmp, int want)                                  \
    {                                                                                                                 \
        uint64_t off;                                                                                                 \
        void *a = goshmemi_peer_or_remote(p, pe, BITS / 8, &off);                                                     \
        if (GOSHMEMI_UNLIKELY(a == NULL))                                                                             \
            return (uint##BITS##_t)goshmemi_remote_amo(0, pe, off, op, BITS / 8, v, cmp, want);                       \
        if (!want && op != GOSHMEMI_AMO_FETCH && op != GOSHMEMI_AMO_SET && op != GOSHMEMI_AMO_SWAP &&                  \
            op != GOSHMEMI_AMO_CSWAP) {                                                                               \
            goshmemi_red_u##BITS(op, a, v, goshmemi_sys_scope());                                                     \
            return 0;                                                                                                 \
        }                                                                                                             \
        return goshmemi_amo_u##BITS(op, a, v, cmp, goshmemi_sys_scope());                                             \
    }
GOSHMEMI_AMO_AT_DEF(32)
GOSHMEMI_AMO_AT_DEF(64)
#undef GOSHMEMI_AMO_AT_DEF

#endif /* GOSHMEM_REMOTE_H */
