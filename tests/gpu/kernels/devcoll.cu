// tests/gpu/kernels/devcoll.cu: device collectives of include/goshmem.h,
// checked with exact values, and the helper kernels of devtest's stream
// tests. Driven by tests/gpu/devtest (coll.go, stream.go) under mpirun; every
// c_* kernel is launched on every PE at once (LaunchCollective; MPS when the
// PEs share a GPU), one block per PE.
//
// Kept apart from devtest.cu so that the point-to-point suite still builds
// and runs when a collective name is missing.
//
// Result words (res, 64 ints, zeroed by the host): res[0] failed checks,
// res[1] source line of the first, res[2..8] the first failure's case
// (op, scope, n, index, in-place/root, got, want: got/want as integers,
// or float bits for floating types), res[9] claimed by the first failure,
// res[10] cases run (thread 0), res[11] calls whose int return was not 0.
//
// Values are small integers, so every sum, product, min and max is exact in
// every floating type, half and bfloat16 included (bfloat16 holds integers
// <= 256, enough for 8 PEs). Integer references are computed in the type's
// width and wrap as the type does: an int8 sum overflows at 8 PEs.
//
// Parts: nvcc compiles a file on one core, and its time grows with every
// collective the kernels inline. With -DDEVCOLL_PART=k (0 <= k <
// DEVCOLL_NPARTS) only part k's kernels are compiled (DC_PART_* below);
// the Makefile builds every part into a fatbin of its own
// (bin/gpu/devcoll_<k>.fatbin), in parallel, and devtest looks each kernel
// up across them. Without DEVCOLL_PART, every kernel.
//
// Build: nvcc -std=c++17 -Iinclude -gencode arch=compute_90,code=sm_90
//        -gencode arch=compute_90,code=compute_90 -fatbin -DDEVCOLL_PART=k devcoll.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <goshmem.h>

/* The part of each kernel (c_reduce_<type>, c_move_<type>, ...): kernels
 * of about equal compile time together. The int32 reductions (every op
 * and scope) and c_every_type_* (a thread-scope reduce per type) take the
 * longest: each is a part of its own. */
#define DEVCOLL_NPARTS 10
#define DC_PART_reduce_int32 0
#define DC_PART_reducescatter_int32 1
#define DC_PART_every_type_0 2
#define DC_PART_every_type_1 3
#define DC_PART_reduce_float 4
#define DC_PART_reducescatter_float 4
#define DC_PART_reduce_double 4
#define DC_PART_reducescatter_double 4
#define DC_PART_reduce_half 5
#define DC_PART_reducescatter_half 5
#define DC_PART_reduce_bfloat16 5
#define DC_PART_reducescatter_bfloat16 5
#define DC_PART_reduce_int8 6
#define DC_PART_reducescatter_int8 6
#define DC_PART_reduce_uint64 6
#define DC_PART_reducescatter_uint64 6
#define DC_PART_move_int8 7
#define DC_PART_move_half 7
#define DC_PART_move_float 8
#define DC_PART_move_int64 8
#define DC_PART_move_mem 9
#define DC_PART_sync 9
#define DC_PART_stream 9 /* s_fill, s_check, s_put */
#ifndef DEVCOLL_PART
#define DC_IN(k) 1
#elif DEVCOLL_PART < 0 || DEVCOLL_PART >= DEVCOLL_NPARTS
#error "DEVCOLL_PART must be 0 .. DEVCOLL_NPARTS - 1"
#else
#define DC_IN(k) (DEVCOLL_PART == (k))
#endif

#define FAIL()                                                                                                        \
    do {                                                                                                              \
        atomicAdd(&res[0], 1);                                                                                        \
        atomicCAS(&res[1], 0, __LINE__);                                                                              \
    } while (0)
#define CHECK(c)                                                                                                      \
    do {                                                                                                              \
        if (!(c)) FAIL();                                                                                             \
    } while (0)

enum { OP_SUM = 0, OP_PROD, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR, NOPS };
enum { SC_THREAD = 0, SC_WARP = 1, SC_BLOCK = 2 };
enum { MV_BCAST = 0, MV_FCOLLECT = 1, MV_ALLTOALL = 2 };

#define NSIZES 6
__device__ __forceinline__ long long size_at(int k, int nlarge)
{
    const long long s[NSIZES - 1] = {0, 1, 7, 33, 1000}; /* 0, one, odd, not a warp multiple, ... */
    return k < NSIZES - 1 ? s[k] : (long long)nlarge;   /* ... and large */
}

