// jacobi.cu: the device side of examples/jacobi-gpu, a port of NVIDIA's
// multi-gpu-programming-models nvshmem/jacobi.cu (BSD-3-Clause), written
// from its published algorithm (not copied): Jacobi relaxation of the 2D
// Laplace equation on an ny x nx float mesh, interior rows split over the
// PEs, the first and last computed row of every PE pushed into its
// neighbours' halo rows from inside the kernel, and a synchronization kernel
// (a neighbourhood signal exchange, or a device barrier) between sweeps.
//
// One source, two libraries. Built by default against goshmem's NVSHMEM
// compatibility header (a standalone fatbin the Go host loads with
// shmem.LoadModuleFile); with -DUSE_REAL_NVSHMEM -rdc=true it builds against
// NVIDIA's NVSHMEM unchanged (bench/jacobi/jacobi_nvshmem_host.cu includes
// this file), so both runs execute the same kernels.
//
//   nvcc -std=c++17 -Iinclude -fatbin \
//        -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
//        -o bin/gpu/jacobi.fatbin examples/jacobi-gpu/jacobi.cu
//
// Every kernel is extern "C" so the Go host finds it by its plain name.
#ifdef USE_REAL_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>
#else
#include <goshmem/nvshmem_compat.h>
#endif

#include <stdint.h>

typedef float real;

#define JACOBI_BLOCK_X 32
#define JACOBI_BLOCK_Y 32

// Left and right columns of every row (halo rows too) hold
// sin(2*pi*(offset+iy)/(ny-1)), where offset+iy is the global row; the
// rest of the mesh starts at zero (the arrays come zeroed).
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

// Sum of v over the (32 x 32) block, valid in thread (0, 0). Warp shuffles,
// then one warp sums the 32 warp totals (the original uses cub::BlockReduce;
// this keeps the file free of CUB and gives both builds the same order).
__device__ __forceinline__ real jacobi_block_sum(real v)
{
    __shared__ real warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nwarps = (blockDim.x * blockDim.y + 31) / 32;
    if ((tid & 31) == 0) warp_sums[tid >> 5] = v;
    __syncthreads();
    if (tid < 32) {
        v = tid < nwarps ? warp_sums[tid] : real(0);
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    }
    return v;
}

// One stencil value: the same expression, in the same order, in the
// distributed and the single-GPU kernel, so both give bitwise equal meshes.
__device__ __forceinline__ real jacobi_point(const real *__restrict__ a, int iy, int ix, int nx)
{
    return real(0.25) * (a[iy * nx + ix + 1] + a[iy * nx + ix - 1] + a[(iy + 1) * nx + ix] + a[(iy - 1) * nx + ix]);
}

// One sweep of this PE's rows [iy_start, iy_end) (local rows; row 0 and row
// iy_end are the halos). The new first row goes into the top neighbour's
// lower halo (its local row top_iy), the new last row into the bottom
// neighbour's upper halo (row bottom_iy):
//   use_block_comm == 0: each boundary thread stores its value with
//                        nvshmem_float_p (the original's default);
//   use_block_comm != 0: the blocks holding a boundary row send their 32
//                        values with one nvshmemx_float_put_nbi_block.
// The puts complete in the synchronization kernel that follows (its quiet /
// barrier), which the host launches after every sweep. With calculate_norm
// the block's sum of squared updates is atomically added to *l2_norm.
extern "C" __global__ void __launch_bounds__(JACOBI_BLOCK_X *JACOBI_BLOCK_Y)
    jacobi_kernel(real *__restrict__ const a_new, const real *__restrict__ const a, real *__restrict__ const l2_norm,
                  const int iy_start, const int iy_end, const int nx, const int top_pe, const int top_iy,
                  const int bottom_pe, const int bottom_iy, const int calculate_norm, const int use_block_comm)
{
    const int block_iy = blockIdx.y * blockDim.y + iy_start; // first row of this block
    const int block_ix = blockIdx.x * blockDim.x + 1;        // first column of this block
    const int iy = block_iy + threadIdx.y;
    const int ix = block_ix + threadIdx.x;
    real local_l2_norm = 0;

    if (iy < iy_end && ix < (nx - 1)) {
        const real new_val = jacobi_point(a, iy, ix, nx);
        a_new[iy * nx + ix] = new_val;
        if (!use_block_comm) {
            if (iy_start == iy) nvshmem_float_p(a_new + top_iy * nx + ix, new_val, top_pe);
            if ((iy_end - 1) == iy) nvshmem_float_p(a_new + bottom_iy * nx + ix, new_val, bottom_pe);
        }
        if (calculate_norm) {
            const real residue = new_val - a[iy * nx + ix];
            local_l2_norm += residue * residue;
        }
    }

    if (use_block_comm) {
        // Block-uniform conditions: every thread of the block takes part.
        const int ncols = max(0, min((int)blockDim.x, nx - 1 - block_ix));
        if (block_iy <= iy_start && iy_start < block_iy + (int)blockDim.y) {
            __syncthreads(); // the row's a_new stores (other warps) are done
            nvshmemx_float_put_nbi_block(a_new + top_iy * nx + block_ix, a_new + iy_start * nx + block_ix, ncols,
                                         top_pe);
        }
        if (block_iy <= iy_end - 1 && iy_end - 1 < block_iy + (int)blockDim.y) {
            __syncthreads();
            nvshmemx_float_put_nbi_block(a_new + bottom_iy * nx + block_ix, a_new + (iy_end - 1) * nx + block_ix,
                                         ncols, bottom_pe);
        }
    }

    if (calculate_norm) {
        const real block_l2_norm = jacobi_block_sum(local_l2_norm);
        if (0 == threadIdx.y && 0 == threadIdx.x) atomicAdd(l2_norm, block_l2_norm);
    }
}

