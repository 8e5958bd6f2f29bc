// jacobi_nvshmem_port.cu: the device side of NVIDIA's
// multi-gpu-programming-models nvshmem/jacobi.cu (BSD-3-Clause), written from
// its published structure, ported to goshmem by changing only the include:
//
//     -#include <nvshmem.h>
//     -#include <nvshmemx.h>
//     +#include <goshmem/nvshmem_compat.h>
//
// Kernels kept with their NVSHMEM calls: initialize_boundaries, jacobi_kernel
// (block-level put_signal of the first/last computed rows into the
// neighbours' halos; nvshmem_signal_wait_until on the halo signals before
// reading them), the older nvshmem_float_p variant, syncneighborhood_kernel
// (quiet + signal_op + wait_until_all) and a barrier kernel. The host side
// (nvshmem_init, nvshmem_malloc, launches, nvshmemx_barrier_all_on_stream)
// maps to the Go host API and is not part of this compile check.
// cub's BlockReduce is replaced by a warp-shuffle reduction so the file needs
// no CUB headers.
#include <goshmem/nvshmem_compat.h>

typedef float real;

// Sets the left/right boundary columns: a[iy][0] = a[iy][nx-1] = sin(2*pi*y).
extern "C" __global__ void initialize_boundaries(real *__restrict__ const a_new, real *__restrict__ const a,
                                                 const real pi, const int offset, const int nx, const int my_ny,
                                                 const int ny)
{
    for (int iy = blockIdx.x * blockDim.x + threadIdx.x; iy < my_ny; iy += blockDim.x * gridDim.x) {
        const real y0 = sin(2.0 * pi * (offset + iy) / (ny - 1));
        a[iy * nx + 0] = y0;
        a[iy * nx + (nx - 1)] = y0;
        a_new[iy * nx + 0] = y0;
        a_new[iy * nx + (nx - 1)] = y0;
    }
}

