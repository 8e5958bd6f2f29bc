/* goshmem's own kernels: the stream-ordered calls of package shmem
 * (PutOnStream ... AllToAllOnStream) and the host collectives on GPU arrays
 * run these. They are built into lib.fatbin (sm_90 SASS + compute_90 PTX,
 * `make gpulib`), which package gpulib embeds (gpulib.go), so a Go program
 * that imports it needs no nvcc and no fatbin of its own.
 *
 * The same file compiles as host C++17 (g++ -x c++): the fake CUDA driver
 * of the CPU tests loads that build and runs a launch of kernel `name` as a
 * call of the host function `name` on the launching thread (one "GPU
 * thread" for the whole grid: the header's _block forms are its thread
 * forms in host mode). See internal/cgo/cuda/testdata/fakecuda.c.
 *
 * ABI: every kernel takes one by-value goshmemi_lib_args_t (8 words), so
 * the Go side packs one struct and the fake needs no per-kernel signature.
 * Every kernel but the grid kernels (goshmemi_lib_move_part,
 * goshmemi_lib_reduce_part_<T>) runs as ONE block (grid 1): the device
 * barriers and team syncs they call are block-scoped and own the team's
 * epoch on this PE, so two library collectives on one team must not run
 * concurrently on one PE (issue them on one stream). A grid kernel runs
 * its team syncs on one block (fused) or none (between Sync kernels).
 * Ref: NVSHMEM nvshmemx_*_on_stream.
 *
 * Codes passed from Go are the library's own (GOSHMEMI_LIB_*), translated
 * here to the header's GOSHMEM_CMP_* / GOSHMEM_SIGNAL_* by name, so a change
 * of either side's numbering cannot invert a comparison.
 */
#define GOSHMEM_REMOTE_TRANSPORTS 1
#include <goshmem.h>

/* internal/gpulib/lib.h, beside its Go mirror: `make gpulib` and the fake
 * driver's host build pass -I internal/gpulib. */
#include "lib.h"

#if GOSHMEMI_CUDA
/* Every kernel runs goshmemi_lib_enter, its body (inlined), then
 * goshmemi_lib_leave. Go launches the one-block kernels overlapped
 * (programmatic dependent launch, cuda.Function.LaunchOverlapped): such a
 * kernel may be scheduled before the stream's previous kernel has ended,
 * and griddepcontrol.wait holds it until that kernel has completed and its
 * writes are visible (without an overlapped launch the wait returns at
 * once). launch_dependents at the end of the body lets the stream's next
 * overlapped kernel be scheduled while this one exits, so its launch
 * overlaps this kernel's teardown. Not at the start: that keeps the next
 * kernel resident and waiting all along, for no faster calls and with
 * occasional slow batches under MPS (bench/results). */
