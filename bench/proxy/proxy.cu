/* goshmem-perf proxy kernels (issue 7): the CPU-proxy path (docs/proxy.md).
 * Every PE reaches the other through its proxy (GOSHMEM_GPU_TRANSPORT=proxy).
 * Timing as bench/gpu/kernels.cuh: clock64 per sample; meta[0..1] =
 * globaltimer at start/end, meta[2..3] = clock64 at start/end (the host
 * derives the SM clock from them).
 *
 * Build: nvcc -std=c++17 -I include -gencode arch=compute_90,code=sm_90
 *        -gencode arch=compute_90,code=compute_90 -fatbin bench/proxy/proxy.cu
 */
#define GOSHMEM_REMOTE_TRANSPORTS /* the proxy path is what this file measures (remote.h) */
#include <goshmem.h>

__device__ __forceinline__ long long px_clock()
{
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
}
__device__ __forceinline__ void px_meta_begin(unsigned long long *meta, unsigned long long *g0, long long *k0)
{
    *g0 = goshmemi_now_ns();
    *k0 = px_clock();
    (void)meta;
}
__device__ __forceinline__ void px_meta_end(unsigned long long *meta, unsigned long long g0, long long k0)
{
    meta[0] = g0;
    meta[1] = goshmemi_now_ns();
    meta[2] = (unsigned long long)k0;
    meta[3] = (unsigned long long)px_clock();
}

/* Enqueue (issue) cost of one 8-byte p through ctx, one thread: the request
 * is posted, not completed. Bursts of `burst` requests (below the ring size,
 * so the ring never fills inside a burst) are completed by an untimed
 * ctx_quiet. producer = 0: goshmemx_ctx_uint64_p; producer = 1: through a
 * producer in registers (goshmemx_proxy_producer_*), opened inside meta's
 * window. Between the clock reads: the call only. Each kernel passes a
 * constant, so the branch is folded away. */
__device__ __forceinline__ void px_enqueue_run(uint64_t *dst, int peer, int ctx, int iters, int warmup, int burst,
                                               long long *samples, unsigned long long *meta, bool producer)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    unsigned long long g0;
    long long k0;
    px_meta_begin(meta, &g0, &k0);
    goshmemx_proxy_producer_t pr = producer ? goshmemx_proxy_producer_open(ctx) : goshmemx_proxy_producer_t{};
    for (int i = 0; i < iters + warmup; i++) {
        long long c0 = px_clock();
        if (producer)
            goshmemx_proxy_producer_uint64_p(&pr, dst + (i & 7), (uint64_t)i, peer);
        else
            goshmemx_ctx_uint64_p(ctx, dst + (i & 7), (uint64_t)i, peer);
        long long c1 = px_clock();
        if (i >= warmup) samples[i - warmup] = c1 - c0;
        if ((i + 1) % burst == 0) goshmem_ctx_quiet(ctx);
    }
    goshmem_ctx_quiet(ctx);
    px_meta_end(meta, g0, k0);
}

/* ctx 0: multi-producer default context; ctx >= 1: tuned single producer;
 * GOSHMEM_PROXY_MODE=baseline turns every ring into the untuned baseline. */
extern "C" __global__ void px_enqueue(uint64_t *dst, int peer, int ctx, int iters, int warmup, int burst,
                                      long long *samples, unsigned long long *meta)
{
    px_enqueue_run(dst, peer, ctx, iters, warmup, burst, samples, meta, false);
}

/* The same through a producer in registers (proxy.h): on ctx's tuned ring
 * no load at all, one posted 16-byte store (and the posted head store): the
 * tuned enqueue at its smallest. */
extern "C" __global__ void px_enqueue_producer(uint64_t *dst, int peer, int ctx, int iters, int warmup, int burst,
                                               long long *samples, unsigned long long *meta)
{
    px_enqueue_run(dst, peer, ctx, iters, warmup, burst, samples, meta, true);
}