/* ---- value conversions: every type through long long / double / bits ---- */
template <typename T> __device__ __forceinline__ T from_i(long long v) { return (T)v; }
template <> __device__ __forceinline__ half from_i<half>(long long v) { return __float2half((float)v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_i<__nv_bfloat16>(long long v)
{
    return __float2bfloat16((float)v);
}
template <typename T> __device__ __forceinline__ double to_d(T v) { return (double)v; }
template <> __device__ __forceinline__ double to_d<half>(half v) { return (double)__half2float(v); }
template <> __device__ __forceinline__ double to_d<__nv_bfloat16>(__nv_bfloat16 v)
{
    return (double)__bfloat162float(v);
}
/* Whether T is an integer type: its reductions wrap, and its references
 * are computed in its width. */
template <typename T> __host__ __device__ constexpr bool int_type() { return true; }
template <> __host__ __device__ constexpr bool int_type<float>() { return false; }
template <> __host__ __device__ constexpr bool int_type<double>() { return false; }
template <> __host__ __device__ constexpr bool int_type<half>() { return false; }
template <> __host__ __device__ constexpr bool int_type<__nv_bfloat16>() { return false; }
/* the element's bits, zero-extended (compares any type exactly) */
template <typename T> __device__ __forceinline__ unsigned long long bits_of(T v)
{
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
__device__ __forceinline__ unsigned long long mask_of(int bytes)
{
    return bytes >= 8 ? ~0ull : ((1ull << (8 * bytes)) - 1);
}

/* Source value of element i on world PE p for arithmetic ops (sum, prod,
 * min, max). prod uses 1, 2 and -1 (3 for unsigned types): |product| <= 81. */
__device__ __forceinline__ long long aval(int op, int p, long long i, bool sgn)
{
    switch (op) {
    case OP_SUM: return (long long)(p + 1) * 3 + i % 7;
    case OP_PROD: {
        int k = (int)((p + i) % 3);
        return k == 0 ? 1 : k == 1 ? 2 : (sgn ? -1 : 3);
    }
    default: return (long long)((p * 7 + i * 3) % 11) - (sgn ? 5 : 0);
    }
}
/* Source bits of element i on world PE p for and/or/xor (integer types). */
__device__ __forceinline__ unsigned long long bval(int op, int p, long long i, int bytes)
{
    const int nb = 8 * bytes;
    const unsigned long long m = mask_of(bytes);
    switch (op) {
    case OP_AND: return ~(1ull << ((p + i * 3) % nb)) & m;
    case OP_OR: return (1ull << ((p * 3 + i) % nb)) & m;
    default: return ((0x9e3779b97f4a7c15ull * (unsigned long long)(p + 1)) ^ ((unsigned long long)i * 0x12345677ull)) & m;
    }
}
/* v's low `bytes` bytes as a value of that width: sign-extended when sgn. */
__device__ __forceinline__ long long wrap_to(unsigned long long v, int bytes, bool sgn)
{
    if (bytes >= 8) return (long long)v;
    v &= mask_of(bytes);
    if (sgn && (v >> (8 * bytes - 1)) & 1) v |= ~mask_of(bytes);
    return (long long)v;
}
/* One step of an integer reduction's reference in a type of `bytes` bytes:
 * sum and product in unsigned 64-bit arithmetic, whose low bytes are the
 * type's wrapped result (no signed overflow); min and max compare the
 * type's values. */
__device__ __forceinline__ unsigned long long int_op(int op, unsigned long long acc, long long v, int bytes, bool sgn)
{
    const long long a = wrap_to(acc, bytes, sgn);
    switch (op) {
    case OP_SUM: return acc + (unsigned long long)v;
    case OP_PROD: return acc * (unsigned long long)v;
    case OP_MIN: return (unsigned long long)(v < a ? v : a);
    default: return (unsigned long long)(v > a ? v : a);
    }
}
/* Data-movement value of element k from world PE p (broadcast, fcollect, alltoall). */
__device__ __forceinline__ long long mval(int p, long long k) { return (p * 31 + k * 7 + 3) % 251; }

__device__ __forceinline__ int member_pe(goshmem_team_t team, int j)
{
    return goshmem_team_translate_pe(team, j, GOSHMEM_TEAM_WORLD);
}

/* Records the first failure's case (res[2..8]) and counts it. */
__device__ __forceinline__ void fail_case(int *res, int line, int a, int b, long long n, long long i, int c,
                                          long long got, long long want)
{
    atomicAdd(&res[0], 1);
    atomicCAS(&res[1], 0, line);
    if (atomicCAS(&res[9], 0, 1) == 0) {
        res[2] = a;
        res[3] = b;
        res[4] = (int)n;
        res[5] = (int)i;
        res[6] = c;
        res[7] = (int)got;
        res[8] = (int)want;
    }
}

/* ======================= reduce / reducescatter ======================= */

/* CALL(op, scope, rs, team, d, s, n): one collective in this thread's role;
 * the caller runs it on thread 0 (thread), warp 0 (warp) or every thread
 * (block). Returns the call's int result (0 on success), -100 for a case
 * not compiled for the type. Only the type's ops (MR: reduce, MRS:
 * reducescatter; bit = OP_*) and scopes (W: warp too) are compiled (if
 * constexpr): nvcc's time grows with every inlined collective. */
#define RED_SCOPES(TN, OP, F)                                                                                         \
    switch (sc) {                                                                                                     \
    case SC_THREAD: return goshmem_##TN##_##OP##_##F(team, d, s, n);                                                  \
    case SC_WARP:                                                                                                     \
        if constexpr (W) {                                                                                            \
            return goshmemx_##TN##_##OP##_##F##_warp(team, d, s, n);                                                  \
        }                                                                                                             \
        return -100;                                                                                                  \
    default: return goshmemx_##TN##_##OP##_##F##_block(team, d, s, n);                                                \
    }
#define RED_OPCASE(BIT, TN, OP)                                                                                       \
    case BIT:                                                                                                         \
        if (rs) {                                                                                                     \
            if constexpr (((MRS) >> (BIT)) & 1) {                                                                     \
                RED_SCOPES(TN, OP, reducescatter)                                                                     \
            }                                                                                                         \
        } else {                                                                                                      \
            if constexpr (((MR) >> (BIT)) & 1) {                                                                      \
                RED_SCOPES(TN, OP, reduce)                                                                            \
            }                                                                                                         \
        }                                                                                                             \
        return -100;
#define RED_CALL_ARITH(TN, T)                                                                                         \
    template <int MR, int MRS, int W>                                                                                 \
    __device__ int red_call_##TN(int op, int sc, int rs, goshmem_team_t team, T *d, const T *s, size_t n)            \
    {                                                                                                                 \
        switch (op) {                                                                                                 \
            RED_OPCASE(OP_SUM, TN, sum)                                                                               \
            RED_OPCASE(OP_PROD, TN, prod)                                                                             \
            RED_OPCASE(OP_MIN, TN, min)                                                                               \
            RED_OPCASE(OP_MAX, TN, max)                                                                               \
        default: return -100;                                                                                         \
        }                                                                                                             \
    }
#define RED_CALL_ALL(TN, T)                                                                                           \
    template <int MR, int MRS, int W>                                                                                 \
    __device__ int red_call_##TN(int op, int sc, int rs, goshmem_team_t team, T *d, const T *s, size_t n)            \
    {                                                                                                                 \
        switch (op) {                                                                                                 \
            RED_OPCASE(OP_SUM, TN, sum)                                                                               \
            RED_OPCASE(OP_PROD, TN, prod)                                                                             \
            RED_OPCASE(OP_MIN, TN, min)                                                                               \
            RED_OPCASE(OP_MAX, TN, max)                                                                               \
            RED_OPCASE(OP_AND, TN, and)                                                                               \
            RED_OPCASE(OP_OR, TN, or)                                                                                 \
            RED_OPCASE(OP_XOR, TN, xor)                                                                               \
        default: return -100;                                                                                         \
        }                                                                                                             \
    }

template <typename T> __device__ __forceinline__ T src_val(int op, int p, long long i, bool sgn)
{
    return op >= OP_AND ? (T)bval(op, p, i, sizeof(T)) : from_i<T>(aval(op, p, i, sgn));
}
/* half / bfloat16 have no and/or/xor (no integer cast of bits either) */
template <> __device__ __forceinline__ half src_val<half>(int op, int p, long long i, bool sgn)
{
    return from_i<half>(aval(op, p, i, sgn));
}
template <> __device__ __forceinline__ __nv_bfloat16 src_val<__nv_bfloat16>(int op, int p, long long i, bool sgn)
{
    return from_i<__nv_bfloat16>(aval(op, p, i, sgn));
}

/* Runs every selected (op, scope, n, in-place) case of one type on this
 * PE's block and checks dst against the values computed here from every
 * member's source formula.
 * buf: [0, half) source, [half, 2*half) destination. */
template <typename T, int (*CALL)(int, int, int, goshmem_team_t, T *, const T *, size_t)>
__device__ void run_reduce(char *buf, size_t half_bytes, int *res, goshmem_team_t team, int opmask, int scmask,
                           int nlarge, int rs, bool sgn, bool is_int)
{
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    const int me = goshmem_my_pe();
    const int tn = goshmem_team_n_pes(team), tme = goshmem_team_my_pe(team);
    T *src = (T *)buf, *dst = (T *)(buf + half_bytes);
    const T sentinel = from_i<T>(99);
    const int GUARD = 8;
    for (int op = 0; op < NOPS; op++) {
        if (!(opmask & (1 << op))) continue;
        for (int sc = 0; sc < 3; sc++) {
            if (!(scmask & (1 << sc))) continue;
            for (int k = 0; k < NSIZES; k++) {
                const long long n = size_at(k, nlarge);
                for (int inplace = 0; inplace <= (rs ? 0 : 1); inplace++) {
                    const long long nsrc = rs ? n * tn : n;
                    if ((size_t)(nsrc + GUARD) * sizeof(T) > half_bytes) continue;
                    T *d = inplace ? src : dst;
                    for (long long i = tid; i < nsrc + GUARD; i += nt) {
                        src[i] = i < nsrc ? src_val<T>(op, me, i, sgn) : sentinel;
                        dst[i] = sentinel;
                    }
                    __syncthreads();
                    goshmemx_barrier_block(team); /* every member filled its source */
                    int rc = 0;
                    if (sc == SC_BLOCK || (sc == SC_WARP && tid < 32) || tid == 0) rc = CALL(op, sc, rs, team, d, src, (size_t)n);
                    if (rc != 0) atomicAdd(&res[11], 1);
                    __syncthreads();
                    /* dest holds the result on return (no further sync) */
                    for (long long i = tid; i < n; i += nt) {
                        const long long e = rs ? (long long)tme * n + i : i; /* element of the sources reduced */
                        T got = ((volatile T *)d)[i];
                        if (op >= OP_AND) {
                            unsigned long long want = bval(op, member_pe(team, 0), e, sizeof(T));
                            for (int j = 1; j < tn; j++) {
                                unsigned long long v = bval(op, member_pe(team, j), e, sizeof(T));
                                want = op == OP_AND ? (want & v) : op == OP_OR ? (want | v) : (want ^ v);
                            }
                            unsigned long long g = bits_of(got) & mask_of(sizeof(T));
                            if (g != want) fail_case(res, __LINE__, op, sc, n, i, inplace, (long long)g, (long long)want);
                        } else if (is_int) {
                            /* in T's width: a sum or product that overflows T wraps (int8 at 8 PEs) */
                            unsigned long long want = (unsigned long long)aval(op, member_pe(team, 0), e, sgn);
                            for (int j = 1; j < tn; j++) {
                                const long long v = aval(op, member_pe(team, j), e, sgn);
                                want = int_op(op, want, v, sizeof(T), sgn);
                            }
                            const long long w = wrap_to(want, sizeof(T), sgn);
                            const long long g = wrap_to(bits_of(got), sizeof(T), sgn);
                            if (g != w) fail_case(res, __LINE__, op, sc, n, i, inplace, g, w);
                        } else {
                            double want = (double)aval(op, member_pe(team, 0), e, sgn);
                            for (int j = 1; j < tn; j++) {
                                double v = (double)aval(op, member_pe(team, j), e, sgn);
                                want = op == OP_SUM ? want + v : op == OP_PROD ? want * v : op == OP_MIN ? fmin(want, v) : fmax(want, v);
                            }
                            double g = to_d(got);
                            if (g != want) fail_case(res, __LINE__, op, sc, n, i, inplace, (long long)g, (long long)want);
                        }
                    }
                    /* nothing written past n (in place: the source's guard, also sentinels) */
                    for (long long i = n + tid; i < n + GUARD; i += nt) {
                        T g = ((volatile T *)d)[i];
                        if (bits_of(g) != bits_of(sentinel))
                            fail_case(res, __LINE__, op, sc, n, i, 10 + inplace, (long long)bits_of(g), (long long)bits_of(sentinel));
                    }
                    if (tid == 0) res[10]++;
                    __syncthreads();
                    goshmemx_barrier_block(team); /* every member done reading the sources */
                }
            }
        }
    }
}

/* Kernels per type: c_reduce_<TN> and c_reducescatter_<TN>(buf, half_bytes,
 * res, team, opmask, scmask, nlarge); the cases outside the type's compiled
 * ops and scopes are skipped (devtest's redTypes has the same masks and
 * counts the cases). Two kernels, so that parts can hold them apart. */
#define RED_KERNEL(TN, T, SGN, MR, MRS, W)                                                                            \
    extern "C" __global__ void c_reduce_##TN(char *buf, unsigned long long half_bytes, int *res, int team, int opmask, \
                                             int scmask, int nlarge)                                                  \
    {                                                                                                                 \
        run_reduce<T, red_call_##TN<MR, 0, W>>(buf, (size_t)half_bytes, res, (goshmem_team_t)team, opmask & (MR),     \
                                               scmask & ((W) ? 7 : 5), nlarge, 0, SGN, int_type<T>());                \
    }
#define RS_KERNEL(TN, T, SGN, MR, MRS, W)                                                                             \
    extern "C" __global__ void c_reducescatter_##TN(char *buf, unsigned long long half_bytes, int *res, int team,     \
                                                    int opmask, int scmask, int nlarge)                               \
    {                                                                                                                 \
        run_reduce<T, red_call_##TN<0, MRS, W>>(buf, (size_t)half_bytes, res, (goshmem_team_t)team, opmask & (MRS),   \
                                                scmask & ((W) ? 7 : 5), nlarge, 1, SGN, int_type<T>());               \
    }

