/* goshmem device API: remote memory access (put/get/p/g, _nbi, _warp,
 * _block, sized and typed), on the load/store path: the calling thread(s)
 * copy directly between local memory and the peer's heap mapping.
 *
 * Completion on this path:
 *   put      returns when the source may be reused (stores issued); the data
 *            is visible at the target after goshmem_quiet, or ordered before
 *            later puts to the same PE by goshmem_fence.
 *   put_nbi  same as put here (stores cannot be left pending past return);
 *            kept for NVSHMEM parity and for paths with queues.
 *   get      returns when the data is in dest.
 *   get_nbi  same as get here; dest is guaranteed only after quiet.
 *   p / g    one element moved as one word with a relaxed (morally strong)
 *            store/load at the chosen scope, so g can poll a value that
 *            another PE updates.
 *   _warp    all 32 lanes of the warp call with the same arguments; lanes
 *            split the copy (16-byte vectors when source and dest share
 *            16-byte alignment) and __syncwarp() at the end.
 *   _block   all threads of the block call with the same arguments; split
 *            copy, __syncthreads() at the end.
 * Host mode: _warp/_block run on the calling thread alone (a "GPU thread"
 * is an OS thread; there are no warps), with the same results.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_RMA_H
#define GOSHMEM_RMA_H

#include "quiet.h"
#include "remote.h"
#include "types.h"

#if !GOSHMEMI_CUDA
#include <string.h>
#endif

/* ---- cooperative copy ------------------------------------------------------ */

#if GOSHMEMI_CUDA
/* Thread tid of nthreads copies its share of n bytes. The widest word W in
 * {16, 8, 4} for which dst and src have the same misalignment mod W is
 * used for the body; the (< W) head and the tail go byte by byte.
 *
 * Registers matter as much as bandwidth here: the _warp/_block puts are
 * inlined into user kernels (Jacobi's sweep kernel, say), and ptxas sizes
 * the whole kernel for its hungriest path. So indices are 32-bit (copies
 * above 2 GiB go in pieces, so that an index plus two strides of at most
 * 1024 threads never wraps), and the 16-byte body keeps two loads in flight per thread, not four: a
 * 1024-thread block already has 2048 loads in flight. With 64-bit indices
 * and four loads, Jacobi's kernel fits one 1024-thread block per SM instead
 * of two (docs/gpu.md); check cuobjdump --dump-resource-usage after a change. */
#define GOSHMEMI_COPY_WIDTH(W, VT)                                                                                    \
    if ((((d ^ s) & (W - 1)) == 0) && n >= W) {                                                                       \
        uint32_t head = (uint32_t)((W - (d & (W - 1))) & (W - 1));                                                    \
        uint32_t nw = (n - head) / W;                                                                                 \
        for (uint32_t i = tid; i < head; i += nthreads) ((char *)dst)[i] = ((const char *)src)[i];                    \
        VT *dw = (VT *)(d + head);                                                                                    \
        const VT *sw = (const VT *)(s + head);                                                                        \
        /* two loads in flight before their stores (generic pointers may                                              \
         * alias, so the compiler will not hoist a load above an earlier                                              \
         * store by itself) */                                                                                        \
        for (uint32_t i = tid; i < nw; i += 2 * nthreads) {                                                           \
            uint32_t i1 = i + nthreads;                                                                               \
            VT w0 = sw[i], w1 = w0;                                                                                   \
            if (i1 < nw) w1 = sw[i1];                                                                                 \
            dw[i] = w0;                                                                                               \
            if (i1 < nw) dw[i1] = w1;                                                                                 \
        }                                                                                                             \
        for (uint32_t i = head + nw * W + tid; i < n; i += nthreads) ((char *)dst)[i] = ((const char *)src)[i];       \
        return;                                                                                                       \
    }
GOSHMEMI_FN void goshmemi_copy_part32(void *dst, const void *src, uint32_t n, uint32_t tid, uint32_t nthreads)
{
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    GOSHMEMI_COPY_WIDTH(16, uint4)
    GOSHMEMI_COPY_WIDTH(8, unsigned long long)
    GOSHMEMI_COPY_WIDTH(4, unsigned int)
    for (uint32_t i = tid; i < n; i += nthreads) ((char *)dst)[i] = ((const char *)src)[i];
}
#undef GOSHMEMI_COPY_WIDTH
/* Copies above 2 GiB (out of line: the common path stays small) go in
 * 1 GiB pieces, a multiple of 16, so each piece keeps the alignment that
 * chose the word width. */
