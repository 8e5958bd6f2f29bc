/* goshmem-perf device kernels, goshmem side: the shared kernels of
 * kernels.cuh over goshmem's device API, reached through its NVSHMEM names
 * (include/goshmem/nvshmem_compat.h: forced-inline wrappers of goshmem_*).
 *
 * Build (no -rdc; sm_90 SASS + compute_90 PTX), here with CUDA 11.8 or on
 * the GPU machine:
 *   nvcc -std=c++17 -O3 -I include -gencode arch=compute_90,code=sm_90 \
 *        -gencode arch=compute_90,code=compute_90 -fatbin -o bin/gpu/perf.fatbin bench/gpu/perf.cu
 * Loaded by `goshmem-perf device -module bin/gpu/perf.fatbin` (shmem.LoadModuleFile).
 */
#include <goshmem/nvshmem_compat.h>

#include "kernels.cuh"

/* ---- goshmem-only diagnostics (rows diag_*): where put + quiet's time goes ----
 * Same timing as kernels.cuh's latency loop; one thread.
 *   mode 0: peer address from goshmem_ptr once (no per-put translation), 8 B load from src + store, goshmem_quiet
 *   mode 1: as 0 without the source load (store of the loop counter)
 *   mode 2: as 1 with a bare fence.sc.gpu instead of goshmem_quiet (no state load at all: the floor in this process)
 *   mode 3: address translation every put (goshmemi_peer), 8 B load + plain store, goshmem_quiet
 *   mode 4: peer address once, the header's copy routine (goshmemi_copy_thread, 8 B), goshmem_quiet */
extern "C" __global__ void diag_put(char *dst, const char *src, int peer, int mode, int iters, int warmup,
                                    long long *samples, unsigned long long *meta)
{
    __shared__ long long sbuf[PERF_SBUF];
    volatile unsigned long long *p = (volatile unsigned long long *)goshmem_ptr(dst, peer);
    int n = iters + warmup, kept = 0;
    unsigned long long sink = 0;
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    for (int i = 0; i < n; i++) {
        long long c0 = perf_clock_after(sink);
        if (mode == 0) {
            *p = *(const unsigned long long *)src;
            goshmem_quiet();
        } else if (mode == 1) {
            *p = (unsigned long long)i;
            goshmem_quiet();
        } else if (mode == 3) {
            *(volatile unsigned long long *)goshmemi_peer(dst, peer, 8) = *(const unsigned long long *)src;
            goshmem_quiet();
        } else if (mode == 4) {
            goshmemi_copy_thread((void *)p, src, 8);
            goshmem_quiet();
        } else {
            *p = (unsigned long long)i;
            asm volatile("fence.sc.gpu;" ::: "memory");
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

/* perf_put_bw with the copy done by hand: peer address hoisted, each thread
 * loads 4 uint4 before storing them (goshmemi_copy_part does one load, one
 * store per step), __syncthreads per put as the _block form. Shows what the
 * block copy could reach. Slices are rounded down to 16 bytes (grids that do not divide
 * size leave a few bytes uncopied: a diagnostic, not a put). */
extern "C" __global__ void diag_put_bw_unroll4(char *dst, const char *src, size_t size, int peer, int iters,
                                               unsigned long long *meta)
{
    size_t slice = (size / gridDim.x) & ~(size_t)15; /* 16-byte slices (a remainder is not copied) */
    size_t off = slice * blockIdx.x;
    uint4 *d = (uint4 *)((char *)goshmem_ptr(dst, peer) + off);
    const uint4 *s = (const uint4 *)(src + off);
    size_t nw = slice / 16;
    unsigned tid = threadIdx.x, nt = blockDim.x;
    __syncthreads();
    unsigned long long g0 = perf_gtimer();
    for (int it = 0; it < iters; it++) {
        size_t i = tid;
        for (; i + 3 * nt < nw; i += 4 * nt) {
            uint4 a = s[i], b = s[i + nt], c = s[i + 2 * nt], e = s[i + 3 * nt];
            d[i] = a;
            d[i + nt] = b;
            d[i + 2 * nt] = c;
            d[i + 3 * nt] = e;
        }
        for (; i < nw; i += nt) d[i] = s[i];
        __syncthreads();
    }
    goshmem_quiet();
    __syncthreads();
    unsigned long long g1 = perf_gtimer();
    if (threadIdx.x == 0) {
        meta[8 + 2 * blockIdx.x] = g0;
        meta[9 + 2 * blockIdx.x] = g1;
    }
}
