/* jacobi_nvshmem_host.cu: the NVSHMEM peer of examples/jacobi-gpu. The host
 * side of NVIDIA's multi-gpu-programming-models nvshmem/jacobi.cu, written
 * from its algorithm (MPI + NVSHMEM, UID bootstrap over MPI_Bcast), driving
 * the SAME kernels as goshmem's Go host: examples/jacobi-gpu/jacobi.cu
 * compiled with -DUSE_REAL_NVSHMEM against NVIDIA's NVSHMEM. It prints the
 * same lines and checks the result the same way, so the two runs differ
 * only in the library and the host.
 *
 * As in the original: the sync after each sweep is nvshmemx_barrier_all_on_stream
 * (or syncneighborhood_kernel with -neighborhood_sync); the norm is summed
 * over the PEs with nvshmemx_float_sum_reduce_on_stream into a double
 * buffer, copied to pinned host memory and read one iteration later (the
 * GPU runs ahead), the buffer reset on a second stream. Iteration k's norm
 * is printed with label k, and a converged iteration ends the run with its
 * own result, as in the Go host.
 *
 * Build (bench/jacobi/run.sh does it on the GPU machine):
 *   nvcc -std=c++17 -O3 -rdc=true -gencode arch=compute_90,code=sm_90 -DUSE_REAL_NVSHMEM \
 *        -I$NV/include -Iinclude $(mpicxx --showme:compile) bench/jacobi/jacobi_nvshmem_host.cu \
 *        -L$NV/lib -lnvshmem_host -lnvshmem_device $(mpicxx --showme:link) -o bin/jacobi_nvshmem
 * Run: NVSHMEM_DISABLE_NVLS=1 mpirun -np 2 bin/jacobi_nvshmem [-nx N] [-ny N] [-niter N]
 *      [-nccheck N] [-use_block_comm] [-neighborhood_sync] [-csv]
 */
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../examples/jacobi-gpu/jacobi.cu"

static const real tol = 1.0e-8;
static const real PI = 2.0 * std::asin(1.0);

static int mype = 0;

#define CK(x)                                                                                                         \
    do {                                                                                                              \
        cudaError_t e_ = (x);                                                                                         \
        if (e_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "jacobi_nvshmem: PE %d: %s:%d: %s: %s\n", mype, __FILE__, __LINE__, #x,                  \
                    cudaGetErrorString(e_));                                                                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                             \
        }                                                                                                             \
    } while (0)

static int arg_int(int argc, char **argv, const char *name, int def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return atoi(argv[i + 1]);
    return def;
}
static bool arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return true;
    return false;
}

static dim3 grid2(int nx, int rows)
{
    return dim3((nx + JACOBI_BLOCK_X - 1) / JACOBI_BLOCK_X, (rows + JACOBI_BLOCK_Y - 1) / JACOBI_BLOCK_Y, 1);
}