GOSHMEMI_COLD void goshmemi_copy_part_huge(void *dst, const void *src, size_t n, uint32_t tid, uint32_t nthreads)
{
    const size_t piece = (size_t)1 << 30;
    for (size_t o = 0; o < n; o += piece)
        goshmemi_copy_part32((char *)dst + o, (const char *)src + o, (uint32_t)(n - o < piece ? n - o : piece), tid,
                             nthreads);
}
GOSHMEMI_FN void goshmemi_copy_part(void *dst, const void *src, size_t n, size_t tid, size_t nthreads)
{
    if (GOSHMEMI_LIKELY(n <= ((size_t)1 << 31)))
        goshmemi_copy_part32(dst, src, (uint32_t)n, (uint32_t)tid, (uint32_t)nthreads);
    else
        goshmemi_copy_part_huge(dst, src, n, (uint32_t)tid, (uint32_t)nthreads);
}

GOSHMEMI_FN unsigned goshmemi_block_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
GOSHMEMI_FN unsigned goshmemi_block_nthreads(void) { return blockDim.x * blockDim.y * blockDim.z; }
/* Lane of the calling thread: warps are formed from the linear thread id. */
GOSHMEMI_FN unsigned goshmemi_lane(void) { return goshmemi_block_tid() & 31u; }

/* One thread: word-sized, aligned copies (the common p/put of one element
 * or a signal payload) are one load and one store; the general loop costs
 * measurably more on the put + quiet latency path (diag_put_* rows). */
GOSHMEMI_FN void goshmemi_copy_thread(void *dst, const void *src, size_t n)
{
    uintptr_t a = (uintptr_t)dst | (uintptr_t)src;
    switch (n) {
    case 16:
        if ((a & 15) == 0) {
            *(uint4 *)dst = *(const uint4 *)src;
            return;
        }
        break;
    case 8:
        if ((a & 7) == 0) {
            *(unsigned long long *)dst = *(const unsigned long long *)src;
            return;
        }
        break;
    case 4:
        if ((a & 3) == 0) {
            *(unsigned int *)dst = *(const unsigned int *)src;
            return;
        }
        break;
    }
    goshmemi_copy_part(dst, src, n, 0, 1);
}
GOSHMEMI_FN void goshmemi_copy_warp(void *dst, const void *src, size_t n)
{
    goshmemi_copy_part(dst, src, n, goshmemi_lane(), 32);
    __syncwarp();
}
GOSHMEMI_FN void goshmemi_copy_block(void *dst, const void *src, size_t n)
{
    goshmemi_copy_part(dst, src, n, goshmemi_block_tid(), goshmemi_block_nthreads());
    __syncthreads();
}
/* Group helpers: run body on one thread of the group, after and before a group sync. */
#define GOSHMEMI_SYNC_thread() ((void)0)
#define GOSHMEMI_SYNC_warp() __syncwarp()
#define GOSHMEMI_SYNC_block() __syncthreads()
#define GOSHMEMI_LEADER_thread() 1
#define GOSHMEMI_LEADER_warp() (goshmemi_lane() == 0)
#define GOSHMEMI_LEADER_block() (goshmemi_block_tid() == 0)
#else
GOSHMEMI_FN void goshmemi_copy_thread(void *dst, const void *src, size_t n)
{
    if (n) memcpy(dst, src, n);
}
GOSHMEMI_FN void goshmemi_copy_warp(void *dst, const void *src, size_t n) { goshmemi_copy_thread(dst, src, n); }
GOSHMEMI_FN void goshmemi_copy_block(void *dst, const void *src, size_t n) { goshmemi_copy_thread(dst, src, n); }
#define GOSHMEMI_SYNC_thread() ((void)0)
#define GOSHMEMI_SYNC_warp() ((void)0)
#define GOSHMEMI_SYNC_block() ((void)0)
#define GOSHMEMI_LEADER_thread() 1
#define GOSHMEMI_LEADER_warp() 1
#define GOSHMEMI_LEADER_block() 1
#endif

