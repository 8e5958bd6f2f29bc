/* goshmem device API: memory-ordering primitives, each named for its
 * purpose, with the rule it satisfies. Nothing else in the device API issues
 * a raw fence or a scoped load/store.
 *
 * Scope. Every primitive takes `sys` (from goshmemi_sys_scope()):
 *   sys != 0 -> .sys scope: peers on another GPU over NVLink, host-pinned
 *              memory, or a host agent (proxy, monitor) reading the heap.
 *   sys == 0 -> .gpu scope: every reachable peer is a process on this same
 *              GPU (CUDA IPC mapping of the same device's memory), so all
 *              communicating threads are in one .gpu scope. Chosen only when
 *              the host set state->all_peers_same_device.
 * Compile-time overrides: -DGOSHMEM_DEVICE_SCOPE_SYS (always system) or
 * -DGOSHMEM_DEVICE_SCOPE_GPU (always GPU: only for single-GPU jobs).
 *
 * Ref: PTX ISA 7.8 §8 (memory consistency model): release/acquire patterns,
 * morally strong operations (same scope covering both threads), causality
 * order is transitive and release is cumulative across a CTA barrier.
 * Peers reach our heap through a different virtual alias (CUDA IPC mapping)
 * of the same physical memory; ordering still holds across threads as each
 * thread uses one alias (NVSHMEM's p2p path relies on the same).
 *
 * State space: every address these primitives touch is symmetric (the
 * device heap or a peer's mapping of it), i.e. global memory, so loads,
 * stores and atomics say .global: with generic addressing nvcc adds a
 * shared-memory branch (ATOMS.CAST.SPIN loops) to every 64-bit atomic.
 * A pointer to shared or local memory passed here is a user error.
 *
 * Host mode: the same names with C11 __atomic builtins; scope is ignored.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_ORDERING_H
#define GOSHMEM_ORDERING_H

#include "state.h"

#if !GOSHMEMI_CUDA
#include <sched.h>
/* Host mode's orders for the relaxed primitives. GOSHMEMI_HOST_SYNC_ATOMICS
 * (tests/hdr/run.sh's ThreadSanitizer build of the host checks) makes every
 * relaxed load an acquire, every relaxed store a release and every AMO both:
 * ThreadSanitizer ignores fences, so the fence + relaxed store and relaxed
 * load + fence patterns would read as races. It then reports the data
 * accesses that no signal, flag, packet or AMO orders at all. */
#ifdef GOSHMEMI_HOST_SYNC_ATOMICS
#define GOSHMEMI_HOST_LD __ATOMIC_ACQUIRE
#define GOSHMEMI_HOST_ST __ATOMIC_RELEASE
#define GOSHMEMI_HOST_RMW __ATOMIC_ACQ_REL
#else
#define GOSHMEMI_HOST_LD __ATOMIC_RELAXED
#define GOSHMEMI_HOST_ST __ATOMIC_RELAXED
#define GOSHMEMI_HOST_RMW __ATOMIC_RELAXED
#endif
#endif

/* 1 = system scope, 0 = GPU scope, per the rules above. */
GOSHMEMI_FN int goshmemi_sys_scope(void)
{
#if defined(GOSHMEM_DEVICE_SCOPE_SYS)
    return 1;
#elif defined(GOSHMEM_DEVICE_SCOPE_GPU)
    return 0;
#else
    return goshmemi_cstate()->all_peers_same_device == 0;
#endif
}

/* Body of every poll loop. CUDA: nothing (polls go to L2 at the chosen
 * scope; a spinning thread holds only its own warp). Host mode: yield, so N
 * "GPU threads" on fewer cores still make progress. */
GOSHMEMI_FN void goshmemi_poll_pause(void)
{
#if !GOSHMEMI_CUDA
    sched_yield();
#endif
}