/* The types of the reduce / reducescatter kernels, RED_T_<name> = NAME,
 * TYPE, signed, reduce ops, reducescatter ops, warp scope: every op and
 * scope on int32; the bitwise ops on a sub-word and a 64-bit unsigned type;
 * the floating types incl. half and bfloat16. RED_*_TYPES(X) applies X to
 * each (DC_X spreads an entry into X's arguments). (c_every_type_* run sum
 * on every type of NVSHMEM's list.) */
#define RED_T_int8 int8, int8_t, true, 0x71, 0x01, 0
#define RED_T_int32 int32, int32_t, true, 0x7f, 0x7f, 1
#define RED_T_uint64 uint64, uint64_t, false, 0x79, 0x40, 0
#define RED_T_float float, float, true, 0x0f, 0x09, 1
#define RED_T_double double, double, true, 0x09, 0x01, 0
#define RED_T_half half, half, true, 0x0f, 0x01, 1
#define RED_T_bfloat16 bfloat16, __nv_bfloat16, true, 0x05, 0x01, 0
#define DC_X(X, ...) X(__VA_ARGS__)
#define RED_ALL_TYPES(X) DC_X(X, RED_T_int8) DC_X(X, RED_T_int32) DC_X(X, RED_T_uint64)
#define RED_ARITH_TYPES(X)                                                                                            \
    DC_X(X, RED_T_float) DC_X(X, RED_T_double) DC_X(X, RED_T_half) DC_X(X, RED_T_bfloat16)