GOSHMEMI_FN void goshmemi_lib_enter(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
GOSHMEMI_FN void goshmemi_lib_leave(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#define LIBK(name)                                                                                                    \
    static __device__ __forceinline__ void name##_body(goshmemi_lib_args_t a);                                        \
    extern "C" __global__ void __launch_bounds__(GOSHMEMI_LIB_THREADS) name(goshmemi_lib_args_t a)                    \
    {                                                                                                                 \
        goshmemi_lib_enter();                                                                                         \
        name##_body(a);                                                                                               \
        goshmemi_lib_leave();                                                                                         \
    }                                                                                                                 \
    static __device__ __forceinline__ void name##_body(goshmemi_lib_args_t a)
#define LIB_TID ((size_t)threadIdx.x)
#define LIB_BLOCK ((unsigned)blockIdx.x)
#define LIB_NBLOCKS ((unsigned)gridDim.x)
#else
#include <string.h>
#define LIBK(name) extern "C" __attribute__((visibility("default"))) void name(goshmemi_lib_args_t a)
#define LIB_TID ((size_t)0)
/* The grid kernels' block: the fake runs a grid as one call per block,
 * in order, setting it first (their blocks never wait for each other). */
static thread_local unsigned lib_block, lib_nblocks = 1;
extern "C" __attribute__((visibility("default"))) void goshmemi_lib_host_set_grid(unsigned block, unsigned nblocks)
{
    lib_block = block;
    lib_nblocks = nblocks;
}
#define LIB_BLOCK lib_block
#define LIB_NBLOCKS lib_nblocks
/* The fake driver's hooks: the launching thread's device state (what the
 * module's goshmemi_device_state holds) and the state's size. */
extern "C" __attribute__((visibility("default"))) void goshmemi_lib_host_set_state(void *st)
{
    goshmemx_host_set_state((goshmemi_device_state_t *)st);
    goshmemx_host_set_block(0);
}
extern "C" __attribute__((visibility("default"))) const unsigned long goshmemi_lib_state_bytes =
    sizeof(goshmemi_device_state_t);
/* The fake driver's trap: a failing device call (goshmemi_fail) calls fn,
 * which must not return (the fake longjmps out of the kernel and reports
 * the launch as CUDA_ERROR_LAUNCH_FAILED, as a GPU reports a trap). */
extern "C" __attribute__((visibility("default"))) void goshmemi_lib_host_set_trap(goshmemx_host_trap_fn fn)
{
    goshmemx_host_trap_hook = fn;
}
#endif

#define P(i, T) ((T)(uintptr_t)a.v[i])


static_assert(sizeof(goshmemi_lib_args_t) == 8 * GOSHMEMI_LIB_NARGS, "goshmemi_lib_args_t is 8 words");

/* ---- point to point ---------------------------------------------------- */

/* v: dst, src, bytes, pe. Put with remote completion before the kernel
 * ends (quiet), so the stream's next work sees it delivered. */
LIBK(goshmemi_lib_put)
{
    goshmemx_putmem_nbi_block(P(0, void *), P(1, const void *), (size_t)a.v[2], (int)a.v[3]);
    if (LIB_TID == 0) goshmem_quiet();
}

/* v: dst, src, bytes, pe. */
LIBK(goshmemi_lib_get) { goshmemx_getmem_block(P(0, void *), P(1, const void *), (size_t)a.v[2], (int)a.v[3]); }

GOSHMEMI_FN int goshmemi_lib_sigop(uint64_t op) { return op == GOSHMEMI_LIB_SIGNAL_ADD ? GOSHMEM_SIGNAL_ADD : GOSHMEM_SIGNAL_SET; }

/* v: dst, src, bytes, sig, sigval, op (GOSHMEMI_LIB_SIGNAL_*), pe. The
 * data, then the signal (ordered: a PE that sees the signal sees the data),
 * then quiet. */
LIBK(goshmemi_lib_put_signal)
{
    goshmemx_putmem_signal_nbi_block(P(0, void *), P(1, const void *), (size_t)a.v[2], P(3, uint64_t *), a.v[4],
                                     goshmemi_lib_sigop(a.v[5]), (int)a.v[6]);
    if (LIB_TID == 0) goshmem_quiet();
}

GOSHMEMI_FN int goshmemi_lib_cmp(uint64_t c)
{
    switch (c) {
    case GOSHMEMI_LIB_CMP_EQ: return GOSHMEM_CMP_EQ;
    case GOSHMEMI_LIB_CMP_NE: return GOSHMEM_CMP_NE;
    case GOSHMEMI_LIB_CMP_GT: return GOSHMEM_CMP_GT;
    case GOSHMEMI_LIB_CMP_GE: return GOSHMEM_CMP_GE;
    case GOSHMEMI_LIB_CMP_LT: return GOSHMEM_CMP_LT;
    default: return GOSHMEM_CMP_LE;
    }
}

/* v: sig, cmp (GOSHMEMI_LIB_CMP_*), value. */
LIBK(goshmemi_lib_signal_wait)
{
    if (LIB_TID == 0) (void)goshmem_signal_wait_until(P(0, uint64_t *), goshmemi_lib_cmp(a.v[1]), a.v[2]);
}

LIBK(goshmemi_lib_quiet)
{
    (void)a;
    if (LIB_TID == 0) goshmem_quiet();
}

/* v: team. */
LIBK(goshmemi_lib_barrier) { goshmemx_barrier_block((goshmem_team_t)a.v[0]); }

/* v: team. */
LIBK(goshmemi_lib_sync) { goshmemx_team_sync_block((goshmem_team_t)a.v[0]); }

/* ---- collectives --------------------------------------------------------
 * The device collectives of coll_data.h, block scope (one block per PE):
 * on return dst is complete here and no member touches this PE's buffers
 * any more. They are not barriers and do not complete earlier puts; the
 * stream's earlier work (kernels, copies) has completed before the kernel
 * starts, which is what makes src ready on this PE. */

/* v: team, dst, src, bytes, root (index in team). */
LIBK(goshmemi_lib_broadcast)
{
    (void)goshmemx_broadcastmem_block((goshmem_team_t)a.v[0], P(1, void *), P(2, const void *), (size_t)a.v[3],
                                      (int)a.v[4]);
}

/* v: team, dst, src, bytes per member. dst gets member j's src at j*bytes. */
LIBK(goshmemi_lib_fcollect)
{
    (void)goshmemx_fcollectmem_block((goshmem_team_t)a.v[0], P(1, void *), P(2, const void *), (size_t)a.v[3]);
}

/* v: team, dst, src, bytes per block. dst block j = member j's src block
 * my_index. */
LIBK(goshmemi_lib_alltoall)
{
    (void)goshmemx_alltoallmem_block((goshmem_team_t)a.v[0], P(1, void *), P(2, const void *), (size_t)a.v[3]);
}

/* v: team, dst, src, n, op (GOSHMEMI_LIB_OP_*), scatter. All-reduce
 * (scatter 0): goshmemx_<T>_<op>_reduce_block(team, dst, src, n);
 * reduce-scatter (1): goshmemx_<T>_<op>_reducescatter_block(team, dst, src,
 * n), src holding n per member. One kernel per type, the operator an
 * argument: the collectives are large (remote paths included), and one
 * kernel per type and operator would multiply the library's size by seven.
 * Go refuses the bitwise operators for floating-point types. */
#define GOSHMEMI_LIB_RDX_CASE(NAME, OP, CODE)                                                                         \
    case CODE:                                                                                                        \
        if (scatter)                                                                                                  \
            (void)goshmemx_##NAME##_##OP##_reducescatter_block(team, dst, src, n);                                    \
        else                                                                                                          \
            (void)goshmemx_##NAME##_##OP##_reduce_block(team, dst, src, n);                                           \
        break;
#define GOSHMEMI_LIB_REDUCE_HEAD(NAME, T)                                                                             \
    LIBK(goshmemi_lib_reduce_##NAME)                                                                                  \
    {                                                                                                                 \
        goshmem_team_t team = (goshmem_team_t)a.v[0];                                                                 \
        T *dst = P(1, T *);                                                                                           \
        const T *src = P(2, const T *);                                                                               \
        size_t n = (size_t)a.v[3];                                                                                    \
        int scatter = a.v[5] != 0;                                                                                    \
        switch ((int)a.v[4]) {                                                                                        \
            GOSHMEMI_LIB_RDX_CASE(NAME, sum, GOSHMEMI_LIB_OP_SUM)                                                     \
            GOSHMEMI_LIB_RDX_CASE(NAME, prod, GOSHMEMI_LIB_OP_PROD)                                                   \
            GOSHMEMI_LIB_RDX_CASE(NAME, min, GOSHMEMI_LIB_OP_MIN)                                                     \
            GOSHMEMI_LIB_RDX_CASE(NAME, max, GOSHMEMI_LIB_OP_MAX)
#define GOSHMEMI_LIB_REDUCE_INT(NAME, T)                                                                              \
    GOSHMEMI_LIB_REDUCE_HEAD(NAME, T)                                                                                 \
    GOSHMEMI_LIB_RDX_CASE(NAME, and, GOSHMEMI_LIB_OP_AND)                                                             \
    GOSHMEMI_LIB_RDX_CASE(NAME, or, GOSHMEMI_LIB_OP_OR)                                                               \
    GOSHMEMI_LIB_RDX_CASE(NAME, xor, GOSHMEMI_LIB_OP_XOR)                                                             \
    default: break;                                                                                                   \
        }                                                                                                             \
    }
#define GOSHMEMI_LIB_REDUCE_FLOAT(NAME, T)                                                                            \
    GOSHMEMI_LIB_REDUCE_HEAD(NAME, T)                                                                                 \
    default: break;                                                                                                   \
        }                                                                                                             \
    }

GOSHMEMI_LIB_REDUCE_INT(int8, int8_t)
GOSHMEMI_LIB_REDUCE_INT(int16, int16_t)
GOSHMEMI_LIB_REDUCE_INT(int32, int32_t)
GOSHMEMI_LIB_REDUCE_INT(int64, int64_t)
GOSHMEMI_LIB_REDUCE_INT(uint8, uint8_t)
GOSHMEMI_LIB_REDUCE_INT(uint16, uint16_t)
GOSHMEMI_LIB_REDUCE_INT(uint32, uint32_t)
GOSHMEMI_LIB_REDUCE_INT(uint64, uint64_t)
GOSHMEMI_LIB_REDUCE_FLOAT(float, float)
GOSHMEMI_LIB_REDUCE_FLOAT(double, double)
GOSHMEMI_LIB_REDUCE_FLOAT(half, goshmem_half_t)
GOSHMEMI_LIB_REDUCE_FLOAT(bfloat16, goshmem_bfloat16_t)

/* ---- fused grid collectives ---------------------------------------------
 * A fused grid kernel (goshmemi_lib_move_fused; a reduction part with
 * v[GOSHMEMI_LIB_ARG_FUSED] != 0) is the whole collective in one launch
 * instead of Sync kernel, grid kernel, Sync kernel (two launches and
 * their gaps fewer). Block 0 runs the first team sync (every member's src
 * is ready) and then releases the other blocks, which wait for it before
 * they touch a peer's memory; each block counts itself done after its part
 * (its stores fenced), and the last to finish runs the second team sync
 * (no member's buffers are touched after it). Go launches it fused only on
 * a grid that fits on the GPU beside every other member's grid (one block
 * per SM shared among the PEs on the GPU): a waiting block holds its SM.
 * The flag and the count are this PE's own words of the team's psync slot
 * (device_state.h: line 8, GOSHMEMI_LIB_GRID_GO_OFF and _DONE_OFF), zero
 * when the host assigns the slot; the last block resets them for the next
 * launch on the team (stream-ordered after this one ends). Fences and the
 * flag use the device collectives' scope
 * (goshmemi_sys_scope): GPU scope when every PE is on this GPU, whose
 * kernels all run on it, where system scope costs more and adds nothing.
 * In host mode the fake runs the blocks one after another in order: block
 * 0 syncs first and the last block last, nothing waits. */
#if GOSHMEMI_CUDA
/* Out of line: inlined, the team sync (with its remote path) would take
 * registers from the data loops and make them spill. */
#define LIB_GRID_FN static __device__ __noinline__

/* This PE's word at off of team slot slot's psync slot. */
GOSHMEMI_FN uintptr_t goshmemi_lib_grid_word(int32_t slot, unsigned off)
{
    return goshmemi_coll_my_base() + (uintptr_t)goshmemi_team_slot_off(slot) + off;
}
#else
#define LIB_GRID_FN static
#endif

LIB_GRID_FN void goshmemi_lib_grid_begin(const goshmemi_coll_t *c)
{
#if GOSHMEMI_CUDA
    uint64_t *go = (uint64_t *)goshmemi_lib_grid_word(c->v.slot, GOSHMEMI_LIB_GRID_GO_OFF);
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) {
            goshmemi_team_sync_thread(c->v, 1);
            goshmemi_release_store_u64(go, 1, goshmemi_sys_scope());
        } else {
            while (goshmemi_acquire_load_u64(go, goshmemi_sys_scope()) == 0) goshmemi_poll_pause();
        }
    }
    __syncthreads();
