/* goshmem device API: NVSHMEM names.
 *
 * Port an NVSHMEM kernel by replacing
 *     #include <nvshmem.h>
 *     #include <nvshmemx.h>
 * with
 *     #include <goshmem/nvshmem_compat.h>
 * Every nvshmem_* / nvshmemx_* device call below is a forced-inline wrapper
 * with NVSHMEM's signature that calls the goshmem_* function of the same
 * meaning (zero cost after inlining); the constants and types are macros
 * and typedefs. Guarantees are goshmem's (see each goshmem header), which
 * meet NVSHMEM's documented ones on the load/store path. Host-side NVSHMEM
 * calls (nvshmem_init, nvshmem_malloc, nvshmemx_collective_launch, the
 * *_on_stream forms) belong to the Go host API (shmem): nvshmem_host.h only
 * declares them, so a whole NVSHMEM .cu compiles to a fatbin (nvcc -fatbin)
 * whose kernels Go loads.
 * Do not include together with NVSHMEM's own headers.
 */
#ifndef GOSHMEM_NVSHMEM_COMPAT_H
#define GOSHMEM_NVSHMEM_COMPAT_H

#include "../goshmem.h"

/* ---- what nvshmem.h brings into a kernel's translation unit ----
 * Ref: NVSHMEM 3.x device_host/nvshmem_common.cuh (cuda_runtime.h,
 * cuda_fp16.h, cuda_bf16.h), non_abi/device/coll/reduce.cuh
 * (cooperative_groups.h), host/nvshmem_api.h (the C library headers):
 * ported code uses half, __nv_bfloat16, cooperative groups and printf
 * without including them itself. */
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- constants and types ---- */
#define NVSHMEM_CMP_EQ GOSHMEM_CMP_EQ
#define NVSHMEM_CMP_NE GOSHMEM_CMP_NE
#define NVSHMEM_CMP_GT GOSHMEM_CMP_GT
#define NVSHMEM_CMP_LE GOSHMEM_CMP_LE
#define NVSHMEM_CMP_LT GOSHMEM_CMP_LT
#define NVSHMEM_CMP_GE GOSHMEM_CMP_GE
#define NVSHMEM_CMP_SENTINEL GOSHMEM_CMP_SENTINEL
#define NVSHMEM_SIGNAL_SET GOSHMEM_SIGNAL_SET
#define NVSHMEM_SIGNAL_ADD GOSHMEM_SIGNAL_ADD
#define NVSHMEM_TEAM_WORLD GOSHMEM_TEAM_WORLD
#define NVSHMEM_TEAM_WORLD_INDEX GOSHMEM_TEAM_WORLD
/* NVSHMEM's shared and node teams are one goshmem team (shmem.TeamShared
 * == shmem.TeamNode: the PEs of this node), device slot 1 (defs.h). */
#define NVSHMEM_TEAM_SHARED GOSHMEM_TEAM_SHARED
#define NVSHMEM_TEAM_SHARED_INDEX GOSHMEM_TEAM_SHARED
#define NVSHMEMX_TEAM_NODE GOSHMEM_TEAM_NODE
#define NVSHMEM_TEAM_INVALID GOSHMEM_TEAM_INVALID
#define NVSHMEM_CTX_DEFAULT GOSHMEM_CTX_DEFAULT
#define NVSHMEM_CTX_INVALID GOSHMEM_CTX_INVALID
typedef goshmem_ctx_t nvshmem_ctx_t;
typedef goshmem_team_t nvshmem_team_t;
/* NVSHMEM's enum types; the values are the macros above (NVSHMEM's own:
 * SET 9, ADD 10, CMP_EQ 0 .. CMP_GE 5). */
typedef int nvshmemx_signal_op_t;
typedef int nvshmemx_cmp_type_t;

/* NVSHMEM's host API, declared so a ported .cu compiles to a fatbin whole
 * (its host side runs in Go; see nvshmem_host.h). */
#include "nvshmem_host.h"

