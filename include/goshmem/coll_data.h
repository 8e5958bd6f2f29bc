/* goshmem device API: data collectives on teams -- reduce (all-reduce),
 * reducescatter, broadcast, fcollect, alltoall -- in NVSHMEM's names with the
 * goshmem prefix, for one thread (goshmem_*), one warp (goshmemx_*_warp) or
 * one block (goshmemx_*_block) per PE.
 *
 *   int goshmem_<T>_<op>_reduce(team, T *dst, const T *src, size_t n)
 *       dst[i] = src_0[i] op src_1[i] op ... over the team's members, on every member.
 *       op: sum, prod, min, max (every reduce type); and, or, xor (the integer
 *       types NVSHMEM lists for them). dst == src (in place) is allowed;
 *       partial overlap is not.
 *   int goshmem_<T>_<op>_reducescatter(team, T *dst, const T *src, size_t nreduce)
 *       src holds team_n_pes blocks of nreduce; member i gets dst = the reduction
 *       of every member's block i. dst and src must not overlap.
 *   int goshmem_<T>_broadcast(team, T *dst, const T *src, size_t n, int root)
 *       root is an index in team; every member (root included) gets dst = root's
 *       src. On root dst == src is allowed.
 *   int goshmem_<T>_fcollect(team, T *dst, const T *src, size_t n)
 *       dst = the members' src blocks of n, in team order (n * team_n_pes).
 *   int goshmem_<T>_alltoall(team, T *dst, const T *src, size_t n)
 *       member i's block j of src (n elements) goes to member j's block i of dst.
 *   goshmem_broadcastmem / fcollectmem / alltoallmem: the same on bytes.
 * Types: NVSHMEM 3.x's lists (NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES for the
 * data movers, NVSHMEMI_REPT_FOR_{BITWISE,STANDARD,ARITH}_REDUCE_TYPES for the
 * reductions), half and bfloat16 included (fp16.h): GOSHMEMI_FOR_*_REDUCE_TYPES
 * below. Integer sum/prod wrap around (two's complement); half and bfloat16
 * accumulate in float across all members and round once (nearest even);
 * every member computes element i in the same member order, so float results
 * are bitwise identical on all members. Every call returns 0.
 *
 * Calling rules (as NVSHMEM's): every member PE of team calls, with the same
 * n (nreduce), root and op; per PE exactly ONE thread for goshmem_*, one
 * whole warp (all 32 lanes, same arguments) for _warp, one whole block for
 * _block; one collective at a time per team per PE (two blocks of one PE on
 * the same team at once corrupt its counters), and all PEs' kernels must be
 * running at the same time (MPS or a collective launch). dst and src are
 * symmetric (the device heap) and the same symmetric object on every member.
 * n == 0 returns at once (no synchronization).
 *
 * Completion and synchronization: on return dst is complete on this PE and
 * src may be reused; no other member reads or writes this PE's src/dst after
 * it returned. Members synchronize with each other only as far as the data
 * requires (there is no full barrier on entry or exit): like NVSHMEM's, these
 * are not barriers -- use goshmem_barrier for the memory of other objects.
 * Puts issued before the call are not completed by it (quiet first).
 * Ref: NVSHMEM 3.x device collectives (nvshmem_coll_defines.cuh); OpenSHMEM
 * 1.5 §9.9.7-11 (team collectives).
 *
 * How (load/store path = every member's heap mapped here; the usual case):
 *   flags:   each PE's psync slot of the team holds one uint64_t per member
 *            (device_state.h); member j "signals" i by a release store of the
 *            collective's epoch (team_epoch, bumped per collective step) into
 *            flag[j] on i; i waits with acquire loads until flag[j] >= epoch.
 *            Epochs only grow, so flags are never reset.
 *   small:   one flag round: each member pushes its operand (its block j, for
 *            reducescatter/alltoall) into member j's scratch (the team slot's
 *            scratch half chosen by a per-slot counter, alternating), signals,
 *            waits for every member's signal, then reduces / copies locally.
 *            A member can only write a half again two scratch steps later,
 *            which needs this PE's signal of the step in between, sent after
 *            it finished reading: no acknowledgement round.
 *   LL:      the small scheme for blocks of at most GOSHMEM_GPU_COLL_LL bytes
 *            (coll_ll_bytes, capped at 4 KiB / members; for one thread
 *            8 bytes, or 16 / (members - 1), for a warp 512 / (members - 1):
 *            goshmemi_coll_use_ll): the block goes as 8-byte packets, 4 data
 *            bytes and the step's tag in one store, into the LL region; the
 *            receiver polls the packets themselves (no flag, no fence) and
 *            unpacks them into its scratch, or for the one-thread and block
 *            fcollect and alltoall straight into dst (goshmemi_coll_ll_xchg).
 *            A broadcast's root sends packets and the receivers unpack them
 *            into dst; the receivers also signal every member, since the
 *            step must show that every member entered it
 *            (goshmemi_coll_ll_bcast; its limits: one thread 16 bytes, a
 *            warp 1 KiB, goshmemi_coll_use_ll_bcast).
 *   large:   zero copy, two flag rounds (entry: everyone's src and dst are
 *            ready; exit: everyone is done with them):
 *            reduce: member i reduces its 1/P share of the vector reading every
 *              member's src directly, and stores the result into every member's
 *              dst (reduce-scatter + all-gather in one pass, 16-byte accesses);
 *            reducescatter: member i reduces block i reading every member's src;
 *            fcollect / alltoall: member i stores its block(s) into every
 *              member's dst;
 *            broadcast: root signals, receivers copy from root's src, then
 *              signal root (one thread and a block at every size above the
 *              LL limit, a warp from 3 members).
 *   The group's threads split every copy and reduction (16-byte vectors when
 *   the operands are 16-byte aligned, element by element otherwise) and the
 *   flag stores/polls (one member per thread).
 * Remote members (heap not mapped: proxy, IBGDA; remote.h): the small scheme
 * for every size, in scratch-sized chunks, each member's operand going as one
 * put_signal (data, then the flag) per remote member; the group's leader
 * issues the remote requests. Mixed teams use stores for mapped members.
 *
 * Host mode: a "warp" or "block" is the calling OS thread alone, or the OS
 * threads that joined one goshmemx_host_group_t (goshmemx_host_set_group),
 * each with its own thread index, the group sync being a barrier among
 * them: that is how tests/hdr/collcheck.c runs the split code paths.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_COLL_DATA_H
#define GOSHMEM_COLL_DATA_H

#include "coll.h"
#include "fp16.h"

/* ---- the calling group: thread, warp, block ------------------------------- */

#define GOSHMEMI_SCOPE_THREAD 0
#define GOSHMEMI_SCOPE_WARP 1
#define GOSHMEMI_SCOPE_BLOCK 2

#if !GOSHMEMI_CUDA
/* Host mode: OS threads that act as one warp or block (tests). size threads
 * call goshmemx_host_set_group(g, tid) with tid 0..size-1 before the
 * collective; goshmemx_host_set_group(NULL, 0) leaves the group. */
typedef struct goshmemx_host_group {
    unsigned size;
    unsigned arrived_, phase_; /* zero-initialize */
} goshmemx_host_group_t;
GOSHMEMI_EXTERN_C_BEGIN
#if defined(__cplusplus)
__attribute__((weak)) thread_local goshmemx_host_group_t *goshmemi_host_group;
__attribute__((weak)) thread_local unsigned goshmemi_host_group_tid;
#else
__attribute__((weak)) _Thread_local goshmemx_host_group_t *goshmemi_host_group;
__attribute__((weak)) _Thread_local unsigned goshmemi_host_group_tid;
#endif
GOSHMEMI_EXTERN_C_END
GOSHMEMI_FN void goshmemx_host_set_group(goshmemx_host_group_t *g, unsigned tid)
{
    goshmemi_host_group = g;
    goshmemi_host_group_tid = tid;
}
/* Sense-reversing barrier of the host group. */
GOSHMEMI_FN void goshmemi_host_group_sync(void)
{
    goshmemx_host_group_t *g = goshmemi_host_group;
    if (g == NULL || g->size <= 1) return;
    unsigned ph = __atomic_load_n(&g->phase_, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&g->arrived_, 1u, __ATOMIC_ACQ_REL) == g->size) {
        __atomic_store_n(&g->arrived_, 0u, __ATOMIC_RELAXED);
        __atomic_store_n(&g->phase_, ph + 1, __ATOMIC_RELEASE);
    } else {
        while (__atomic_load_n(&g->phase_, __ATOMIC_ACQUIRE) == ph) goshmemi_poll_pause();
    }
}
#endif

/* scope is a compile-time constant after inlining: these fold. */
GOSHMEMI_FN unsigned goshmemi_cg_tid(int scope)
{
    if (scope == GOSHMEMI_SCOPE_THREAD) return 0;
#if GOSHMEMI_CUDA
    return scope == GOSHMEMI_SCOPE_WARP ? goshmemi_lane() : goshmemi_block_tid();
#else
    return goshmemi_host_group ? goshmemi_host_group_tid : 0;
#endif
}
GOSHMEMI_FN unsigned goshmemi_cg_size(int scope)
{
    if (scope == GOSHMEMI_SCOPE_THREAD) return 1;
#if GOSHMEMI_CUDA
    return scope == GOSHMEMI_SCOPE_WARP ? 32u : goshmemi_block_nthreads();
#else
    return goshmemi_host_group ? goshmemi_host_group->size : 1;
#endif
}
/* Group sync: orders every thread's prior memory operations before every
 * thread's later ones (a release by one thread after it covers the others'
 * stores: cumulativity over bar.sync, ordering.h). */
GOSHMEMI_FN void goshmemi_cg_sync(int scope)
{
    if (scope == GOSHMEMI_SCOPE_THREAD) return;
#if GOSHMEMI_CUDA
    if (scope == GOSHMEMI_SCOPE_WARP)
        __syncwarp();
    else
        __syncthreads();
#else
    goshmemi_host_group_sync();
#endif
}

/* Thread tid of nt copies its share of n bytes (no sync). */
GOSHMEMI_FN void goshmemi_cg_copy(void *dst, const void *src, size_t n, unsigned tid, unsigned nt)
{
    if (n == 0 || dst == src) return;
#if GOSHMEMI_CUDA
    goshmemi_copy_part(dst, src, n, tid, nt);
#else
    size_t lo = n * tid / nt, hi = n * (tid + 1) / nt;
    if (hi > lo) memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
#endif
}
/* 16-byte words: a vector load/store on the GPU, two 8-byte words in host
 * mode (the copies below run in collcheck with the GPU's shape). */