/* The whole mesh on this GPU, plain CUDA: the reference ("1 GPU"). */
static double single_gpu(int nx, int ny, int iter_max, int nccheck, bool print, real *a_ref_h, int *iters_out)
{
    real *a, *a_new, *l2_norm_d, *l2_norm_h;
    size_t bytes = (size_t)nx * ny * sizeof(real);
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&a_new, bytes));
    CK(cudaMemset(a, 0, bytes));
    CK(cudaMemset(a_new, 0, bytes));
    CK(cudaMalloc(&l2_norm_d, sizeof(real)));
    CK(cudaMallocHost(&l2_norm_h, sizeof(real)));
    initialize_boundaries<<<ny / 128 + 1, 128>>>(a, a_new, PI, 0, nx, ny, ny);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (print)
        printf("Single GPU jacobi relaxation: %d iterations on %d x %d mesh with norm check every %d iterations\n",
               iter_max, ny, nx, nccheck);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int iy_start = 1, iy_end = ny - 1;
    int iter = 0;
    real l2_norm = 1.0;
    double start = MPI_Wtime();
    while (l2_norm > tol && iter < iter_max) {
        const bool calc = (iter % nccheck) == 0 || (print && (iter % 100) == 0);
        CK(cudaMemsetAsync(l2_norm_d, 0, sizeof(real), s));
        jacobi_kernel_single_gpu<<<grid2(nx, ny), dim3(JACOBI_BLOCK_X, JACOBI_BLOCK_Y), 0, s>>>(
            a_new, a, l2_norm_d, iy_start, iy_end, nx, calc);
        periodic_boundary_single_gpu<<<nx / 128 + 1, 128, 0, s>>>(a_new, iy_start, iy_end, nx);
        if (calc) {
            CK(cudaMemcpyAsync(l2_norm_h, l2_norm_d, sizeof(real), cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            l2_norm = std::sqrt(*l2_norm_h);
            if (print && (iter % 100) == 0) printf("%5d, %0.6f\n", iter, l2_norm);
        }
        std::swap(a_new, a);
        iter++;
    }
    CK(cudaStreamSynchronize(s));
    double stop = MPI_Wtime();
    CK(cudaMemcpy(a_ref_h, a, bytes, cudaMemcpyDeviceToHost));
    *iters_out = iter;
    CK(cudaStreamDestroy(s));
    CK(cudaFree(a));
    CK(cudaFree(a_new));
    CK(cudaFree(l2_norm_d));
    CK(cudaFreeHost(l2_norm_h));
    return stop - start;
}

int main(int argc, char **argv)
{
    const int iter_max = arg_int(argc, argv, "-niter", 1000);
    const int nccheck = arg_int(argc, argv, "-nccheck", 1);
    const int nx = arg_int(argc, argv, "-nx", 16384);
    const int ny = arg_int(argc, argv, "-ny", 16384);
    const bool csv = arg_flag(argc, argv, "-csv");
    const bool use_block_comm = arg_flag(argc, argv, "-use_block_comm");
    const bool neighborhood_sync = arg_flag(argc, argv, "-neighborhood_sync");

    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mype = rank;
    MPI_Comm local;
    int local_rank;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(local_rank % ndev));
    CK(cudaFree(0));

    /* the symmetric heap: two meshes of (chunk_high + 2) rows plus small words */
    if (!getenv("NVSHMEM_SYMMETRIC_SIZE")) {
        size_t need = 2 * (size_t)nx * ((ny - 2) / size + 3) * sizeof(real) + (64u << 20);
        char buf[64];
        snprintf(buf, sizeof buf, "%zu", need);
        setenv("NVSHMEM_SYMMETRIC_SIZE", buf, 1);
    }
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof id, MPI_UINT8_T, 0, MPI_COMM_WORLD);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "jacobi_nvshmem: PE %d: nvshmemx_init_attr failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    mype = nvshmem_my_pe();
    const int npes = nvshmem_n_pes();

    /* the reference, on PE 0 */
    std::vector<real> a_ref_h, a_h;
    double runtime_serial = 0;
    int ref_iters = 0;
    if (mype == 0) {
        a_ref_h.resize((size_t)nx * ny);
        runtime_serial = single_gpu(nx, ny, iter_max, nccheck, !csv, a_ref_h.data(), &ref_iters);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* the original's decomposition of the ny - 2 interior rows */
    const int chunk_size_low = (ny - 2) / npes;
    const int chunk_size_high = chunk_size_low + 1;
    const int num_ranks_low = npes * chunk_size_low + npes - (ny - 2);
    const int chunk_size = mype < num_ranks_low ? chunk_size_low : chunk_size_high;
    const int iy_start_global = mype < num_ranks_low
                                    ? mype * chunk_size_low + 1
                                    : num_ranks_low * chunk_size_low + (mype - num_ranks_low) * chunk_size_high + 1;
    const int iy_start = 1, iy_end = iy_start + chunk_size;
    const int top = mype > 0 ? mype - 1 : npes - 1;
    const int bottom = (mype + 1) % npes;
    const int iy_end_top = (top < num_ranks_low) ? chunk_size_low + 1 : chunk_size_high + 1;
    const int iy_start_bottom = 0;

    const size_t mesh = (size_t)nx * (chunk_size_high + 2);
    real *a = (real *)nvshmem_malloc(mesh * sizeof(real));
    real *a_new = (real *)nvshmem_malloc(mesh * sizeof(real));
    real *l2_norm_d = (real *)nvshmem_malloc(2 * sizeof(real));
    uint64_t *sync_arr = (uint64_t *)nvshmem_malloc(2 * sizeof(uint64_t));
    if (!a || !a_new || !l2_norm_d || !sync_arr) {
        fprintf(stderr, "jacobi_nvshmem: PE %d: nvshmem_malloc failed (raise NVSHMEM_SYMMETRIC_SIZE)\n", mype);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CK(cudaMemset(a, 0, mesh * sizeof(real)));
    CK(cudaMemset(a_new, 0, mesh * sizeof(real)));
    CK(cudaMemset(l2_norm_d, 0, 2 * sizeof(real)));
    CK(cudaMemset(sync_arr, 0, 2 * sizeof(uint64_t)));
    real *l2_norm_h;
    CK(cudaMallocHost(&l2_norm_h, 2 * sizeof(real)));
    initialize_boundaries<<<(ny / npes) / 128 + 1, 128>>>(a, a_new, PI, iy_start_global - 1, nx, chunk_size + 2,
                                                          ny);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    cudaStream_t compute_stream, reset_stream;
    CK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&reset_stream, cudaStreamNonBlocking));
    cudaEvent_t copy_done[2], reset_done[2];
    for (int i = 0; i < 2; i++) {
        CK(cudaEventCreateWithFlags(&copy_done[i], cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&reset_done[i], cudaEventDisableTiming));
        CK(cudaEventRecord(reset_done[i], reset_stream));
    }
    CK(cudaDeviceSynchronize());

    if (mype == 0 && !csv)
        printf("Jacobi relaxation: %d iterations on %d x %d mesh with norm check every %d iterations\n", iter_max, ny,
               nx, nccheck);
    const dim3 grid = grid2(nx, chunk_size), block(JACOBI_BLOCK_X, JACOBI_BLOCK_Y);
    auto calc_at = [&](int it) { return (it % nccheck) == 0 || (!csv && (it % 100) == 0); };
    /* the norm of iteration it (slot it % 2): wait for its copy, print, reset the slot */
    auto finish = [&](int it) {
        const int slot = it % 2;
        CK(cudaEventSynchronize(copy_done[slot]));
        const real l2 = std::sqrt(l2_norm_h[slot]);
        if (!csv && (it % 100) == 0 && mype == 0) printf("%5d, %0.6f\n", it, l2);
        CK(cudaMemsetAsync(l2_norm_d + slot, 0, sizeof(real), reset_stream));
        CK(cudaEventRecord(reset_done[slot], reset_stream));
        return !(l2 > tol);
    };

    uint64_t synccounter = 1;
    int iters = iter_max;
    nvshmem_barrier_all();
    double start = MPI_Wtime();
    for (int iter = 0; iter < iter_max; iter++) {
        const int slot = iter % 2;
        const bool calc = calc_at(iter);
        CK(cudaStreamWaitEvent(compute_stream, reset_done[slot], 0));
        jacobi_kernel<<<grid, block, 0, compute_stream>>>(a_new, a, l2_norm_d + slot, iy_start, iy_end, nx, top,
                                                          iy_end_top, bottom, iy_start_bottom, calc, use_block_comm);
        CK(cudaGetLastError());
        if (neighborhood_sync) {
            syncneighborhood_kernel<<<1, 1, 0, compute_stream>>>(mype, npes, sync_arr, synccounter, nullptr);
            CK(cudaGetLastError());
            synccounter++;
        } else {
            nvshmemx_barrier_all_on_stream(compute_stream);
        }
        if (calc) {
            nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, l2_norm_d + slot, l2_norm_d + slot, 1,
                                                compute_stream);
            CK(cudaMemcpyAsync(l2_norm_h + slot, l2_norm_d + slot, sizeof(real), cudaMemcpyDeviceToHost,
                               compute_stream));
            CK(cudaEventRecord(copy_done[slot], compute_stream));
        }
        std::swap(a_new, a);
        /* the previous iteration's norm, while this one runs */
        if (iter > 0 && calc_at(iter - 1) && finish(iter - 1)) {
            /* converged at iter - 1: its result is in a_new (this sweep wrote a) */
            std::swap(a_new, a);
            iters = iter;
            break;
        }
    }
    if (iters == iter_max && iter_max > 0 && calc_at(iter_max - 1)) finish(iter_max - 1);
    CK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    double stop = MPI_Wtime();

    /* gather to PE 0 and compare with the reference */
    std::vector<real> mine((size_t)chunk_size * nx);
    CK(cudaMemcpy(mine.data(), a + nx, mine.size() * sizeof(real), cudaMemcpyDeviceToHost));
    std::vector<int> counts(npes), displs(npes);
    int cnt = chunk_size * nx, disp = iy_start_global * nx;
    MPI_Gather(&cnt, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&disp, 1, MPI_INT, displs.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (mype == 0) a_h.assign((size_t)nx * ny, 0);
    MPI_Gatherv(mine.data(), cnt, MPI_FLOAT, mype == 0 ? a_h.data() : nullptr, counts.data(), displs.data(),
                MPI_FLOAT, 0, MPI_COMM_WORLD);
    int result_correct = 1;
    if (mype == 0) {
        if (iters != ref_iters) {
            fprintf(stderr, "ERROR: %d GPUs ran %d iterations, the reference %d\n", npes, iters, ref_iters);
            result_correct = 0;
        }
        for (int iy = 1; result_correct && iy < ny - 1; iy++)
            for (int ix = 1; result_correct && ix < nx - 1; ix++) {
                const size_t i = (size_t)iy * nx + ix;
                if (!(std::fabs(a_ref_h[i] - a_h[i]) <= tol)) {
                    fprintf(stderr, "ERROR on rank %d: a[%d * %d + %d] = %f does not match %f (reference)\n", mype,
                            iy, nx, ix, a_h[i], a_ref_h[i]);
                    result_correct = 0;
                }
            }
    }
    MPI_Bcast(&result_correct, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (mype == 0 && result_correct) {
        const double t = stop - start;
        if (csv) {
            printf("nvshmem, %d, %d, %d, %d, %d, 1, %f, %f\n", nx, ny, iter_max, nccheck, npes, t, runtime_serial);
        } else {
            printf("Num GPUs: %d.\n", npes);
            printf("%dx%d: 1 GPU: %8.4f s, %d GPUs: %8.4f s, speedup: %8.2f, efficiency: %8.2f \n", ny, nx,
                   runtime_serial, npes, t, runtime_serial / t, runtime_serial / (npes * t) * 100);
        }
    }
    fflush(stdout);
    for (int i = 0; i < 2; i++) {
        CK(cudaEventDestroy(copy_done[i]));
        CK(cudaEventDestroy(reset_done[i]));
    }
    CK(cudaStreamDestroy(compute_stream));
    CK(cudaStreamDestroy(reset_stream));
    CK(cudaFreeHost(l2_norm_h));
    nvshmem_free(sync_arr);
    nvshmem_free(l2_norm_d);
    nvshmem_free(a_new);
    nvshmem_free(a);
    nvshmem_finalize();
    MPI_Comm_free(&local);
    MPI_Finalize();
    return result_correct ? 0 : 1;
}