/* ---- PE queries, ordering ---- */
GOSHMEMI_FN int nvshmem_my_pe(void) { return goshmem_my_pe(); }
GOSHMEMI_FN int nvshmem_n_pes(void) { return goshmem_n_pes(); }
GOSHMEMI_FN void *nvshmem_ptr(const void *ptr, int pe) { return goshmem_ptr(ptr, pe); }
GOSHMEMI_FN void nvshmem_quiet(void) { goshmem_quiet(); }
GOSHMEMI_FN void nvshmem_fence(void) { goshmem_fence(); }
GOSHMEMI_FN void nvshmem_ctx_quiet(nvshmem_ctx_t ctx) { goshmem_ctx_quiet(ctx); }
GOSHMEMI_FN void nvshmem_ctx_fence(nvshmem_ctx_t ctx) { goshmem_ctx_fence(ctx); }

/* ---- untyped RMA ---- */
#define GOSHMEMI_COMPAT_MEM(NVP, GSP, SUFFIX)                                                                         \
    GOSHMEMI_FN void NVP##_putmem##SUFFIX(void *d, const void *s, size_t n, int pe) { GSP##_putmem##SUFFIX(d, s, n, pe); } \
    GOSHMEMI_FN void NVP##_getmem##SUFFIX(void *d, const void *s, size_t n, int pe) { GSP##_getmem##SUFFIX(d, s, n, pe); } \
    GOSHMEMI_FN void NVP##_putmem_nbi##SUFFIX(void *d, const void *s, size_t n, int pe)                               \
    {                                                                                                                 \
        GSP##_putmem_nbi##SUFFIX(d, s, n, pe);                                                                        \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_getmem_nbi##SUFFIX(void *d, const void *s, size_t n, int pe)                               \
    {                                                                                                                 \
        GSP##_getmem_nbi##SUFFIX(d, s, n, pe);                                                                        \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_putmem_signal##SUFFIX(void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv,        \
                                                 int op, int pe)                                                      \
    {                                                                                                                 \
        GSP##_putmem_signal##SUFFIX(d, s, n, sig, sv, op, pe);                                                        \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_putmem_signal_nbi##SUFFIX(void *d, const void *s, size_t n, uint64_t *sig, uint64_t sv,    \
                                                     int op, int pe)                                                  \
    {                                                                                                                 \
        GSP##_putmem_signal_nbi##SUFFIX(d, s, n, sig, sv, op, pe);                                                    \
    }
GOSHMEMI_COMPAT_MEM(nvshmem, goshmem, )
GOSHMEMI_COMPAT_MEM(nvshmemx, goshmemx, _warp)
GOSHMEMI_COMPAT_MEM(nvshmemx, goshmemx, _block)
#undef GOSHMEMI_COMPAT_MEM

/* ---- typed RMA: nvshmem_T_{put,get}[_nbi], nvshmemx_T_{put,get}[_nbi]_{warp,block}, p, g, put_signal ---- */
#define GOSHMEMI_COMPAT_RMA_GROUP(NVP, GSP, NAME, TYPE, SUFFIX)                                                       \
    GOSHMEMI_FN void NVP##_##NAME##_put##SUFFIX(TYPE *d, const TYPE *s, size_t n, int pe)                             \
    {                                                                                                                 \
        GSP##_##NAME##_put##SUFFIX(d, s, n, pe);                                                                      \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_##NAME##_get##SUFFIX(TYPE *d, const TYPE *s, size_t n, int pe)                             \
    {                                                                                                                 \
        GSP##_##NAME##_get##SUFFIX(d, s, n, pe);                                                                      \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_##NAME##_put_nbi##SUFFIX(TYPE *d, const TYPE *s, size_t n, int pe)                         \
    {                                                                                                                 \
        GSP##_##NAME##_put_nbi##SUFFIX(d, s, n, pe);                                                                  \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_##NAME##_get_nbi##SUFFIX(TYPE *d, const TYPE *s, size_t n, int pe)                         \
    {                                                                                                                 \
        GSP##_##NAME##_get_nbi##SUFFIX(d, s, n, pe);                                                                  \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_##NAME##_put_signal##SUFFIX(TYPE *d, const TYPE *s, size_t n, uint64_t *sig, uint64_t sv,  \
                                                       int op, int pe)                                                \
    {                                                                                                                 \
        GSP##_##NAME##_put_signal##SUFFIX(d, s, n, sig, sv, op, pe);                                                  \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_##NAME##_put_signal_nbi##SUFFIX(TYPE *d, const TYPE *s, size_t n, uint64_t *sig,           \
                                                           uint64_t sv, int op, int pe)                               \
    {                                                                                                                 \
        GSP##_##NAME##_put_signal_nbi##SUFFIX(d, s, n, sig, sv, op, pe);                                              \
    }
#define GOSHMEMI_COMPAT_RMA(NAME, TYPE, BITS)                                                                         \
    GOSHMEMI_COMPAT_RMA_GROUP(nvshmem, goshmem, NAME, TYPE, )                                                         \
    GOSHMEMI_COMPAT_RMA_GROUP(nvshmemx, goshmemx, NAME, TYPE, _warp)                                                  \
    GOSHMEMI_COMPAT_RMA_GROUP(nvshmemx, goshmemx, NAME, TYPE, _block)                                                 \
    GOSHMEMI_FN void nvshmem_##NAME##_p(TYPE *d, TYPE v, int pe) { goshmem_##NAME##_p(d, v, pe); }                    \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_g(const TYPE *s, int pe) { return goshmem_##NAME##_g(s, pe); }
GOSHMEMI_FOR_RMA_TYPES(GOSHMEMI_COMPAT_RMA)
GOSHMEMI_FOR_RMA_FLOAT16_TYPES(GOSHMEMI_COMPAT_RMA)
#undef GOSHMEMI_COMPAT_RMA
#undef GOSHMEMI_COMPAT_RMA_GROUP

/* ---- sized RMA: nvshmem_put64 etc. ---- */
#define GOSHMEMI_COMPAT_SIZED_GROUP(NVP, GSP, BITS, SUFFIX)                                                           \
    GOSHMEMI_FN void NVP##_put##BITS##SUFFIX(void *d, const void *s, size_t n, int pe) { GSP##_put##BITS##SUFFIX(d, s, n, pe); } \
    GOSHMEMI_FN void NVP##_get##BITS##SUFFIX(void *d, const void *s, size_t n, int pe) { GSP##_get##BITS##SUFFIX(d, s, n, pe); } \
    GOSHMEMI_FN void NVP##_put##BITS##_nbi##SUFFIX(void *d, const void *s, size_t n, int pe)                          \
    {                                                                                                                 \
        GSP##_put##BITS##_nbi##SUFFIX(d, s, n, pe);                                                                   \
    }                                                                                                                 \
    GOSHMEMI_FN void NVP##_get##BITS##_nbi##SUFFIX(void *d, const void *s, size_t n, int pe)                          \
    {                                                                                                                 \
        GSP##_get##BITS##_nbi##SUFFIX(d, s, n, pe);                                                                   \
    }
#define GOSHMEMI_COMPAT_SIZED(BITS, BYTES)                                                                            \
    GOSHMEMI_COMPAT_SIZED_GROUP(nvshmem, goshmem, BITS, )                                                             \
    GOSHMEMI_COMPAT_SIZED_GROUP(nvshmemx, goshmemx, BITS, _warp)                                                      \
    GOSHMEMI_COMPAT_SIZED_GROUP(nvshmemx, goshmemx, BITS, _block)
GOSHMEMI_FOR_SIZES(GOSHMEMI_COMPAT_SIZED)
#undef GOSHMEMI_COMPAT_SIZED
#undef GOSHMEMI_COMPAT_SIZED_GROUP

/* ---- signals ---- */
GOSHMEMI_FN void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    goshmem_signal_op(sig_addr, signal, sig_op, pe);
}
GOSHMEMI_FN uint64_t nvshmem_signal_fetch(const uint64_t *sig_addr) { return goshmem_signal_fetch(sig_addr); }
GOSHMEMI_FN uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    return goshmem_signal_wait_until(sig_addr, cmp, cmp_value);
}

/* ---- point-to-point synchronization ---- */
#define GOSHMEMI_COMPAT_WAIT(NAME, TYPE, BITS)                                                                        \
    GOSHMEMI_FN void nvshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE v) { goshmem_##NAME##_wait_until(ivar, cmp, v); } \
    GOSHMEMI_FN int nvshmem_##NAME##_test(TYPE *ivar, int cmp, TYPE v) { return goshmem_##NAME##_test(ivar, cmp, v); } \
    GOSHMEMI_FN void nvshmem_##NAME##_wait_until_all(TYPE *ivars, size_t n, const int *status, int cmp, TYPE v)       \
    {                                                                                                                 \
        goshmem_##NAME##_wait_until_all(ivars, n, status, cmp, v);                                                    \
    }                                                                                                                 \
    GOSHMEMI_FN size_t nvshmem_##NAME##_wait_until_any(TYPE *ivars, size_t n, const int *status, int cmp, TYPE v)     \
    {                                                                                                                 \
        return goshmem_##NAME##_wait_until_any(ivars, n, status, cmp, v);                                             \
    }                                                                                                                 \
    GOSHMEMI_FN size_t nvshmem_##NAME##_wait_until_some(TYPE *ivars, size_t n, size_t *idx, const int *status,        \
                                                        int cmp, TYPE v)                                              \
    {                                                                                                                 \
        return goshmem_##NAME##_wait_until_some(ivars, n, idx, status, cmp, v);                                       \
    }                                                                                                                 \
    GOSHMEMI_FN void nvshmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t n, const int *status, int cmp,        \
                                                            TYPE *v)                                                  \
    {                                                                                                                 \
        goshmem_##NAME##_wait_until_all_vector(ivars, n, status, cmp, v);                                             \
    }                                                                                                                 \
    GOSHMEMI_FN size_t nvshmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t n, const int *status, int cmp,      \
                                                              TYPE *v)                                                \
    {                                                                                                                 \
        return goshmem_##NAME##_wait_until_any_vector(ivars, n, status, cmp, v);                                      \
    }                                                                                                                 \
    GOSHMEMI_FN size_t nvshmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t n, size_t *idx,                    \
                                                               const int *status, int cmp, TYPE *v)                   \
    {                                                                                                                 \
        return goshmem_##NAME##_wait_until_some_vector(ivars, n, idx, status, cmp, v);                                \
    }                                                                                                                 \
    GOSHMEMI_FN int nvshmem_##NAME##_test_all(TYPE *ivars, size_t n, const int *status, int cmp, TYPE v)              \
    {                                                                                                                 \
        return goshmem_##NAME##_test_all(ivars, n, status, cmp, v);                                                   \
    }                                                                                                                 \
    GOSHMEMI_FN size_t nvshmem_##NAME##_test_any(TYPE *ivars, size_t n, const int *status, int cmp, TYPE v)           \
    {                                                                                                                 \
        return goshmem_##NAME##_test_any(ivars, n, status, cmp, v);                                                   \
    }                                                                                                                 \
    GOSHMEMI_FN size_t nvshmem_##NAME##_test_some(TYPE *ivars, size_t n, size_t *idx, const int *status, int cmp,     \
                                                  TYPE v)                                                             \
    {                                                                                                                 \
        return goshmem_##NAME##_test_some(ivars, n, idx, status, cmp, v);                                             \
    }
