/* goshmem-perf device kernels, written once in NVSHMEM's names.
 *
 * perf.cu includes this after <goshmem/nvshmem_compat.h> (every nvshmem_*
 * call is a forced-inline wrapper of the goshmem_* call of the same
 * meaning), nvshmem_perf.cu after NVSHMEM's own <nvshmem.h>/<nvshmemx.h>.
 * So both libraries run the SAME kernel code, timed the same way: the only
 * difference is the library behind the names.
 *
 * Timing (latency kernels): thread 0 reads clock64() before and after each
 * operation (the "after" read depends on the operation's result, so it
 * issues only once the operation is done), keeps the cycle counts in shared
 * memory (flushed to global memory outside the timed region), and records
 * %globaltimer and clock64 around the whole loop so the host converts cycles
 * to ns with this kernel's own clock rate. Rows report median and p99 of
 * the per-iteration samples ("timing": "clock64/iter").
 * Bandwidth kernels: every CTA records %globaltimer before its first and
 * after its last put (+ quiet); BW = bytes / (last end - first start).
 *
 * meta[] layout (unsigned long long): 0 gt_start, 1 gt_end, 2 clk_start,
 * 3 clk_end, 4 sink (keeps g/get results alive), 8.. per-CTA bw stamps.
 *
 * Every kernel (here and in perf.cu) carries __launch_bounds__(1024, 1):
 * goshmem-perf launches blocks of up to 1024 threads, which can have at
 * most 64 registers each, and without the bound each nvcc chooses its own
 * count (CUDA 13.0 gives these kernels far more than 64, and the block
 * would have to shrink).
 */
#ifndef GOSHMEM_PERF_KERNELS_CUH
#define GOSHMEM_PERF_KERNELS_CUH

#include <stdint.h>

#define PERF_SBUF 2048 /* samples kept in shared memory between flushes */

__device__ __forceinline__ unsigned long long perf_gtimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}
__device__ __forceinline__ long long perf_clock(void)
{
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
}
/* clock64 read that the compiler must keep after x is computed. */
__device__ __forceinline__ long long perf_clock_after(unsigned long long x)
{
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) : "l"(x) : "memory");
    return c;
}

enum { OP_PUT = 0, OP_GET = 1, OP_P = 2, OP_G = 3 };
enum { SC_THREAD = 0, SC_WARP = 1, SC_BLOCK = 2 };

/* group sync for the scope: nothing for one thread */
#define PERF_SYNC(SC)                                                                                                 \
    do {                                                                                                              \
        if (SC == SC_WARP) __syncwarp();                                                                              \
        if (SC == SC_BLOCK) __syncthreads();                                                                          \
    } while (0)

/* One latency loop: warmup + iters operations; samples[] gets iters cycle
 * counts. Launched with 1 thread (thread), 32 (warp) or a block (block). */
template <int OP, int SC>
__device__ __forceinline__ void perf_lat(char *dst, const char *src, size_t size, int peer, int iters, int warmup,
                                         long long *samples, unsigned long long *meta)
{
    __shared__ long long sbuf[PERF_SBUF];
    const bool t0 = threadIdx.x == 0;
    unsigned long long sink = 0;
    int n = iters + warmup, kept = 0;
    PERF_SYNC(SC);
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    for (int i = 0; i < n; i++) {
        long long c0 = perf_clock_after(sink);
        if (OP == OP_PUT) {
            if (SC == SC_THREAD) nvshmem_putmem_nbi(dst, src, size, peer);
            if (SC == SC_WARP) nvshmemx_putmem_nbi_warp(dst, src, size, peer);
            if (SC == SC_BLOCK) nvshmemx_putmem_nbi_block(dst, src, size, peer);
            nvshmem_quiet();
        } else if (OP == OP_GET) {
            if (SC == SC_THREAD) nvshmem_getmem(dst, src, size, peer);
            if (SC == SC_WARP) nvshmemx_getmem_warp(dst, src, size, peer);
            if (SC == SC_BLOCK) nvshmemx_getmem_block(dst, src, size, peer);
            sink += (unsigned long long)((volatile char *)dst)[0]; /* completion: the data is here */
        } else if (OP == OP_P) {
            nvshmem_long_p((long *)dst, (long)i, peer);
            nvshmem_quiet();
        } else {
            sink += (unsigned long long)nvshmem_long_g((const long *)src, peer);
        }
        PERF_SYNC(SC);
        long long c1 = perf_clock_after(sink);
        if (t0 && i >= warmup) {
            sbuf[kept % PERF_SBUF] = c1 - c0;
            kept++;
            if (kept % PERF_SBUF == 0) /* flush outside the timed region */
                for (int j = 0; j < PERF_SBUF; j++) samples[kept - PERF_SBUF + j] = sbuf[j];
        }
    }
    long long k1 = perf_clock();
    unsigned long long g1 = perf_gtimer();
    if (t0) {
        for (int j = kept - kept % PERF_SBUF; j < kept; j++) samples[j] = sbuf[j % PERF_SBUF];
        meta[0] = g0;
        meta[1] = g1;
        meta[2] = (unsigned long long)k0;
        meta[3] = (unsigned long long)k1;
        meta[4] = sink;
    }
}

