// bench/ibgda/ibgda_perf.cu: kernels of `goshmem-perf ibgda` (H200 side of the
// IBGDA path; the NIC is the host soft NIC, an EMULATION, or off).
//
// Built three times, one fatbin per ordering build option (Makefile
// `fatbins`): -DGOSHMEM_IBGDA_ORDER_GPU (default), _SYS, _NONE (unordered,
// benchmarks only). The queue pairs (goshmemi_ibgda_qp_t) live in GPU
// memory; their SQ rings, doorbell records, doorbell word (the UAR stand-in)
// and CQs live in host-pinned memory mapped into the GPU, where the soft NIC
// reads and writes them.
//
// Timing, as bench/gpu: clock64 around each operation (issue, put+quiet),
// %globaltimer + clock64 around the loop so the host converts cycles at the
// kernel's own clock; rate kernels: %globaltimer per CTA around the posting
// loop, rate = WQEs / (last end - first start).
#include <goshmem/ibgda/ibgda.h>

#define IB_MAX_SAMPLES 10000 // 40 KB of shared memory (uint32 cycles)

static __device__ __forceinline__ unsigned long long ib_gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

static __device__ __forceinline__ unsigned long long ib_clock()
{
    unsigned long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
}

// meta: [0] globaltimer start [1] end [2] clock64 start [3] end [4] rc (nonzero: a post/quiet failed)
static __device__ void ib_finish(unsigned int *s, unsigned int *samples, int iters, unsigned long long *meta,
                                 unsigned long long t0, unsigned long long c0, int rc)
{
    unsigned long long c1 = ib_clock(), t1 = ib_gtimer();
    meta[0] = t0;
    meta[1] = t1;
    meta[2] = c0;
    meta[3] = c1;
    meta[4] = (unsigned long long)(unsigned)rc;
    for (int i = 0; i < iters; i++)
        samples[i] = s[i];
}

// Issue latency of one 8 B inline RDMA write (unsignaled), one thread:
// WQE build + doorbell record + doorbell, through the shared-QP path
// (atomic reservation, ordered publication) or the exclusive-owner path
// (indices in registers). The ring must hold warmup + iters WQEBBs (no
// recycling: the NIC may be off).
extern "C" __global__ void ib_issue_lat(goshmemi_ibgda_qp_t *qp, unsigned long long raddr, unsigned int rkey,
                                        int iters, int warmup, int excl, unsigned int *samples,
                                        unsigned long long *meta)
{
    __shared__ unsigned int s[IB_MAX_SAMPLES];
    int rc = 0;
    unsigned long long t0 = 0, c0 = 0;
    iters = iters > IB_MAX_SAMPLES ? IB_MAX_SAMPLES : iters;
    if (excl) {
        goshmemi_ibgda_excl_t h = goshmemi_ibgda_excl_begin(qp);
        for (int i = -warmup; i < iters; i++) {
            if (i == 0) {
                t0 = ib_gtimer();
                c0 = ib_clock();
            }
            uint64_t v = (uint64_t)i;
            goshmemi_ibgda_op_t op =
                goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&v, 0, raddr, rkey, 8, 1, 0);
            unsigned long long a = ib_clock();
            rc |= goshmemi_ibgda_excl_post(&h, &op);
            unsigned long long b = ib_clock();
            if (i >= 0)
                s[i] = (unsigned int)(b - a);
        }
    } else {
        for (int i = -warmup; i < iters; i++) {
            if (i == 0) {
                t0 = ib_gtimer();
                c0 = ib_clock();
            }
            uint64_t v = (uint64_t)i;
            unsigned long long a = ib_clock();
            rc |= goshmemi_ibgda_qp_put_inline(qp, raddr, rkey, &v, 8, 0);
            unsigned long long b = ib_clock();
            if (i >= 0)
                s[i] = (unsigned int)(b - a);
        }
    }
    ib_finish(s, samples, iters, meta, t0, c0, rc);
}