/* c_every_type_* only (thread-scope sum_reduce on n = 5), in the two
 * kernels' groups */
#define RED_MORE_TYPES_A(X)                                                                                           \
    X(char, char, true, 1, 1, 0)                                                                                      \
    X(schar, signed char, true, 1, 1, 0)                                                                              \
    X(short, short, true, 1, 1, 0)                                                                                    \
    X(int, int, true, 1, 1, 0)                                                                                        \
    X(long, long, true, 1, 1, 0)
#define RED_MORE_TYPES_B(X)                                                                                           \
    X(longlong, long long, true, 1, 1, 0)                                                                             \
    X(uchar, unsigned char, false, 1, 1, 0)                                                                           \
    X(ushort, unsigned short, false, 1, 1, 0)                                                                         \
    X(uint, unsigned int, false, 1, 1, 0)                                                                             \
    X(ulong, unsigned long, false, 1, 1, 0)                                                                           \
    X(ulonglong, unsigned long long, false, 1, 1, 0)                                                                  \
    X(uint8, uint8_t, false, 1, 1, 0)                                                                                 \
    X(int16, int16_t, true, 1, 1, 0)                                                                                  \
    X(uint16, uint16_t, false, 1, 1, 0)                                                                               \
    X(uint32, uint32_t, false, 1, 1, 0)                                                                               \
    X(int64, int64_t, true, 1, 1, 0)                                                                                  \
    X(size, size_t, false, 1, 1, 0)