#if GOSHMEMI_CUDA
#define GOSHMEMI_UNROLL _Pragma("unroll")
typedef uint4 goshmemi_w16_t;
#define GOSHMEMI_W16_LD(v, p) ((v) = *(const uint4 *)(p))
#define GOSHMEMI_W16_ST(p, v) (*(uint4 *)(p) = (v))
#else
#define GOSHMEMI_UNROLL
typedef struct {
    uint64_t a, b;
} goshmemi_w16_t;
#define GOSHMEMI_W16_LD(v, p) memcpy(&(v), (const void *)(p), 16)
#define GOSHMEMI_W16_ST(p, v) memcpy((void *)(p), &(v), 16)
#endif
/* One thread's copy of nw 16-byte words (both ends 16-byte aligned): eight
 * loads in flight, then their stores; the last batch's loads predicated.
 * Every address is a base plus a constant offset: one thread's copy is
 * bound by its instruction latencies as much as by memory. */
GOSHMEMI_FN void goshmemi_one_copy16(uintptr_t d, uintptr_t s, uint32_t nw)
{
    goshmemi_w16_t *dw = (goshmemi_w16_t *)d;
    const goshmemi_w16_t *sw = (const goshmemi_w16_t *)s;
    uint32_t i = 0;
    for (; i + 8 <= nw; i += 8) {
        goshmemi_w16_t w[8];
        GOSHMEMI_UNROLL
        for (int b = 0; b < 8; b++) GOSHMEMI_W16_LD(w[b], sw + (i + b));
        GOSHMEMI_UNROLL
        for (int b = 0; b < 8; b++) GOSHMEMI_W16_ST(dw + (i + b), w[b]);
    }
    if (i < nw) {
        goshmemi_w16_t w[7];
        GOSHMEMI_UNROLL
        for (int b = 0; b < 7; b++)
            if (i + b < nw) GOSHMEMI_W16_LD(w[b], sw + (i + b));
        GOSHMEMI_UNROLL
        for (int b = 0; b < 7; b++)
            if (i + b < nw) GOSHMEMI_W16_ST(dw + (i + b), w[b]);
    }
}
#if GOSHMEMI_CUDA
/* A thread-scope mover's copy, out of line: inlined at every copy site,
 * the unrolled one-thread loops roughly doubled the registers of a kernel
 * calling a thread-scope broadcast, fcollect or alltoall, and so halved the
 * largest block it launches with. Warp and block forms copy inline. */
static __device__ __noinline__ void goshmemi_cg_copy_one(void *dst, const void *src, size_t n)
{
    /* One thread pays a memory latency per batch of loads: 16-byte words
     * go eight at a time when dst and src are 16-byte aligned (the
     * collectives' buffers usually are): a copy of 64 bytes is one batch,
     * not four load-store pairs. Out of line, these registers are the
     * callee's only. */
    const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (((d | s) & 15u) == 0 && n >= 32 && n <= ((size_t)1 << 31)) {
        const uint32_t nw = (uint32_t)(n / 16);
        goshmemi_one_copy16(d, s, nw);
        const size_t done = (size_t)nw * 16;
        if (done < n) goshmemi_copy_part((char *)dst + done, (const char *)src + done, n - done, 0, 1);
        return;
    }
    goshmemi_copy_part(dst, src, n, 0, 1);
}
#endif

/* ---- multi-block copies ------------------------------------------------------ */

/* A data mover copies one block of n bytes per member: block j from
 * src(j) to dst(j), each side either at base + j * stride (this PE) or at
 * symmetric offset base on member j (sym); block my_index comes from
 * me_src, or is skipped when me_src is 0. Copied one after the other with
 * a load and a store per word, every block costs a memory latency (generic
 * pointers may alias: no load moves above an earlier store). Here a
 * thread's loads go out before its stores: blocks of fewer than DEPTH
 * words per thread go DS at a time, word w of each per round (one latency
 * per DS blocks), larger ones one at a time with DEPTH words per thread in
 * flight. 16-byte words when every base and stride is
 * 16-byte aligned (heap bases are); the bytes past the words, or all of
 * them when not aligned, go block by block as goshmemi_cg_copy. A warp's
 * movers use it (inline: out of line, a call in a kernel capped at 64
 * registers spills what the callee uses), host mode too (collcheck); one
 * thread has goshmemi_copy_blocks_one; a block and the warp's reductions
 * copy block by block. */
#define GOSHMEMI_BLK_ADDR(base, stride, sym, j)                                                                       \
    ((sym) ? (uintptr_t)goshmemi_cstate()->heap_base[start + (j) * pstride] + (base) : (base) + (size_t)(j) * (stride))
/* DEPTH segments of up to L words in lockstep, a thread's word w of each
 * per round (segment b: from sp(b) to dp(b), its first len(b) words). */
#define GOSHMEMI_SEG_COPY(DEPTH, L, tid, nt, sp, dp, len)                                                             \
    for (unsigned w = (tid); w < (L); w += (nt)) {                                                                    \
        goshmemi_w16_t v[DEPTH];                                                                                      \
        GOSHMEMI_UNROLL                                                                                               \
        for (int b = 0; b < (DEPTH); b++)                                                                             \
            if (w < (len)) GOSHMEMI_W16_LD(v[b], (sp) + 16u * w);                                                     \
        GOSHMEMI_UNROLL                                                                                               \
        for (int b = 0; b < (DEPTH); b++)                                                                             \
            if (w < (len)) GOSHMEMI_W16_ST((dp) + 16u * w, v[b]);                                                     \
    }
/* Words [0, nw) from `from` to `to`, DEPTH per thread in flight. */
#define GOSHMEMI_DEEP_COPY(DEPTH, to, from, nw, tid, nt)                                                              \
    {                                                                                                                 \
        const uintptr_t to_ = (to), from_ = (from);                                                                   \
        for (unsigned i0 = (tid); i0 < (nw); i0 += (DEPTH) * (nt)) {                                                  \
            goshmemi_w16_t v[DEPTH];                                                                                  \
            GOSHMEMI_UNROLL                                                                                           \
            for (int b = 0; b < (DEPTH); b++)                                                                         \
                if (i0 + (unsigned)b * (nt) < (nw)) GOSHMEMI_W16_LD(v[b], from_ + 16u * (i0 + (unsigned)b * (nt)));   \
            GOSHMEMI_UNROLL                                                                                           \
            for (int b = 0; b < (DEPTH); b++)                                                                         \
                if (i0 + (unsigned)b * (nt) < (nw)) GOSHMEMI_W16_ST(to_ + 16u * (i0 + (unsigned)b * (nt)), v[b]);     \
        }                                                                                                             \
    }
#define GOSHMEMI_BLK_J(k) ((int)(k) + (skip && (int)(k) >= me))
#define GOSHMEMI_BLK_SRC(j) ((j) == me ? me_src : GOSHMEMI_BLK_ADDR(sb, ss, ssym, (j)))
#define GOSHMEMI_COPY_BLOCKS_DEF(QUAL, NAME, DEPTH, DS)                                                               \
    QUAL void NAME(int start, int pstride, int P, int me, uintptr_t db, size_t ds, int dsym, uintptr_t sb, size_t ss, \
                   int ssym, uintptr_t me_src, size_t n, unsigned tid, unsigned nt)                                   \
    {                                                                                                                 \
        const int skip = me_src == 0;                                                                                 \
        const unsigned nblk = (unsigned)(P - skip);                                                                   \
        const uintptr_t mis = db | sb | (dsym ? 0 : ds) | (ssym ? 0 : ss) | me_src;                                   \
        /* 16-byte words of aligned blocks; the rest (n % 16 bytes, or all when not aligned) after */                 \
        const size_t nw = (mis & 15u) == 0 && n / 16 < ((size_t)1 << 31) ? n / 16 : 0;                                \
        const unsigned w32 = (unsigned)nw;                                                                            \
        if (w32 >= (DEPTH) * nt) {                                                                                    \
            /* large blocks, one at a time, DEPTH words per thread in flight */                                       \
            for (unsigned k = 0; k < nblk; k++) {                                                                     \
                const int j = GOSHMEMI_BLK_J(k);                                                                      \
                GOSHMEMI_DEEP_COPY(DEPTH, GOSHMEMI_BLK_ADDR(db, ds, dsym, j), GOSHMEMI_BLK_SRC(j), w32, tid, nt)      \
            }                                                                                                         \
        } else if (w32 != 0) {                                                                                        \
            /* small blocks, DS at a time */                                                                          \
            for (unsigned k0 = 0; k0 < nblk; k0 += (DS))                                                              \
                GOSHMEMI_SEG_COPY(DS, w32, tid, nt, GOSHMEMI_BLK_SRC(GOSHMEMI_BLK_J(k0 + b)),                         \
                                  GOSHMEMI_BLK_ADDR(db, ds, dsym, GOSHMEMI_BLK_J(k0 + b)), (k0 + b < nblk ? w32 : 0u)) \
        }                                                                                                             \
        if (nw * 16 != n)                                                                                             \
            for (unsigned k = 0; k < nblk; k++)                                                                       \
                goshmemi_cg_copy((void *)(GOSHMEMI_BLK_ADDR(db, ds, dsym, GOSHMEMI_BLK_J(k)) + nw * 16),              \
                                 (const void *)(GOSHMEMI_BLK_SRC(GOSHMEMI_BLK_J(k)) + nw * 16), n - nw * 16, tid, nt); \
    }
#if GOSHMEMI_CUDA
/* a warp: inline, 4 words per lane in flight in a large block, 2 small blocks at a time */
GOSHMEMI_COPY_BLOCKS_DEF(GOSHMEMI_FN, goshmemi_copy_blocks_warp, 4, 2)
/* one block (a warp's single copy) */
GOSHMEMI_FN void goshmemi_copy_deep_warp(void *dst, const void *src, size_t n)
{
    const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    const unsigned lane = goshmemi_lane();
    const size_t nw = ((d | s) & 15u) == 0 && n / 16 < ((size_t)1 << 31) ? n / 16 : 0;
    GOSHMEMI_DEEP_COPY(4, d, s, (unsigned)nw, lane, 32u)
    if (nw * 16 != n) goshmemi_copy_part((char *)dst + nw * 16, (const char *)src + nw * 16, n - nw * 16, lane, 32);
}
#else
/* host mode: the warp's depths, so collcheck runs the code the GPU runs */
GOSHMEMI_COPY_BLOCKS_DEF(GOSHMEMI_FN, goshmemi_copy_blocks_host, 4, 2)
#endif

/* One thread's copy of every member's block. Block by block, a thread paid
 * a memory latency per block, and below 128 bytes per word: an fcollect of
 * 16 bytes at 4 PEs copied 3 words out and 4 back one after the other.
 * Here blocks of 8 or more 16-byte words go one by one, eight loads in
 * flight (goshmemi_one_copy16); smaller ones four blocks at a time, two
 * words of each per round, so up to eight loads are in flight. The bytes
 * past the words (or all, when not aligned) go block by block after. Each
 * address is a block base plus a constant offset, computed once per block:
 * one thread's instruction latencies count as much as its loads. Out of
 * line on the GPU (its registers are the callee's only); host mode runs it
 * for the one-thread forms too, so collcheck covers it. */
