/* NCCL peer of `goshmem-perf device`'s on-stream rows: NCCL's collectives on a
 * CUDA stream, timed as goshmem-perf's streamSweep times the *OnStream calls
 * (host clock around N enqueues + one cudaStreamSynchronize, per call), and
 * printed as the same JSON lines with "lib":"nccl", so `goshmem-perf report`
 * sets them beside goshmem's rows of the same name and size:
 *   sum_reduce_on_stream  ncclAllReduce(float, ncclSum)       size: the vector
 *   broadcast_on_stream   ncclBroadcast(float, root 0)        size: the vector
 *   fcollect_on_stream    ncclAllGather(float)                size: one member's block
 *   alltoall_on_stream    ncclSend/ncclRecv to every member in one group
 *                                                             size: one member's block
 * bw_gbs is the algorithm bandwidth (size / time), as goshmem's rows; the
 * all-reduce row's timing also gives the bus bandwidth of nccl-tests
 * (algbw x 2(n-1)/n), which for equal sizes stands in the same ratio.
 * After each row the largest call's result is checked on every PE (first and
 * last element of every block); a wrong value fails the run.
 *
 * NCCL refuses two ranks on one GPU, so this needs one GPU per PE (the rank
 * picks GPU rank % devices, as nvshmem_perf does).
 *
 * Build on the GPU machine (bench/gpu/nccl_build.sh: NCCL from the Python
 * environment's nvidia-nccl package):
 *   nvcc -O2 -std=c++17 -I$NCCL/include -I$MPI_INC bench/gpu/nccl_perf.cu \
 *        -L$NCCL/lib -l:libnccl.so.2 -L$MPI_LIB -lmpi -o nccl_perf
 * Run: NCCL_NVLS_ENABLE=0 mpirun -np 2 ./nccl_perf [-only A|B] [-coll-maxsize BYTES] [-coll-iters N]
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                                                         \
    do {                                                                                                              \
        cudaError_t e_ = (x);                                                                                         \
        if (e_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "nccl_perf: PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                             \
        }                                                                                                             \
    } while (0)
#define NK(x)                                                                                                         \
    do {                                                                                                              \
        ncclResult_t r_ = (x);                                                                                        \
        if (r_ != ncclSuccess) {                                                                                      \
            fprintf(stderr, "nccl_perf: PE %d: %s:%d: %s: %s (%s)\n", me, __FILE__, __LINE__, #x,                   \
                    ncclGetErrorString(r_), ncclGetLastError(comm));                                                  \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                             \
        }                                                                                                             \
    } while (0)

static int me, npes;
static ncclComm_t comm;
static cudaStream_t stream;
static long long coll_max = 64ll << 20;
static int coll_iters = 100;
static std::string only;
static float *sbuf, *dbuf; /* sbuf: coll_max x npes bytes (alltoall's blocks); dbuf likewise */

/* -only A|B|...: rows whose name contains one of the alternatives (nvshmem_perf's rule) */
static bool want(const char *name)
{
    if (only.empty()) return true;
    size_t start = 0;
    while (start <= only.size()) {
        size_t bar = only.find('|', start);
        std::string alt = only.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
        if (!alt.empty() && strstr(name, alt.c_str()) != nullptr) return true;
        if (bar == std::string::npos) break;
        start = bar + 1;
    }
    return false;
}

/* goshmem-perf's collIters and nvshmem_perf's pc_iters: coll_iters up to 1 MiB, then fewer, at least 10 */
static int iters_for(long long size)
{
    if (size <= (1 << 20)) return coll_iters;
    return std::max(10, (int)((long long)coll_iters * (1 << 20) / size));
}