#define X_CALL_ALL(TN, T, S, MR, MRS, W) RED_CALL_ALL(TN, T)
#define X_CALL_ARITH(TN, T, S, MR, MRS, W) RED_CALL_ARITH(TN, T)
RED_ALL_TYPES(X_CALL_ALL)
RED_ARITH_TYPES(X_CALL_ARITH)
#if DC_IN(DC_PART_reduce_int8)
DC_X(RED_KERNEL, RED_T_int8)
#endif
#if DC_IN(DC_PART_reducescatter_int8)
DC_X(RS_KERNEL, RED_T_int8)
#endif
#if DC_IN(DC_PART_reduce_int32)
DC_X(RED_KERNEL, RED_T_int32)
#endif
#if DC_IN(DC_PART_reducescatter_int32)
DC_X(RS_KERNEL, RED_T_int32)
#endif
#if DC_IN(DC_PART_reduce_uint64)
DC_X(RED_KERNEL, RED_T_uint64)
#endif
#if DC_IN(DC_PART_reducescatter_uint64)
DC_X(RS_KERNEL, RED_T_uint64)
#endif
#if DC_IN(DC_PART_reduce_float)
DC_X(RED_KERNEL, RED_T_float)
#endif
#if DC_IN(DC_PART_reducescatter_float)
DC_X(RS_KERNEL, RED_T_float)
#endif
#if DC_IN(DC_PART_reduce_double)
DC_X(RED_KERNEL, RED_T_double)
#endif
#if DC_IN(DC_PART_reducescatter_double)
DC_X(RS_KERNEL, RED_T_double)
#endif
#if DC_IN(DC_PART_reduce_half)
DC_X(RED_KERNEL, RED_T_half)
#endif
#if DC_IN(DC_PART_reducescatter_half)
DC_X(RS_KERNEL, RED_T_half)
#endif
#if DC_IN(DC_PART_reduce_bfloat16)
DC_X(RED_KERNEL, RED_T_bfloat16)
#endif
#if DC_IN(DC_PART_reducescatter_bfloat16)
DC_X(RS_KERNEL, RED_T_bfloat16)
#endif