__device__ __forceinline__ real block_sum(real v)
{
    __shared__ real partial[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    if ((tid & 31) == 0) partial[tid >> 5] = v;
    __syncthreads();
    const int nwarps = (blockDim.x * blockDim.y + 31) / 32;
    v = tid < nwarps ? partial[tid] : real(0);
    if (tid < 32)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// One Jacobi sweep over rows [iy_start, iy_end) of this PE's slab. The blocks
// that own the first/last computed row push it into the halo row of the
// top/bottom neighbour with one block-level put_signal (signal += 1 per block
// column); before reading its own halos a block waits until both halo
// signals reached iter * gridDim.x (every column of the previous sweep).
template <int BLOCK_DIM_X, int BLOCK_DIM_Y>
__global__ void __launch_bounds__(BLOCK_DIM_X *BLOCK_DIM_Y)
    jacobi_kernel(real *__restrict__ const a_new, const real *__restrict__ const a, real *__restrict__ const l2_norm,
                  const int iy_start, const int iy_end, const int nx, const int top_pe, const int top_iy,
                  const int bottom_pe, const int bottom_iy, uint64_t *halo_signal /* [2]: from top, from bottom */,
                  const uint64_t iter, const bool calculate_norm)
{
    const int block_iy = blockIdx.y * blockDim.y + iy_start;
    const int block_ix = blockIdx.x * blockDim.x + 1;
    const int iy = block_iy + threadIdx.y;
    const int ix = block_ix + threadIdx.x;
    real local_l2_norm = 0;

    // halos written by the neighbours' previous sweep must have landed
    if (iter > 0 && threadIdx.x == 0 && threadIdx.y == 0) {
        const uint64_t expect = iter * gridDim.x;
        if (block_iy <= iy_start) nvshmem_signal_wait_until(&halo_signal[0], NVSHMEM_CMP_GE, expect);
        if (block_iy + BLOCK_DIM_Y >= iy_end) nvshmem_signal_wait_until(&halo_signal[1], NVSHMEM_CMP_GE, expect);
    }
    __syncthreads();

    if (iy < iy_end && ix < (nx - 1)) {
        const real new_val = real(0.25) * (a[iy * nx + ix + 1] + a[iy * nx + ix - 1] + a[(iy + 1) * nx + ix] +
                                           a[(iy - 1) * nx + ix]);
        a_new[iy * nx + ix] = new_val;
        if (calculate_norm) {
            const real residue = new_val - a[iy * nx + ix];
            local_l2_norm += residue * residue;
        }
    }

    // Communicate the boundaries (all threads of the block take part).
    const int ncols = min(BLOCK_DIM_X, nx - 1 - block_ix);
    if ((block_iy <= iy_start) && (iy_start < block_iy + BLOCK_DIM_Y)) {
        __syncthreads(); // every thread's a_new store of the row is done
        nvshmemx_float_put_signal_nbi_block(a_new + top_iy * nx + block_ix, a_new + iy_start * nx + block_ix, ncols,
                                            &halo_signal[1], 1, NVSHMEM_SIGNAL_ADD, top_pe);
    }
    if ((block_iy <= (iy_end - 1)) && ((iy_end - 1) < block_iy + BLOCK_DIM_Y)) {
        __syncthreads();
        nvshmemx_float_put_signal_nbi_block(a_new + bottom_iy * nx + block_ix, a_new + (iy_end - 1) * nx + block_ix,
                                            ncols, &halo_signal[0], 1, NVSHMEM_SIGNAL_ADD, bottom_pe);
    }

    if (calculate_norm) {
        const real block_l2_norm = block_sum(local_l2_norm);
        if (0 == threadIdx.y && 0 == threadIdx.x) atomicAdd(l2_norm, block_l2_norm);
    }
}

// The original (pre-signal) variant: each boundary thread pushes its value
// with nvshmem_float_p; completion by nvshmemx_barrier_all_on_stream.
extern "C" __global__ void jacobi_kernel_p(real *__restrict__ const a_new, const real *__restrict__ const a,
                                           const int iy_start, const int iy_end, const int nx, const int top_pe,
                                           const int top_iy, const int bottom_pe, const int bottom_iy)
{
    const int iy = blockIdx.y * blockDim.y + threadIdx.y + iy_start;
    const int ix = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (iy < iy_end && ix < (nx - 1)) {
        const real new_val = real(0.25) * (a[iy * nx + ix + 1] + a[iy * nx + ix - 1] + a[(iy + 1) * nx + ix] +
                                           a[(iy - 1) * nx + ix]);
        a_new[iy * nx + ix] = new_val;
        if (iy_start == iy) nvshmem_float_p(a_new + top_iy * nx + ix, new_val, top_pe);
        if ((iy_end - 1) == iy) nvshmem_float_p(a_new + bottom_iy * nx + ix, new_val, bottom_pe);
    }
}

// Direct-store variant: where the neighbour is load/store reachable,
// nvshmem_ptr gives its halo address and plain stores do the exchange.
extern "C" __global__ void jacobi_kernel_ptr(real *__restrict__ const a_new, const int iy_start, const int iy_end,
                                             const int nx, const int top_pe, const int top_iy, const int bottom_pe,
                                             const int bottom_iy)
{
    const int ix = blockIdx.x * blockDim.x + threadIdx.x + 1;
    real *top = (real *)nvshmem_ptr(a_new, top_pe);
    real *bottom = (real *)nvshmem_ptr(a_new, bottom_pe);
    if (ix < nx - 1) {
        if (top) top[top_iy * nx + ix] = a_new[iy_start * nx + ix];
        if (bottom) bottom[bottom_iy * nx + ix] = a_new[(iy_end - 1) * nx + ix];
    }
    nvshmem_fence();
}

// multi-gpu-programming-models' syncneighborhood_kernel: one thread notifies
// both neighbours and waits for theirs.
extern "C" __global__ void syncneighborhood_kernel(int my_pe, int num_pes, uint64_t *sync_arr, uint64_t counter)
{
    int next_rank = (my_pe + 1) % num_pes;
    int prev_rank = (my_pe == 0) ? num_pes - 1 : my_pe - 1;
    nvshmem_quiet(); /* To ensure all prior nvshmem operations have been completed */

    /* Notify neighbors about arrival */
    nvshmemx_signal_op(sync_arr, counter, NVSHMEM_SIGNAL_SET, next_rank);
    nvshmemx_signal_op(sync_arr + 1, counter, NVSHMEM_SIGNAL_SET, prev_rank);

    /* Wait for neighbors notification */
    nvshmem_uint64_wait_until_all(sync_arr, 2, NULL, NVSHMEM_CMP_GE, counter);
}

// Device-side barrier (one thread; the block form for a whole block).
extern "C" __global__ void barrier_kernel(void)
{
    if (threadIdx.x == 0) nvshmem_barrier_all();
}
extern "C" __global__ void barrier_block_kernel(void) { nvshmemx_barrier_all_block(); }
extern "C" __global__ void my_pe_kernel(int *out)
{
    out[0] = nvshmem_my_pe();
    out[1] = nvshmem_n_pes();
}

// The instantiation the host launches, as in the original (block 32x32).
// cuModuleGetFunction name: _Z13jacobi_kernelILi32ELi32EEvPfPKfS0_iiiiiiiPmmb.
// Between sweeps the host runs syncneighborhood_kernel (or barrier_kernel),
// as the original does, so a halo is not overwritten while still being read.
template __global__ void jacobi_kernel<32, 32>(real *__restrict__ const, const real *__restrict__ const,
                                               real *__restrict__ const, const int, const int, const int, const int,
                                               const int, const int, const int, uint64_t *, const uint64_t,
                                               const bool);