#define PERF_LAT_KERNEL(NAME, OP, SC)                                                                                 \
    extern "C" __global__ void __launch_bounds__(1024, 1)                                                               \
        NAME(char *dst, const char *src, size_t size, int peer, int iters, int warmup,                               \
                                    long long *samples, unsigned long long *meta)                                    \
    {                                                                                                                 \
        perf_lat<OP, SC>(dst, src, size, peer, iters, warmup, samples, meta);                                         \
    }
PERF_LAT_KERNEL(perf_put_thread, OP_PUT, SC_THREAD)
PERF_LAT_KERNEL(perf_put_warp, OP_PUT, SC_WARP)
PERF_LAT_KERNEL(perf_put_block, OP_PUT, SC_BLOCK)
PERF_LAT_KERNEL(perf_get_thread, OP_GET, SC_THREAD)
PERF_LAT_KERNEL(perf_get_warp, OP_GET, SC_WARP)
PERF_LAT_KERNEL(perf_get_block, OP_GET, SC_BLOCK)
PERF_LAT_KERNEL(perf_p_thread, OP_P, SC_THREAD)
PERF_LAT_KERNEL(perf_g_thread, OP_G, SC_THREAD)

/* Ping-pong, one thread per PE, both PEs' kernels running at once (MPS).
 * PE 0 sends base+i+1 and waits for the echo; the other PE waits, then
 * echoes. kind 0: long_p + long_wait_until; kind 1: putmem_signal_nbi (8 B
 * payload, SIGNAL_SET) + signal_wait_until. PE 0 records round trips. */
