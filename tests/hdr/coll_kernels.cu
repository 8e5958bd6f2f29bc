// nvcc compile check of the device collectives (coll_data.h) and their
// NVSHMEM names: every reduce type once (sum, block), every op for a few
// types, every family in every scope, the sync family. Kept to ~80
// instantiations: nvcc 11.8 is slow on inlined collectives.
// Built to a fatbin by tests/hdr/run.sh; tests/gpu runs the values.
#include <goshmem.h>
#include <goshmem/nvshmem_compat.h>

#define EVERY_TYPE_SUM(NAME, TYPE, ACC, WT, CONV, OP)                                                                 \
    extern "C" __global__ void k_sum_block_##NAME(goshmem_team_t t, TYPE *d, const TYPE *s, size_t n)               \
    {                                                                                                                 \
        goshmemx_##NAME##_sum_reduce_block(t, d, s, n);                                                               \
    }
GOSHMEMI_FOR_STANDARD_REDUCE_TYPES(EVERY_TYPE_SUM, sum)

// every op for a few types (block form)
#define OP_BLOCK(NAME, TYPE, OP)                                                                                      \
    extern "C" __global__ void k_##OP##_##NAME(goshmem_team_t t, TYPE *d, const TYPE *s, size_t n, int *rc)          \
    {                                                                                                                 \
        if (goshmemx_##NAME##_##OP##_reduce_block(t, d, s, n)) *rc = 1;                                               \
    }
#define ARITH_OPS(NAME, TYPE) OP_BLOCK(NAME, TYPE, prod) OP_BLOCK(NAME, TYPE, min) OP_BLOCK(NAME, TYPE, max)
ARITH_OPS(int32, int32_t)
ARITH_OPS(float, float)
ARITH_OPS(half, half)
ARITH_OPS(bfloat16, __nv_bfloat16)
ARITH_OPS(double, double)
OP_BLOCK(int32, int32_t, and)
OP_BLOCK(int32, int32_t, or)
OP_BLOCK(uint8, uint8_t, xor)

// every scope of reduce and reducescatter for one type
extern "C" __global__ void k_scopes(goshmem_team_t t, float *d, const float *s, size_t n, half *hd, const half *hs,
                                    int *rc)
{
    int r = 0;
    if (threadIdx.x == 0) r |= goshmem_float_sum_reduce(t, d, s, n) | goshmem_float_sum_reducescatter(t, d, s, n);
    if (threadIdx.x < 32)
        r |= goshmemx_float_sum_reduce_warp(t, d, s, n) | goshmemx_float_sum_reducescatter_warp(t, d, s, n);
    r |= goshmemx_float_sum_reducescatter_block(t, d, s, n) | goshmemx_half_max_reducescatter_block(t, hd, hs, n);
    if (r) *rc = r;
}

// typed data movers (thread form; the scopes share goshmemi_*_mem, checked below)
#define MOVERS(NAME, TYPE)                                                                                            \
    extern "C" __global__ void k_move_##NAME(goshmem_team_t t, TYPE *d, const TYPE *s, size_t n, int root)          \
    {                                                                                                                 \
        if (threadIdx.x == 0) {                                                                                       \
            goshmem_##NAME##_broadcast(t, d, s, n, root);                                                             \
            goshmem_##NAME##_fcollect(t, d, s, n);                                                                    \
            goshmem_##NAME##_alltoall(t, d, s, n);                                                                    \
        }                                                                                                             \
    }
MOVERS(half, half)
MOVERS(bfloat16, __nv_bfloat16)
MOVERS(int64, int64_t)
MOVERS(float, float)

extern "C" __global__ void k_mem(goshmem_team_t t, void *d, const void *s, size_t n, int root, int *rc)
{
    int r = 0;
    if (threadIdx.x == 0) {
        r |= goshmem_broadcastmem(t, d, s, n, root) | goshmem_fcollectmem(t, d, s, n) | goshmem_alltoallmem(t, d, s, n);
        r |= goshmem_team_sync(t) | goshmem_sync(t) | goshmem_barrier(t) | goshmem_sync_all() | goshmem_barrier_all();
    }
    if (threadIdx.x < 32) {
        r |= goshmemx_broadcastmem_warp(t, d, s, n, root) | goshmemx_fcollectmem_warp(t, d, s, n) |
             goshmemx_alltoallmem_warp(t, d, s, n);
        r |= goshmemx_team_sync_warp(t) | goshmemx_sync_warp(t) | goshmemx_barrier_warp(t);
    }
    r |= goshmemx_broadcastmem_block(t, d, s, n, root) | goshmemx_fcollectmem_block(t, d, s, n) |
         goshmemx_alltoallmem_block(t, d, s, n);
    r |= goshmemx_team_sync_block(t) | goshmemx_sync_block(t) | goshmemx_barrier_block(t) | goshmemx_sync_all_block();
    if (r) *rc = r;
}

// NVSHMEM spellings, as ported kernels write them
extern "C" __global__ void k_nvshmem(nvshmem_team_t t, float *d, const float *s, size_t n, half *hd, const half *hs,
                                     __nv_bfloat16 *bd, const __nv_bfloat16 *bs)
{
    nvshmemx_float_sum_reduce_block(t, d, s, n);
    nvshmemx_half_max_reduce_block(t, hd, hs, n);
    nvshmemx_bfloat16_sum_reducescatter_block(t, bd, bs, n);
    nvshmemx_float_fcollect_block(t, d, s, n);
    if (threadIdx.x == 0) {
        nvshmem_float_sum_reduce(t, d, s, n);
        nvshmem_int32_xor_reduce(t, (int32_t *)d, (const int32_t *)s, n);
        nvshmem_float_broadcast(t, d, s, n, 0);
        nvshmem_float_alltoall(t, d, s, n);
        nvshmem_alltoallmem(t, d, s, n);
        nvshmem_sync(t);
        nvshmem_team_sync(t);
        nvshmem_sync_all();
        nvshmem_barrier(t);
        nvshmem_half_put(hd, hs, n, 1);
        nvshmem_bfloat16_p(bd, bs[0], 1);
    }
    nvshmemx_barrier_all_block();
}
