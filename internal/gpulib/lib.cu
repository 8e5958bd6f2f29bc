/* goshmem's own kernels: the stream-ordered calls of package shmem
 * (PutOnStream ... AllToAllOnStream) and the host collectives on GPU arrays
 * run these. They are built into lib.fatbin (sm_90 SASS + compute_90 PTX,
 * `make gpulib`), which the Go binary embeds (gpulib.go), so a Go program
 * needs no nvcc and no fatbin of its own.
 *
 * The same file compiles as host C++17 (g++ -x c++): the fake CUDA driver
 * of the CPU tests loads that build and runs a launch of kernel `name` as a
 * call of the host function `name` on the launching thread (one "GPU
 * thread" for the whole grid: the header's _block forms are its thread
 * forms in host mode). See internal/cgo/cuda/testdata/fakecuda.c.
 *
 * ABI: every kernel takes one by-value goshmemi_lib_args_t (8 words), so
 * the Go side packs one struct and the fake needs no per-kernel signature.
 * Every kernel runs as ONE block (grid 1): the device barriers and team
 * syncs they call are block-scoped and own the team's epoch on this PE, so
 * two library collectives on one team must not run concurrently on one PE
 * (issue them on one stream). Ref: NVSHMEM nvshmemx_*_on_stream.
 *
 * Codes passed from Go are the library's own (GOSHMEMI_LIB_*), translated
 * here to the header's GOSHMEM_CMP_* / GOSHMEM_SIGNAL_* by name, so a change
 * of either side's numbering cannot invert a comparison.
 */
#define GOSHMEM_REMOTE_TRANSPORTS 1
#include <goshmem.h>

#include "lib.h"

#if GOSHMEMI_CUDA
#define LIBK(name) extern "C" __global__ void __launch_bounds__(GOSHMEMI_LIB_THREADS) name(goshmemi_lib_args_t a)
#define LIB_TID ((size_t)threadIdx.x)
#else
#include <string.h>
#define LIBK(name) extern "C" __attribute__((visibility("default"))) void name(goshmemi_lib_args_t a)
#define LIB_TID ((size_t)0)
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