#if GOSHMEMI_CUDA
static __device__ __noinline__
#else
GOSHMEMI_FN
#endif
void goshmemi_copy_blocks_one(int start, int pstride, int P, int me, uintptr_t db, size_t ds, int dsym, uintptr_t sb,
                              size_t ss, int ssym, uintptr_t me_src, size_t n)
{
    const int skip = me_src == 0;
    const unsigned nblk = (unsigned)(P - skip);
    const uintptr_t mis = db | sb | (dsym ? 0 : ds) | (ssym ? 0 : ss) | me_src;
    const size_t nw = (mis & 15u) == 0 && n / 16 < ((size_t)1 << 31) ? n / 16 : 0;
    const unsigned w32 = (unsigned)nw;
    if (w32 >= 8) {
        for (unsigned k = 0; k < nblk; k++) {
            const int j = GOSHMEMI_BLK_J(k);
            goshmemi_one_copy16(GOSHMEMI_BLK_ADDR(db, ds, dsym, j), GOSHMEMI_BLK_SRC(j), w32);
        }
    } else if (w32 != 0) {
        for (unsigned k0 = 0; k0 < nblk; k0 += 4) {
            uintptr_t sp[4], dp[4];
            GOSHMEMI_UNROLL
            for (int b = 0; b < 4; b++) {
                const int j = GOSHMEMI_BLK_J(k0 + (unsigned)b < nblk ? k0 + (unsigned)b : nblk - 1);
                sp[b] = GOSHMEMI_BLK_SRC(j);
                dp[b] = GOSHMEMI_BLK_ADDR(db, ds, dsym, j);
            }
            for (unsigned w = 0; w < w32; w += 2) {
                goshmemi_w16_t v[4][2];
                GOSHMEMI_UNROLL
                for (int b = 0; b < 4; b++)
                    GOSHMEMI_UNROLL
                    for (int u = 0; u < 2; u++)
                        if (k0 + (unsigned)b < nblk && w + (unsigned)u < w32) GOSHMEMI_W16_LD(v[b][u], sp[b] + 16u * (w + (unsigned)u));
                GOSHMEMI_UNROLL
                for (int b = 0; b < 4; b++)
                    GOSHMEMI_UNROLL
                    for (int u = 0; u < 2; u++)
                        if (k0 + (unsigned)b < nblk && w + (unsigned)u < w32) GOSHMEMI_W16_ST(dp[b] + 16u * (w + (unsigned)u), v[b][u]);
            }
        }
    }
    if (nw * 16 != n)
        for (unsigned k = 0; k < nblk; k++) {
            const int j = GOSHMEMI_BLK_J(k);
            goshmemi_cg_copy((void *)(GOSHMEMI_BLK_ADDR(db, ds, dsym, j) + nw * 16),
                             (const void *)(GOSHMEMI_BLK_SRC(j) + nw * 16), n - nw * 16, 0, 1);
        }
}

/* ---- one collective's context ---------------------------------------------- */

/* Kept small on purpose: what the whole collective needs stays in registers
 * of the caller's kernel, the rest is recomputed from the constant state. */
typedef struct goshmemi_coll {
    goshmemi_team_view_t v;
    int scope, all_ls;
    int mover;    /* broadcast/fcollect/alltoall: copies out of line (one thread), deep (a warp) */
    uint64_t epoch;  /* the collective's epochs are epoch+1 .. epoch+nepochs */
    uint64_t scount; /* scratch steps: scount .. scount+nscratch-1 (half = step & 1) */
} goshmemi_coll_t;

GOSHMEMI_FN int goshmemi_coll_pe(const goshmemi_coll_t *c, int j) { return c->v.start + j * c->v.stride; }
#define GOSHMEMI_COLL_TID(c) goshmemi_cg_tid((c)->scope)
#define GOSHMEMI_COLL_NT(c) goshmemi_cg_size((c)->scope)
/* The group's share of a copy of n bytes (no sync); c->scope and
 * c->mover are constants once inlined, so each form compiles one path.
 * The reductions keep this copy inlined (their registers go to the
 * reduction loops: out of line saves none and only adds a call); their
 * exchange's blocks: goshmemi_coll_copy_blocks. */
GOSHMEMI_FN void goshmemi_coll_copy(const goshmemi_coll_t *c, void *dst, const void *src, size_t n)
{
#if GOSHMEMI_CUDA
    if (c->scope == GOSHMEMI_SCOPE_THREAD && c->mover) {
        if (n != 0 && dst != src) goshmemi_cg_copy_one(dst, src, n);
        return;
    }
    if (c->scope == GOSHMEMI_SCOPE_WARP && c->mover) {
        if (n != 0 && dst != src) goshmemi_copy_deep_warp(dst, src, n);
        return;
    }
#endif
    goshmemi_cg_copy(dst, src, n, GOSHMEMI_COLL_TID(c), GOSHMEMI_COLL_NT(c));
}
/* Every member's block (goshmemi_copy_blocks_*): one thread's movers, and
 * its reductions' exchanges from 32 bytes a block and 96 over all blocks
 * (below that the inline copy is as fast and the call costs), by
 * goshmemi_copy_blocks_one; a warp's and host mode's movers together;
 * others block by block (goshmemi_coll_copy). */
GOSHMEMI_FN void goshmemi_coll_copy_blocks(const goshmemi_coll_t *c, uintptr_t db, size_t ds, int dsym, uintptr_t sb,
                                           size_t ss, int ssym, const void *me_src, size_t n)
{
    const int P = c->v.size, me = c->v.my_index;
    if (n == 0) return;
    if (c->scope == GOSHMEMI_SCOPE_THREAD && (c->mover || (n >= 32 && n * (size_t)(P - 1) >= 96))) {
        goshmemi_copy_blocks_one(c->v.start, c->v.stride, P, me, db, ds, dsym, sb, ss, ssym, (uintptr_t)me_src, n);
        return;
    }
#if GOSHMEMI_CUDA
    if (c->mover && c->scope == GOSHMEMI_SCOPE_WARP) {
        goshmemi_copy_blocks_warp(c->v.start, c->v.stride, P, me, db, ds, dsym, sb, ss, ssym, (uintptr_t)me_src, n,
                                  goshmemi_lane(), 32);
        return;
    }
#else
    if (c->mover) {
        goshmemi_copy_blocks_host(c->v.start, c->v.stride, P, me, db, ds, dsym, sb, ss, ssym, (uintptr_t)me_src, n,
                                  GOSHMEMI_COLL_TID(c), GOSHMEMI_COLL_NT(c));
        return;
    }
#endif
    const int start = c->v.start, pstride = c->v.stride;
    for (int j = 0; j < P; j++) {
        if (j == me && me_src == NULL) continue;
        const uintptr_t from = j == me ? (uintptr_t)me_src : GOSHMEMI_BLK_ADDR(sb, ss, ssym, j);
        goshmemi_coll_copy(c, (void *)GOSHMEMI_BLK_ADDR(db, ds, dsym, j), (const void *)from, n);
    }
}

/* heap_base[my_pe] */
GOSHMEMI_FN uintptr_t goshmemi_coll_my_base(void)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    return (uintptr_t)cs->heap_base[cs->my_pe];
}
/* symmetric offset of this slot's flag array / scratch */
GOSHMEMI_FN uint64_t goshmemi_coll_flags_off(const goshmemi_coll_t *c)
{
    return goshmemi_team_slot_off(c->v.slot) + GOSHMEMI_COLL_FLAGS_OFF;
}
GOSHMEMI_FN uint64_t goshmemi_coll_scratch_off(const goshmemi_coll_t *c)
{
    return goshmemi_team_slot_off(c->v.slot) + GOSHMEMI_COLL_SCRATCH_IN_SLOT;
}
/* scratch bytes per member per half (multiple of 16) */
GOSHMEMI_FN size_t goshmemi_coll_member_bytes(const goshmemi_coll_t *c)
{
    return ((size_t)(GOSHMEMI_COLL_SCRATCH_SLOT_BYTES / 2) / (size_t)c->v.size) & ~(size_t)15;
}

/* Resolves team (traps when invalid or when this PE is not a member). */
GOSHMEMI_FN void goshmemi_coll_init(goshmemi_coll_t *c, int scope, goshmem_team_t team)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    c->v = goshmemi_team_view(team);
    c->scope = scope;
    c->mover = 1;
    int ls = 1;
    for (int j = 0; j < c->v.size; j++) ls &= cs->heap_base[goshmemi_coll_pe(c, j)] != 0;
    c->all_ls = ls;
    c->epoch = c->scount = 0;
}

/* Takes nepochs epochs and nscratch scratch steps of the team slot (the
 * same numbers on every member: they follow from the arguments). */
GOSHMEMI_FN void goshmemi_coll_reserve(goshmemi_coll_t *c, uint64_t nepochs, uint64_t nscratch)
{
    uint64_t *ep = goshmemi_cstate()->team_epoch + c->v.slot;
    uint64_t *ctr = (uint64_t *)(goshmemi_coll_my_base() + (uintptr_t)goshmemi_team_slot_off(c->v.slot) + GOSHMEMI_COLL_COUNTER_OFF);
    c->epoch = *ep;
    c->scount = *ctr;
    goshmemi_cg_sync(c->scope); /* everyone read them before the leader moves them */
    if (GOSHMEMI_COLL_TID(c) == 0) {
        *ep = c->epoch + nepochs;
        *ctr = c->scount + nscratch;
    }
}

/* Symmetric offset of [p, p+nbytes) of this PE's heap; traps when outside. */
GOSHMEMI_FN uint64_t goshmemi_coll_off(const goshmemi_coll_t *c, const void *p, size_t nbytes)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    (void)c;
    uint64_t o = (uint64_t)(uintptr_t)p - goshmemi_coll_my_base();
    if (GOSHMEMI_UNLIKELY(o > cs->heap_size || (uint64_t)nbytes > cs->heap_size - o))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_NOT_SYMMETRIC, GOSHMEMI_ERROR_INFO(cs->my_pe, o),
                      "collective buffer is not inside the symmetric heap");
    return o;
}

/* Local scratch of half h, member j's part. */
GOSHMEMI_FN uintptr_t goshmemi_coll_scratch(const goshmemi_coll_t *c, unsigned h, int j)
{
    return goshmemi_coll_my_base() + (uintptr_t)goshmemi_coll_scratch_off(c) + (uintptr_t)h * (GOSHMEMI_COLL_SCRATCH_SLOT_BYTES / 2) +
           (uintptr_t)j * goshmemi_coll_member_bytes(c);
}

/* Member j (!= me) learns epoch e from this PE: a release store of e into
 * flag[my_index] on j (covers this thread's and, after a group sync, the
 * group's prior stores), or an ordered remote put of it. Remote: one thread. */
GOSHMEMI_FN void goshmemi_coll_signal(const goshmemi_coll_t *c, int j, uint64_t e)
{
    int pe = goshmemi_coll_pe(c, j);
    uint64_t off = goshmemi_coll_flags_off(c) + 8u * (uint64_t)c->v.my_index;
    uint64_t base = goshmemi_cstate()->heap_base[pe];
    if (GOSHMEMI_LIKELY(base != 0)) {
        goshmemi_release_store_u64((uint64_t *)(uintptr_t)(base + off), e, goshmemi_sys_scope());
    } else {
        goshmemi_order_fence(1); /* after this thread's earlier requests and stores */
        goshmemi_remote_put_value(0, pe, off, e, sizeof(uint64_t));
    }
}