template <int KIND>
__device__ __forceinline__ void perf_pingpong(char *dst, const char *src, unsigned long long *flag, int me, int peer,
                                              unsigned long long base, int iters, int warmup, long long *samples,
                                              unsigned long long *meta)
{
    __shared__ long long sbuf[PERF_SBUF];
    int n = iters + warmup, kept = 0;
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    unsigned long long sink = 0;
    for (int i = 0; i < n; i++) {
        unsigned long long v = base + (unsigned long long)i + 1;
        long long c0 = perf_clock_after(sink);
        if (me == 0) {
            if (KIND == 0) {
                nvshmem_long_p((long *)flag, (long)v, peer);
                nvshmem_long_wait_until((long *)flag, NVSHMEM_CMP_EQ, (long)v);
            } else {
                nvshmem_putmem_signal_nbi(dst, src, 8, (uint64_t *)flag, v, NVSHMEM_SIGNAL_SET, peer);
                sink += nvshmem_signal_wait_until((uint64_t *)flag, NVSHMEM_CMP_EQ, v);
            }
        } else {
            if (KIND == 0) {
                nvshmem_long_wait_until((long *)flag, NVSHMEM_CMP_EQ, (long)v);
                nvshmem_long_p((long *)flag, (long)v, peer);
            } else {
                sink += nvshmem_signal_wait_until((uint64_t *)flag, NVSHMEM_CMP_EQ, v);
                nvshmem_putmem_signal_nbi(dst, src, 8, (uint64_t *)flag, v, NVSHMEM_SIGNAL_SET, peer);
            }
        }
        long long c1 = perf_clock_after(sink);
        if (i >= warmup) {
            sbuf[kept % PERF_SBUF] = c1 - c0;
            kept++;
            if (kept % PERF_SBUF == 0)
                for (int j = 0; j < PERF_SBUF; j++) samples[kept - PERF_SBUF + j] = sbuf[j];
        }
    }
    long long k1 = perf_clock();
    unsigned long long g1 = perf_gtimer();
    for (int j = kept - kept % PERF_SBUF; j < kept; j++) samples[j] = sbuf[j % PERF_SBUF];
    meta[0] = g0;
    meta[1] = g1;
    meta[2] = (unsigned long long)k0;
    meta[3] = (unsigned long long)k1;
    meta[4] = sink;
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    perf_pingpong_p(char *dst, const char *src, unsigned long long *flag, int me, int peer,
                                           unsigned long long base, int iters, int warmup, long long *samples,
                                           unsigned long long *meta)
{
    perf_pingpong<0>(dst, src, flag, me, peer, base, iters, warmup, samples, meta);
}
extern "C" __global__ void __launch_bounds__(1024, 1)
    perf_pingpong_putsignal(char *dst, const char *src, unsigned long long *flag, int me,
                                                   int peer, unsigned long long base, int iters, int warmup,
                                                   long long *samples, unsigned long long *meta)
{
    perf_pingpong<1>(dst, src, flag, me, peer, base, iters, warmup, samples, meta);
}

/* barrier_all latency: block of 1 thread (thread form) or a block (block form). */
template <int SC>
__device__ __forceinline__ void perf_barrier(int iters, int warmup, long long *samples, unsigned long long *meta)
{
    __shared__ long long sbuf[PERF_SBUF];
    const bool t0 = threadIdx.x == 0;
    int n = iters + warmup, kept = 0;
    __syncthreads();
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    for (int i = 0; i < n; i++) {
        long long c0 = perf_clock();
        if (SC == SC_THREAD)
            nvshmem_barrier_all();
        else
            nvshmemx_barrier_all_block();
        long long c1 = perf_clock();
        if (t0 && i >= warmup) {
            sbuf[kept % PERF_SBUF] = c1 - c0;
            kept++;
            if (kept % PERF_SBUF == 0)
                for (int j = 0; j < PERF_SBUF; j++) samples[kept - PERF_SBUF + j] = sbuf[j];
        }
    }
    long long k1 = perf_clock();
    unsigned long long g1 = perf_gtimer();
    if (t0) {
        for (int j = kept - kept % PERF_SBUF; j < kept; j++) samples[j] = sbuf[j % PERF_SBUF];
        meta[0] = g0;
        meta[1] = g1;
        meta[2] = (unsigned long long)k0;
        meta[3] = (unsigned long long)k1;
    }
}
extern "C" __global__ void __launch_bounds__(1024, 1)
    perf_barrier_thread(int iters, int warmup, long long *samples, unsigned long long *meta)
{
    perf_barrier<SC_THREAD>(iters, warmup, samples, meta);
}
extern "C" __global__ void __launch_bounds__(1024, 1)
    perf_barrier_block(int iters, int warmup, long long *samples, unsigned long long *meta)
{
    perf_barrier<SC_BLOCK>(iters, warmup, samples, meta);
}

/* Put bandwidth, block scope: CTA b puts its slice [b*size/grid, ...) of
 * size bytes iters times (putmem_nbi_block), then quiet. meta[8+2b],
 * meta[9+2b] = globaltimer start/end of CTA b. */
extern "C" __global__ void __launch_bounds__(1024, 1)
    perf_put_bw(char *dst, const char *src, size_t size, int peer, int iters,
                                       unsigned long long *meta)
{
    size_t slice = size / gridDim.x;
    size_t off = slice * blockIdx.x;
    __syncthreads();
    unsigned long long g0 = perf_gtimer();
    for (int i = 0; i < iters; i++) nvshmemx_putmem_nbi_block(dst + off, src + off, slice, peer);
    nvshmem_quiet();
    __syncthreads();
    unsigned long long g1 = perf_gtimer();
    if (threadIdx.x == 0) {
        meta[8 + 2 * blockIdx.x] = g0;
        meta[9 + 2 * blockIdx.x] = g1;
    }
}

/* Launch overhead. */
extern "C" __global__ void __launch_bounds__(1024, 1) perf_empty(void) {}

#endif
