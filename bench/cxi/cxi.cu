/* goshmem-perf cxi, GPU flavour: the phase benchmark (docs/cxi.md) and
 * the CXI trigger rows, against include/goshmem/cxi.h. Compiled to a fatbin
 * by `make fatbins` (bin/gpu/cxi.fatbin) and loaded with
 * shmem.LoadModuleFile; the Go side is cmd/goshmem-perf/cxi.go.
 *
 * Every kernel is one block; thread 0 runs the CXI calls, the others
 * __syncthreads around them (cxi.h: "call from ONE thread").
 * res[] layout (uint64): 0 rc (GOSHMEMX_CXI_*), 1 done, 2 total ns
 * (%globaltimer), 3 max ns per operation / total cycles, 4 min ns. */
#include <goshmem.h>

__device__ __forceinline__ double cxi_chain(long long iters, double x)
{
    const double a = 0.999999, b = 1e-7;
    for (long long i = 0; i < iters; i++) x = fma(x, a, b); /* dependent: a fixed amount of work */
    return x;
}

/* One phase of the host-driven variant: the kernel ends, the host
 * synchronizes, runs a host barrier and launches the next phase. */
extern "C" __global__ void cxi_compute(double *out, long long iters)
{
    out[threadIdx.x] = cxi_chain(iters, 1.0 + threadIdx.x * 1e-9);
}

/* The GPU-triggered variant: all phases in one kernel, a GPU-triggered
 * barrier (goshmemx_cxi_barrier) between them. */
extern "C" __global__ void cxi_phases(double *out, long long iters, int phases, unsigned long long *res)
{
    __shared__ int rc;
    __shared__ unsigned long long done;
    if (threadIdx.x == 0) { rc = 0; done = 0; }
    __syncthreads();
    unsigned long long t0 = goshmemi_now_ns();
    double x = 1.0 + threadIdx.x * 1e-9;
    for (int p = 0; p < phases; p++) {
        x = cxi_chain(iters, x);
        __syncthreads();
        if (threadIdx.x == 0) {
            int r = goshmemx_cxi_barrier();
            if (r != GOSHMEMX_CXI_OK) rc = r;
            else done++;
        }
        __syncthreads();
        if (rc != 0) break;
    }
    out[threadIdx.x] = x;
    if (threadIdx.x == 0) {
        res[0] = (unsigned long long)rc;
        res[1] = done;
        res[2] = goshmemi_now_ns() - t0;
    }
}

/* GPU cost of one trigger, rung on the state's bench_doorbell (no monitor
 * watches it). release != 0: a system-scope release store (fence.acq_rel.sys
 * + st.relaxed.sys), what a trigger pays when the triggered operation reads
 * data the kernel wrote just before (an active message's payload; a
 * barrier's first round). release == 0: the posted store alone, what a
 * barrier round after the first pays (the previous round's acquire fence
 * already ordered everything) and the shape of an MMIO counter write. res[2] ns and
 * res[3] cycles for `count` triggers. */
extern "C" __global__ void cxi_triggers(unsigned long long *res, long long count, int release)
{
    if (threadIdx.x != 0) return;
    goshmemi_cxi_state_t *cx = goshmemi_cxi();
    if (cx == NULL) { res[0] = GOSHMEMX_CXI_ENOTREADY; return; }
    unsigned long long t0 = goshmemi_now_ns();
    long long c0 = clock64();
    if (release)
        for (long long i = 0; i < count; i++) goshmemi_release_store_u64(&cx->bench_doorbell, (uint64_t)i, 1);
    else
        for (long long i = 0; i < count; i++) goshmemi_relaxed_store_u64(&cx->bench_doorbell, (uint64_t)i, 1);
    long long c1 = clock64();
    res[0] = 0;
    res[1] = (unsigned long long)count;
    res[2] = goshmemi_now_ns() - t0;
    res[3] = (unsigned long long)(c1 - c0);
}

/* `count` GPU-triggered barriers back to back; res[3]/res[4] slowest and
 * fastest single barrier (ns). */
extern "C" __global__ void cxi_barriers(unsigned long long *res, long long count)
{
    if (threadIdx.x != 0) return;
    unsigned long long mx = 0, mn = ~0ull, done = 0;
    unsigned long long t0 = goshmemi_now_ns(), prev = t0;
    int rc = 0;
    for (long long i = 0; i < count; i++) {
        rc = goshmemx_cxi_barrier();
        if (rc != GOSHMEMX_CXI_OK) break;
        unsigned long long now = goshmemi_now_ns(), dt = now - prev;
        prev = now;
        if (dt > mx) mx = dt;
        if (dt < mn) mn = dt;
        done++;
    }
    res[0] = (unsigned long long)rc;
    res[1] = done;
    res[2] = prev - t0;
    res[3] = mx;
    res[4] = mn;
}