/* ---- one put / get of GROUP: the load/store path, or the remote one ------- *
 * (remote.h: the group syncs, its leader hands the request to the remote
 * transport, the group syncs again). */
#define GOSHMEMI_ONE_THREAD_thread 1
#define GOSHMEMI_ONE_THREAD_warp 0
#define GOSHMEMI_ONE_THREAD_block 0
/* A one-thread put of one aligned 8-byte word (putmem of 8 bytes, put64,
 * a signal payload) loads the source word first and then translates dest,
 * so the load's latency (an L2 round trip after a quiet's L1 invalidation)
 * overlaps the translation instead of following it (put_lat and the
 * diag_put rows of goshmem-perf device; docs/gpu.md). Any other put goes
 * through goshmemi_copy_<group>. */
#define GOSHMEMI_PUT_AS(GROUP, dest, source, nbytes, pe, nbi)                                                         \
    do {                                                                                                              \
        uint64_t off_;                                                                                                \
        if (GOSHMEMI_ONE_THREAD_##GROUP && (nbytes) == 8 && ((uintptr_t)(source) & 7) == 0) {                        \
            const unsigned long long v_ = *(const unsigned long long *)(source);                                     \
            void *d_ = goshmemi_peer_or_remote(dest, pe, 8, &off_);                                                   \
            if (GOSHMEMI_UNLIKELY(d_ == NULL))                                                                        \
                goshmemi_remote_put(0, pe, off_, source, 8, nbi);                                                     \
            else if (((uintptr_t)d_ & 7) == 0)                                                                        \
                *(unsigned long long *)d_ = v_;                                                                       \
            else                                                                                                      \
                goshmemi_copy_thread(d_, source, 8);                                                                  \
            break;                                                                                                    \
        }                                                                                                             \
        void *d_ = goshmemi_peer_or_remote(dest, pe, nbytes, &off_);                                                  \
        if (GOSHMEMI_UNLIKELY(d_ == NULL))                                                                            \
            GOSHMEMI_REMOTE_GROUP(GROUP, goshmemi_remote_put(0, pe, off_, source, nbytes, nbi));                      \
        else                                                                                                          \
            goshmemi_copy_##GROUP(d_, source, nbytes);                                                                \
    } while (0)
#define GOSHMEMI_GET_AS(GROUP, dest, source, nbytes, pe, nbi)                                                         \
    do {                                                                                                              \
        uint64_t off_;                                                                                                \
        void *s_ = goshmemi_peer_or_remote(source, pe, nbytes, &off_);                                                \
        if (GOSHMEMI_UNLIKELY(s_ == NULL))                                                                            \
            GOSHMEMI_REMOTE_GROUP(GROUP, goshmemi_remote_get(0, pe, dest, off_, nbytes, nbi));                        \
        else                                                                                                          \
            goshmemi_copy_##GROUP(dest, s_, nbytes);                                                                  \
    } while (0)

/* ---- putmem / getmem ----------------------------------------------------- *
 * GOSHMEMI_MEM_DEF(PREFIX, SUFFIX, GROUP) defines
 *   PREFIX_putmem{,_nbi}SUFFIX and PREFIX_getmem{,_nbi}SUFFIX. */