GOSHMEMI_FOR_WAIT_TYPES(GOSHMEMI_COMPAT_WAIT)
#undef GOSHMEMI_COMPAT_WAIT

/* ---- atomics ---- */
#define GOSHMEMI_COMPAT_AMO_EXT(NAME, TYPE, BITS)                                                                     \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_atomic_fetch(const TYPE *s, int pe) { return goshmem_##NAME##_atomic_fetch(s, pe); } \
    GOSHMEMI_FN void nvshmem_##NAME##_atomic_set(TYPE *d, TYPE v, int pe) { goshmem_##NAME##_atomic_set(d, v, pe); }  \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_atomic_swap(TYPE *d, TYPE v, int pe)                                            \
    {                                                                                                                 \
        return goshmem_##NAME##_atomic_swap(d, v, pe);                                                                \
    }
#define GOSHMEMI_COMPAT_AMO_STD(NAME, TYPE, BITS)                                                                     \
    GOSHMEMI_COMPAT_AMO_EXT(NAME, TYPE, BITS)                                                                         \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_atomic_compare_swap(TYPE *d, TYPE c, TYPE v, int pe)                            \
    {                                                                                                                 \
        return goshmem_##NAME##_atomic_compare_swap(d, c, v, pe);                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_atomic_fetch_add(TYPE *d, TYPE v, int pe)                                       \
    {                                                                                                                 \
        return goshmem_##NAME##_atomic_fetch_add(d, v, pe);                                                           \
    }                                                                                                                 \
    GOSHMEMI_FN void nvshmem_##NAME##_atomic_add(TYPE *d, TYPE v, int pe) { goshmem_##NAME##_atomic_add(d, v, pe); }  \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_atomic_fetch_inc(TYPE *d, int pe)                                               \
    {                                                                                                                 \
        return goshmem_##NAME##_atomic_fetch_inc(d, pe);                                                              \
    }                                                                                                                 \
    GOSHMEMI_FN void nvshmem_##NAME##_atomic_inc(TYPE *d, int pe) { goshmem_##NAME##_atomic_inc(d, pe); }
#define GOSHMEMI_COMPAT_AMO_BIT_OP(NAME, TYPE, OP)                                                                    \
    GOSHMEMI_FN TYPE nvshmem_##NAME##_atomic_fetch##OP(TYPE *d, TYPE v, int pe)                                       \
    {                                                                                                                 \
        return goshmem_##NAME##_atomic_fetch##OP(d, v, pe);                                                           \
    }                                                                                                                 \
    GOSHMEMI_FN void nvshmem_##NAME##_atomic##OP(TYPE *d, TYPE v, int pe) { goshmem_##NAME##_atomic##OP(d, v, pe); }
#define GOSHMEMI_COMPAT_AMO_BIT(NAME, TYPE, BITS)                                                                     \
    GOSHMEMI_COMPAT_AMO_BIT_OP(NAME, TYPE, _and)                                                                      \
    GOSHMEMI_COMPAT_AMO_BIT_OP(NAME, TYPE, _or)                                                                       \
    GOSHMEMI_COMPAT_AMO_BIT_OP(NAME, TYPE, _xor)
GOSHMEMI_FOR_AMO_STANDARD_TYPES(GOSHMEMI_COMPAT_AMO_STD)
GOSHMEMI_FOR_AMO_EXTENDED_ONLY_TYPES(GOSHMEMI_COMPAT_AMO_EXT)
GOSHMEMI_FOR_AMO_BITWISE_TYPES(GOSHMEMI_COMPAT_AMO_BIT)
#undef GOSHMEMI_COMPAT_AMO_EXT
#undef GOSHMEMI_COMPAT_AMO_STD
#undef GOSHMEMI_COMPAT_AMO_BIT_OP
#undef GOSHMEMI_COMPAT_AMO_BIT

/* ==== collectives (owned by coll.h / coll_data.h; keep this block together) ====
 * Signatures as NVSHMEM 3.x's (nvshmem_coll_defines.cuh, nvshmemx_coll_defines.cuh):
 * barrier_all and sync_all return void there, barrier, team_sync, sync and the
 * data collectives int (0). */
#define GOSHMEMI_COMPAT_COLL(NVP, GSP, SUFFIX)                                                                        \
    GOSHMEMI_FN void NVP##_barrier_all##SUFFIX(void) { (void)GSP##_barrier_all##SUFFIX(); }                           \
    GOSHMEMI_FN void NVP##_sync_all##SUFFIX(void) { (void)GSP##_sync_all##SUFFIX(); }                                 \
    GOSHMEMI_FN int NVP##_barrier##SUFFIX(nvshmem_team_t team) { return GSP##_barrier##SUFFIX(team); }                \
    GOSHMEMI_FN int NVP##_team_sync##SUFFIX(nvshmem_team_t team) { return GSP##_team_sync##SUFFIX(team); }            \
    GOSHMEMI_FN int NVP##_sync##SUFFIX(nvshmem_team_t team) { return GSP##_team_sync##SUFFIX(team); }                 \
    GOSHMEMI_FN int NVP##_broadcastmem##SUFFIX(nvshmem_team_t team, void *d, const void *s, size_t n, int root)       \
    {                                                                                                                 \
        return GSP##_broadcastmem##SUFFIX(team, d, s, n, root);                                                       \
    }                                                                                                                 \
    GOSHMEMI_FN int NVP##_fcollectmem##SUFFIX(nvshmem_team_t team, void *d, const void *s, size_t n)                  \
    {                                                                                                                 \
        return GSP##_fcollectmem##SUFFIX(team, d, s, n);                                                              \
    }                                                                                                                 \
    GOSHMEMI_FN int NVP##_alltoallmem##SUFFIX(nvshmem_team_t team, void *d, const void *s, size_t n)                  \
    {                                                                                                                 \
        return GSP##_alltoallmem##SUFFIX(team, d, s, n);                                                              \
    }
GOSHMEMI_COMPAT_COLL(nvshmem, goshmem, )
GOSHMEMI_COMPAT_COLL(nvshmemx, goshmemx, _warp)
GOSHMEMI_COMPAT_COLL(nvshmemx, goshmemx, _block)
#undef GOSHMEMI_COMPAT_COLL

#define GOSHMEMI_COMPAT_MOVERS_SCOPE(NVP, GSP, NAME, TYPE, SUFFIX)                                                    \
    GOSHMEMI_FN int NVP##_##NAME##_broadcast##SUFFIX(nvshmem_team_t team, TYPE *d, const TYPE *s, size_t n, int root) \
    {                                                                                                                 \
        return GSP##_##NAME##_broadcast##SUFFIX(team, d, s, n, root);                                                 \
    }                                                                                                                 \
    GOSHMEMI_FN int NVP##_##NAME##_fcollect##SUFFIX(nvshmem_team_t team, TYPE *d, const TYPE *s, size_t n)            \
    {                                                                                                                 \
        return GSP##_##NAME##_fcollect##SUFFIX(team, d, s, n);                                                        \
    }                                                                                                                 \
    GOSHMEMI_FN int NVP##_##NAME##_alltoall##SUFFIX(nvshmem_team_t team, TYPE *d, const TYPE *s, size_t n)            \
    {                                                                                                                 \
        return GSP##_##NAME##_alltoall##SUFFIX(team, d, s, n);                                                        \
    }
#define GOSHMEMI_COMPAT_MOVERS(NAME, TYPE, BITS)                                                                      \
    GOSHMEMI_COMPAT_MOVERS_SCOPE(nvshmem, goshmem, NAME, TYPE, )                                                      \
    GOSHMEMI_COMPAT_MOVERS_SCOPE(nvshmemx, goshmemx, NAME, TYPE, _warp)                                               \
    GOSHMEMI_COMPAT_MOVERS_SCOPE(nvshmemx, goshmemx, NAME, TYPE, _block)
GOSHMEMI_FOR_STANDARD_RMA_TYPES(GOSHMEMI_COMPAT_MOVERS)
#undef GOSHMEMI_COMPAT_MOVERS
#undef GOSHMEMI_COMPAT_MOVERS_SCOPE

#define GOSHMEMI_COMPAT_RDX_SCOPE(NVP, GSP, NAME, TYPE, OP, SUFFIX)                                                   \
    GOSHMEMI_FN int NVP##_##NAME##_##OP##_reduce##SUFFIX(nvshmem_team_t team, TYPE *d, const TYPE *s, size_t n)       \
    {                                                                                                                 \
        return GSP##_##NAME##_##OP##_reduce##SUFFIX(team, d, s, n);                                                   \
    }                                                                                                                 \
    GOSHMEMI_FN int NVP##_##NAME##_##OP##_reducescatter##SUFFIX(nvshmem_team_t team, TYPE *d, const TYPE *s, size_t n) \
    {                                                                                                                 \
        return GSP##_##NAME##_##OP##_reducescatter##SUFFIX(team, d, s, n);                                            \
    }
#define GOSHMEMI_COMPAT_RDX(NAME, TYPE, ACC, WT, CONV, OP)                                                            \
    GOSHMEMI_COMPAT_RDX_SCOPE(nvshmem, goshmem, NAME, TYPE, OP, )                                                     \
    GOSHMEMI_COMPAT_RDX_SCOPE(nvshmemx, goshmemx, NAME, TYPE, OP, _warp)                                              \
    GOSHMEMI_COMPAT_RDX_SCOPE(nvshmemx, goshmemx, NAME, TYPE, OP, _block)
GOSHMEMI_FOR_REDUCE_TYPES_AND_OPS(GOSHMEMI_COMPAT_RDX)
GOSHMEMI_FOR_MAXLOC_TYPES(GOSHMEMI_COMPAT_RDX)
#undef GOSHMEMI_COMPAT_RDX
#undef GOSHMEMI_COMPAT_RDX_SCOPE
/* ==== end of collectives ==== */

/* ---- teams ---- */
GOSHMEMI_FN int nvshmem_team_my_pe(nvshmem_team_t team) { return goshmem_team_my_pe(team); }
GOSHMEMI_FN int nvshmem_team_n_pes(nvshmem_team_t team) { return goshmem_team_n_pes(team); }
GOSHMEMI_FN int nvshmem_team_translate_pe(nvshmem_team_t src, int pe, nvshmem_team_t dst)
{
    return goshmem_team_translate_pe(src, pe, dst);
}

#endif /* GOSHMEM_NVSHMEM_COMPAT_H */