/* Waits (acquire) until member j's flag here reached e. */
GOSHMEMI_FN void goshmemi_coll_wait_one(const goshmemi_coll_t *c, int j, uint64_t e)
{
    const uint64_t *f = (const uint64_t *)(goshmemi_coll_my_base() + (uintptr_t)goshmemi_coll_flags_off(c) + 8u * (uintptr_t)j);
    while (goshmemi_acquire_load_u64(f, goshmemi_sys_scope()) < e) goshmemi_poll_pause();
}

/* Every member but this one signals e to this PE: the group splits the
 * polls, then syncs (what one thread acquired, the group sees after it). */
GOSHMEMI_FN void goshmemi_coll_wait_all(const goshmemi_coll_t *c, uint64_t e)
{
    for (int j = (int)GOSHMEMI_COLL_TID(c); j < c->v.size; j += (int)GOSHMEMI_COLL_NT(c))
        if (j != c->v.my_index) goshmemi_coll_wait_one(c, j, e);
    goshmemi_cg_sync(c->scope);
}

/* The group signals e to every other member when all are mapped here, the
 * threads splitting the members: a release store each when no thread has
 * more than one member; otherwise (one thread for three or more members)
 * one fence, then relaxed stores (the release pattern): a run of
 * st.release would wait for each store before the next. */
GOSHMEMI_FN void goshmemi_coll_signal_ls(const goshmemi_coll_t *c, uint64_t e)
{
    const int sys = goshmemi_sys_scope();
    const uint64_t off = goshmemi_coll_flags_off(c) + 8u * (uint64_t)c->v.my_index;
    const int tid = (int)GOSHMEMI_COLL_TID(c), nt = (int)GOSHMEMI_COLL_NT(c);
    if (c->v.size - 1 <= nt) { /* at most one member per thread: a release store each */
        int j = tid + (tid >= c->v.my_index);
        if (j < c->v.size) goshmemi_coll_signal(c, j, e);
        return;
    }
    goshmemi_order_fence(sys);
    for (int j = tid; j < c->v.size; j += nt)
        if (j != c->v.my_index)
            goshmemi_relaxed_store_u64((void *)(uintptr_t)(goshmemi_cstate()->heap_base[goshmemi_coll_pe(c, j)] + off), e, sys);
}

/* This PE signals e to every other member (group split; remote: leader). */
GOSHMEMI_FN void goshmemi_coll_signal_all(const goshmemi_coll_t *c, uint64_t e)
{
    if (c->all_ls) {
        goshmemi_coll_signal_ls(c, e);
    } else if (GOSHMEMI_COLL_TID(c) == 0) {
        for (int j = 0; j < c->v.size; j++)
            if (j != c->v.my_index) goshmemi_coll_signal(c, j, e);
    }
}

/* Flat all-to-all flag round: after it every member has arrived at e and
 * everything the group stored before it is visible to every member. */
GOSHMEMI_FN void goshmemi_coll_flat_sync(const goshmemi_coll_t *c, uint64_t e)
{
    goshmemi_cg_sync(c->scope);
    goshmemi_coll_signal_all(c, e);
    goshmemi_coll_wait_all(c, e);
}

/* ---- LL packets: the small exchange without a flag round ------------------ */

/* words a thread moves per batch (goshmemi_coll_ll_xchg), its loops unrolled */
#define GOSHMEMI_LL_BATCH 4
/* the largest batch: a warp's broadcast of more than 512 bytes
 * (goshmemi_coll_ll_bcast) */
#define GOSHMEMI_LL_MAX_BATCH 8
/* LL packet bytes per member per half of the LL slot (multiple of 16) */
GOSHMEMI_FN size_t goshmemi_coll_ll_member_bytes(const goshmemi_coll_t *c)
{
    return ((size_t)(GOSHMEMI_COLL_LL_SLOT_BYTES / 2) / (size_t)c->v.size) & ~(size_t)15;
}
/* Whether a step of len bytes per member goes as LL packets: every member
 * mapped here, len at most coll_ll_bytes (GOSHMEM_GPU_COLL_LL) and within
 * the packets' room (two packet bytes per data byte), and within the form's
 * limit: a thread moves its words a few at a time, one memory latency per
 * batch, so the flag round wins once a thread has more than a couple of
 * words to send and poll: one thread sends LL packets for at most 8 bytes
 * per member or 16 bytes over all other members, a warp for at most 512
 * bytes over all other members (2 and 4 PEs on one H200). The form is a
 * constant of the call, not its thread count: every member must decide
 * alike, and members may run blocks of different sizes.
 * More than one member (the callers handle a team of one alone). */
GOSHMEMI_FN int goshmemi_coll_use_ll(const goshmemi_coll_t *c, size_t len)
{
    if (!c->all_ls || len == 0 || len > goshmemi_cstate()->coll_ll_bytes) return 0;
    if (c->scope == GOSHMEMI_SCOPE_THREAD) return len <= 8 || len * (size_t)(c->v.size - 1) <= 16;
    if (c->scope == GOSHMEMI_SCOPE_WARP) return len * (size_t)(c->v.size - 1) <= 512;
    return 2 * len <= goshmemi_coll_ll_member_bytes(c);
}
/* Whether a broadcast of len bytes goes as LL packets (goshmemi_coll_ll_bcast):
 * every member mapped here, len at most coll_ll_bytes and within the
 * packets' room, and within the form's limit. The root loads each word once
 * for every receiver and a receiver polls only its own words, so the limit
 * is on len, not on the team size: one thread up to 16 bytes (4 words, one
 * batch), a warp up to 1 KiB (8 words a lane, one batch), a block as
 * goshmemi_coll_use_ll. */
GOSHMEMI_FN int goshmemi_coll_use_ll_bcast(const goshmemi_coll_t *c, size_t len)
{
    if (!c->all_ls || len == 0 || len > goshmemi_cstate()->coll_ll_bytes || 2 * len > goshmemi_coll_ll_member_bytes(c))
        return 0;
    if (c->scope == GOSHMEMI_SCOPE_THREAD) return len <= 16;
    if (c->scope == GOSHMEMI_SCOPE_WARP) return len <= 1024;
    return 1;
}
/* symmetric offset of member j's packets in half h of this slot's LL region */
GOSHMEMI_FN uint64_t goshmemi_coll_ll_off(const goshmemi_coll_t *c, unsigned h, int j)
{
    return goshmemi_team_slot_off(c->v.slot) + GOSHMEMI_COLL_LL_IN_SLOT +
           (uint64_t)h * (GOSHMEMI_COLL_LL_SLOT_BYTES / 2) + (uint64_t)j * goshmemi_coll_ll_member_bytes(c);
}
/* Bytes [4w, 4w+4) of a block of len bytes (fewer at its end, zero-padded). */
GOSHMEMI_FN uint32_t goshmemi_coll_ll_word(const unsigned char *p, size_t len, size_t w)
{
    p += 4 * w;
    size_t k = len - 4 * w;
    if (k >= 4 && ((uintptr_t)p & 3u) == 0) {
#if GOSHMEMI_CUDA
        return *(const uint32_t *)p;
#else
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
#endif
    }
    uint32_t v = 0;
    for (size_t i = 0; i < k && i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

/* A batch of LL packets to send (batch at most GOSHMEMI_LL_MAX_BATCH, the
 * room of pk): packet b carries word i % nw of the
 * block for the (i / nw)-th other member (blocks src_stride apart from
 * src, `me` skipped) with the tag, i = i0 + b * nt < total (the callers
 * send no packet from total on). For a batch of several words, when src,
 * src_stride and len are multiples of 4, every word is one aligned load,
 * predicated on i < total, so the batch's loads are in flight together:
 * with goshmemi_coll_ll_word's tail branch inside the unrolled loop, ptxas
 * waited for each load before issuing the next. A block's batch of one
 * keeps goshmemi_coll_ll_word: with the predicated path its 64-register
 * alltoall spilled and got slower (bench/results). */
GOSHMEMI_FN void goshmemi_coll_ll_pack(uint64_t *pk, unsigned batch, unsigned i0, unsigned nt, unsigned total,
                                       unsigned nw, int me, const char *src, size_t src_stride, size_t len,
                                       uint32_t tag)
{
    if (batch > 1 && (((uintptr_t)src | src_stride | len) & 3u) == 0) {
        GOSHMEMI_UNROLL
        for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++) {
            const unsigned i = i0 + (unsigned)b * nt;
            int j = (int)(i / nw);
            j += j >= me;
            const char *p = src + (size_t)j * src_stride + 4u * (size_t)(i % nw);
            uint32_t d = 0;
#if GOSHMEMI_CUDA
            if (i < total) d = *(const uint32_t *)p;
#else
            if (i < total) memcpy(&d, p, 4);
#endif
            pk[b] = (uint64_t)tag << 32 | d;
        }
        return;
    }
    GOSHMEMI_UNROLL
    for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++) {
        const unsigned i = i0 + (unsigned)b * nt, w = i % nw;
        int j = (int)(i / nw);
        j += j >= me;
        pk[b] = i < total ? (uint64_t)tag << 32 |
                                goshmemi_coll_ll_word((const unsigned char *)src + (size_t)j * src_stride, len, w)
                          : 0;
    }
}

/* Stores word w (bytes [4w, 4w+4), fewer at the block's end) of a block of
 * len bytes at p. */
GOSHMEMI_FN void goshmemi_coll_ll_put_word(unsigned char *p, size_t len, size_t w, uint32_t d)
{
    p += 4 * w;
    size_t k = len - 4 * w;
    if (k >= 4 && ((uintptr_t)p & 3u) == 0) {
#if GOSHMEMI_CUDA
        *(uint32_t *)p = d;
#else
        memcpy(p, &d, 4);
#endif
        return;
    }
    for (size_t i = 0; i < k && i < 4; i++) p[i] = (unsigned char)(d >> (8 * i));
}

/* goshmemi_coll_xchg_all when goshmemi_coll_use_ll: each 4 bytes of a
 * block travel with the step's tag (the low 32 bits of epoch e) in one
 * 8-byte relaxed store into the receiver's LL half h, part my_index; the
 * receiver polls those words until they carry the tag and unpacks them
 * into its scratch half h (the plain scheme's layout, which the callers
 * read), or, when out is not NULL, straight into out + j * out_stride for
 * member j's block (a caller that only copies the blocks on saves that
 * pass; out must not overlap src but in this PE's own block, which is not
 * written). The data carries its own
 * completion, so there is no flag round and no release fence: NVSHMEM's
 * and NCCL's LL protocol. A stale word holds an older step's tag (the LL
 * region only ever holds packets and starts zeroed; epochs only grow), and a
 * member writes a half again only two steps later, after this PE's packets
 * of the step between, which it sent once it had read this step's. Those
 * packets are relaxed stores, not a release: this PE's reads of the half
 * have returned before it sends them (their values feed its stores), and
 * its unpack into its scratch is a step older than them. Every other
 * cross-PE access is ordered by a signal or flag (tests/hdr/run.sh's
 * ThreadSanitizer build). */
