// smoke.cu: GPU smoke test kernels for the goshmem device API, driven by
// smoke_host.c: two PEs = the same fatbin loaded twice into one context
// (each module has its own goshmemi_device_state), running concurrently.
#include <goshmem.h>

extern "C" __global__ void smoke_info(int *out)
{
    out[0] = goshmem_my_pe();
    out[1] = goshmem_n_pes();
    out[2] = goshmemx_state_ok();
}

// PE 0 sends `rounds` payloads of n floats with block-level put_signal; PE 1
// checks each whole payload when the signal arrives and acks with fence +
// signal_op. Then p/g, atomics and barriers across the two PEs.
extern "C" __global__ void smoke_run(float *buf, uint64_t *sig, uint64_t *ack, float *src, int n, int rounds,
                                     unsigned long long *counter, int *errors)
{
    int me = goshmem_my_pe(), other = 1 - me;
    for (int r = 1; r <= rounds; r++) {
        if (me == 0) {
            for (int i = threadIdx.x; i < n; i += blockDim.x) src[i] = (float)(r * 1000 + i);
            __syncthreads();
            goshmemx_float_put_signal_nbi_block(buf, src, n, sig, (uint64_t)r, GOSHMEM_SIGNAL_SET, other);
            if (threadIdx.x == 0) goshmem_signal_wait_until(ack, GOSHMEM_CMP_GE, (uint64_t)r);
            __syncthreads();
        } else {
            if (threadIdx.x == 0) goshmem_signal_wait_until(sig, GOSHMEM_CMP_GE, (uint64_t)r);
            __syncthreads();
            for (int i = threadIdx.x; i < n; i += blockDim.x)
                if (buf[i] != (float)(r * 1000 + i)) atomicAdd(errors, 1);
            __syncthreads();
            if (threadIdx.x == 0) {
                goshmem_fence();
                goshmem_signal_op(ack, (uint64_t)r, GOSHMEM_SIGNAL_SET, other);
            }
        }
    }
    goshmemx_barrier_all_block();
    // atomics from both PEs on PE 0's counter, every thread
    for (int i = 0; i < 100; i++) goshmem_ulonglong_atomic_add(counter, 1ull, 0);
    goshmemx_barrier_all_block();
    if (threadIdx.x == 0) {
        if (me == 0 && *counter != 2ull * 100 * blockDim.x) atomicAdd(errors, 1000);
        goshmem_int_p((int *)src, 4242 + me, other);
        goshmem_barrier_all();
        if (((volatile int *)src)[0] != 4242 + other) atomicAdd(errors, 100000);
        if (goshmem_int_g((int *)src, other) != 4242 + me) atomicAdd(errors, 1000000);
        for (int i = 0; i < 1000; i++) goshmem_barrier_all();
    }
}