// Marks the end of iteration `counter` for the host (goshmem's host polls
// this word with a device-to-host copy instead of synchronizing the stream,
// so the GPU never waits for the host). NULL: nothing (the NVSHMEM build).
__device__ __forceinline__ void jacobi_mark_done(unsigned long long *done, uint64_t counter)
{
    if (done) {
        __threadfence_system();
        *(volatile unsigned long long *)done = (unsigned long long)counter;
    }
}

// -neighborhood_sync: instead of a barrier over all PEs, each PE tells its
// two neighbours that it finished the sweep (after a quiet, so its halo
// puts have landed) and waits for theirs. sync_arr[0] is set by the lower
// neighbour (rank + 1), sync_arr[1] by the upper one; counter grows by one
// per iteration, so the words never need resetting. One thread.
extern "C" __global__ void syncneighborhood_kernel(int my_pe, int num_pes, uint64_t *sync_arr, uint64_t counter,
                                                   unsigned long long *done)
{
    const int next_rank = (my_pe + 1) % num_pes;
    const int prev_rank = (my_pe == 0) ? num_pes - 1 : my_pe - 1;
    nvshmem_quiet();
    nvshmemx_signal_op(sync_arr, counter, NVSHMEM_SIGNAL_SET, next_rank);
    nvshmemx_signal_op(sync_arr + 1, counter, NVSHMEM_SIGNAL_SET, prev_rank);
    nvshmem_uint64_wait_until_all(sync_arr, 2, NULL, NVSHMEM_CMP_GE, counter);
    jacobi_mark_done(done, counter);
}

// The default synchronization: a barrier over all PEs from one GPU thread
// (the original's nvshmemx_barrier_all_on_stream; the goshmem host launches
// this kernel instead).
extern "C" __global__ void barrier_kernel(uint64_t counter, unsigned long long *done)
{
    nvshmem_barrier_all();
    jacobi_mark_done(done, counter);
}

// ---- single-GPU reference (plain CUDA, no shmem) ----

// One sweep of rows [iy_start, iy_end) of the whole mesh.
extern "C" __global__ void __launch_bounds__(JACOBI_BLOCK_X *JACOBI_BLOCK_Y)
    jacobi_kernel_single_gpu(real *__restrict__ const a_new, const real *__restrict__ const a,
                             real *__restrict__ const l2_norm, const int iy_start, const int iy_end, const int nx,
                             const int calculate_norm)
{
    const int iy = blockIdx.y * blockDim.y + threadIdx.y + iy_start;
    const int ix = blockIdx.x * blockDim.x + threadIdx.x + 1;
    real local_l2_norm = 0;
    if (iy < iy_end && ix < (nx - 1)) {
        const real new_val = jacobi_point(a, iy, ix, nx);
        a_new[iy * nx + ix] = new_val;
        if (calculate_norm) {
            const real residue = new_val - a[iy * nx + ix];
            local_l2_norm += residue * residue;
        }
    }
    if (calculate_norm) {
        const real block_l2_norm = jacobi_block_sum(local_l2_norm);
        if (0 == threadIdx.y && 0 == threadIdx.x) atomicAdd(l2_norm, block_l2_norm);
    }
}

// Periodic top/bottom boundary of the single-GPU mesh (the original does
// this with two device-to-device cudaMemcpyAsync): row 0 <- row iy_end-1,
// row iy_end <- row iy_start, whole rows.
extern "C" __global__ void periodic_boundary_single_gpu(real *__restrict__ const a_new, const int iy_start,
                                                        const int iy_end, const int nx)
{
    for (int ix = blockIdx.x * blockDim.x + threadIdx.x; ix < nx; ix += blockDim.x * gridDim.x) {
        a_new[ix] = a_new[(iy_end - 1) * nx + ix];
        a_new[iy_end * nx + ix] = a_new[iy_start * nx + ix];
    }
}