GOSHMEMI_FN void goshmemi_coll_ll_xchg(const goshmemi_coll_t *c, uint64_t e, unsigned h, const char *src,
                                       size_t src_stride, size_t len, char *out, size_t out_stride)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    const int me = c->v.my_index, sys = goshmemi_sys_scope();
    const uint32_t tag = (uint32_t)e;
    /* word i of the exchange: word i % nw of the block for (or from) the
     * (i / nw)-th other member; len <= 2 KiB and P <= 128 keep it 32-bit */
    const unsigned nw = (unsigned)((len + 3) / 4), total = (unsigned)(c->v.size - 1) * nw;
    /* Each thread's words go `batch` at a time: a batch's loads are in
     * flight together, so a thread pays one memory latency per batch, not
     * per word (its source loads, then its polls). A block takes one word
     * at a time: its kernel has few registers (64 at 1024 threads), the
     * batch's made its fcollect and alltoall spill, and 1024 threads cover
     * a block-form step's words (at most 1024 over all members). */
    const unsigned batch = c->scope == GOSHMEMI_SCOPE_BLOCK ? 1u : GOSHMEMI_LL_BATCH;
    const unsigned tid = GOSHMEMI_COLL_TID(c), nt = GOSHMEMI_COLL_NT(c), step = batch * nt;
    const uint64_t to = goshmemi_coll_ll_off(c, h, me);
    const uintptr_t base = goshmemi_coll_my_base();
    /* the group's reads of the previous step's scratch are done before a
     * packet of this one lets a member move on to reuse it */
    goshmemi_cg_sync(c->scope);
    for (unsigned i0 = tid; i0 < total; i0 += step) {
        uint64_t pk[GOSHMEMI_LL_MAX_BATCH];
        goshmemi_coll_ll_pack(pk, batch, i0, nt, total, nw, me, src, src_stride, len, tag);
        GOSHMEMI_UNROLL
        for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++) {
            const unsigned i = i0 + (unsigned)b * nt, w = i % nw;
            int j = (int)(i / nw);
            j += j >= me;
            if (i < total)
                goshmemi_relaxed_store_u64((void *)(uintptr_t)(cs->heap_base[goshmemi_coll_pe(c, j)] + to + 8u * w), pk[b],
                                           sys);
        }
    }
    /* every thread's src loads are done before any thread stores into out
     * (one thread: program order) */
    if (out != NULL && c->scope != GOSHMEMI_SCOPE_THREAD) goshmemi_cg_sync(c->scope);
    for (unsigned i0 = tid; i0 < total; i0 += step) {
        uint64_t v[GOSHMEMI_LL_MAX_BATCH];
        unsigned pend = 0;
        GOSHMEMI_UNROLL
        for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++)
            if (i0 + (unsigned)b * nt < total) pend |= 1u << b;
        for (;;) {
            GOSHMEMI_UNROLL
            for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++) {
                const unsigned i = i0 + (unsigned)b * nt, w = i % nw;
                int j = (int)(i / nw);
                j += j >= me;
                if (pend >> b & 1u)
                    v[b] = goshmemi_relaxed_load_u64((const void *)(base + (uintptr_t)goshmemi_coll_ll_off(c, h, j) + 8u * w), sys);
            }
            GOSHMEMI_UNROLL
            for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++)
                if ((pend >> b & 1u) && (uint32_t)(v[b] >> 32) == tag) pend &= ~(1u << b);
            if (pend == 0) break;
            goshmemi_poll_pause();
        }
        GOSHMEMI_UNROLL
        for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++) {
            const unsigned i = i0 + (unsigned)b * nt, w = i % nw;
            int j = (int)(i / nw);
            j += j >= me;
            if (i < total) {
                const uint32_t d = (uint32_t)v[b];
                if (out != NULL) {
                    goshmemi_coll_ll_put_word((unsigned char *)out + (size_t)j * out_stride, len, w, d);
                } else {
#if GOSHMEMI_CUDA
                    *(uint32_t *)(goshmemi_coll_scratch(c, h, j) + 4u * w) = d;
#else
                    memcpy((void *)(goshmemi_coll_scratch(c, h, j) + 4u * w), &d, 4);
#endif
                }
            }
        }
    }
    goshmemi_cg_sync(c->scope);
}

/* One scratch step (the small scheme): every member (or only member
 * `sender`, >= 0) sends its block for member j -- len bytes at
 * src + j * src_stride -- into j's scratch half h, part my_index, then
 * signals e to every member; returns when every member's block is in this
 * PE's scratch half h (group synced). */
GOSHMEMI_FN void goshmemi_coll_xchg(const goshmemi_coll_t *c, uint64_t e, unsigned h, const char *src,
                                    size_t src_stride, size_t len, int sender)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    const int me = c->v.my_index, P = c->v.size;
    const int sends = len != 0 && (sender < 0 || sender == me);
    const uint64_t dst_off = (uint64_t)(goshmemi_coll_scratch(c, h, me) - goshmemi_coll_my_base());
    if (sends && c->all_ls) {
        goshmemi_coll_copy_blocks(c, (uintptr_t)dst_off, 0, 1, (uintptr_t)src, src_stride, 0, NULL, len);
    } else if (sends) {
        for (int j = 0; j < P; j++) {
            uint64_t base = cs->heap_base[goshmemi_coll_pe(c, j)];
            if (j != me && base != 0)
                goshmemi_coll_copy(c, (void *)(uintptr_t)(base + dst_off), src + (size_t)j * src_stride, len);
        }
    }
    goshmemi_cg_sync(c->scope);
    if (c->all_ls) {
        goshmemi_coll_signal_ls(c, e);
    } else if (GOSHMEMI_COLL_TID(c) == 0) {
        for (int j = 0; j < P; j++) {
            if (j == me) continue;
            int pe = goshmemi_coll_pe(c, j);
            if (sends && cs->heap_base[pe] == 0)
                goshmemi_remote_put_signal(0, pe, dst_off, src + (size_t)j * src_stride, len,
                                           goshmemi_coll_flags_off(c) + 8u * (uint64_t)me, e, GOSHMEM_SIGNAL_SET, 0);
            else
                goshmemi_coll_signal(c, j, e);
        }
    }
    goshmemi_coll_wait_all(c, e);
}

/* A broadcast's step as LL packets (goshmemi_coll_use_ll_bcast for len):
 * root loads each 4 bytes of src once and stores them with the step's tag
 * (epoch e) into every receiver's LL half h, part root, and copies src to
 * its dst; a receiver polls those words and unpacks them into dst. One
 * step, as a broadcast's scratch step, must prove that every member has
 * entered it (so is done with the step before: the reuse rule of the LL and
 * scratch halves, which the other steps get from every member sending):
 * the receivers signal e to every member, the root's packets stand for its
 * own signal; each member returns once it has every other receiver's
 * signal (the root: every receiver's). */
GOSHMEMI_FN void goshmemi_coll_ll_bcast_n(const goshmemi_coll_t *c, uint64_t e, unsigned h, char *dst,
                                          const char *src, size_t len, int root, const unsigned batch)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    const int me = c->v.my_index, P = c->v.size, sys = goshmemi_sys_scope();
    const uint32_t tag = (uint32_t)e;
    const unsigned nw = (unsigned)((len + 3) / 4);
    const unsigned tid = GOSHMEMI_COLL_TID(c), nt = GOSHMEMI_COLL_NT(c), step = batch * nt;
    const uint64_t off = goshmemi_coll_ll_off(c, h, root);
    goshmemi_cg_sync(c->scope); /* the group's reads of earlier steps are done */
    if (me == root) {
        /* each word is loaded once and stored to every receiver */
        for (unsigned i0 = tid; i0 < nw; i0 += step) {
            uint64_t pk[GOSHMEMI_LL_MAX_BATCH];
            goshmemi_coll_ll_pack(pk, batch, i0, nt, nw, nw, 0, src, 0, len, tag);
            for (int j = 0; j < P; j++) {
                if (j == me) continue;
                const uintptr_t to = (uintptr_t)(cs->heap_base[goshmemi_coll_pe(c, j)] + off);
                GOSHMEMI_UNROLL
                for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++) {
                    const unsigned i = i0 + (unsigned)b * nt;
                    if (i < nw) goshmemi_relaxed_store_u64((void *)(to + 8u * i), pk[b], sys);
                }
            }
        }
        goshmemi_coll_copy(c, dst, src, len);
    } else {
        goshmemi_coll_signal_ls(c, e);
        const uintptr_t from = goshmemi_coll_my_base() + (uintptr_t)off;
        for (unsigned i0 = tid; i0 < nw; i0 += step) {
            uint64_t v[GOSHMEMI_LL_MAX_BATCH];
            unsigned pend = 0;
            GOSHMEMI_UNROLL
            for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++)
                if (i0 + (unsigned)b * nt < nw) pend |= 1u << b;
            for (;;) {
                GOSHMEMI_UNROLL
                for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++)
                    if (pend >> b & 1u) v[b] = goshmemi_relaxed_load_u64((const void *)(from + 8u * (i0 + (unsigned)b * nt)), sys);
                GOSHMEMI_UNROLL
                for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++)
                    if ((pend >> b & 1u) && (uint32_t)(v[b] >> 32) == tag) pend &= ~(1u << b);
                if (pend == 0) break;
                goshmemi_poll_pause();
            }
            GOSHMEMI_UNROLL
            for (int b = 0; b < GOSHMEMI_LL_MAX_BATCH && (unsigned)b < batch; b++)
                if (i0 + (unsigned)b * nt < nw) goshmemi_coll_ll_put_word((unsigned char *)dst, len, i0 + (unsigned)b * nt, (uint32_t)v[b]);
        }
    }
    for (int j = (int)tid; j < P; j += (int)nt)
        if (j != me && j != root) goshmemi_coll_wait_one(c, j, e);
    goshmemi_cg_sync(c->scope);
}
/* The batch is a constant of each call below, so each compiles its own
 * loops: a block one word a thread; a warp's broadcast of more than 512
 * bytes (4 words a lane) 8 words a lane, so its 1 KiB limit is one batch,
 * not two; the others 4, as before (the 8-word loops were slower there:
 * bench/results/2026-12-04-211000-gpu-ll-depth). */
GOSHMEMI_FN void goshmemi_coll_ll_bcast(const goshmemi_coll_t *c, uint64_t e, unsigned h, char *dst, const char *src,
                                        size_t len, int root)
{
    if (c->scope == GOSHMEMI_SCOPE_BLOCK)
        goshmemi_coll_ll_bcast_n(c, e, h, dst, src, len, root, 1);
    else if (c->scope == GOSHMEMI_SCOPE_WARP && len > 512)
        goshmemi_coll_ll_bcast_n(c, e, h, dst, src, len, root, 8);
    else
        goshmemi_coll_ll_bcast_n(c, e, h, dst, src, len, root, GOSHMEMI_LL_BATCH);
}