#else
    if (LIB_BLOCK == 0) goshmemi_team_sync_thread(c->v, 1);
#endif
}

/* After the block's part, its stores fenced by thread 0 (the kernels'
 * tail below). */
LIB_GRID_FN void goshmemi_lib_grid_end(const goshmemi_coll_t *c)
{
#if GOSHMEMI_CUDA
    unsigned *done = (unsigned *)goshmemi_lib_grid_word(c->v.slot, GOSHMEMI_LIB_GRID_DONE_OFF);
    if (threadIdx.x == 0 && atomicAdd(done, 1u) == gridDim.x - 1) {
        /* every block's part (each fenced, then counted) before the release */
        goshmemi_order_fence(goshmemi_sys_scope());
        *done = 0;
        *(uint64_t *)goshmemi_lib_grid_word(c->v.slot, GOSHMEMI_LIB_GRID_GO_OFF) = 0;
        goshmemi_team_sync_thread(c->v, 1);
    }
#else
    if (LIB_BLOCK == LIB_NBLOCKS - 1) goshmemi_team_sync_thread(c->v, 1);
#endif
}

/* The grid kernels' team view (block scope) of v[0]; a team with a member
 * this GPU cannot load/store traps with msg. */
GOSHMEMI_FN void goshmemi_lib_grid_init(goshmemi_coll_t *c, const goshmemi_lib_args_t &a, const char *msg)
{
    goshmemi_coll_init(c, GOSHMEMI_SCOPE_BLOCK, (goshmem_team_t)a.v[0]);
    if (GOSHMEMI_UNLIKELY(!c->all_ls))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(c->v.size, 0), msg);
}

