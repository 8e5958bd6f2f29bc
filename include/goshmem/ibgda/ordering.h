/* goshmem IBGDA: ordering primitives of the WQE -> doorbell record ->
 * doorbell path and of CQ polling, each named for the race it prevents.
 * Nothing else in include/goshmem/ibgda/ issues a raw fence.
 *
 * Build choice (one of; default GPU):
 *   -DGOSHMEM_IBGDA_ORDER_GPU  GPU-scope release (fence.acq_rel.gpu) before
 *                              the doorbell record and before the doorbell.
 *                              Enough when the SQ, payloads and doorbell
 *                              record live in GPU memory (the NIC reads them
 *                              after the MMIO doorbell, which the GPU does not
 *                              reorder ahead of earlier same-thread writes to
 *                              GPU memory once they are GPU-scope ordered).
 *                              Ref: NVSHMEM's IBGDA transport built with
 *                              NVSHMEM_IBGDA_SUPPORT_GPUMEM_ONLY uses
 *                              st.release.gpu here.
 *   -DGOSHMEM_IBGDA_ORDER_SYS  system-scope fence (fence.sc.sys ==
 *                              __threadfence_system) at both points: needed
 *                              when the queues or payloads are in host memory
 *                              (NVSHMEM's default with host-side queues; its
 *                              st.release.gpu path is built only for
 *                              NVSHMEM_IBGDA_SUPPORT_GPUMEM_ONLY). A GPU-scope
 *                              release promises nothing to a host reader
 *                              (PTX memory model: the CPU is outside the .gpu
 *                              scope), neither order nor that the stores ever
 *                              become visible: a soft NIC polling a
 *                              host-pinned doorbell record from a CPU thread
 *                              may never see it move. The
 *                              device API's backend (backend.h) therefore
 *                              defaults to SYS, and traps when the host says
 *                              its queues are in host memory and the kernel
 *                              was built with GPU or NONE.
 *   -DGOSHMEM_IBGDA_ORDER_NONE no fence (compiler barrier only). The NIC may
 *                              fetch stale WQE bytes: for measuring the cost
 *                              of ordering (the "unordered" issue rows of
 *                              bench/ibgda), never for correctness.
 *
 * Host mode (gcc/g++): GPU -> __atomic acq_rel fences, SYS -> seq_cst fences,
 * NONE -> compiler barrier; the soft NIC (ibgda/softnic.go) is the reader.
 *
 * Include <goshmem/ibgda/ibgda.h>, not this file.
 */
#ifndef GOSHMEM_IBGDA_ORDERING_H
#define GOSHMEM_IBGDA_ORDERING_H

#include "../defs.h"

#if !GOSHMEMI_CUDA
#include <sched.h>
#endif

#if (defined(GOSHMEM_IBGDA_ORDER_GPU) + defined(GOSHMEM_IBGDA_ORDER_SYS) + defined(GOSHMEM_IBGDA_ORDER_NONE)) > 1
#error "define at most one of GOSHMEM_IBGDA_ORDER_GPU / _SYS / _NONE"
#endif
#if defined(GOSHMEM_IBGDA_ORDER_NONE)
#warning "GOSHMEM_IBGDA_ORDER_NONE: WQE/doorbell ordering disabled; the NIC may read stale WQEs (benchmarks only)"
#define GOSHMEMI_IBGDA_ORDER 0
#elif defined(GOSHMEM_IBGDA_ORDER_SYS)
#define GOSHMEMI_IBGDA_ORDER 2
#else
#define GOSHMEMI_IBGDA_ORDER 1 /* GPU scope (default) */
#endif

/* The configured fence (see the table above). In the GPU and SYS builds it
 * is an acquire as well as a release fence (fence.acq_rel / fence.sc): after
 * relaxed loads it makes them acquires (PTX: a strong read followed by
 * fence.acq_rel), which goshmemi_ibgda_publish_c relies on. NONE: a compiler
 * barrier only. */
GOSHMEMI_FN void goshmemi_ibgda_release_fence(void)
{
#if GOSHMEMI_CUDA
#if GOSHMEMI_IBGDA_ORDER == 2
    asm volatile("fence.sc.sys;" ::: "memory");
#elif GOSHMEMI_IBGDA_ORDER == 1
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
    asm volatile("" ::: "memory");
#endif
#else
#if GOSHMEMI_IBGDA_ORDER == 2
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#elif GOSHMEMI_IBGDA_ORDER == 1
    __atomic_thread_fence(__ATOMIC_ACQ_REL);
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
#endif
}

/* ---- device-visible words the NIC reads or writes (system scope) --------- */

/* Doorbell record: a relaxed store (ordering: goshmemi_ibgda_release_dbr). */
GOSHMEMI_FN void goshmemi_ibgda_store_dbr(volatile uint32_t *p, uint32_t v_be)
{
#if GOSHMEMI_CUDA
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v_be) : "memory");
#else
    __atomic_store_n((uint32_t *)(uintptr_t)p, v_be, __ATOMIC_RELAXED);
#endif
}

/* Doorbell: one 8-byte store to the UAR (MMIO) page, never split. */
GOSHMEMI_FN void goshmemi_ibgda_store_db(volatile uint64_t *p, uint64_t v)
{
#if GOSHMEMI_CUDA
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
    __atomic_store_n((uint64_t *)(uintptr_t)p, v, __ATOMIC_RELAXED);
#endif
}