#if GOSHMEMI_CUDA
/* Issue one PTX instruction at .sys or .gpu scope: pre ".sys"/".gpu" post. */
#define GOSHMEMI_ASM_SCOPED(sys, pre, post, ...)                                                                      \
    do {                                                                                                              \
        if (sys)                                                                                                      \
            asm volatile(pre ".sys" post __VA_ARGS__);                                                                \
        else                                                                                                          \
            asm volatile(pre ".gpu" post __VA_ARGS__);                                                                \
    } while (0)
#endif

/* ---- fences ---------------------------------------------------------------- */

/* quiet: every prior load/store/AMO of this thread is performed with respect
 * to every thread in scope before any later one, including later loads
 * (store->load ordering, as OpenSHMEM quiet requires: a put completed by
 * quiet must be seen by a get issued after it on any PE).
 * CUDA: fence.sc (== membar / __threadfence_system at .sys); fence.acq_rel
 * does not order a store before a later load, so it is not enough here. */
GOSHMEMI_FN void goshmemi_quiet_fence(int sys)
{
#if GOSHMEMI_CUDA
    GOSHMEMI_ASM_SCOPED(sys, "fence.sc", ";", ::: "memory");
#else
    (void)sys;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* order: prior memory operations of this thread are ordered before later
 * stores (release half) and prior relaxed loads before later operations
 * (acquire half). fence + relaxed store = release pattern; relaxed load +
 * fence = acquire pattern. Used by goshmem_fence, after a satisfied wait,
 * and between barrier rounds. CUDA: fence.acq_rel. */
GOSHMEMI_FN void goshmemi_order_fence(int sys)
{
#if GOSHMEMI_CUDA
    GOSHMEMI_ASM_SCOPED(sys, "fence.acq_rel", ";", ::: "memory");
#else
    (void)sys;
    __atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

/* ---- loads and stores ------------------------------------------------------ */

/* release store of a signal word: every prior store of this thread (and,
 * cumulatively, of threads that synchronized with it, e.g. through
 * __syncthreads) is visible to a thread that observes this value with an
 * acquire pattern. CUDA: st.release.{gpu,sys}. */
GOSHMEMI_FN void goshmemi_release_store_u64(uint64_t *p, uint64_t v, int sys)
{
#if GOSHMEMI_CUDA
    GOSHMEMI_ASM_SCOPED(sys, "st.release", ".global.u64 [%0], %1;", ::"l"(p), "l"(v) : "memory");
#else
    (void)sys;
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* acquire load: later loads/stores of this thread happen after it and see
 * everything released before the value it reads (a release store, or a
 * fence + relaxed store, of the writer). Polls use it directly: on sm_90
 * ld.acquire is LDG.STRONG + CCTL.IVALL (an L1 invalidate, no MEMBAR), while
 * a relaxed poll + fence.acq_rel costs a MEMBAR.ALL on top (goshmem-perf
 * device's diag_pp_* rows measure both; docs/gpu.md). CUDA:
 * ld.acquire.{gpu,sys}. */
#if GOSHMEMI_CUDA
#define GOSHMEMI_ACQUIRE_LD(BITS, CT, REGC)                                                                           \
    GOSHMEMI_FN uint##BITS##_t goshmemi_acquire_load_u##BITS(const volatile void *p, int sys)                         \
    {                                                                                                                 \
        CT v;                                                                                                         \
        GOSHMEMI_ASM_SCOPED(sys, "ld.acquire", ".global.u" #BITS " %0, [%1];", : "=" REGC(v) : "l"(p) : "memory");    \
        return (uint##BITS##_t)v;                                                                                     \
    }
GOSHMEMI_ACQUIRE_LD(8, unsigned short, "h")
GOSHMEMI_ACQUIRE_LD(16, unsigned short, "h")
GOSHMEMI_ACQUIRE_LD(32, unsigned int, "r")
GOSHMEMI_ACQUIRE_LD(64, unsigned long long, "l")
#undef GOSHMEMI_ACQUIRE_LD
#else
#define GOSHMEMI_ACQUIRE_LD(BITS)                                                                                     \
    GOSHMEMI_FN uint##BITS##_t goshmemi_acquire_load_u##BITS(const volatile void *p, int sys)                         \
    {                                                                                                                 \
        (void)sys;                                                                                                    \
        return __atomic_load_n((const uint##BITS##_t *)(uintptr_t)p, __ATOMIC_ACQUIRE);                               \
    }
GOSHMEMI_ACQUIRE_LD(8)
GOSHMEMI_ACQUIRE_LD(16)
GOSHMEMI_ACQUIRE_LD(32)
GOSHMEMI_ACQUIRE_LD(64)
#undef GOSHMEMI_ACQUIRE_LD
#endif

/* relaxed (morally strong, not ordering) loads/stores: used to poll a word
 * another PE writes (each poll reads memory, not a register or stale L1
 * line), and to store a word that is ordered by a separate fence.
 * CUDA: ld/st.relaxed.{gpu,sys}. */
#if GOSHMEMI_CUDA
#define GOSHMEMI_RELAXED_LS(BITS, CT, REGC)                                                                           \
    GOSHMEMI_FN uint##BITS##_t goshmemi_relaxed_load_u##BITS(const volatile void *p, int sys)                         \
    {                                                                                                                 \
        CT v;                                                                                                         \
        GOSHMEMI_ASM_SCOPED(sys, "ld.relaxed", ".global.u" #BITS " %0, [%1];", : "=" REGC(v) : "l"(p) : "memory");    \
        return (uint##BITS##_t)v;                                                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN void goshmemi_relaxed_store_u##BITS(volatile void *p, uint##BITS##_t v, int sys)                      \
    {                                                                                                                 \
        CT w = (CT)v;                                                                                                 \
        GOSHMEMI_ASM_SCOPED(sys, "st.relaxed", ".global.u" #BITS " [%0], %1;", ::"l"(p), REGC(w) : "memory");         \
    }
/* 8-bit values travel in 16-bit registers ("h"): PTX has no 8-bit registers. */
GOSHMEMI_RELAXED_LS(8, unsigned short, "h")
GOSHMEMI_RELAXED_LS(16, unsigned short, "h")
GOSHMEMI_RELAXED_LS(32, unsigned int, "r")
GOSHMEMI_RELAXED_LS(64, unsigned long long, "l")
#undef GOSHMEMI_RELAXED_LS
#else
#define GOSHMEMI_RELAXED_LS(BITS)                                                                                     \
    GOSHMEMI_FN uint##BITS##_t goshmemi_relaxed_load_u##BITS(const volatile void *p, int sys)                         \
    {                                                                                                                 \
        (void)sys;                                                                                                    \
        return __atomic_load_n((const uint##BITS##_t *)(uintptr_t)p, GOSHMEMI_HOST_LD);                               \
    }                                                                                                                 \
    GOSHMEMI_FN void goshmemi_relaxed_store_u##BITS(volatile void *p, uint##BITS##_t v, int sys)                      \
    {                                                                                                                 \
        (void)sys;                                                                                                    \
        __atomic_store_n((uint##BITS##_t *)(uintptr_t)p, v, GOSHMEMI_HOST_ST);                                        \
    }
GOSHMEMI_RELAXED_LS(8)
GOSHMEMI_RELAXED_LS(16)
GOSHMEMI_RELAXED_LS(32)
GOSHMEMI_RELAXED_LS(64)
#undef GOSHMEMI_RELAXED_LS
#endif

/* ---- atomics on a (possibly peer) address ------------------------------- *
 * OpenSHMEM AMOs are atomic with respect to other AMOs on the same object
 * and carry no ordering (Ref: OpenSHMEM 1.5 §9.7): relaxed RMWs at the
 * chosen scope. CUDA: atom.relaxed.{gpu,sys} (result used) and
 * red.relaxed.{gpu,sys} (no result). */
#define GOSHMEMI_AMO_FETCH 0
#define GOSHMEMI_AMO_SET 1
#define GOSHMEMI_AMO_SWAP 2
#define GOSHMEMI_AMO_CSWAP 3
#define GOSHMEMI_AMO_ADD 4
#define GOSHMEMI_AMO_AND 5
#define GOSHMEMI_AMO_OR 6
#define GOSHMEMI_AMO_XOR 7

#if GOSHMEMI_CUDA
/* op is a compile-time constant after inlining: the switch folds away. */
#define GOSHMEMI_AMO_DEF(BITS, CT, REGC)                                                                              \
    GOSHMEMI_FN uint##BITS##_t goshmemi_amo_u##BITS(int op, void *p, uint##BITS##_t v, uint##BITS##_t cmp, int sys)   \
    {                                                                                                                 \
        CT r = 0, w = (CT)v, c = (CT)cmp;                                                                             \
        switch (op) {                                                                                                 \
        case GOSHMEMI_AMO_FETCH:                                                                                      \
            return goshmemi_relaxed_load_u##BITS(p, sys);                                                             \
        case GOSHMEMI_AMO_SET:                                                                                        \
            goshmemi_relaxed_store_u##BITS(p, v, sys);                                                                \
            return 0;                                                                                                 \
        case GOSHMEMI_AMO_SWAP:                                                                                       \
            GOSHMEMI_ASM_SCOPED(sys, "atom.relaxed", ".global.exch.b" #BITS " %0, [%1], %2;",                         \
                                : "=" REGC(r) : "l"(p), REGC(w) : "memory");                                          \
            return (uint##BITS##_t)r;                                                                                 \
        case GOSHMEMI_AMO_CSWAP:                                                                                      \
            GOSHMEMI_ASM_SCOPED(sys, "atom.relaxed", ".global.cas.b" #BITS " %0, [%1], %2, %3;",                      \
                                : "=" REGC(r) : "l"(p), REGC(c), REGC(w) : "memory");                                 \
            return (uint##BITS##_t)r;                                                                                 \
        case GOSHMEMI_AMO_ADD:                                                                                        \
            GOSHMEMI_ASM_SCOPED(sys, "atom.relaxed", ".global.add.u" #BITS " %0, [%1], %2;",                          \
                                : "=" REGC(r) : "l"(p), REGC(w) : "memory");                                          \
            return (uint##BITS##_t)r;                                                                                 \
        case GOSHMEMI_AMO_AND:                                                                                        \
            GOSHMEMI_ASM_SCOPED(sys, "atom.relaxed", ".global.and.b" #BITS " %0, [%1], %2;",                          \
                                : "=" REGC(r) : "l"(p), REGC(w) : "memory");                                          \
            return (uint##BITS##_t)r;                                                                                 \
        case GOSHMEMI_AMO_OR:                                                                                         \
            GOSHMEMI_ASM_SCOPED(sys, "atom.relaxed", ".global.or.b" #BITS " %0, [%1], %2;",                           \
                                : "=" REGC(r) : "l"(p), REGC(w) : "memory");                                          \
            return (uint##BITS##_t)r;                                                                                 \
        default: /* GOSHMEMI_AMO_XOR */                                                                               \
            GOSHMEMI_ASM_SCOPED(sys, "atom.relaxed", ".global.xor.b" #BITS " %0, [%1], %2;",                          \
                                : "=" REGC(r) : "l"(p), REGC(w) : "memory");                                          \
            return (uint##BITS##_t)r;                                                                                 \
        }                                                                                                             \
    }                                                                                                                 \
    /* Non-fetching form: red (reduction) needs no return path. */                                                    \
    GOSHMEMI_FN void goshmemi_red_u##BITS(int op, void *p, uint##BITS##_t v, int sys)                                 \
    {                                                                                                                 \
        CT w = (CT)v;                                                                                                 \
        switch (op) {                                                                                                 \
        case GOSHMEMI_AMO_ADD:                                                                                        \
            GOSHMEMI_ASM_SCOPED(sys, "red.relaxed", ".global.add.u" #BITS " [%0], %1;", ::"l"(p), REGC(w) : "memory"); \
            break;                                                                                                    \
        case GOSHMEMI_AMO_AND:                                                                                        \
            GOSHMEMI_ASM_SCOPED(sys, "red.relaxed", ".global.and.b" #BITS " [%0], %1;", ::"l"(p), REGC(w) : "memory"); \
            break;                                                                                                    \
        case GOSHMEMI_AMO_OR:                                                                                         \
            GOSHMEMI_ASM_SCOPED(sys, "red.relaxed", ".global.or.b" #BITS " [%0], %1;", ::"l"(p), REGC(w) : "memory"); \
            break;                                                                                                    \
        case GOSHMEMI_AMO_XOR:                                                                                        \
            GOSHMEMI_ASM_SCOPED(sys, "red.relaxed", ".global.xor.b" #BITS " [%0], %1;", ::"l"(p), REGC(w) : "memory"); \
            break;                                                                                                    \
        default:                                                                                                      \
            (void)goshmemi_amo_u##BITS(op, p, v, 0, sys);                                                             \
        }                                                                                                             \
    }
GOSHMEMI_AMO_DEF(32, unsigned int, "r")
GOSHMEMI_AMO_DEF(64, unsigned long long, "l")
#undef GOSHMEMI_AMO_DEF
#else
#define GOSHMEMI_AMO_DEF(BITS)                                                                                        \
    GOSHMEMI_FN uint##BITS##_t goshmemi_amo_u##BITS(int op, void *vp, uint##BITS##_t v, uint##BITS##_t cmp, int sys)  \
    {                                                                                                                 \
        uint##BITS##_t *p = (uint##BITS##_t *)vp;                                                                     \
        (void)sys;                                                                                                    \
        switch (op) {                                                                                                 \
        case GOSHMEMI_AMO_FETCH:                                                                                      \
            return __atomic_load_n(p, GOSHMEMI_HOST_LD);                                                              \
        case GOSHMEMI_AMO_SET:                                                                                        \
            __atomic_store_n(p, v, GOSHMEMI_HOST_ST);                                                                 \
            return 0;                                                                                                 \
        case GOSHMEMI_AMO_SWAP:                                                                                       \
            return __atomic_exchange_n(p, v, GOSHMEMI_HOST_RMW);                                                      \
        case GOSHMEMI_AMO_CSWAP:                                                                                      \
            __atomic_compare_exchange_n(p, &cmp, v, 0, GOSHMEMI_HOST_RMW, GOSHMEMI_HOST_LD);                          \
            return cmp; /* old value either way */                                                                    \
        case GOSHMEMI_AMO_ADD:                                                                                        \
            return __atomic_fetch_add(p, v, GOSHMEMI_HOST_RMW);                                                       \
        case GOSHMEMI_AMO_AND:                                                                                        \
            return __atomic_fetch_and(p, v, GOSHMEMI_HOST_RMW);                                                       \
        case GOSHMEMI_AMO_OR:                                                                                         \
            return __atomic_fetch_or(p, v, GOSHMEMI_HOST_RMW);                                                        \
        default:                                                                                                      \
            return __atomic_fetch_xor(p, v, GOSHMEMI_HOST_RMW);                                                       \
        }                                                                                                             \
    }                                                                                                                 \
    GOSHMEMI_FN void goshmemi_red_u##BITS(int op, void *p, uint##BITS##_t v, int sys)                                 \
    {                                                                                                                 \
        (void)goshmemi_amo_u##BITS(op, p, v, 0, sys);                                                                 \
    }
GOSHMEMI_AMO_DEF(32)
GOSHMEMI_AMO_DEF(64)
#undef GOSHMEMI_AMO_DEF
#endif

#endif /* GOSHMEM_ORDERING_H */
