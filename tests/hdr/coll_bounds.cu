/* Register budget of the device collectives: one call of each family, in
 * each scope, inside a kernel with __launch_bounds__(1024) (what a kernel
 * that runs 1024-thread blocks needs: 64 registers per thread). ptxas must
 * fit them with at most a few dozen bytes of spills per thread
 * (tests/hdr/run.sh checks the ptxas -v report). Without launch bounds ptxas
 * spends 70-110 registers on them; shmem.Launch then refuses a 1024-thread
 * block naming the kernel's limit. */
#include <goshmem.h>

#define CB_WHO_thread (threadIdx.x == 0)
#define CB_WHO_warp (threadIdx.x < 32)
#define CB_WHO_block true
#define CB_FN_thread(name) goshmem_##name
#define CB_FN_warp(name) goshmemx_##name##_warp
#define CB_FN_block(name) goshmemx_##name##_block

#define CB_REDUCE(NAME, TYPE, OP, SC)                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024)                                                                \
        cb_##NAME##_##OP##_reduce_##SC(int team, TYPE *dst, const TYPE *src, size_t n)                                \
    {                                                                                                                 \
        if (CB_WHO_##SC) CB_FN_##SC(NAME##_##OP##_reduce)((goshmem_team_t)team, dst, src, n);                         \
    }
#define CB_SCOPED(SC)                                                                                                 \
    CB_REDUCE(float, float, sum, SC)                                                                                         \
    CB_REDUCE(double, double, sum, SC)                                                                                        \
    CB_REDUCE(int64, int64_t, sum, SC)                                                                                         \
    CB_REDUCE(int, int, max, SC)                                                                                           \
    CB_REDUCE(int8, int8_t, xor, SC)                                                                                          \
    CB_REDUCE(half, half, sum, SC)                                                                                          \
    CB_REDUCE(bfloat16, __nv_bfloat16, prod, SC)                                                                                     \
    extern "C" __global__ void __launch_bounds__(1024)                                                                \
        cb_float_sum_reducescatter_##SC(int team, float *dst, const float *src, size_t n)                             \
    {                                                                                                                 \
        if (CB_WHO_##SC) CB_FN_##SC(float_sum_reducescatter)((goshmem_team_t)team, dst, src, n);                      \
    }                                                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024)                                                                \
        cb_broadcastmem_##SC(int team, void *dst, const void *src, size_t n, int root)                                \
    {                                                                                                                 \
        if (CB_WHO_##SC) CB_FN_##SC(broadcastmem)((goshmem_team_t)team, dst, src, n, root);                           \
    }                                                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024) cb_fcollectmem_##SC(int team, void *dst, const void *src,      \
                                                                           size_t n)                                  \
    {                                                                                                                 \
        if (CB_WHO_##SC) CB_FN_##SC(fcollectmem)((goshmem_team_t)team, dst, src, n);                                  \
    }                                                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024) cb_alltoallmem_##SC(int team, void *dst, const void *src,      \
                                                                           size_t n)                                  \
    {                                                                                                                 \
        if (CB_WHO_##SC) CB_FN_##SC(alltoallmem)((goshmem_team_t)team, dst, src, n);                                  \
    }                                                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024) cb_barrier_##SC(int team)                                      \
    {                                                                                                                 \
        if (CB_WHO_##SC) (void)CB_FN_##SC(team_sync)((goshmem_team_t)team);                                           \
    }

CB_SCOPED(thread)
CB_SCOPED(warp)
CB_SCOPED(block)
