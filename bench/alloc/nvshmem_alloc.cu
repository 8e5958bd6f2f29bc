/*
 * bench/alloc/nvshmem_alloc.cu: the NVSHMEM peer of goshmem-perf's alloc rows.
 * Every PE times cudaMalloc(size) (after an MPI barrier, freed at once), then
 * nvshmem_malloc(size) back to back (after nvshmem_barrier_all, never freed)
 * until -total bytes are allocated or nvshmem_malloc returns NULL. NVSHMEM
 * grows its heap with CUDA VMM past NVSHMEM_SYMMETRIC_SIZE where it can; its
 * heap size is not public, so a call that grew is one that took more than
 * -grow-factor times the median call. PE 0 prints one line per size:
 * medians and p99 in microseconds, the mean per call, and the growing calls.
 *
 * Build and run it on the GPU machine with bench/alloc/rows.sh (alloc_nvshmem_build,
 * alloc_nvshmem): nvcc -rdc=true against NVSHMEM 3 from the Python environment and MPI,
 * several PEs on one GPU under MPS, NCCL and NVLink multicast off.
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "nvshmem_alloc: %s: %s\n", #x, cudaGetErrorString(e_));       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

static long long arg_ll(int argc, char **argv, const char *name, long long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return atoll(argv[i + 1]);
    return def;
}

static double now_us()
{
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

static double pct(std::vector<double> v, double p)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t i = (size_t)(p * (v.size() - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    const size_t size = (size_t)arg_ll(argc, argv, "-size", 2 << 20);
    const size_t total = (size_t)arg_ll(argc, argv, "-total", 3LL << 30);
    const int cureps = (int)arg_ll(argc, argv, "-cureps", 10);
    const double growf = (double)arg_ll(argc, argv, "-grow-factor", 5);

    int provided, rank, npes;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    MPI_Comm local;
    int local_rank, ndev = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(local_rank % ndev));
    CK(cudaFree(0));

    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof id, MPI_UINT8_T, 0, MPI_COMM_WORLD);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, npes, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "nvshmem_alloc: PE %d: nvshmemx_init_attr failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* warm-up: the first of each call pays for setup */
    void *p;
    CK(cudaMalloc(&p, 2 << 20));
    CK(cudaFree(p));
    void *w = nvshmem_malloc(2 << 20);
    nvshmem_free(w);

    std::vector<double> cu;
    for (int i = 0; i < cureps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        CK(cudaMalloc(&p, size));
        cu.push_back(now_us() - t0);
        CK(cudaMemset((char *)p + size - 8, 1, 8));
        CK(cudaDeviceSynchronize());
        CK(cudaFree(p));
    }

    std::vector<double> t;
    std::vector<void *> keep;
    const char *stop = "total reached";
    for (size_t done = 0; done + size <= total; done += size) {
        nvshmem_barrier_all();
        double t0 = now_us();
        void *b = nvshmem_malloc(size);
        double dt = now_us() - t0;
        if (!b) {
            stop = "nvshmem_malloc returned NULL";
            break;
        }
        t.push_back(dt);
        keep.push_back(b);
        /* the block takes a write from the next PE */
        char one = 1;
        nvshmem_putmem((char *)b + size - 1, &one, 1, (rank + 1) % npes);
    }
    nvshmem_barrier_all();
    int bad = 0;
    for (void *b : keep) {
        char got = 0;
        CK(cudaMemcpy(&got, (char *)b + size - 1, 1, cudaMemcpyDeviceToHost));
        bad += got != 1;
    }
    double med = pct(t, 0.5), sum = 0;
    std::vector<double> grow;
    for (double x : t) {
        sum += x;
        if (x > growf * med) grow.push_back(x);
    }
    if (rank == 0) {
        printf("nvshmem_alloc npes %d size %zu calls %zu (%s) cudaMalloc_med_us %.1f cudaMalloc_p99_us %.1f "
               "call_med_us %.1f call_p99_us %.1f call_mean_us %.1f slow_calls %zu slow_med_us %.1f slow_max_us %.1f "
               "slow_med_over_cudaMalloc %.2f bad_blocks %d\n",
               npes, size, t.size(), stop, pct(cu, 0.5), pct(cu, 0.99), med, pct(t, 0.99), t.empty() ? 0 : sum / t.size(),
               grow.size(), pct(grow, 0.5), grow.empty() ? 0 : *std::max_element(grow.begin(), grow.end()),
               pct(cu, 0.5) > 0 ? pct(grow, 0.5) / pct(cu, 0.5) : 0, bad);
        fflush(stdout);
    }
    for (auto it = keep.rbegin(); it != keep.rend(); ++it) nvshmem_free(*it);
    nvshmem_finalize();
    MPI_Finalize();
    return bad ? 1 : 0;
}