/* goshmemi_coll_xchg with every member sending, or its LL form when
 * goshmemi_coll_use_ll (goshmemi_coll_ll_xchg): the same result in this
 * PE's scratch half h. Every member decides alike: the same arguments,
 * settings and mappings. (A broadcast calls goshmemi_coll_xchg directly,
 * or goshmemi_coll_ll_bcast.) */
GOSHMEMI_FN void goshmemi_coll_xchg_all(const goshmemi_coll_t *c, uint64_t e, unsigned h, const char *src,
                                        size_t src_stride, size_t len)
{
    if (goshmemi_coll_use_ll(c, len))
        goshmemi_coll_ll_xchg(c, e, h, src, src_stride, len, NULL, 0);
    else
        goshmemi_coll_xchg(c, e, h, src, src_stride, len, -1);
}

/* Elements of member i's share when n elements are split over P members in
 * multiples of `unit` (16 bytes' worth), and where it starts. */
GOSHMEMI_FN size_t goshmemi_coll_share(size_t n, int P, size_t unit, int i, size_t *lo)
{
    size_t per = (n + (size_t)P - 1) / (size_t)P;
    per = (per + unit - 1) / unit * unit;
    *lo = per * (size_t)i;
    if (*lo >= n) {
        *lo = n;
        return 0;
    }
    return n - *lo < per ? n - *lo : per;
}

/* ---- reductions -------------------------------------------------------------- */

/* Operands of one reduction range: member j's is at
 *   own                              for j == my_index,
 *   heap_base[pe_j] + base           when peers (load/store, zero copy),
 *   base + j * stride                otherwise (this PE's scratch).
 * Result: at dst (this PE), or at heap_base[pe_j] + dst for every member j (all). */
typedef struct goshmemi_rdx {
    uintptr_t own, base, dst;
    size_t stride;
    int peers, all;
} goshmemi_rdx_t;

GOSHMEMI_FN uintptr_t goshmemi_rdx_src(const goshmemi_coll_t *c, const goshmemi_rdx_t *r, int j)
{
    if (j == c->v.my_index) return r->own;
    if (r->peers) return (uintptr_t)goshmemi_cstate()->heap_base[goshmemi_coll_pe(c, j)] + r->base;
    return r->base + (size_t)j * r->stride;
}
GOSHMEMI_FN uintptr_t goshmemi_rdx_dst(const goshmemi_coll_t *c, const goshmemi_rdx_t *r, int j)
{
    if (!r->all) return r->dst;
    return (uintptr_t)goshmemi_cstate()->heap_base[goshmemi_coll_pe(c, j)] + r->dst;
}
GOSHMEMI_FN int goshmemi_rdx_aligned(const goshmemi_rdx_t *r)
{
    return ((r->own | r->base | r->dst | (r->peers ? 0 : r->stride)) & 15u) == 0;
}

/* Vector accesses of W (8 or 16) bytes; the reduction uses 16-byte vectors
 * for 4- and 8-byte types and 8-byte vectors for 1- and 2-byte ones (16
 * one-byte accumulators would take 32 registers). CUDA: one ld/st.v. */
#if GOSHMEMI_CUDA
#define GOSHMEMI_VT_16 uint4
#define GOSHMEMI_VT_8 unsigned long long
#define GOSHMEMI_LDV(W, out, p)                                                                                       \
    do {                                                                                                              \
        GOSHMEMI_VT_##W w_ = *(const GOSHMEMI_VT_##W *)(p);                                                           \
        __builtin_memcpy((out), &w_, W);                                                                              \
    } while (0)
