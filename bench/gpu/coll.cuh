/* goshmem-perf device collective kernels, written once for both libraries.
 *
 * The includer defines, before including this file:
 *   PC_T(name)   the thread-scope name   (goshmem_##name / nvshmem_##name)
 *   PC_X(name)   the extended name       (goshmemx_##name / nvshmemx_##name)
 *   pc_team_t    the team handle type
 * bench/gpu/perf_coll.cu includes it after <goshmem.h>, bench/gpu/nvshmem_perf.cu
 * after NVSHMEM's headers, so both run the same kernel code.
 *
 * Shape (NVSHMEM perftest/device/coll/*_latency.cu): one block per PE calls
 * the collective `iters` times back to back in one kernel, after `warmup`
 * untimed calls: thread 0 (thread scope), warp 0 (warp) or every thread
 * (block). NVSHMEM's perftest times the launch with cudaEvents; here thread
 * 0 reads %globaltimer after a block-scope team barrier (every PE starts
 * together) and after the last call, so the launch is not in the figure and
 * both libraries are timed alike. Latency per call = (t1 - t0) / iters.
 * meta[0] = t0, meta[1] = t1.
 *
 * Kernels: pc_<row>_{thread,warp,block}(int team, void *dst, const void *src,
 *          unsigned long long n, int root, int iters, int warmup, unsigned long long *meta)
 * The _block kernels carry __launch_bounds__(1024), so they launch with
 * 1024 threads (without it ptxas gives a kernel that inlines a collective
 * 90-110 registers and the block must shrink to 512); the thread and warp
 * kernels run with the largest block that launches (goshmem-perf halves it).
 * n is the collective's element count (NVSHMEM's nelems / nreduce).
 */
#ifndef GOSHMEM_PERF_COLL_CUH
#define GOSHMEM_PERF_COLL_CUH

#include <stdint.h>

__device__ __forceinline__ unsigned long long pc_gtimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

#define PC_NOARG
#define PC_ROOT , root
/* The thread and warp kernels' bounds: none by default (the largest block
 * that launches); an A/B build may set __launch_bounds__(1024) to see those
 * forms in a 64-register kernel, as a user's 1024-thread kernel has them. */
#ifndef PC_WARP_BOUNDS
#define PC_WARP_BOUNDS
#endif
#ifndef PC_THREAD_BOUNDS
#define PC_THREAD_BOUNDS
#endif

#define PC_LOOP(T, WHO, CALL)                                                                                         \
    {                                                                                                                 \
        const pc_team_t team = (pc_team_t)team_;                                                                      \
        T *dst = (T *)dst_;                                                                                           \
        const T *src = (const T *)src_;                                                                               \
        (void)root;                                                                                                   \
        if (WHO)                                                                                                      \
            for (int i = 0; i < warmup; i++) CALL;                                                                    \
        PC_X(barrier_block)(team);                                                                                    \
        unsigned long long t0 = pc_gtimer();                                                                          \
        if (WHO)                                                                                                      \
            for (int i = 0; i < iters; i++) CALL;                                                                     \
        __syncthreads();                                                                                              \
        unsigned long long t1 = pc_gtimer();                                                                          \
        if (threadIdx.x == 0) {                                                                                       \
            meta[0] = t0;                                                                                             \
            meta[1] = t1;                                                                                             \
        }                                                                                                             \
    }

#define PC_KERNELS(ROW, T, FN, EXTRA)                                                                                 \
    extern "C" __global__ void PC_THREAD_BOUNDS pc_##ROW##_thread(int team_, void *dst_, const void *src_,           \
                                                                  unsigned long long n, int root, int iters,          \
                                                                  int warmup, unsigned long long *meta)               \
    PC_LOOP(T, threadIdx.x == 0, PC_T(FN)(team, dst, src, (size_t)n EXTRA))                                           \
    extern "C" __global__ void PC_WARP_BOUNDS pc_##ROW##_warp(int team_, void *dst_, const void *src_,               \
                                                              unsigned long long n, int root, int iters, int warmup,  \
                                                              unsigned long long *meta)                               \
    PC_LOOP(T, threadIdx.x < 32, PC_X(FN##_warp)(team, dst, src, (size_t)n EXTRA))                                    \
    extern "C" __global__ void __launch_bounds__(1024)                                                                \
        pc_##ROW##_block(int team_, void *dst_, const void *src_, unsigned long long n, int root, int iters,          \
                         int warmup, unsigned long long *meta)                                                        \
    PC_LOOP(T, true, PC_X(FN##_block)(team, dst, src, (size_t)n EXTRA))

PC_KERNELS(reduce_sum_float, float, float_sum_reduce, PC_NOARG)
PC_KERNELS(reduce_sum_int64, int64_t, int64_sum_reduce, PC_NOARG)
PC_KERNELS(broadcast, int64_t, int64_broadcast, PC_ROOT)
PC_KERNELS(fcollect, int64_t, int64_fcollect, PC_NOARG)
PC_KERNELS(alltoall, int64_t, int64_alltoall, PC_NOARG)
#ifndef PC_NO_REDUCESCATTER /* an NVSHMEM without device reducescatter: the peer's second-chance build */
PC_KERNELS(reducescatter_sum_float, float, float_sum_reducescatter, PC_NOARG)
#endif

/* The rows: name, element size, whether dst (and for alltoall src) hold
 * n * npes elements. Shared by nvshmem_perf.cu; goshmem-perf has the same
 * table (cmd/goshmem-perf/devcoll.go). */
#define PC_FOR_ROWS(X)                                                                                                \
    X(reduce_sum_float, 4)                                                                                            \
    X(reduce_sum_int64, 8)                                                                                            \
    X(broadcast, 8)                                                                                                   \
    X(fcollect, 8)                                                                                                    \
    X(alltoall, 8)                                                                                                    \
    X(reducescatter_sum_float, 4)

#endif /* GOSHMEM_PERF_COLL_CUH */