/* WQE (and source payload) stores -> doorbell record store, as one
 * ordered store: goshmemi_ibgda_release_dbr(p, v).
 * Race prevented: the NIC, prompted by the doorbell (or by polling the
 * record, as the soft NIC does), reads the record's new producer index and
 * fetches WQEBBs whose bytes are not yet visible: it would execute a stale
 * or half-written WQE. Also orders payload stores of a data-pointer write
 * before the NIC's gather. GPU build: st.release.gpu (a GPU-scope release
 * store is the cheapest ordering that is safe here, cheaper than a
 * __threadfence before a plain store); SYS: fence.sc.sys + relaxed store;
 * NONE: relaxed store. Ref: rdma-core udma_to_device_barrier() before the dbrec
 * update in mlx5_post_send. */
GOSHMEMI_FN void goshmemi_ibgda_release_dbr(volatile uint32_t *p, uint32_t v_be)
{
#if GOSHMEMI_CUDA && GOSHMEMI_IBGDA_ORDER == 1
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v_be) : "memory");
#else
    goshmemi_ibgda_release_fence();
    goshmemi_ibgda_store_dbr(p, v_be);
#endif
}

/* Doorbell record store -> doorbell (UAR MMIO) store, as one ordered store:
 * goshmemi_ibgda_release_db(p, v).
 * Race prevented: the NIC takes the doorbell, reads a doorbell record that
 * does not yet show the new producer index, and sleeps on a queue that has
 * work (the mlx5 NIC trusts the record, not the doorbell value, for how far
 * to fetch). Ref: rdma-core udma_to_device_barrier() + mmio_wc_start()
 * between the dbrec and the BlueFlame write. */
GOSHMEMI_FN void goshmemi_ibgda_release_db(volatile uint64_t *p, uint64_t v)
{
#if GOSHMEMI_CUDA && GOSHMEMI_IBGDA_ORDER == 1
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
    goshmemi_ibgda_release_fence();
    goshmemi_ibgda_store_db(p, v);
#endif
}

/* CQE owner bit observed -> CQE body read (wqe_counter, syndrome).
 * Race prevented: reading the rest of the entry from before the NIC's DMA
 * that set the owner bit (fields of the previous lap). Always an acquire,
 * whatever GOSHMEM_IBGDA_ORDER_*: it is on the completion path, and an
 * unordered read there returns wrong completions, not just slow ones.
 * Ref: rdma-core udma_from_device_barrier() after get_sw_cqe(). */
GOSHMEMI_FN void goshmemi_cqe_owner_to_read_barrier(void)
{
#if GOSHMEMI_CUDA
    asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/* ---- queue-state atomics (GPU-scope: only GPU threads touch these words) --- */

GOSHMEMI_FN uint64_t goshmemi_ibgda_fetch_add_u64(uint64_t *p, uint64_t v)
{
#if GOSHMEMI_CUDA
    return (uint64_t)atomicAdd((unsigned long long *)p, (unsigned long long)v);
#else
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

GOSHMEMI_FN uint64_t goshmemi_ibgda_load_acquire_u64(const uint64_t *p)
{
#if GOSHMEMI_CUDA
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* A relaxed (strong, not cached in L1) load of a queue-state word. */
GOSHMEMI_FN uint64_t goshmemi_ibgda_load_relaxed_u64(const uint64_t *p)
{
#if GOSHMEMI_CUDA
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

GOSHMEMI_FN void goshmemi_ibgda_store_release_u64(uint64_t *p, uint64_t v)
{
#if GOSHMEMI_CUDA
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* Atomic max (release): sq_signaled_idx only moves forward. */
GOSHMEMI_FN void goshmemi_ibgda_max_u64(uint64_t *p, uint64_t v)
{
#if GOSHMEMI_CUDA
    atomicMax((unsigned long long *)p, (unsigned long long)v);
#else
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
#endif
}

/* Try-lock / unlock of the one-poller-at-a-time CQ lock (acquire / release). */
GOSHMEMI_FN int goshmemi_ibgda_trylock(uint32_t *l)
{
#if GOSHMEMI_CUDA
    uint32_t old = atomicCAS((unsigned int *)l, 0u, 1u);
    if (old == 0)
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    return old == 0;
#else
    uint32_t expect = 0;
    return __atomic_compare_exchange_n(l, &expect, 1u, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
#endif
}

GOSHMEMI_FN void goshmemi_ibgda_unlock(uint32_t *l)
{
#if GOSHMEMI_CUDA
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(l), "r"(0u) : "memory");
#else
    __atomic_store_n(l, 0u, __ATOMIC_RELEASE);
#endif
}

/* CQE op_own byte: a fresh (not cached) read each poll. */
GOSHMEMI_FN uint8_t goshmemi_ibgda_load_op_own(const volatile uint8_t *p)
{
#if GOSHMEMI_CUDA
    unsigned short v;
    asm volatile("ld.relaxed.sys.global.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return (uint8_t)v;
#else
    return __atomic_load_n((const uint8_t *)(uintptr_t)p, __ATOMIC_RELAXED);
#endif
}

GOSHMEMI_FN void goshmemi_ibgda_pause(void)
{
#if !GOSHMEMI_CUDA
    sched_yield();
#endif
}

#endif /* GOSHMEM_IBGDA_ORDERING_H */