/* ======================= broadcast / fcollect / alltoall ======================= */

#define MV_SCOPES(CALL_T, CALL_W, CALL_B)                                                                             \
    switch (sc) {                                                                                                     \
    case SC_THREAD: return CALL_T;                                                                                    \
    case SC_WARP: return CALL_W;                                                                                      \
    default: return CALL_B;                                                                                           \
    }
/* typed forms: n elements */
#define MV_CALL(TN, T)                                                                                                \
    __device__ int mv_call_##TN(int fam, int sc, goshmem_team_t team, T *d, const T *s, size_t n, int root)          \
    {                                                                                                                 \
        switch (fam) {                                                                                                \
        case MV_BCAST:                                                                                                \
            MV_SCOPES(goshmem_##TN##_broadcast(team, d, s, n, root), goshmemx_##TN##_broadcast_warp(team, d, s, n, root), \
                      goshmemx_##TN##_broadcast_block(team, d, s, n, root))                                           \
        case MV_FCOLLECT:                                                                                             \
            MV_SCOPES(goshmem_##TN##_fcollect(team, d, s, n), goshmemx_##TN##_fcollect_warp(team, d, s, n),           \
                      goshmemx_##TN##_fcollect_block(team, d, s, n))                                                  \
        default:                                                                                                      \
            MV_SCOPES(goshmem_##TN##_alltoall(team, d, s, n), goshmemx_##TN##_alltoall_warp(team, d, s, n),           \
                      goshmemx_##TN##_alltoall_block(team, d, s, n))                                                  \
        }                                                                                                             \
    }
/* the untyped forms: n bytes */
#if DC_IN(DC_PART_move_mem)
__device__ int mv_call_mem(int fam, int sc, goshmem_team_t team, unsigned char *d, const unsigned char *s, size_t n,
                           int root)
{
    switch (fam) {
    case MV_BCAST:
        MV_SCOPES(goshmem_broadcastmem(team, d, s, n, root), goshmemx_broadcastmem_warp(team, d, s, n, root),
                  goshmemx_broadcastmem_block(team, d, s, n, root))
    case MV_FCOLLECT:
        MV_SCOPES(goshmem_fcollectmem(team, d, s, n), goshmemx_fcollectmem_warp(team, d, s, n),
                  goshmemx_fcollectmem_block(team, d, s, n))
    default:
        MV_SCOPES(goshmem_alltoallmem(team, d, s, n), goshmemx_alltoallmem_warp(team, d, s, n),
                  goshmemx_alltoallmem_block(team, d, s, n))
    }
}
#endif

/* One family (fam) of one type: every selected scope and n; broadcast with
 * root 0 and the last member, each also in place (dest == source). Source
 * elements: fcollect n, alltoall n per member (n * tn), broadcast n.
 * Destination: broadcast n, fcollect and alltoall n * tn. */
template <typename T, int (*CALL)(int, int, goshmem_team_t, T *, const T *, size_t, int)>
__device__ void run_move(char *buf, size_t half_bytes, int *res, goshmem_team_t team, int fam, int scmask, int nlarge)
{
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    const int me = goshmem_my_pe();
    const int tn = goshmem_team_n_pes(team), tme = goshmem_team_my_pe(team);
    T *src = (T *)buf, *dst = (T *)(buf + half_bytes);
    const T sentinel = from_i<T>(99 + 256 * (sizeof(T) > 1));
    const int GUARD = 8;
    const int variants = fam == MV_BCAST ? 4 : 1; /* bcast: root 0 / last, each copy / in place */
    for (int sc = 0; sc < 3; sc++) {
        if (!(scmask & (1 << sc))) continue;
        for (int k = 0; k < NSIZES; k++) {
            const long long n = size_at(k, nlarge);
            for (int v = 0; v < variants; v++) {
                const int root = (v & 1) ? tn - 1 : 0;
                const bool inplace = (v & 2) != 0;
                const long long nsrc = fam == MV_ALLTOALL ? n * tn : n;
                const long long ndst = fam == MV_BCAST ? n : n * tn;
                if ((size_t)(max(nsrc, ndst) + GUARD) * sizeof(T) > half_bytes) continue;
                T *d = inplace ? src : dst;
                for (long long i = tid; i < max(nsrc, ndst) + GUARD; i += nt) {
                    src[i] = i < nsrc ? from_i<T>(mval(me, i)) : sentinel;
                    dst[i] = sentinel;
                }
                __syncthreads();
                goshmemx_barrier_block(team);
                int rc = 0;
                if (sc == SC_BLOCK || (sc == SC_WARP && tid < 32) || tid == 0) rc = CALL(fam, sc, team, d, src, (size_t)n, root);
                if (rc != 0) atomicAdd(&res[11], 1);
                __syncthreads();
                for (long long i = tid; i < ndst; i += nt) {
                    long long w;
                    if (fam == MV_BCAST)
                        w = mval(member_pe(team, root), i); /* every member, the root included */
                    else if (fam == MV_FCOLLECT)
                        w = mval(member_pe(team, (int)(i / max(n, 1ll))), i % max(n, 1ll));
                    else /* block j of my dest = block tme of member j's source */
                        w = mval(member_pe(team, (int)(i / max(n, 1ll))), (long long)tme * n + i % max(n, 1ll));
                    T got = ((volatile T *)d)[i];
                    T want = from_i<T>(w);
                    if (bits_of(got) != bits_of(want))
                        fail_case(res, __LINE__, fam, sc, n, i, v, (long long)bits_of(got), (long long)bits_of(want));
                }
                if (!inplace)
                    for (long long i = ndst + tid; i < ndst + GUARD; i += nt) {
                        T g = ((volatile T *)dst)[i];
                        if (bits_of(g) != bits_of(sentinel))
                            fail_case(res, __LINE__, fam, sc, n, i, 10 + v, (long long)bits_of(g), (long long)bits_of(sentinel));
                    }
                if (tid == 0) res[10]++;
                __syncthreads();
                goshmemx_barrier_block(team);
            }
        }
    }
}

#define MV_KERNEL(TN, T)                                                                                              \
    MV_CALL(TN, T)                                                                                                    \
    extern "C" __global__ void c_move_##TN(char *buf, unsigned long long half_bytes, int *res, int team, int fam,     \
                                           int scmask, int nlarge)                                                    \
    {                                                                                                                 \
        run_move<T, mv_call_##TN>(buf, (size_t)half_bytes, res, (goshmem_team_t)team, fam, scmask, nlarge);          \
    }
/* one type per element size (half for 2 bytes), and the untyped form */
#if DC_IN(DC_PART_move_int8)
MV_KERNEL(int8, int8_t)
#endif
#if DC_IN(DC_PART_move_half)
MV_KERNEL(half, half)
#endif
#if DC_IN(DC_PART_move_float)
MV_KERNEL(float, float)
#endif
#if DC_IN(DC_PART_move_int64)
MV_KERNEL(int64, int64_t)
#endif
#if DC_IN(DC_PART_move_mem)
extern "C" __global__ void c_move_mem(char *buf, unsigned long long half_bytes, int *res, int team, int fam, int scmask,
                                      int nlarge)
{
    run_move<unsigned char, mv_call_mem>(buf, (size_t)half_bytes, res, (goshmem_team_t)team, fam, scmask, nlarge);
}
#endif

/* c_every_type_*'s reference of element i: the sum over the members in T,
 * which wraps for an integer type too narrow for it (char at 8 PEs). */
template <typename T> __device__ __forceinline__ T sum_ref(goshmem_team_t team, int tn, int i)
{
    unsigned long long w = 0;
    for (int j = 0; j < tn; j++) w += (unsigned long long)aval(OP_SUM, member_pe(team, j), i, false);
    if constexpr (int_type<T>())
        return (T)w;
    else
        return from_i<T>((long long)w);
}

/* ======================= every type once: sum reduce, thread scope =========
 * Compiles and runs the typed sum_reduce of every type of NVSHMEM's list on
 * n = 5, in two kernels (a part each): c_every_type_0 the types of
 * RED_ALL_TYPES, RED_ARITH_TYPES and RED_MORE_TYPES_A (#0-11 in that
 * order), c_every_type_1 those of RED_MORE_TYPES_B (#12-23). res[12]
 * counts the kernel's types; a failure names the type by its number. */
#define ONE_TYPE(TN, T)                                                                                               \
    {                                                                                                                 \
        T *s = (T *)buf, *d = (T *)(buf + 4096);                                                                      \
        if (tid == 0) {                                                                                               \
            for (int i = 0; i < 5; i++) {                                                                             \
                s[i] = from_i<T>(aval(OP_SUM, me, i, false));                                                         \
                d[i] = from_i<T>(0);                                                                                  \
            }                                                                                                         \
        }                                                                                                             \
        goshmemx_barrier_block(team);                                                                                 \
        if (tid == 0) {                                                                                               \
            if (goshmem_##TN##_sum_reduce(team, d, s, 5) != 0) atomicAdd(&res[11], 1);                               \
            for (int i = 0; i < 5; i++) {                                                                             \
                const T w = sum_ref<T>(team, tn, i);                                                                  \
                if (bits_of(d[i]) != bits_of(w))                                                                      \
                    fail_case(res, __LINE__, ntypes, 0, 5, i, 0, (long long)to_d(d[i]), (long long)to_d(w));          \
            }                                                                                                         \
            ntypes++;                                                                                                 \
        }                                                                                                             \
        goshmemx_barrier_block(team);                                                                                 \
    }
#define ONE_TYPE_X(TN, T, S, MR, MRS, W) ONE_TYPE(TN, T)
#define EVERY_TYPE_KERNEL(G, FIRST, TYPES)                                                                            \
    extern "C" __global__ void c_every_type_##G(char *buf, int *res, int team_)                                       \
    {                                                                                                                 \
        const goshmem_team_t team = (goshmem_team_t)team_;                                                            \
        const unsigned tid = threadIdx.x;                                                                             \
        const int me = goshmem_my_pe(), tn = goshmem_team_n_pes(team);                                                \
        int ntypes = FIRST;                                                                                           \
        TYPES                                                                                                         \
        if (tid == 0) res[12] = ntypes - FIRST;                                                                       \
    }
#if DC_IN(DC_PART_every_type_0)
EVERY_TYPE_KERNEL(0, 0, RED_ALL_TYPES(ONE_TYPE_X) RED_ARITH_TYPES(ONE_TYPE_X) RED_MORE_TYPES_A(ONE_TYPE_X))
#endif
#if DC_IN(DC_PART_every_type_1)
EVERY_TYPE_KERNEL(1, 12, RED_MORE_TYPES_B(ONE_TYPE_X))
#endif

/* ======================= barrier / sync: int returns, every scope ==========
 * Round r: thread 0 stores r into slot[r&1][my index] on every member, runs
 * the call of round r (barrier / team_sync / sync / sync_all, thread / warp /
 * block), then must see r in every member's slot. */
#if DC_IN(DC_PART_sync)
extern "C" __global__ void c_sync(char *buf, int *res, int team_, int rounds)
{
    const goshmem_team_t team = (goshmem_team_t)team_;
    const unsigned tid = threadIdx.x;
    const int tn = goshmem_team_n_pes(team), tme = goshmem_team_my_pe(team);
    const bool world = team == GOSHMEM_TEAM_WORLD;
    unsigned long long *slot = (unsigned long long *)buf;
    for (int r = 1; r <= rounds; r++) {
        unsigned long long *s = slot + (r & 1) * 128;
        if (tid == 0)
            for (int j = 0; j < tn; j++) goshmem_ulonglong_p(&s[tme], (unsigned long long)r, member_pe(team, j));
        int rc = 0;
        const int form = r % (world ? 8 : 6);
        switch (form) {
        case 0: if (tid == 0) rc = goshmem_barrier(team); break;
        case 1: if (tid < 32) rc = goshmemx_barrier_warp(team); break;
        case 2: rc = goshmemx_barrier_block(team); break;
        /* team_sync and its OpenSHMEM name sync(team), alternately */
        case 3: if (tid == 0) { goshmem_quiet(); rc = (r & 8) ? goshmem_sync(team) : goshmem_team_sync(team); } break;
        case 4: if (tid < 32) { goshmem_quiet(); rc = (r & 8) ? goshmemx_sync_warp(team) : goshmemx_team_sync_warp(team); } break;
        case 5: goshmem_quiet(); rc = (r & 8) ? goshmemx_sync_block(team) : goshmemx_team_sync_block(team); break;
        case 6: if (tid == 0) { goshmem_quiet(); goshmem_sync_all(); } break;
        default: goshmem_quiet(); goshmemx_sync_all_block(); break;
        }
        if (rc != 0) atomicAdd(&res[11], 1);
        __syncthreads();
        if (tid == 0)
            for (int j = 0; j < tn; j++)
                if (((volatile unsigned long long *)s)[j] != (unsigned long long)r)
                    fail_case(res, __LINE__, form, 0, r, j, 0, (long long)((volatile unsigned long long *)s)[j], r);
        if (tid == 0) res[10]++;
        __syncthreads();
    }
    goshmemx_barrier_block(team);
}
#endif

/* ======================= helpers of devtest's stream tests =======================
 * s_fill: after spinning spin_ns (thread 0, %globaltimer; the rest wait), sets
 * p[i] = base + i for i < n (4-byte words). The spin makes a stream-order bug
 * visible: a copy enqueued after the kernel that does not wait for it reads
 * the old values. */
#if DC_IN(DC_PART_stream)
__device__ __forceinline__ unsigned long long dc_now(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}
extern "C" __global__ void s_fill(int *p, int n, int base, unsigned long long spin_ns)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned long long t0 = dc_now();
        while (dc_now() - t0 < spin_ns) {
        }
    }
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = base + i;
}
/* s_check: counts p[i] != base + i into res[0] (first index in res[1] + 1). */
extern "C" __global__ void s_check(const int *p, int n, int base, int *res)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (((volatile const int *)p)[i] != base + i) {
            atomicAdd(&res[0], 1);
            atomicCAS(&res[1], 0, i + 1);
        }
}
/* s_put: one thread puts src[0..n) to dst on PE `to` with the device API,
 * unquieted (work on the stream that a later on-stream barrier must
 * complete and make visible). */
extern "C" __global__ void s_put(int *dst, const int *src, int n, int to)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) goshmem_int_put_nbi(dst, src, (size_t)n, to);
}
#endif