/* Put + completion: p through ctx, then ctx_quiet (the worker applied it). */
extern "C" __global__ void px_put_quiet(uint64_t *dst, int peer, int ctx, int iters, int warmup, long long *samples,
                                        unsigned long long *meta)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    unsigned long long g0;
    long long k0;
    px_meta_begin(meta, &g0, &k0);
    for (int i = 0; i < iters + warmup; i++) {
        long long c0 = px_clock();
        goshmemx_ctx_uint64_p(ctx, dst, (uint64_t)i, peer);
        goshmem_ctx_quiet(ctx);
        long long c1 = px_clock();
        if (i >= warmup) samples[i - warmup] = c1 - c0;
    }
    px_meta_end(meta, g0, k0);
}

/* Round trip: PE 0 p's k into PE 1's flag, PE 1 answers k into PE 0's
 * flag (a polled data word). Both through
 * ctx. flag values continue from base across launches. */
__device__ void px_pingpong_body(uint64_t *flag, int me, int peer, int ctx, uint64_t base, int iters, int warmup,
                                 long long *samples)
{
    for (int i = 0; i < iters + warmup; i++) {
        uint64_t k = base + (uint64_t)i + 1;
        long long c0 = px_clock();
        if (me == 0) {
            goshmemx_ctx_uint64_p(ctx, flag, k, peer);
            goshmem_uint64_wait_until(flag, GOSHMEM_CMP_GE, k);
        } else {
            goshmem_uint64_wait_until(flag, GOSHMEM_CMP_GE, k);
            goshmemx_ctx_uint64_p(ctx, flag, k, peer);
        }
        long long c1 = px_clock();
        if (i >= warmup && samples != NULL) samples[i - warmup] = c1 - c0;
    }
}
extern "C" __global__ void px_pingpong(uint64_t *flag, int me, int peer, int ctx, unsigned long long base, int iters,
                                       int warmup, long long *samples, unsigned long long *meta)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    unsigned long long g0;
    long long k0;
    px_meta_begin(meta, &g0, &k0);
    px_pingpong_body(flag, me, peer, ctx, base, iters, warmup, samples);
    goshmem_ctx_quiet(ctx);
    px_meta_end(meta, g0, k0);
}

/* Message rate: every CTA's thread 0 posts per_cta 8-byte nbi puts on the
 * default context (ring = CTA mod GOSHMEM_PROXY_RINGS), then quiets. meta:
 * [2b] start, [2b+1] end (globaltimer) per CTA. */
extern "C" __global__ void px_rate(char *dst, const char *src, int peer, int per_cta, unsigned long long *meta)
{
    if (threadIdx.x != 0) return;
    unsigned long long t0 = goshmemi_now_ns();
    char *d = dst + 8 * (blockIdx.x % 4096);
    for (int k = 0; k < per_cta; k++) goshmem_putmem_nbi(d, src, 8, peer);
    goshmem_ctx_quiet(GOSHMEM_CTX_DEFAULT);
    meta[2 * blockIdx.x] = t0;
    meta[2 * blockIdx.x + 1] = goshmemi_now_ns();
}

/* Loaded round trip: CTAs [0, bg) stream 8-byte nbi puts to the peer on the
 * default context until the probe is done; CTA bg runs the round trip on
 * probe_ctx (0: shares the background's ring when GOSHMEM_PROXY_RINGS=1;
 * >= 1: its reserved ring). stop is a local word the probe sets. counts[b]:
 * puts CTA b posted (carried background load). */
extern "C" __global__ void px_loaded(uint64_t *flag, char *dst, const char *src, int me, int peer, int probe_ctx,
                                     int bg, unsigned long long base, int iters, int warmup, volatile int *stop,
                                     unsigned long long *counts, long long *samples, unsigned long long *meta)
{
    if (threadIdx.x != 0) return;
    if ((int)blockIdx.x < bg) {
        char *d = dst + 8 * blockIdx.x;
        unsigned long long n = 0;
        while (*stop == 0) {
            goshmem_putmem_nbi(d, src, 8, peer);
            n++;
        }
        goshmem_ctx_quiet(GOSHMEM_CTX_DEFAULT);
        counts[blockIdx.x] = n;
        return;
    }
    unsigned long long g0;
    long long k0;
    px_meta_begin(meta, &g0, &k0);
    px_pingpong_body(flag, me, peer, probe_ctx, base, iters, warmup, samples);
    px_meta_end(meta, g0, k0);
    *stop = 1;
    __threadfence();
}