/* ---- grid data movement -------------------------------------------------
 * The data step of a large broadcast, fcollect or alltoall when every
 * member's heap is mapped here, between two team syncs (Sync kernels, or
 * its own: goshmemi_lib_move_fused) as the grid reductions below: this PE
 * pulls what it receives (broadcast: the root's src; fcollect: member j's
 * src into block j; alltoall: block my_index of member j's src into block
 * j), the bytes split over the blocks in 16-byte aligned slices. It
 * writes only this PE's dst; the second sync keeps every member's src
 * untouched until everyone has pulled.
 * v: team, dst, src, bytes per block, what (GOSHMEMI_LIB_MOVE_*), root. */
GOSHMEMI_FN void goshmemi_lib_move(const goshmemi_coll_t *pc, const goshmemi_lib_args_t &a)
{
    const goshmemi_coll_t &c = *pc;
    const size_t nb = (size_t)a.v[3];
    const int what = (int)a.v[4], np = c.v.size, me = c.v.my_index;
    if (nb == 0) return;
    char *dst = P(1, char *);
    const char *src = P(2, const char *);
    const size_t nseg = what == GOSHMEMI_LIB_MOVE_BROADCAST ? 1 : (size_t)np;
    const uint64_t soff = goshmemi_coll_off(&c, src, what == GOSHMEMI_LIB_MOVE_ALLTOALL ? nb * (size_t)np : nb);
    const size_t from_off = what == GOSHMEMI_LIB_MOVE_ALLTOALL ? (size_t)me * nb : 0;
    size_t blo;
    const size_t bhi = goshmemi_coll_share(nseg * nb, (int)LIB_NBLOCKS, 16, (int)LIB_BLOCK, &blo) + blo;
    for (size_t j = blo / nb; j < nseg && j * nb < bhi; j++) {
        const size_t s0 = j * nb, lo = blo > s0 ? blo : s0, hi = bhi < s0 + nb ? bhi : s0 + nb;
        const int m = what == GOSHMEMI_LIB_MOVE_BROADCAST ? (int)a.v[5] : (int)j;
        const char *from = (const char *)(uintptr_t)goshmemi_cstate()->heap_base[goshmemi_coll_pe(&c, m)] + soff +
                           from_off + (lo - s0);
        goshmemi_cg_copy(dst + lo, from, hi - lo, (unsigned)LIB_TID, (unsigned)GOSHMEMI_COLL_NT(&c));
    }
}