// Message rate: every thread posts `per_thread` 8 B inline writes (unsignaled)
// to QP map(thread) in batches of `batch` WQEs per doorbell; coop: each warp
// posts warp-cooperatively (one reservation and one doorbell per 32 WQEs;
// batch ignored); excl: each thread owns its QP (map 0 with one thread per
// QP). map: 0 thread (global thread % nqp), 1 warp (global warp % nqp),
// 2 CTA (blockIdx % nqp), 3 SM (%smid % nqp).
// times[2b], times[2b+1]: %globaltimer start/end of CTA b; *rc_out |= errors.
extern "C" __global__ void ib_rate(goshmemi_ibgda_qp_t *qps, int nqp, int map, int per_thread, int batch, int coop,
                                   int excl, unsigned long long raddr, unsigned int rkey, unsigned long long *times,
                                   int *rc_out)
{
    int gtid = blockIdx.x * blockDim.x + threadIdx.x, q;
    unsigned smid;
    asm("mov.u32 %0, %%smid;" : "=r"(smid));
    switch (map) {
    case 0:
        q = gtid % nqp;
        break;
    case 1:
        q = (gtid / 32) % nqp;
        break;
    case 2:
        q = blockIdx.x % nqp;
        break;
    default:
        q = (int)(smid % (unsigned)nqp);
        break;
    }
    goshmemi_ibgda_qp_t *qp = &qps[q];
    uint64_t v = 0x1122334455667788ull ^ (uint64_t)gtid;
    goshmemi_ibgda_op_t ops[32];
    batch = batch < 1 ? 1 : (batch > 32 ? 32 : batch);
    for (int k = 0; k < batch; k++)
        ops[k] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&v, 0, raddr + 8 * (gtid & 63),
                                        rkey, 8, 1, 0);
    int rc = 0;
    __syncthreads();
    if (threadIdx.x == 0)
        times[2 * blockIdx.x] = ib_gtimer();
    if (coop) {
        for (int i = 0; i < per_thread; i++)
            rc |= goshmemi_ibgda_post_warp(qp, &ops[0]);
    } else if (excl) {
        goshmemi_ibgda_excl_t h = goshmemi_ibgda_excl_begin(qp);
        for (int i = 0; i < per_thread; i += batch)
            rc |= goshmemi_ibgda_excl_post_batch(&h, ops, batch);
    } else {
        for (int i = 0; i < per_thread; i += batch)
            rc |= goshmemi_ibgda_post_batch(qp, ops, batch);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        times[2 * blockIdx.x + 1] = ib_gtimer();
    if (rc)
        atomicOr(rc_out, rc);
}

// Put + completion, one thread: a signaled 8 B inline write on QP 0, then
// quiet: scope 0 = ctx quiet (QP 0's CQ only), 1 = PE-wide quiet over all
// nqp QPs (ptrs[]). The soft NIC (host) executes the WQEs and writes CQEs.
// The value of iteration i is i + 1 + base; the target word ends at
// base + warmup + iters.
extern "C" __global__ void ib_put_quiet(goshmemi_ibgda_qp_t *qp0, goshmemi_ibgda_qp_t *const *ptrs, int nqp, int scope,
                                        unsigned long long raddr, unsigned int rkey, unsigned long long base,
                                        int iters, int warmup, unsigned int *samples, unsigned long long *meta)
{
    __shared__ unsigned int s[IB_MAX_SAMPLES];
    int rc = 0;
    unsigned long long t0 = 0, c0 = 0;
    iters = iters > IB_MAX_SAMPLES ? IB_MAX_SAMPLES : iters;
    for (int i = -warmup; i < iters; i++) {
        if (i == 0) {
            t0 = ib_gtimer();
            c0 = ib_clock();
        }
        uint64_t v = base + (uint64_t)(i + warmup) + 1;
        unsigned long long a = ib_clock();
        rc |= goshmemi_ibgda_qp_put_inline(qp0, raddr, rkey, &v, 8, 1);
        rc |= scope ? goshmemi_ibgda_qp_quiet_all(ptrs, nqp) : goshmemi_ibgda_qp_quiet(qp0);
        unsigned long long b = ib_clock();
        if (i >= 0)
            s[i] = (unsigned int)(b - a);
        if (rc)
            break;
    }
    ib_finish(s, samples, iters, meta, t0, c0, rc);
}