#define GOSHMEMI_STV(W, p, in)                                                                                        \
    do {                                                                                                              \
        GOSHMEMI_VT_##W w_;                                                                                           \
        __builtin_memcpy(&w_, (in), W);                                                                               \
        *(GOSHMEMI_VT_##W *)(p) = w_;                                                                                 \
    } while (0)
#define GOSHMEMI_NOUNROLL _Pragma("unroll 1")
#else
#define GOSHMEMI_LDV(W, out, p) memcpy((out), (const void *)(p), W)
#define GOSHMEMI_STV(W, p, in) memcpy((void *)(p), (in), W)
#define GOSHMEMI_NOUNROLL
#endif
/* the reduction's vector loop for vector width W bytes */
#define GOSHMEMI_RDX_VLOOP(W, TYPE, ACC, WT, CONV, OP)                                                                \
    {                                                                                                                 \
        enum { V = W / sizeof(TYPE) > 0 ? W / sizeof(TYPE) : 1 }; /* 1: the dead W = 8 copy of a 16-byte TYPE */    \
        const size_t nv = cnt / V;                                                                                    \
        GOSHMEMI_NOUNROLL for (size_t i = tid; i < nv; i += nt)                                                       \
        {                                                                                                             \
            TYPE x[V];                                                                                                \
            ACC a[V];                                                                                                 \
            GOSHMEMI_LDV(W, x, goshmemi_rdx_src(c, r, 0) + i * W);                                                    \
            for (int e = 0; e < V; e++) a[e] = GOSHMEMI_RDX_LD_##CONV(x[e]);                                          \
            for (int j = 1; j < P; j++) {                                                                             \
                GOSHMEMI_LDV(W, x, goshmemi_rdx_src(c, r, j) + i * W);                                                \
                for (int e = 0; e < V; e++) a[e] = GOSHMEMI_RDX_OP_##OP(ACC, WT, a[e], GOSHMEMI_RDX_LD_##CONV(x[e])); \
            }                                                                                                         \
            for (int e = 0; e < V; e++) x[e] = GOSHMEMI_RDX_ST_##CONV(TYPE, a[e]);                                    \
            if (r->all)                                                                                               \
                for (int j = 0; j < P; j++) GOSHMEMI_STV(W, goshmemi_rdx_dst(c, r, j) + i * W, x);                    \
            else                                                                                                      \
                GOSHMEMI_STV(W, r->dst + i * W, x);                                                                   \
        }                                                                                                             \
        k0 = nv * V;                                                                                                  \
    }

/* Element conversions: id (the type is its own accumulator), half, bfloat16 (float accumulator). */
#define GOSHMEMI_RDX_LD_id(x) (x)
#define GOSHMEMI_RDX_ST_id(T, a) ((T)(a))
#define GOSHMEMI_RDX_LD_half(x) goshmemi_half_to_float(x)
#define GOSHMEMI_RDX_ST_half(T, a) goshmemi_float_to_half(a)
#define GOSHMEMI_RDX_LD_bf16(x) goshmemi_bfloat16_to_float(x)
#define GOSHMEMI_RDX_ST_bf16(T, a) goshmemi_float_to_bfloat16(a)

/* Operators on the accumulator type ACC; WT: the wrapping (unsigned) or
 * floating type arithmetic is done in (no signed overflow, no int promotion
 * surprises). */
#define GOSHMEMI_RDX_OP_sum(ACC, WT, a, b) ((ACC)((WT)(a) + (WT)(b)))
#define GOSHMEMI_RDX_OP_prod(ACC, WT, a, b) ((ACC)((WT)(a) * (WT)(b)))
#define GOSHMEMI_RDX_OP_min(ACC, WT, a, b) ((b) < (a) ? (b) : (a))
#define GOSHMEMI_RDX_OP_max(ACC, WT, a, b) ((a) < (b) ? (b) : (a))
#define GOSHMEMI_RDX_OP_and(ACC, WT, a, b) ((ACC)((a) & (b)))
#define GOSHMEMI_RDX_OP_or(ACC, WT, a, b) ((ACC)((a) | (b)))
#define GOSHMEMI_RDX_OP_xor(ACC, WT, a, b) ((ACC)((a) ^ (b)))

/* Reduction types: X(NAME, TYPE, ACC, WT, CONV).
 * Ref: NVSHMEM 3.x nvshmem_common.cuh NVSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES
 * (and, or, xor) and NVSHMEMI_REPT_FOR_STANDARD/ARITH_REDUCE_TYPES (min, max,
 * sum, prod; no complex types). */
#define GOSHMEMI_FOR_BITWISE_REDUCE_TYPES(X, OP)                                                                      \
    X(uchar, unsigned char, unsigned char, uint32_t, id, OP)                                                          \
    X(ushort, unsigned short, unsigned short, uint32_t, id, OP)                                                       \
    X(uint, unsigned int, unsigned int, uint32_t, id, OP)                                                             \
    X(ulong, unsigned long, unsigned long, uint64_t, id, OP)                                                          \
    X(ulonglong, unsigned long long, unsigned long long, uint64_t, id, OP)                                            \
    X(int8, int8_t, int8_t, uint32_t, id, OP)                                                                         \
    X(int16, int16_t, int16_t, uint32_t, id, OP)                                                                      \
    X(int32, int32_t, int32_t, uint32_t, id, OP)                                                                      \
    X(int64, int64_t, int64_t, uint64_t, id, OP)                                                                      \
    X(uint8, uint8_t, uint8_t, uint32_t, id, OP)                                                                      \
    X(uint16, uint16_t, uint16_t, uint32_t, id, OP)                                                                   \
    X(uint32, uint32_t, uint32_t, uint32_t, id, OP)                                                                   \
    X(uint64, uint64_t, uint64_t, uint64_t, id, OP)                                                                   \
    X(size, size_t, size_t, uint64_t, id, OP)
#define GOSHMEMI_FOR_STANDARD_REDUCE_TYPES(X, OP)                                                                     \
    GOSHMEMI_FOR_BITWISE_REDUCE_TYPES(X, OP)                                                                          \
    X(char, char, char, uint32_t, id, OP)                                                                             \
    X(schar, signed char, signed char, uint32_t, id, OP)                                                              \
    X(short, short, short, uint32_t, id, OP)                                                                          \
    X(int, int, int, uint32_t, id, OP)                                                                                \
    X(long, long, long, uint64_t, id, OP)                                                                             \
    X(longlong, long long, long long, uint64_t, id, OP)                                                               \
    X(bfloat16, goshmem_bfloat16_t, float, float, bf16, OP)                                                           \
    X(half, goshmem_half_t, float, float, half, OP)                                                                   \
    X(float, float, float, float, id, OP)                                                                             \
    X(double, double, double, double, id, OP)
/* Every (type, op) pair NVSHMEM defines: X(NAME, TYPE, ACC, WT, CONV, OP). */
#define GOSHMEMI_FOR_REDUCE_TYPES_AND_OPS(X)                                                                          \
    GOSHMEMI_FOR_BITWISE_REDUCE_TYPES(X, and)                                                                         \
    GOSHMEMI_FOR_BITWISE_REDUCE_TYPES(X, or)                                                                          \
    GOSHMEMI_FOR_BITWISE_REDUCE_TYPES(X, xor)                                                                         \
    GOSHMEMI_FOR_STANDARD_REDUCE_TYPES(X, min)                                                                        \
    GOSHMEMI_FOR_STANDARD_REDUCE_TYPES(X, max)                                                                        \
    GOSHMEMI_FOR_STANDARD_REDUCE_TYPES(X, sum)                                                                        \
    GOSHMEMI_FOR_STANDARD_REDUCE_TYPES(X, prod)

/* goshmemi_rdx_NAME_OP(c, r, cnt): the group reduces cnt elements of the
 * members' operands (member order 0, 1, ..., P-1) into the result(s): 16-byte
 * vectors when every address is 16-byte aligned, then elements. Element k
 * is read from every operand before any result of it is stored, so a result
 * may overwrite this PE's operand (in place). No sync. */
#define GOSHMEMI_RDX_DEF(NAME, TYPE, ACC, WT, CONV, OP)                                                               \
    GOSHMEMI_FN void goshmemi_rdx_##NAME##_##OP(const goshmemi_coll_t *c, const goshmemi_rdx_t *r, size_t cnt)        \
    {                                                                                                                 \
        const int P = c->v.size;                                                                                      \
        const size_t tid = GOSHMEMI_COLL_TID(c), nt = GOSHMEMI_COLL_NT(c);                                            \
        size_t k0 = 0;                                                                                                \
        if (goshmemi_rdx_aligned(r)) {                                                                                \
            if (sizeof(TYPE) >= 4)                                                                                    \
                GOSHMEMI_RDX_VLOOP(16, TYPE, ACC, WT, CONV, OP)                                                       \
            else                                                                                                      \
                GOSHMEMI_RDX_VLOOP(8, TYPE, ACC, WT, CONV, OP)                                                        \
        }                                                                                                             \
        GOSHMEMI_NOUNROLL for (size_t k = k0 + tid; k < cnt; k += nt) {                                               \
            ACC a = GOSHMEMI_RDX_LD_##CONV(((const TYPE *)goshmemi_rdx_src(c, r, 0))[k]);                             \
            for (int j = 1; j < P; j++)                                                                               \
                a = GOSHMEMI_RDX_OP_##OP(ACC, WT, a, GOSHMEMI_RDX_LD_##CONV(((const TYPE *)goshmemi_rdx_src(c, r, j))[k])); \
            TYPE y = GOSHMEMI_RDX_ST_##CONV(TYPE, a);                                                                 \
            if (r->all)                                                                                               \
                for (int j = 0; j < P; j++) ((TYPE *)goshmemi_rdx_dst(c, r, j))[k] = y;                               \
            else                                                                                                      \
                ((TYPE *)r->dst)[k] = y;                                                                              \
        }                                                                                                             \
    }                                                                                                                 \
    /* reduce (all-reduce) of n elements; see the top of the file. */                                                 \
    GOSHMEMI_FN int goshmemi_reduce_##NAME##_##OP(int scope, goshmem_team_t team, TYPE *dst, const TYPE *src,         \
                                                  size_t n)                                                           \
    {                                                                                                                 \
        goshmemi_coll_t c;                                                                                            \
        goshmemi_rdx_t r;                                                                                             \
        goshmemi_coll_init(&c, scope, team);                                                                          \
        c.mover = 0;                                                                                                  \
        if (n == 0) return 0;                                                                                         \
        const size_t sz = sizeof(TYPE);                                                                               \
        r.stride = goshmemi_coll_member_bytes(&c);                                                                    \
        r.peers = r.all = 0;                                                                                          \
        if (c.v.size == 1) {                                                                                          \
            r.own = r.base = (uintptr_t)src;                                                                          \
            r.dst = (uintptr_t)dst;                                                                                   \
            goshmemi_rdx_##NAME##_##OP(&c, &r, n);                                                                    \
        } else if (c.all_ls && n * sz > goshmemi_coll_member_bytes(&c)) {                                             \
            /* zero copy: share i of everyone's src -> share i of everyone's dst */                                   \
            size_t lo, cnt = goshmemi_coll_share(n, c.v.size, 16 / sz, c.v.my_index, &lo);                            \
            uint64_t soff = goshmemi_coll_off(&c, src, n * sz), doff = goshmemi_coll_off(&c, dst, n * sz);            \
            goshmemi_coll_reserve(&c, 2, 0);                                                                          \
            goshmemi_coll_flat_sync(&c, c.epoch + 1);                                                                 \
            r.own = (uintptr_t)(src + lo);                                                                            \
            r.base = soff + lo * sz;                                                                                  \
            r.dst = doff + lo * sz;                                                                                   \
            r.peers = r.all = 1;                                                                                      \
            if (cnt) goshmemi_rdx_##NAME##_##OP(&c, &r, cnt);                                                         \
            goshmemi_coll_flat_sync(&c, c.epoch + 2);                                                                 \
        } else {                                                                                                      \
            const size_t chunk = goshmemi_coll_member_bytes(&c) / sz, nch = (n + chunk - 1) / chunk;                  \
            if (!c.all_ls) (void)goshmemi_coll_off(&c, src, n * sz);                                                  \
            goshmemi_coll_reserve(&c, nch, nch);                                                                      \
            for (size_t k = 0; k < nch; k++) {                                                                        \
                const size_t lo = k * chunk, cnt = n - lo < chunk ? n - lo : chunk;                                   \
                const unsigned h = (unsigned)((c.scount + k) & 1u);                                                   \
                goshmemi_coll_xchg_all(&c, c.epoch + 1 + k, h, (const char *)(src + lo), 0, cnt * sz);                \
                r.own = (uintptr_t)(src + lo);                                                                        \
                r.base = goshmemi_coll_scratch(&c, h, 0);                                                             \
                r.dst = (uintptr_t)(dst + lo);                                                                        \
                goshmemi_rdx_##NAME##_##OP(&c, &r, cnt);                                                              \
            }                                                                                                         \
        }                                                                                                             \
        goshmemi_cg_sync(scope);                                                                                      \
        return 0;                                                                                                     \
    }                                                                                                                 \
    /* reducescatter of nreduce elements per member; see the top of the file. */                                      \
    GOSHMEMI_FN int goshmemi_reducescatter_##NAME##_##OP(int scope, goshmem_team_t team, TYPE *dst, const TYPE *src,  \
                                                         size_t nreduce)                                              \
    {                                                                                                                 \
        goshmemi_coll_t c;                                                                                            \
        goshmemi_rdx_t r;                                                                                             \
        goshmemi_coll_init(&c, scope, team);                                                                          \
        c.mover = 0;                                                                                                  \
        if (nreduce == 0) return 0;                                                                                   \
        const size_t sz = sizeof(TYPE), nb = nreduce * sz, me = (size_t)c.v.my_index;                                 \
        r.stride = goshmemi_coll_member_bytes(&c);                                                                    \
        r.peers = r.all = 0;                                                                                          \
        if (c.v.size == 1) {                                                                                          \
            r.own = r.base = (uintptr_t)src;                                                                          \
            r.dst = (uintptr_t)dst;                                                                                   \
            goshmemi_rdx_##NAME##_##OP(&c, &r, nreduce);                                                              \
        } else if (c.all_ls && nb > goshmemi_coll_member_bytes(&c)) {                                                 \
            /* zero copy: block me of everyone's src -> dst */                                                        \
            uint64_t soff = goshmemi_coll_off(&c, src, nb * (size_t)c.v.size);                                        \
            goshmemi_coll_reserve(&c, 2, 0);                                                                          \
            goshmemi_coll_flat_sync(&c, c.epoch + 1);                                                                 \
            r.own = (uintptr_t)(src + me * nreduce);                                                                  \
            r.base = soff + me * nb;                                                                                  \
            r.dst = (uintptr_t)dst;                                                                                   \
            r.peers = 1;                                                                                              \
            goshmemi_rdx_##NAME##_##OP(&c, &r, nreduce);                                                              \
            goshmemi_coll_flat_sync(&c, c.epoch + 2);                                                                 \
        } else {                                                                                                      \
            const size_t chunk = goshmemi_coll_member_bytes(&c) / sz, nch = (nreduce + chunk - 1) / chunk;            \
            if (!c.all_ls) (void)goshmemi_coll_off(&c, src, nb * (size_t)c.v.size);                                   \
            goshmemi_coll_reserve(&c, nch, nch);                                                                      \
            for (size_t k = 0; k < nch; k++) {                                                                        \
                const size_t lo = k * chunk, cnt = nreduce - lo < chunk ? nreduce - lo : chunk;                       \
                const unsigned h = (unsigned)((c.scount + k) & 1u);                                                   \
                goshmemi_coll_xchg_all(&c, c.epoch + 1 + k, h, (const char *)(src + lo), nb, cnt * sz);               \
                r.own = (uintptr_t)(src + me * nreduce + lo);                                                         \
                r.base = goshmemi_coll_scratch(&c, h, 0);                                                             \
                r.dst = (uintptr_t)(dst + lo);                                                                        \
                goshmemi_rdx_##NAME##_##OP(&c, &r, cnt);                                                              \
            }                                                                                                         \
        }                                                                                                             \
        goshmemi_cg_sync(scope);                                                                                      \
        return 0;                                                                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmem_##NAME##_##OP##_reduce(goshmem_team_t team, TYPE *dst, const TYPE *src, size_t n)         \
    {                                                                                                                 \
        return goshmemi_reduce_##NAME##_##OP(GOSHMEMI_SCOPE_THREAD, team, dst, src, n);                               \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmemx_##NAME##_##OP##_reduce_warp(goshmem_team_t team, TYPE *dst, const TYPE *src, size_t n)   \
    {                                                                                                                 \
        return goshmemi_reduce_##NAME##_##OP(GOSHMEMI_SCOPE_WARP, team, dst, src, n);                                 \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmemx_##NAME##_##OP##_reduce_block(goshmem_team_t team, TYPE *dst, const TYPE *src, size_t n)  \
    {                                                                                                                 \
        return goshmemi_reduce_##NAME##_##OP(GOSHMEMI_SCOPE_BLOCK, team, dst, src, n);                                \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmem_##NAME##_##OP##_reducescatter(goshmem_team_t team, TYPE *dst, const TYPE *src,            \
                                                          size_t nreduce)                                             \
    {                                                                                                                 \
        return goshmemi_reducescatter_##NAME##_##OP(GOSHMEMI_SCOPE_THREAD, team, dst, src, nreduce);                  \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmemx_##NAME##_##OP##_reducescatter_warp(goshmem_team_t team, TYPE *dst, const TYPE *src,      \
                                                                size_t nreduce)                                       \
    {                                                                                                                 \
        return goshmemi_reducescatter_##NAME##_##OP(GOSHMEMI_SCOPE_WARP, team, dst, src, nreduce);                    \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmemx_##NAME##_##OP##_reducescatter_block(goshmem_team_t team, TYPE *dst, const TYPE *src,     \
                                                                 size_t nreduce)                                      \
    {                                                                                                                 \
        return goshmemi_reducescatter_##NAME##_##OP(GOSHMEMI_SCOPE_BLOCK, team, dst, src, nreduce);                   \
    }
GOSHMEMI_FOR_REDUCE_TYPES_AND_OPS(GOSHMEMI_RDX_DEF)
/* maxloc on (value, location) pairs: goshmem_double2_maxloc_reduce and
 * the _warp/_block forms (NVSHMEM has the block form for one element; any
 * n here, and the reducescatter too). The larger x wins; on equal x the
 * smaller y (MPI_MAXLOC's rule, so the result does not depend on order).
 * Ref: NVSHMEM nvshmemx_double2_maxloc_reduce_block. */
#define GOSHMEMI_RDX_LD_raw(x) (x)
#define GOSHMEMI_RDX_ST_raw(T, a) (a)
#define GOSHMEMI_RDX_OP_maxloc(ACC, WT, a, b) goshmemi_maxloc2((a), (b))
GOSHMEMI_FN goshmem_double2_t goshmemi_maxloc2(goshmem_double2_t a, goshmem_double2_t b)
{
    return (b.x > a.x || (b.x == a.x && b.y < a.y)) ? b : a;
}
#define GOSHMEMI_FOR_MAXLOC_TYPES(X) X(double2, goshmem_double2_t, goshmem_double2_t, double, raw, maxloc)
GOSHMEMI_FOR_MAXLOC_TYPES(GOSHMEMI_RDX_DEF)
#undef GOSHMEMI_RDX_DEF

/* ---- data movers on bytes ---------------------------------------------------- */

/* fcollect (alltoall when a2a): nb bytes per member block. */
GOSHMEMI_FN int goshmemi_collect_mem(int scope, goshmem_team_t team, void *dstv, const void *srcv, size_t nb, int a2a)
{
    goshmemi_coll_t c;
    char *dst = (char *)dstv;
    const char *src = (const char *)srcv;
    goshmemi_coll_init(&c, scope, team);
    if (nb == 0) return 0;
    const int P = c.v.size, me = c.v.my_index;
    const size_t sstride = a2a ? nb : 0; /* block j of src for member j */
    if (P == 1) {
        goshmemi_coll_copy(&c, dst, src, nb);
    } else if (c.all_ls && nb > goshmemi_coll_member_bytes(&c)) {
        /* zero copy: store my block(s) into every member's dst, block me */
        uint64_t doff = goshmemi_coll_off(&c, dst, nb * (size_t)P) + (uint64_t)me * nb;
        goshmemi_coll_reserve(&c, 2, 0);
        goshmemi_coll_flat_sync(&c, c.epoch + 1);
        goshmemi_coll_copy_blocks(&c, (uintptr_t)doff, 0, 1, (uintptr_t)src, sstride, 0, src + (size_t)me * sstride, nb);
        goshmemi_coll_flat_sync(&c, c.epoch + 2);
    } else {
        const size_t chunk = goshmemi_coll_member_bytes(&c), nch = (nb + chunk - 1) / chunk;
        if (!c.all_ls) (void)goshmemi_coll_off(&c, src, a2a ? nb * (size_t)P : nb);
        goshmemi_coll_reserve(&c, nch, nch);
        for (size_t k = 0; k < nch; k++) {
            const size_t lo = k * chunk, cnt = nb - lo < chunk ? nb - lo : chunk;
            const unsigned h = (unsigned)((c.scount + k) & 1u);
            if (scope != GOSHMEMI_SCOPE_WARP && goshmemi_coll_use_ll(&c, cnt)) {
                /* the packets go straight into dst; this PE's own block after
                 * (not for a warp: inlined beside the flag round's copies, the
                 * unpack into dst slowed those down; bench/results) */
                goshmemi_coll_ll_xchg(&c, c.epoch + 1 + k, h, src + lo, sstride, cnt, dst + lo, nb);
                goshmemi_coll_copy(&c, dst + (size_t)me * nb + lo, src + (size_t)me * sstride + lo, cnt);
                continue;
            }
            goshmemi_coll_xchg_all(&c, c.epoch + 1 + k, h, src + lo, sstride, cnt);
            goshmemi_coll_copy_blocks(&c, (uintptr_t)(dst + lo), nb, 0, goshmemi_coll_scratch(&c, h, 0),
                                      goshmemi_coll_member_bytes(&c), 0, src + (size_t)me * sstride + lo, cnt);
        }
    }
    goshmemi_cg_sync(scope);
    return 0;
}

GOSHMEMI_FN int goshmemi_broadcast_mem(int scope, goshmem_team_t team, void *dstv, const void *srcv, size_t nb, int root)
{
    goshmemi_coll_t c;
    char *dst = (char *)dstv;
    const char *src = (const char *)srcv;
    goshmemi_coll_init(&c, scope, team);
    if (GOSHMEMI_UNLIKELY(root < 0 || root >= c.v.size))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(root, c.v.size),
                      "broadcast root is not a team index in [0, team_n_pes)");
    if (nb == 0) return 0;
    const int me = c.v.my_index;
    if (c.v.size == 1) {
        goshmemi_coll_copy(&c, dst, src, nb);
    } else if (goshmemi_coll_use_ll_bcast(&c, nb)) {
        goshmemi_coll_reserve(&c, 1, 1);
        goshmemi_coll_ll_bcast(&c, c.epoch + 1, (unsigned)(c.scount & 1u), dst, src, nb, root);
    } else if (c.all_ls && (nb > goshmemi_coll_member_bytes(&c) || scope != GOSHMEMI_SCOPE_WARP || c.v.size > 2)) {
        /* zero copy: root signals, receivers copy from root's src and signal
         * back. One thread and a block take it at every size above the LL
         * limit, a warp from 3 members: the scratch round has every member
         * signal every member, this one only the root and the receivers (a
         * warp's was slower at 2 PEs; bench/results). */
        uint64_t soff = goshmemi_coll_off(&c, src, nb);
        goshmemi_coll_reserve(&c, 2, 0);
        if (me == root) {
            goshmemi_cg_sync(scope);
            goshmemi_coll_signal_all(&c, c.epoch + 1);
            goshmemi_coll_copy(&c, dst, src, nb);
            goshmemi_coll_wait_all(&c, c.epoch + 2);
        } else {
            if (GOSHMEMI_COLL_TID(&c) == 0) goshmemi_coll_wait_one(&c, root, c.epoch + 1);
            goshmemi_cg_sync(scope);
            goshmemi_coll_copy(&c, dst, (const void *)(uintptr_t)(goshmemi_cstate()->heap_base[goshmemi_coll_pe(&c, root)] + soff),
                             nb);
            goshmemi_cg_sync(scope);
            if (GOSHMEMI_COLL_TID(&c) == 0) goshmemi_coll_signal(&c, root, c.epoch + 2);
        }
    } else {
        const size_t chunk = goshmemi_coll_member_bytes(&c), nch = (nb + chunk - 1) / chunk;
        if (!c.all_ls && me == root) (void)goshmemi_coll_off(&c, src, nb);
        goshmemi_coll_reserve(&c, nch, nch);
        for (size_t k = 0; k < nch; k++) {
            const size_t lo = k * chunk, cnt = nb - lo < chunk ? nb - lo : chunk;
            const unsigned h = (unsigned)((c.scount + k) & 1u);
            goshmemi_coll_xchg(&c, c.epoch + 1 + k, h, src + lo, 0, cnt, root);
            goshmemi_coll_copy(&c, dst + lo, me == root ? src + lo : (const char *)goshmemi_coll_scratch(&c, h, root), cnt);
        }
    }
    goshmemi_cg_sync(scope);
    return 0;
}

/* ---- the public names ----------------------------------------------------- */

#define GOSHMEMI_MOVERS_MEM(PREFIX, SUFFIX, SCOPE)                                                                    \
    /* broadcast of nelems bytes from team index root; see the top of the file. */                                    \
    GOSHMEMI_FN int PREFIX##_broadcastmem##SUFFIX(goshmem_team_t team, void *dest, const void *source, size_t nelems, \
                                                  int root)                                                           \
    {                                                                                                                 \
        return goshmemi_broadcast_mem(SCOPE, team, dest, source, nelems, root);                                       \
    }                                                                                                                 \
    /* fcollect of nelems bytes per member. */                                                                        \
    GOSHMEMI_FN int PREFIX##_fcollectmem##SUFFIX(goshmem_team_t team, void *dest, const void *source, size_t nelems)  \
    {                                                                                                                 \
        return goshmemi_collect_mem(SCOPE, team, dest, source, nelems, 0);                                            \
    }                                                                                                                 \
    /* alltoall of nelems bytes per member pair. */                                                                   \
    GOSHMEMI_FN int PREFIX##_alltoallmem##SUFFIX(goshmem_team_t team, void *dest, const void *source, size_t nelems)  \
    {                                                                                                                 \
        return goshmemi_collect_mem(SCOPE, team, dest, source, nelems, 1);                                            \
    }
GOSHMEMI_MOVERS_MEM(goshmem, , GOSHMEMI_SCOPE_THREAD)
GOSHMEMI_MOVERS_MEM(goshmemx, _warp, GOSHMEMI_SCOPE_WARP)
GOSHMEMI_MOVERS_MEM(goshmemx, _block, GOSHMEMI_SCOPE_BLOCK)
#undef GOSHMEMI_MOVERS_MEM

#define GOSHMEMI_MOVERS_TYPED_SCOPE(PREFIX, NAME, TYPE, SUFFIX, SCOPE)                                                \
    GOSHMEMI_FN int PREFIX##_##NAME##_broadcast##SUFFIX(goshmem_team_t team, TYPE *dest, const TYPE *source,          \
                                                        size_t nelems, int root)                                      \
    {                                                                                                                 \
        return goshmemi_broadcast_mem(SCOPE, team, dest, source, nelems * sizeof(TYPE), root);                        \
    }                                                                                                                 \
    GOSHMEMI_FN int PREFIX##_##NAME##_fcollect##SUFFIX(goshmem_team_t team, TYPE *dest, const TYPE *source,           \
                                                       size_t nelems)                                                 \
    {                                                                                                                 \
        return goshmemi_collect_mem(SCOPE, team, dest, source, nelems * sizeof(TYPE), 0);                             \
    }                                                                                                                 \
    GOSHMEMI_FN int PREFIX##_##NAME##_alltoall##SUFFIX(goshmem_team_t team, TYPE *dest, const TYPE *source,           \
                                                       size_t nelems)                                                 \
    {                                                                                                                 \
        return goshmemi_collect_mem(SCOPE, team, dest, source, nelems * sizeof(TYPE), 1);                             \
    }
#define GOSHMEMI_MOVERS_TYPED(NAME, TYPE, BITS)                                                                       \
    GOSHMEMI_MOVERS_TYPED_SCOPE(goshmem, NAME, TYPE, , GOSHMEMI_SCOPE_THREAD)                                         \
    GOSHMEMI_MOVERS_TYPED_SCOPE(goshmemx, NAME, TYPE, _warp, GOSHMEMI_SCOPE_WARP)                                     \
    GOSHMEMI_MOVERS_TYPED_SCOPE(goshmemx, NAME, TYPE, _block, GOSHMEMI_SCOPE_BLOCK)
GOSHMEMI_FOR_STANDARD_RMA_TYPES(GOSHMEMI_MOVERS_TYPED)
#undef GOSHMEMI_MOVERS_TYPED
#undef GOSHMEMI_MOVERS_TYPED_SCOPE

#endif /* GOSHMEM_COLL_DATA_H */
