/* goshmem device API: signals (signal_op, put_signal, signal_wait_until,
 * signal_fetch). A signal is a symmetric uint64_t.
 *
 * Ordering on the load/store path:
 *   put_signal   payload stores, then the signal update as a *release*
 *                (st.release / red.release.add at .sys, .gpu when all peers
 *                share this GPU): a PE that sees the signal with
 *                signal_wait_until / wait_until / test (acquire) sees the
 *                whole payload. _warp/_block: every thread copies its part,
 *                the group syncs (__syncwarp/__syncthreads), then one thread
 *                releases the signal; release is cumulative over the group
 *                sync, so the other threads' stores are covered too.
 *   signal_op    a relaxed (morally strong) atomic update with no ordering
 *                against earlier puts, as OpenSHMEM specifies: put + fence +
 *                signal_op, or put_signal, to publish data.
 * Ref: OpenSHMEM 1.5 §9.8 (signaling operations).
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_SIGNAL_H
#define GOSHMEM_SIGNAL_H

#include "rma.h"
#include "wait.h"

/* Publishes a signal with release semantics (internal: the tail of put_signal). */
GOSHMEMI_FN void goshmemi_signal_release(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    uint64_t off;
    uint64_t *p = (uint64_t *)goshmemi_peer_or_remote(sig_addr, pe, sizeof(uint64_t), &off);
    if (GOSHMEMI_UNLIKELY(p == NULL)) { /* remote: after this thread's earlier requests, in order */
        (void)goshmemi_remote_amo(0, pe, off, sig_op == GOSHMEM_SIGNAL_ADD ? GOSHMEMI_AMO_ADD : GOSHMEMI_AMO_SET, 8, signal,
                                  0, 0);
        return;
    }
    int sys = goshmemi_sys_scope();
    if (sig_op == GOSHMEM_SIGNAL_ADD) {
#if GOSHMEMI_CUDA
        unsigned long long w = signal;
        GOSHMEMI_ASM_SCOPED(sys, "red.release", ".global.add.u64 [%0], %1;", ::"l"(p), "l"(w) : "memory");
#else
        (void)sys;
        __atomic_fetch_add(p, signal, __ATOMIC_RELEASE);
#endif
    } else {
        goshmemi_release_store_u64(p, signal, sys);
    }
}

/* Atomically sets (GOSHMEM_SIGNAL_SET) or adds to (GOSHMEM_SIGNAL_ADD) the
 * signal at sig_addr on PE pe. Relaxed: not ordered after earlier puts
 * unless a goshmem_fence/quiet comes first. Ref: OpenSHMEM 1.5 §9.8.3. */
GOSHMEMI_FN void goshmem_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    (void)goshmemi_amo_at_u64(sig_op == GOSHMEM_SIGNAL_ADD ? GOSHMEMI_AMO_ADD : GOSHMEMI_AMO_SET, sig_addr, pe, signal, 0,
                              0);
}

/* Returns the local signal's value (acquire load: data published before the
 * value it returns is visible afterwards). Ref: OpenSHMEM 1.5 §9.8.4. */
GOSHMEMI_FN uint64_t goshmem_signal_fetch(const uint64_t *sig_addr)
{
    return goshmemi_acquire_load_u64(sig_addr, goshmemi_sys_scope());
}

/* Waits until the local signal satisfies (value cmp cmp_value) and returns
 * the value that satisfied it, with acquire semantics. Ref: OpenSHMEM 1.5
 * §9.10.7 (shmem_signal_wait_until). */
GOSHMEMI_FN uint64_t goshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    return goshmemi_wait_uint64(sig_addr, cmp, cmp_value);
}

/* ---- putmem_signal and typed put_signal ------------------------------------ *
 * Copies nelems bytes (or elements) to dest on PE pe, then updates the signal
 * at sig_addr on pe with release semantics (see top of file). The _nbi forms
 * are the same on this path (the source is reusable on return). */
/* The body of every putmem_signal: load/store path (copy, group sync,
 * release of the signal by one thread) or one remote put_signal request. */
