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
#define LIB_NT ((size_t)blockDim.x)
#define LIB_BSYNC() __syncthreads()
#else
#include <string.h>
#define LIBK(name) extern "C" __attribute__((visibility("default"))) void name(goshmemi_lib_args_t a)
#define LIB_TID ((size_t)0)
#define LIB_NT ((size_t)1)
#define LIB_BSYNC() ((void)0)
/* The fake driver's hooks: the launching thread's device state (what the
 * module's goshmemi_device_state holds) and the state's size. */
extern "C" __attribute__((visibility("default"))) void goshmemi_lib_host_set_state(void *st)
{
    goshmemx_host_set_state((goshmemi_device_state_t *)st);
    goshmemx_host_set_block(0);
}
extern "C" __attribute__((visibility("default"))) const unsigned long goshmemi_lib_state_bytes =
    sizeof(goshmemi_device_state_t);
#endif

#define P(i, T) ((T)(uintptr_t)a.v[i])
#if GOSHMEMI_CUDA
#define GOSHMEMI_FN_TPL __device__ __forceinline__
#else
#define GOSHMEMI_FN_TPL inline
#endif

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
 * Every collective is pull-based: sync the team (every member's source is
 * final: its earlier stream work is done), fetch from the members
 * (load/store where the PE is mapped, a get through the remote transport
 * otherwise), sync again (no member returns, and lets its source be
 * overwritten, while another still reads it). Every PE combines a
 * reduction's contributions in team order, so every member gets the same
 * bits. */

GOSHMEMI_FN int goshmemi_lib_member(goshmemi_team_view_t v, int i) { return v.start + i * v.stride; }

/* v: team, dst, src, bytes, root (index in team). */
LIBK(goshmemi_lib_broadcast)
{
    goshmem_team_t team = (goshmem_team_t)a.v[0];
    goshmemi_team_view_t tv = goshmemi_team_view(team);
    char *dst = P(1, char *);
    const char *src = P(2, const char *);
    size_t nb = (size_t)a.v[3];
    goshmemx_team_sync_block(team);
    if (nb > 0 && (tv.my_index != (int)a.v[4] || dst != src))
        goshmemx_getmem_block(dst, src, nb, goshmemi_lib_member(tv, (int)a.v[4]));
    goshmemx_team_sync_block(team);
}

/* v: team, dst, src, bytes per member. dst gets member j's src at j*bytes. */
LIBK(goshmemi_lib_fcollect)
{
    goshmem_team_t team = (goshmem_team_t)a.v[0];
    goshmemi_team_view_t tv = goshmemi_team_view(team);
    char *dst = P(1, char *);
    const char *src = P(2, const char *);
    size_t nb = (size_t)a.v[3];
    goshmemx_team_sync_block(team);
    for (int k = 0; k < tv.size && nb > 0; k++) {
        int j = (tv.my_index + k) % tv.size; /* start at self: members fetch from different peers at once */
        goshmemx_getmem_block(dst + (size_t)j * nb, src, nb, goshmemi_lib_member(tv, j));
    }
    goshmemx_team_sync_block(team);
}

/* v: team, dst, src, bytes per block. dst block j = member j's src block
 * my_index. */
LIBK(goshmemi_lib_alltoall)
{
    goshmem_team_t team = (goshmem_team_t)a.v[0];
    goshmemi_team_view_t tv = goshmemi_team_view(team);
    char *dst = P(1, char *);
    const char *src = P(2, const char *);
    size_t nb = (size_t)a.v[3];
    goshmemx_team_sync_block(team);
    for (int k = 0; k < tv.size && nb > 0; k++) {
        int j = (tv.my_index + k) % tv.size;
        goshmemx_getmem_block(dst + (size_t)j * nb, src + (size_t)tv.my_index * nb, nb, goshmemi_lib_member(tv, j));
    }
    goshmemx_team_sync_block(team);
}

template <typename T, int OP> struct goshmemi_lib_op;
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_SUM> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return (T)(x + y); }
};
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_PROD> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return (T)(x * y); }
};
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_MIN> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return y < x ? y : x; }
};
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_MAX> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return y > x ? y : x; }
};
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_AND> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return (T)(x & y); }
};
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_OR> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return (T)(x | y); }
};
template <typename T> struct goshmemi_lib_op<T, GOSHMEMI_LIB_OP_XOR> {
    static GOSHMEMI_FN_TPL T f(T x, T y) { return (T)(x ^ y); }
};

/* Combines m elements of from into acc (acc = from for the first member). */
template <typename T, int OP>
GOSHMEMI_FN_TPL void goshmemi_lib_combine(T *acc, const T *from, size_t m, int first)
{
    if (first)
        for (size_t i = LIB_TID; i < m; i += LIB_NT) acc[i] = from[i];
    else
        for (size_t i = LIB_TID; i < m; i += LIB_NT) acc[i] = goshmemi_lib_op<T, OP>::f(acc[i], from[i]);
}