/* Between Sync kernels. A kernel of its own, without the fused form's
 * syncs: they would give the copy loop twice its registers, one 1024-thread
 * block per SM, and the unfused grids of the largest movers run up to two
 * blocks per SM (slower at one). */
LIBK(goshmemi_lib_move_part)
{
    goshmemi_coll_t c;
    goshmemi_lib_grid_init(&c, a, "grid data movement: a team member is not load/store reachable from this GPU");
    goshmemi_lib_move(&c, a);
    goshmemi_cg_sync(GOSHMEMI_SCOPE_BLOCK);
    if (LIB_TID == 0) goshmemi_order_fence(1);
}

/* goshmemi_lib_move_part fused: the whole collective, team syncs included. */
LIBK(goshmemi_lib_move_fused)
{
    goshmemi_coll_t c;
    goshmemi_lib_grid_init(&c, a, "grid data movement: a team member is not load/store reachable from this GPU");
    goshmemi_lib_grid_begin(&c);
    goshmemi_lib_move(&c, a);
    goshmemi_cg_sync(GOSHMEMI_SCOPE_BLOCK);
    if (LIB_TID == 0) goshmemi_order_fence(goshmemi_sys_scope());
    goshmemi_lib_grid_end(&c);
}

/* ---- grid reductions ------------------------------------------------------
 * The data step of a large reduction when every member's heap is mapped
 * here (load/store): this kernel on a grid of blocks between two team
 * syncs (Sync kernels, or its own when fused), so one PE's part runs on
 * many SMs (the one-block collectives above run at one block's bandwidth).
 * The part is the zero-copy scheme of coll_data.h: all-reduce, share
 * my_index of every member's src into share my_index of every member's dst;
 * reduce-scatter, block my_index of every member's src into dst here. Each
 * block takes a 16-byte aligned slice of the part. Before it, the first sync
 * made every member's src ready; after it, every block's stores are fenced
 * at system scope, which the second sync's release then publishes.
 * v: team, dst, src, n, op (GOSHMEMI_LIB_OP_*), scatter, fused. */