#define GOSHMEMI_PUTMEM_SIGNAL_IMPL(GROUP)                                                                            \
    GOSHMEMI_FN void goshmemi_putmem_signal_##GROUP(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, \
                                                    uint64_t signal, int sig_op, int pe, int nbi)                     \
    {                                                                                                                 \
        uint64_t doff, soff;                                                                                          \
        void *d = goshmemi_peer_or_remote(dest, pe, nelems, &doff);                                                   \
        if (GOSHMEMI_UNLIKELY(d == NULL)) {                                                                           \
            (void)goshmemi_peer_or_remote(sig_addr, pe, sizeof(uint64_t), &soff);                                     \
            GOSHMEMI_REMOTE_GROUP(GROUP, goshmemi_remote_put_signal(0, pe, doff, source, nelems, soff, signal, sig_op, \
                                                                    nbi));                                            \
            return;                                                                                                   \
        }                                                                                                             \
        goshmemi_copy_##GROUP(d, source, nelems); /* syncs the group */                                               \
        if (GOSHMEMI_LEADER_##GROUP()) goshmemi_signal_release(sig_addr, signal, sig_op, pe);                         \
    }
GOSHMEMI_PUTMEM_SIGNAL_IMPL(thread)
GOSHMEMI_PUTMEM_SIGNAL_IMPL(warp)
GOSHMEMI_PUTMEM_SIGNAL_IMPL(block)
#undef GOSHMEMI_PUTMEM_SIGNAL_IMPL

#define GOSHMEMI_PUTMEM_SIGNAL_DEF(PREFIX, SUFFIX, GROUP)                                                             \
    GOSHMEMI_FN void PREFIX##_putmem_signal##SUFFIX(void *dest, const void *source, size_t nelems,                    \
                                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)          \
    {                                                                                                                 \
        goshmemi_putmem_signal_##GROUP(dest, source, nelems, sig_addr, signal, sig_op, pe, 0);                        \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_putmem_signal_nbi##SUFFIX(void *dest, const void *source, size_t nelems,                \
                                                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)      \
    {                                                                                                                 \
        goshmemi_putmem_signal_##GROUP(dest, source, nelems, sig_addr, signal, sig_op, pe, 1);                        \
    }
GOSHMEMI_PUTMEM_SIGNAL_DEF(goshmem, , thread)
GOSHMEMI_PUTMEM_SIGNAL_DEF(goshmemx, _warp, warp)
GOSHMEMI_PUTMEM_SIGNAL_DEF(goshmemx, _block, block)
#undef GOSHMEMI_PUTMEM_SIGNAL_DEF

#define GOSHMEMI_TYPED_PUT_SIGNAL_GROUP(PREFIX, NAME, TYPE, SUFFIX)                                                   \
    GOSHMEMI_FN void PREFIX##_##NAME##_put_signal##SUFFIX(TYPE *dest, const TYPE *source, size_t nelems,              \
                                                          uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)    \
    {                                                                                                                 \
        PREFIX##_putmem_signal##SUFFIX(dest, source, nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe);            \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_##NAME##_put_signal_nbi##SUFFIX(TYPE *dest, const TYPE *source, size_t nelems,          \
                                                              uint64_t *sig_addr, uint64_t signal, int sig_op,        \
                                                              int pe)                                                 \
    {                                                                                                                 \
        PREFIX##_putmem_signal##SUFFIX(dest, source, nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe);            \
    }
#define GOSHMEMI_TYPED_PUT_SIGNAL(NAME, TYPE, BITS)                                                                   \
    GOSHMEMI_TYPED_PUT_SIGNAL_GROUP(goshmem, NAME, TYPE, )                                                            \
    GOSHMEMI_TYPED_PUT_SIGNAL_GROUP(goshmemx, NAME, TYPE, _warp)                                                      \
    GOSHMEMI_TYPED_PUT_SIGNAL_GROUP(goshmemx, NAME, TYPE, _block)
GOSHMEMI_FOR_RMA_TYPES(GOSHMEMI_TYPED_PUT_SIGNAL)
GOSHMEMI_FOR_RMA_FLOAT16_TYPES(GOSHMEMI_TYPED_PUT_SIGNAL)
#undef GOSHMEMI_TYPED_PUT_SIGNAL
#undef GOSHMEMI_TYPED_PUT_SIGNAL_GROUP

#endif /* GOSHMEM_SIGNAL_H */