/* Reduction of n elements starting at element `first` of every member's
 * src into this PE's dst (n elements), in chunks of chunk_bytes: the
 * accumulator is this PE's local scratch acc, and a remote member's chunk
 * is fetched into fetch, this PE's part of a symmetric buffer (a get into
 * symmetric memory is one copy for the proxy and IBGDA; a non-symmetric
 * destination would go 8 bytes per reply). When dst overlaps this PE's
 * src[0, src_n) (what the members read here) the team syncs after a chunk
 * is read everywhere and before it is written. The operator is a kernel
 * argument: one kernel per type keeps the library small (the remote paths
 * inline into every kernel), and the switch sits outside the element
 * loops. Integer types only reach the bitwise cases (Go refuses them for
 * floating point). */
template <typename T, bool INT>
GOSHMEMI_FN_TPL void goshmemi_lib_reduce(goshmem_team_t team, T *dst, const T *src, size_t first, size_t n,
                                         size_t src_n, T *acc, T *fetch, size_t chunk_bytes, int op)
{
    goshmemi_team_view_t tv = goshmemi_team_view(team);
    const size_t chunk = chunk_bytes / sizeof(T);
    const T *mine = src + first;
    int overlap = (uintptr_t)dst < (uintptr_t)(src + src_n) && (uintptr_t)src < (uintptr_t)(dst + n);
    goshmemx_team_sync_block(team);
    for (size_t lo = 0; lo < n; lo += chunk) {
        size_t m = n - lo < chunk ? n - lo : chunk;
        for (int j = 0; j < tv.size; j++) {
            int pe = goshmemi_lib_member(tv, j);
            const T *from = (const T *)goshmem_ptr(mine + lo, pe);
            if (from == NULL) { /* a remote member: fetch its chunk */
                goshmemx_getmem_block(fetch, mine + lo, m * sizeof(T), pe);
                from = fetch;
            }
            switch (op) {
            case GOSHMEMI_LIB_OP_SUM: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_SUM>(acc, from, m, j == 0); break;
            case GOSHMEMI_LIB_OP_PROD: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_PROD>(acc, from, m, j == 0); break;
            case GOSHMEMI_LIB_OP_MIN: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_MIN>(acc, from, m, j == 0); break;
            case GOSHMEMI_LIB_OP_MAX: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_MAX>(acc, from, m, j == 0); break;
            default:
                if constexpr (INT) {
                    switch (op) {
                    case GOSHMEMI_LIB_OP_AND: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_AND>(acc, from, m, j == 0); break;
                    case GOSHMEMI_LIB_OP_OR: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_OR>(acc, from, m, j == 0); break;
                    default: goshmemi_lib_combine<T, GOSHMEMI_LIB_OP_XOR>(acc, from, m, j == 0); break;
                    }
                }
            }
            LIB_BSYNC(); /* fetch is refilled by the next member's get */
        }
        if (overlap) goshmemx_team_sync_block(team);
        for (size_t i = LIB_TID; i < m; i += LIB_NT) dst[lo + i] = acc[i];
        LIB_BSYNC();
    }
    goshmemx_team_sync_block(team);
}

/* v: team, dst, src, n, acc (local scratch), fetch (symmetric scratch),
 * chunk bytes (both scratches hold at least that), op (GOSHMEMI_LIB_OP_*)
 * | scatter << 8. All-reduce (scatter 0): dst[i] = op over members of
 * src[i], i < n. Reduce-scatter (1): dst[i] = op over members of
 * src[my_index*n + i], i < n (src holds n per member). */
#define GOSHMEMI_LIB_REDUCE(T, TN, INT)                                                                               \
    LIBK(goshmemi_lib_reduce_##TN)                                                                                    \
    {                                                                                                                 \
        goshmem_team_t team = (goshmem_team_t)a.v[0];                                                                 \
        size_t n = (size_t)a.v[3], first = 0, src_n = n;                                                              \
        if (a.v[7] >> 8) {                                                                                            \
            goshmemi_team_view_t tv = goshmemi_team_view(team);                                                       \
            first = (size_t)tv.my_index * n;                                                                          \
            src_n = (size_t)tv.size * n;                                                                              \
        }                                                                                                             \
        goshmemi_lib_reduce<T, INT>(team, P(1, T *), P(2, const T *), first, n, src_n, P(4, T *), P(5, T *),          \
                                    (size_t)a.v[6], (int)(a.v[7] & 0xff));                                            \
    }

GOSHMEMI_LIB_REDUCE(int8_t, int8, true)
GOSHMEMI_LIB_REDUCE(int16_t, int16, true)
GOSHMEMI_LIB_REDUCE(int32_t, int32, true)
GOSHMEMI_LIB_REDUCE(int64_t, int64, true)
GOSHMEMI_LIB_REDUCE(uint8_t, uint8, true)
GOSHMEMI_LIB_REDUCE(uint16_t, uint16, true)
GOSHMEMI_LIB_REDUCE(uint32_t, uint32, true)
GOSHMEMI_LIB_REDUCE(uint64_t, uint64, true)
GOSHMEMI_LIB_REDUCE(float, float32, false)
GOSHMEMI_LIB_REDUCE(double, float64, false)