#define GOSHMEMI_LIB_PART_CASE(NAME, OP, CODE)                                                                        \
    case CODE: goshmemi_rdx_##NAME##_##OP(&c, &r, bcnt); break;
#define GOSHMEMI_LIB_PART_HEAD(NAME, T)                                                                               \
    LIBK(goshmemi_lib_reduce_part_##NAME)                                                                             \
    {                                                                                                                 \
        goshmemi_coll_t c;                                                                                            \
        goshmemi_rdx_t r;                                                                                             \
        goshmemi_lib_grid_init(&c, a, "grid reduction: a team member is not load/store reachable from this GPU");    \
        const size_t sz = sizeof(T), n = (size_t)a.v[3], me = (size_t)c.v.my_index;                                   \
        const int fused = a.v[GOSHMEMI_LIB_ARG_FUSED] != 0;                                                           \
        if (fused) goshmemi_lib_grid_begin(&c);                                                                       \
        size_t lo = 0, cnt;                                                                                           \
        r.stride = 0;                                                                                                 \
        if (a.v[5] == 0) {                                                                                            \
            cnt = goshmemi_coll_share(n, c.v.size, 16 / sz, c.v.my_index, &lo);                                       \
            r.own = (uintptr_t)(P(2, const T *) + lo);                                                                \
            r.base = goshmemi_coll_off(&c, P(2, const T *), n * sz) + lo * sz;                                        \
            r.dst = goshmemi_coll_off(&c, P(1, T *), n * sz) + lo * sz;                                               \
            r.peers = r.all = 1;                                                                                      \
        } else {                                                                                                      \
            cnt = n;                                                                                                  \
            r.own = (uintptr_t)(P(2, const T *) + me * n);                                                            \
            r.base = goshmemi_coll_off(&c, P(2, const T *), n * sz * (size_t)c.v.size) + me * n * sz;                 \
            r.dst = (uintptr_t)P(1, T *);                                                                             \
            r.peers = 1;                                                                                              \
            r.all = 0;                                                                                                \
        }                                                                                                             \
        size_t blo;                                                                                                   \
        const size_t bcnt = goshmemi_coll_share(cnt, (int)LIB_NBLOCKS, 16 / sz, (int)LIB_BLOCK, &blo);                \
        r.own += blo * sz;                                                                                            \
        r.base += blo * sz;                                                                                           \
        r.dst += blo * sz;                                                                                            \
        if (bcnt) {                                                                                                   \
            switch ((int)a.v[4]) {                                                                                    \
                GOSHMEMI_LIB_PART_CASE(NAME, sum, GOSHMEMI_LIB_OP_SUM)                                                \
                GOSHMEMI_LIB_PART_CASE(NAME, prod, GOSHMEMI_LIB_OP_PROD)                                              \
                GOSHMEMI_LIB_PART_CASE(NAME, min, GOSHMEMI_LIB_OP_MIN)                                                \
                GOSHMEMI_LIB_PART_CASE(NAME, max, GOSHMEMI_LIB_OP_MAX)
#define GOSHMEMI_LIB_PART_TAIL                                                                                        \
            default: break;                                                                                           \
            }                                                                                                         \
        }                                                                                                             \
        goshmemi_cg_sync(GOSHMEMI_SCOPE_BLOCK);                                                                       \
        if (LIB_TID == 0) goshmemi_order_fence(fused ? goshmemi_sys_scope() : 1);                                     \
        if (fused) goshmemi_lib_grid_end(&c);                                                                         \
    }
#define GOSHMEMI_LIB_PART_INT(NAME, T)                                                                                \
    GOSHMEMI_LIB_PART_HEAD(NAME, T)                                                                                   \
    GOSHMEMI_LIB_PART_CASE(NAME, and, GOSHMEMI_LIB_OP_AND)                                                            \
    GOSHMEMI_LIB_PART_CASE(NAME, or, GOSHMEMI_LIB_OP_OR)                                                              \
    GOSHMEMI_LIB_PART_CASE(NAME, xor, GOSHMEMI_LIB_OP_XOR)                                                            \
    GOSHMEMI_LIB_PART_TAIL
#define GOSHMEMI_LIB_PART_FLOAT(NAME, T)                                                                              \
    GOSHMEMI_LIB_PART_HEAD(NAME, T)                                                                                   \
    GOSHMEMI_LIB_PART_TAIL

GOSHMEMI_LIB_PART_INT(int8, int8_t)
GOSHMEMI_LIB_PART_INT(int16, int16_t)
GOSHMEMI_LIB_PART_INT(int32, int32_t)
GOSHMEMI_LIB_PART_INT(int64, int64_t)
GOSHMEMI_LIB_PART_INT(uint8, uint8_t)
GOSHMEMI_LIB_PART_INT(uint16, uint16_t)
GOSHMEMI_LIB_PART_INT(uint32, uint32_t)
GOSHMEMI_LIB_PART_INT(uint64, uint64_t)
GOSHMEMI_LIB_PART_FLOAT(float, float)
GOSHMEMI_LIB_PART_FLOAT(double, double)
GOSHMEMI_LIB_PART_FLOAT(half, goshmem_half_t)
GOSHMEMI_LIB_PART_FLOAT(bfloat16, goshmem_bfloat16_t)