#define GOSHMEMI_MEM_DEF(PREFIX, SUFFIX, GROUP)                                                                       \
    /* Copies nelems bytes from local source to dest on PE pe (see top of file). */                                   \
    GOSHMEMI_FN void PREFIX##_putmem##SUFFIX(void *dest, const void *source, size_t nelems, int pe)                   \
    {                                                                                                                 \
        GOSHMEMI_PUT_AS(GROUP, dest, source, nelems, pe, 0);                                                   \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_putmem_nbi##SUFFIX(void *dest, const void *source, size_t nelems, int pe)               \
    {                                                                                                                 \
        GOSHMEMI_PUT_AS(GROUP, dest, source, nelems, pe, 1);                                       \
    }                                                                                                                 \
    /* Copies nelems bytes from source on PE pe into local dest. */                                                   \
    GOSHMEMI_FN void PREFIX##_getmem##SUFFIX(void *dest, const void *source, size_t nelems, int pe)                   \
    {                                                                                                                 \
        GOSHMEMI_GET_AS(GROUP, dest, source, nelems, pe, 0);                                       \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_getmem_nbi##SUFFIX(void *dest, const void *source, size_t nelems, int pe)               \
    {                                                                                                                 \
        GOSHMEMI_GET_AS(GROUP, dest, source, nelems, pe, 1);                                       \
    }
GOSHMEMI_MEM_DEF(goshmem, , thread)
GOSHMEMI_MEM_DEF(goshmemx, _warp, warp)
GOSHMEMI_MEM_DEF(goshmemx, _block, block)
#undef GOSHMEMI_MEM_DEF

/* ---- typed put / get (+ _nbi, _warp, _block) ------------------------------ */
#define GOSHMEMI_TYPED_RMA_GROUP(PREFIX, NAME, TYPE, SUFFIX, GROUP)                                                   \
    GOSHMEMI_FN void PREFIX##_##NAME##_put##SUFFIX(TYPE *dest, const TYPE *source, size_t nelems, int pe)             \
    {                                                                                                                 \
        GOSHMEMI_PUT_AS(GROUP, dest, source, nelems * sizeof(TYPE), pe, 0);         \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_##NAME##_put_nbi##SUFFIX(TYPE *dest, const TYPE *source, size_t nelems, int pe)         \
    {                                                                                                                 \
        GOSHMEMI_PUT_AS(GROUP, dest, source, nelems * sizeof(TYPE), pe, 1);         \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_##NAME##_get##SUFFIX(TYPE *dest, const TYPE *source, size_t nelems, int pe)             \
    {                                                                                                                 \
        GOSHMEMI_GET_AS(GROUP, dest, source, nelems * sizeof(TYPE), pe, 0);         \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_##NAME##_get_nbi##SUFFIX(TYPE *dest, const TYPE *source, size_t nelems, int pe)         \
    {                                                                                                                 \
        GOSHMEMI_GET_AS(GROUP, dest, source, nelems * sizeof(TYPE), pe, 1);         \
    }

#define GOSHMEMI_TYPED_RMA(NAME, TYPE, BITS)                                                                          \
    GOSHMEMI_TYPED_RMA_GROUP(goshmem, NAME, TYPE, , thread)                                                           \
    GOSHMEMI_TYPED_RMA_GROUP(goshmemx, NAME, TYPE, _warp, warp)                                                       \
    GOSHMEMI_TYPED_RMA_GROUP(goshmemx, NAME, TYPE, _block, block)                                                     \
    /* Stores value into dest on PE pe: one relaxed word store (visible after quiet). */                              \
    GOSHMEMI_FN void goshmem_##NAME##_p(TYPE *dest, TYPE value, int pe)                                               \
    {                                                                                                                 \
        goshmemi_store_at_u##BITS(dest, pe, goshmemi_to_bits_##NAME(value));                                          \
    }                                                                                                                 \
    /* Returns source on PE pe: one relaxed word load (fresh on every call). */                                       \
    GOSHMEMI_FN TYPE goshmem_##NAME##_g(const TYPE *source, int pe)                                                   \
    {                                                                                                                 \
        return goshmemi_from_bits_##NAME(goshmemi_load_at_u##BITS(source, pe));                                       \
    }
GOSHMEMI_FOR_RMA_TYPES(GOSHMEMI_TYPED_RMA)
GOSHMEMI_FOR_RMA_FLOAT16_TYPES(GOSHMEMI_TYPED_RMA)
#undef GOSHMEMI_TYPED_RMA

/* ---- sized put / get: goshmem_put{8,16,32,64,128}[_nbi] etc. (nelems elements of BITS bits) ---- */
#define GOSHMEMI_SIZED_RMA_GROUP(PREFIX, BITS, BYTES, SUFFIX, GROUP)                                                  \
    GOSHMEMI_FN void PREFIX##_put##BITS##SUFFIX(void *dest, const void *source, size_t nelems, int pe)                \
    {                                                                                                                 \
        GOSHMEMI_PUT_AS(GROUP, dest, source, nelems * BYTES, pe, 0);                       \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_put##BITS##_nbi##SUFFIX(void *dest, const void *source, size_t nelems, int pe)          \
    {                                                                                                                 \
        GOSHMEMI_PUT_AS(GROUP, dest, source, nelems * BYTES, pe, 1);                       \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_get##BITS##SUFFIX(void *dest, const void *source, size_t nelems, int pe)                \
    {                                                                                                                 \
        GOSHMEMI_GET_AS(GROUP, dest, source, nelems * BYTES, pe, 0);                       \
    }                                                                                                                 \
    GOSHMEMI_FN void PREFIX##_get##BITS##_nbi##SUFFIX(void *dest, const void *source, size_t nelems, int pe)          \
    {                                                                                                                 \
        GOSHMEMI_GET_AS(GROUP, dest, source, nelems * BYTES, pe, 1);                       \
    }
#define GOSHMEMI_SIZED_RMA(BITS, BYTES)                                                                               \
    GOSHMEMI_SIZED_RMA_GROUP(goshmem, BITS, BYTES, , thread)                                                          \
    GOSHMEMI_SIZED_RMA_GROUP(goshmemx, BITS, BYTES, _warp, warp)                                                      \
    GOSHMEMI_SIZED_RMA_GROUP(goshmemx, BITS, BYTES, _block, block)
GOSHMEMI_FOR_SIZES(GOSHMEMI_SIZED_RMA)
#undef GOSHMEMI_SIZED_RMA
#undef GOSHMEMI_SIZED_RMA_GROUP

/* ---- context variants (one thread) ------------------------------------------ *
 * goshmemx_ctx_*(ctx, ...): on the load/store path exactly the plain calls
 * (a context has no queues there); on a remote path the request uses ctx's
 * queues (the proxy: ctx's reserved ring), so goshmem_ctx_quiet(ctx)
 * completes it and traffic of other contexts does not delay it. Contexts
 * >= 1 of the proxy are single-producer: one thread at a time per context.
 * Ref: OpenSHMEM 1.5 §9.4 (contexts), shmem_ctx_putmem. */
GOSHMEMI_FN void goshmemx_ctx_putmem(goshmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t off;
    void *d = goshmemi_peer_or_remote(dest, pe, nelems, &off);
    if (GOSHMEMI_UNLIKELY(d == NULL))
        goshmemi_remote_put(ctx, pe, off, source, nelems, 0);
    else
        goshmemi_copy_thread(d, source, nelems);
}
GOSHMEMI_FN void goshmemx_ctx_putmem_nbi(goshmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t off;
    void *d = goshmemi_peer_or_remote(dest, pe, nelems, &off);
    if (GOSHMEMI_UNLIKELY(d == NULL))
        goshmemi_remote_put(ctx, pe, off, source, nelems, 1);
    else
        goshmemi_copy_thread(d, source, nelems);
}
GOSHMEMI_FN void goshmemx_ctx_getmem(goshmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t off;
    void *s = goshmemi_peer_or_remote(source, pe, nelems, &off);
    if (GOSHMEMI_UNLIKELY(s == NULL))
        goshmemi_remote_get(ctx, pe, dest, off, nelems, 0);
    else
        goshmemi_copy_thread(dest, s, nelems);
}
GOSHMEMI_FN void goshmemx_ctx_getmem_nbi(goshmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    uint64_t off;
    void *s = goshmemi_peer_or_remote(source, pe, nelems, &off);
    if (GOSHMEMI_UNLIKELY(s == NULL))
        goshmemi_remote_get(ctx, pe, dest, off, nelems, 1);
    else
        goshmemi_copy_thread(dest, s, nelems);
}
/* One 64-bit word to pe through ctx (a relaxed store on the load/store path). */
GOSHMEMI_FN void goshmemx_ctx_uint64_p(goshmem_ctx_t ctx, uint64_t *dest, uint64_t value, int pe)
{
    uint64_t off;
    void *d = goshmemi_peer_or_remote(dest, pe, sizeof(uint64_t), &off);
    if (GOSHMEMI_UNLIKELY(d == NULL))
        goshmemi_remote_put_value(ctx, pe, off, value, sizeof(uint64_t));
    else
        goshmemi_relaxed_store_u64(d, value, goshmemi_sys_scope());
}

#endif /* GOSHMEM_RMA_H */
