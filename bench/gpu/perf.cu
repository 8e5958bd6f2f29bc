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
 *   mode 4: peer address once, the header's copy routine (goshmemi_copy_thread, 8 B), goshmem_quiet
 *   mode 5: as 0 with the source read through the non-coherent path (__ldg)
 *   mode 6: goshmem_putmem_nbi with a compile-time 8 B size + goshmem_quiet (the library, size folded)
 *   mode 7: as 0 with fence.acq_rel.gpu instead of goshmem_quiet (cost of an acq_rel vs an sc fence) */
extern "C" __global__ void __launch_bounds__(1024, 1)
    diag_put(char *dst, const char *src, int peer, int mode, int iters, int warmup,
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
        } else if (mode == 5) {
            *p = __ldg((const unsigned long long *)src);
            goshmem_quiet();
        } else if (mode == 6) {
            goshmem_putmem_nbi(dst, src, 8, peer);
            goshmem_quiet();
        } else if (mode == 7) {
            *p = *(const unsigned long long *)src;
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
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
extern "C" __global__ void __launch_bounds__(1024, 1)
    diag_put_bw_unroll4(char *dst, const char *src, size_t size, int peer, int iters,
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

/* ---- goshmem-only diagnostics: ping-pong and barrier building blocks ----
 * Both PEs' kernels run at once (LaunchCollective, MPS on one GPU). One
 * thread; scope = the library's choice (goshmemi_sys_scope()). PE 0 records
 * round trips, like perf_pingpong. flag is a symmetric 8-byte word.
 *   mode 0 diag_pp_volatile:        st.volatile / ld.volatile poll, no fence (the floor: no ordering at all)
 *   mode 1 diag_pp_relaxed_fence:   st.relaxed, ld.relaxed poll + fence.acq_rel (what p + wait_until do today)
 *   mode 2 diag_pp_acquire_poll:    st.relaxed, ld.acquire poll (no trailing fence)
 *   mode 3 diag_pp_relaxed_reread:  st.relaxed, ld.relaxed poll, then one ld.acquire of the word
 *   mode 4 diag_pp_release_acquire: st.release, ld.acquire poll
 *   mode 5 diag_pp_library:         goshmem_long_p + goshmem_long_wait_until (the library, same kernel) */
__device__ __forceinline__ unsigned long long diag_ld(const unsigned long long *p, int acquire, int sys)
{
    unsigned long long v;
    if (acquire) {
        if (sys)
            asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
        else
            asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    } else {
        v = goshmemi_relaxed_load_u64(p, sys);
    }
    return v;
}
extern "C" __global__ void __launch_bounds__(1024, 1) diag_pingpong(unsigned long long *flag, int me, int peer, int mode,
                                         unsigned long long base, int iters, int warmup, long long *samples,
                                         unsigned long long *meta)
{
    __shared__ long long sbuf[PERF_SBUF];
    int sys = goshmemi_sys_scope();
    unsigned long long *rp = (unsigned long long *)goshmem_ptr(flag, peer);
    volatile unsigned long long *vl = flag, *vr = rp;
    int n = iters + warmup, kept = 0;
    unsigned long long sink = 0;
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    for (int i = 0; i < n; i++) {
        unsigned long long v = base + (unsigned long long)i + 1;
        long long c0 = perf_clock_after(sink);
        for (int half = 0; half < 2; half++) {
            bool send = (half == 0) == (me == 0);
            if (send) {
                switch (mode) {
                case 0: *vr = v; break;
                case 4: goshmemi_release_store_u64((uint64_t *)rp, v, sys); break;
                case 5: goshmem_long_p((long *)flag, (long)v, peer); break;
                default: goshmemi_relaxed_store_u64(rp, v, sys); break;
                }
            } else {
                unsigned long long got;
                switch (mode) {
                case 0: while ((got = *vl) != v) {} break;
                case 1: while ((got = diag_ld(flag, 0, sys)) != v) {} goshmemi_order_fence(sys); break;
                case 3: while ((got = diag_ld(flag, 0, sys)) != v) {} got = diag_ld(flag, 1, sys); break;
                case 5: goshmem_long_wait_until((long *)flag, GOSHMEM_CMP_EQ, (long)v); got = v; break;
                default: while ((got = diag_ld(flag, 1, sys)) != v) {} break;
                }
                sink += got;
            }
        }
        long long c1 = perf_clock_after(sink);
        if (me == 0 && i >= warmup) {
            sbuf[kept % PERF_SBUF] = c1 - c0;
            kept++;
            if (kept % PERF_SBUF == 0)
                for (int j = 0; j < PERF_SBUF; j++) samples[kept - PERF_SBUF + j] = sbuf[j];
        }
    }
    long long k1 = perf_clock();
    unsigned long long g1 = perf_gtimer();
    if (me == 0) {
        for (int j = kept - kept % PERF_SBUF; j < kept; j++) samples[j] = sbuf[j % PERF_SBUF];
        meta[0] = g0;
        meta[1] = g1;
        meta[2] = (unsigned long long)k0;
        meta[3] = (unsigned long long)k1;
        meta[4] = sink;
    }
}

/* Barrier variants, 2+ PEs, one thread, both kernels at once; every PE
 * records (PE 0's samples are kept).
 *   mode 0 diag_bar_library:       goshmem_barrier_all (quiet + dissemination sync)
 *   mode 1 diag_bar_sync_all:      goshmem_sync_all (fence.acq_rel + sync: no quiet)
 *   mode 2 diag_bar_release_arrive: arrival by st.release, ld.acquire poll, no quiet (hand-written, world team) */
extern "C" __global__ void __launch_bounds__(1024, 1)
    diag_barrier(int mode, int iters, int warmup, long long *samples, unsigned long long *meta,
                                        unsigned long long *words, unsigned long long base)
{
    __shared__ long long sbuf[PERF_SBUF];
    int sys = goshmemi_sys_scope();
    int me = goshmem_my_pe(), npes = goshmem_n_pes();
    int n = iters + warmup, kept = 0;
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    for (int i = 0; i < n; i++) {
        long long c0 = perf_clock();
        if (mode == 0) {
            goshmem_barrier_all();
        } else if (mode == 1) {
            goshmem_sync_all();
        } else {
            unsigned long long epoch = base + (unsigned long long)i + 1;
            int k = 0;
            for (int dist = 1; dist < npes; dist <<= 1, k++) {
                int to = (me + dist) % npes;
                goshmemi_release_store_u64((uint64_t *)goshmem_ptr(&words[8 * k], to), epoch, sys);
                while (diag_ld(&words[8 * k], 1, sys) < epoch) {}
            }
        }
        long long c1 = perf_clock();
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
}