static double now_ns()
{
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void emit(const char *name, long long size, long long n, double us, double bw, const char *timing)
{
    if (me != 0) return;
    printf("{\"lib\":\"nccl\",\"name\":\"%s\",\"size\":%lld,\"iters\":%lld,\"median_us\":%.4f,\"p99_us\":%.4f,"
           "\"bw_gbs\":%.4f,\"transport\":\"cuda\",\"scope\":\"-\",\"npes\":%d,\"timing\":\"%s\"}\n",
           name, size, n, us, us, bw, npes, timing);
    fflush(stdout);
}

/* fill sbuf with this PE's value me+1 (every block alike) and dbuf with -1 */
static void fill(size_t nelem)
{
    std::vector<float> h(nelem, (float)(me + 1));
    CK(cudaMemcpy(sbuf, h.data(), nelem * sizeof(float), cudaMemcpyHostToDevice));
    std::fill(h.begin(), h.end(), -1.0f);
    CK(cudaMemcpy(dbuf, h.data(), nelem * sizeof(float), cudaMemcpyHostToDevice));
}

/* checks the first and last element of each of blocks blocks of n floats in dbuf against want(block);
 * returns the number of wrong values (every PE checks its own result) */
template <typename F>
static int check(const char *name, size_t n, int blocks, F want_of)
{
    int bad = 0;
    for (int b = 0; b < blocks; b++) {
        for (size_t at : {(size_t)0, n - 1}) {
            float v;
            CK(cudaMemcpy(&v, dbuf + (size_t)b * n + at, sizeof v, cudaMemcpyDeviceToHost));
            float w = want_of(b);
            if (v != w) {
                if (bad < 4)
                    fprintf(stderr, "nccl_perf: PE %d: %s of %zu floats: block %d element %zu is %g, want %g\n", me,
                            name, n, b, at, (double)v, (double)w);
                bad++;
            }
        }
    }
    return bad;
}

/* One row per size from 8 B to coll_max: two untimed calls, a barrier, `it`
 * calls timed on the host clock with one stream sync; then the largest size's
 * result is checked. */
template <typename Call, typename Want>
static int sweep(const char *name, const char *what, int blocks, Call call, Want want_of)
{
    if (!want(name)) return 0;
    size_t top_n = 0;
    for (long long size = 8; size <= coll_max; size *= 2) {
        size_t n = (size_t)size / 4;
        int it = iters_for(size);
        for (int i = 0; i < 2; i++) call(n);
        CK(cudaStreamSynchronize(stream));
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ns();
        for (int i = 0; i < it; i++) call(n);
        double enq = (now_ns() - t0) / it;
        CK(cudaStreamSynchronize(stream));
        double per = (now_ns() - t0) / it;
        char t[300];
        double algbw = (double)size / per; /* bytes/ns = GB/s */
        if (strcmp(name, "sum_reduce_on_stream") == 0)
            snprintf(t, sizeof t,
                     "host clock around %d %s + one cudaStreamSynchronize; enqueue %.2f us/call; busbw %.2f GB/s",
                     it, what, enq / 1000, algbw * 2.0 * (npes - 1) / npes);
        else
            snprintf(t, sizeof t, "host clock around %d %s + one cudaStreamSynchronize; enqueue %.2f us/call", it,
                     what, enq / 1000);
        emit(name, size, it, per / 1000, algbw, t);
        MPI_Barrier(MPI_COMM_WORLD);
        top_n = n;
    }
    if (top_n == 0) return 0;
    fill(top_n * npes);
    MPI_Barrier(MPI_COMM_WORLD);
    call(top_n);
    CK(cudaStreamSynchronize(stream));
    int bad = check(name, top_n, blocks, want_of), all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (all != 0 && me == 0)
        fprintf(stderr, "nccl_perf: %s: %d wrong values over all PEs (largest size)\n", name, all);
    return all;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        auto arg = [&](const char *f) { return strcmp(argv[i], f) == 0 && i + 1 < argc; };
        if (arg("-only")) only = argv[++i];
        else if (arg("-coll-maxsize")) coll_max = atoll(argv[++i]);
        else if (arg("-coll-iters")) coll_iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "nccl_perf: unknown flag %s (flags: -only A|B, -coll-maxsize BYTES, -coll-iters N)\n",
                    argv[i]);
            return 2;
        }
    }
    if (coll_max < 8 || coll_iters < 1) {
        fprintf(stderr, "nccl_perf: -coll-maxsize %lld must be >= 8 and -coll-iters %d >= 1\n", coll_max, coll_iters);
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < npes) {
        /* NCCL refuses two ranks on one GPU ("Duplicate GPU detected") */
        if (me == 0)
            fprintf(stderr, "nccl_perf: %d PEs but %d visible GPUs: NCCL needs one GPU per PE\n", npes, ndev);
        MPI_Finalize();
        return 2;
    }
    CK(cudaSetDevice(me % ndev));
    ncclUniqueId id;
    if (me == 0) NK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    NK(ncclCommInitRank(&comm, npes, id, me));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t bytes = (size_t)coll_max * npes;
    CK(cudaMalloc(&sbuf, bytes));
    CK(cudaMalloc(&dbuf, bytes));
    fill(bytes / sizeof(float));
    if (me == 0) {
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, me % ndev));
        int drv = 0, rtv = 0, nv = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rtv);
        ncclGetVersion(&nv);
        const char *nvls = getenv("NCCL_NVLS_ENABLE");
        fprintf(stderr, "# nccl_perf: NCCL %d, %d PEs on %d GPUs (%s, %d SMs), driver %d runtime %d, NCCL_NVLS_ENABLE=%s\n",
                nv, npes, ndev, p.name, p.multiProcessorCount, drv, rtv, nvls ? nvls : "(unset)");
    }

    int bad = 0;
    const float sum = (float)npes * (npes + 1) / 2;
    bad += sweep(
        "sum_reduce_on_stream", "ncclAllReduce(float, sum)", 1,
        [&](size_t n) { NK(ncclAllReduce(sbuf, dbuf, n, ncclFloat, ncclSum, comm, stream)); },
        [&](int) { return sum; });
    bad += sweep(
        "broadcast_on_stream", "ncclBroadcast(float, root 0)", 1,
        [&](size_t n) { NK(ncclBroadcast(sbuf, dbuf, n, ncclFloat, 0, comm, stream)); }, [&](int) { return 1.0f; });
    bad += sweep(
        "fcollect_on_stream", "ncclAllGather(float)", npes,
        [&](size_t n) { NK(ncclAllGather(sbuf, dbuf, n, ncclFloat, comm, stream)); },
        [&](int b) { return (float)(b + 1); });
    bad += sweep(
        "alltoall_on_stream", "ncclGroupStart + ncclSend/ncclRecv to every member + ncclGroupEnd", npes,
        [&](size_t n) {
            NK(ncclGroupStart());
            for (int p = 0; p < npes; p++) {
                NK(ncclSend(sbuf + (size_t)p * n, n, ncclFloat, p, comm, stream));
                NK(ncclRecv(dbuf + (size_t)p * n, n, ncclFloat, p, comm, stream));
            }
            NK(ncclGroupEnd());
        },
        [&](int b) { return (float)(b + 1); });

    CK(cudaFree(sbuf));
    CK(cudaFree(dbuf));
    ncclCommDestroy(comm);
    MPI_Finalize();
    return bad ? 1 : 0;
}
