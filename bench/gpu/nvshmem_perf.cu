/* NVSHMEM peer of `goshmem-perf device`: the same kernels (kernels.cuh),
 * compiled against NVSHMEM, driven the same way, printing the same JSON
 * lines with "lib":"nvshmem". Also the floor under any put + quiet
 * ("lib":"floor": an 8 B store to the peer's mapping + __threadfence_system,
 * variant sys; + __threadfence, variant gpu), cudaMemcpyAsync DtoD of the
 * same sizes as put_bw ("lib":"cudamemcpy"), and the CUDA runtime's launch
 * overhead ("lib":"cudart").
 *
 * Build on the GPU machine (bench/gpu/run.sh):
 *   nvcc -rdc=true -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I$NV/include -I$MPI_INC \
 *        bench/gpu/nvshmem_perf.cu -L$NV/lib -lnvshmem_host -lnvshmem_device -lmpi -o nvshmem_perf
 * Run: NVSHMEM_DISABLE_NVLS=1 mpirun -np 2 ./nvshmem_perf [flags] (UID bootstrap over MPI_Bcast).
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
#include <string>
#include <vector>

#include "kernels.cuh"
/* the collective rows' kernels (coll.cuh) over NVSHMEM's names; -DNO_COLL
 * leaves them out (bench/gpu/run.sh and tests/gpu/coll.sh rebuild with it
 * when the full build fails, so the point-to-point rows still run) */
#ifndef NO_COLL
#define PC_T(name) nvshmem_##name
#define PC_X(name) nvshmemx_##name
typedef nvshmem_team_t pc_team_t;
#include "coll.cuh"
#endif

/* ---- floor kernels: no library at all ---- */
template <int SYS>
__device__ __forceinline__ void floor_put(unsigned long long *peer_word, int iters, int warmup, long long *samples,
                                          unsigned long long *meta)
{
    __shared__ long long sbuf[PERF_SBUF];
    int n = iters + warmup, kept = 0;
    unsigned long long g0 = perf_gtimer();
    long long k0 = perf_clock();
    for (int i = 0; i < n; i++) {
        long long c0 = perf_clock();
        *(volatile unsigned long long *)peer_word = (unsigned long long)i;
        if (SYS)
            __threadfence_system();
        else
            __threadfence();
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
__global__ void floor_put_sys(unsigned long long *w, int iters, int warmup, long long *s, unsigned long long *m)
{
    floor_put<1>(w, iters, warmup, s, m);
}
__global__ void floor_put_gpu(unsigned long long *w, int iters, int warmup, long long *s, unsigned long long *m)
{
    floor_put<0>(w, iters, warmup, s, m);
}

#define CK(x)                                                                                                         \
    do {                                                                                                              \
        cudaError_t e_ = (x);                                                                                         \
        if (e_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "nvshmem_perf: PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #x,                      \
                    cudaGetErrorString(e_));                                                                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                             \
        }                                                                                                             \
    } while (0)

static int me, npes, peer;
static int iters = 10000, warmup = 1000, maxsize = 1 << 20, maxsize_thread = 64 << 10, ctas = 32, bw_threads = 1024;
static long long bw_max = 256ll << 20, bw_target = 4ll << 30; /* bytes moved per bw size */
static int launches = 10000;
static bool concurrent = true;
static bool limited_mpg = false; /* NVSHMEM refuses collectives with several PEs per GPU */
/* collective and on-stream rows (goshmem-perf device -coll-*, -stream-*) */
static long long coll_max = 64ll << 20;
static int coll_threads = 1024, coll_iters = 100, coll_warmup = 10, stream_iters = 1000;
static bool coll_on = false; /* -coll, or an -only naming them: the coll and on-stream rows are opt-in */
static std::string only;
static long long *d_samples;
static unsigned long long *d_meta;
static std::vector<long long> h_samples;
static cudaStream_t stream;

/* -only A|B|...: rows whose name contains one of the alternatives */
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

static int iters_for(long long size)
{
    if (size <= 4096) return iters;
    long long n = (long long)iters * 4096 / size;
    return (int)std::max(std::min(n, (long long)iters), std::min(20ll, (long long)iters));
}

struct Summary {
    double med_ns, p99_ns;
};
static Summary summarize(std::vector<double> &v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    if (n == 0) return {0, 0};
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    long long i = (99ll * (long long)n + 99) / 100 - 1;
    i = std::max(0ll, std::min(i, (long long)n - 1));
    return {med, v[i]};
}

/* Converts the kernel's cycle samples to ns with its own clock rate. */
static Summary read_samples(int n, double *ghz_out)
{
    unsigned long long meta[5];
    CK(cudaMemcpy(meta, d_meta, sizeof meta, cudaMemcpyDeviceToHost));
    h_samples.resize(n);
    CK(cudaMemcpy(h_samples.data(), d_samples, sizeof(long long) * n, cudaMemcpyDeviceToHost));
    double cyc_per_ns = (double)(meta[3] - meta[2]) / (double)(meta[1] - meta[0]);
    if (!(cyc_per_ns > 0)) cyc_per_ns = 1.98;
    std::vector<double> ns(n);
    for (int i = 0; i < n; i++) ns[i] = (double)h_samples[i] / cyc_per_ns;
    if (ghz_out) *ghz_out = cyc_per_ns;
    return summarize(ns);
}

static void emit(const char *lib, const char *name, long long size, long long n, double med_us, double p99_us,
                 double bw, const char *scope, const char *timing, const char *variant = "")
{
    if (me != 0) return;
    printf("{\"lib\":\"%s\",\"name\":\"%s\",\"size\":%lld,\"iters\":%lld,\"median_us\":%.4f,\"p99_us\":%.4f,"
           "\"bw_gbs\":%.4f,\"transport\":\"cuda\",\"scope\":\"%s\",\"timing\":\"%s\"%s%s%s}\n",
           lib, name, size, n, med_us, p99_us, bw, scope, timing, variant[0] ? ",\"variant\":\"" : "", variant,
           variant[0] ? "\"" : "");
    fflush(stdout);
}

static void timing_str(char *buf, size_t n, double ghz) { snprintf(buf, n, "clock64/iter @%.3f GHz", ghz); }

static char *sbuf, *dbuf;
static unsigned long long *flag_p, *flag_s;
static unsigned long long base_p = 0, base_s = 0;

typedef void (*lat_kernel)(char *, const char *, size_t, int, int, int, long long *, unsigned long long *);

static void lat_row(const char *name, lat_kernel k, int threads, const char *scope, long long size, bool get)
{
    int n = iters_for(size);
    int w = size <= 4096 ? warmup : std::min(warmup, std::max(n / 5, 5));
    if (me == 0) {
        /* put/p: dest is the peer's dbuf, source the local sbuf; get/g: dest is the local
         * sbuf, source the peer's dbuf */
        const char *s = get ? dbuf : sbuf;
        char *dl = get ? sbuf : dbuf;
        k<<<1, threads, 0, stream>>>(dl, s, (size_t)size, peer, n, w, d_samples, d_meta);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(stream));
        double ghz;
        Summary s2 = read_samples(n, &ghz);
        char t[64];
        timing_str(t, sizeof t, ghz);
        emit("nvshmem", name, size, n, s2.med_ns / 1000, s2.p99_ns / 1000, 0, scope, t);
    }
    nvshmem_barrier_all();
}

static void pingpong_row(const char *name, int kind)
{
    int n = iters;
    unsigned long long *flag = kind == 0 ? flag_p : flag_s;
    unsigned long long base = kind == 0 ? base_p : base_s;
    void *args[] = {&dbuf, &sbuf, &flag, &me, &peer, &base, &n, &warmup, &d_samples, &d_meta};
    void *fn = kind == 0 ? (void *)perf_pingpong_p : (void *)perf_pingpong_putsignal;
    nvshmem_barrier_all();
    int rc = nvshmemx_collective_launch(fn, dim3(1), dim3(1), args, 0, stream);
    if (rc != 0) {
        fprintf(stderr, "nvshmem_perf: PE %d: collective launch of %s: %d\n", me, name, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CK(cudaStreamSynchronize(stream));
    if (kind == 0)
        base_p += (unsigned long long)(n + warmup);
    else
        base_s += (unsigned long long)(n + warmup);
    if (me == 0) {
        double ghz;
        Summary s = read_samples(n, &ghz);
        char t[64];
        timing_str(t, sizeof t, ghz);
        emit("nvshmem", name, 8, n, s.med_ns / 1000, s.p99_ns / 1000, 0, "thread", t);
    }
    nvshmem_barrier_all();
}

static void barrier_row(int threads)
{
    int n = iters;
    void *args[] = {&n, &warmup, &d_samples, &d_meta};
    void *fn = threads == 1 ? (void *)perf_barrier_thread : (void *)perf_barrier_block;
    nvshmem_barrier_all();
    int rc = nvshmemx_collective_launch(fn, dim3(1), dim3(threads), args, 0, stream);
    if (rc != 0) {
        fprintf(stderr, "nvshmem_perf: PE %d: collective launch of barrier: %d\n", me, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CK(cudaStreamSynchronize(stream));
    if (me == 0) {
        double ghz;
        Summary s = read_samples(n, &ghz);
        char t[64];
        timing_str(t, sizeof t, ghz);
        emit("nvshmem", "barrier", 0, n, s.med_ns / 1000, s.p99_ns / 1000, 0, threads == 1 ? "thread" : "block", t);
    }
    nvshmem_barrier_all();
}

static int bw_iters(long long size)
{
    long long n = bw_target / size;
    return (int)std::max(10ll, std::min(n, 10000ll));
}

static void bw_rows()
{
    std::vector<unsigned long long> meta(8 + 2 * ctas);
    for (long long size = 4096; size <= bw_max; size *= 2) {
        int n = bw_iters(size);
        if (me == 0) {
            /* warm-up launch, then the timed one */
            for (int rep = 0; rep < 2; rep++) {
                perf_put_bw<<<ctas, bw_threads, 0, stream>>>(dbuf, sbuf, (size_t)size, peer, rep ? n : 2, d_meta);
                CK(cudaGetLastError());
                CK(cudaStreamSynchronize(stream));
            }
            CK(cudaMemcpy(meta.data(), d_meta, sizeof(unsigned long long) * meta.size(), cudaMemcpyDeviceToHost));
            unsigned long long lo = ~0ull, hi = 0;
            for (int b = 0; b < ctas; b++) {
                lo = std::min(lo, meta[8 + 2 * b]);
                hi = std::max(hi, meta[9 + 2 * b]);
            }
            double ns = (double)(hi - lo);
            double bw = (double)size * n / ns; /* bytes/ns = GB/s */
            char t[96];
            snprintf(t, sizeof t, "globaltimer, %d CTAs x %d threads, %d puts", ctas, bw_threads, n);
            emit("nvshmem", "put_bw", size, n, ns / n / 1000, ns / n / 1000, bw, "block", t);

            /* cudaMemcpyAsync DtoD into the peer's buffer (same GPU here) */
            char *peer_dst = (char *)nvshmem_ptr(dbuf, peer);
            if (peer_dst) {
                cudaEvent_t e0, e1;
                CK(cudaEventCreate(&e0));
                CK(cudaEventCreate(&e1));
                CK(cudaMemcpyAsync(peer_dst, sbuf, size, cudaMemcpyDeviceToDevice, stream));
                CK(cudaEventRecord(e0, stream));
                for (int i = 0; i < n; i++)
                    CK(cudaMemcpyAsync(peer_dst, sbuf, size, cudaMemcpyDeviceToDevice, stream));
                CK(cudaEventRecord(e1, stream));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                double cns = ms * 1e6;
                snprintf(t, sizeof t, "cudaEvents, %d cudaMemcpyAsync DtoD to nvshmem_ptr(peer)", n);
                emit("cudamemcpy", "put_bw", size, n, cns / n / 1000, cns / n / 1000, (double)size * n / cns,
                     "-", t);
                cudaEventDestroy(e0);
                cudaEventDestroy(e1);
            }
        }
        nvshmem_barrier_all();
    }
}

static void floor_rows()
{
    if (me == 0) {
        unsigned long long *w = (unsigned long long *)nvshmem_ptr(flag_p + 64, peer);
        if (!w) {
            fprintf(stderr, "nvshmem_perf: nvshmem_ptr(peer) is NULL: no floor rows\n");
        } else {
            for (int sys = 1; sys >= 0; sys--) {
                if (sys)
                    floor_put_sys<<<1, 1, 0, stream>>>(w, iters, warmup, d_samples, d_meta);
                else
                    floor_put_gpu<<<1, 1, 0, stream>>>(w, iters, warmup, d_samples, d_meta);
                CK(cudaGetLastError());
                CK(cudaStreamSynchronize(stream));
                double ghz;
                Summary s = read_samples(iters, &ghz);
                char t[64];
                timing_str(t, sizeof t, ghz);
                emit("floor", "put_lat", 8, iters, s.med_ns / 1000, s.p99_ns / 1000, 0, "thread", t,
                     sys ? "sys" : "gpu");
            }
        }
    }
    nvshmem_barrier_all();
}

static void launch_rows()
{
    if (me == 0) {
        for (int i = 0; i < 100; i++) perf_empty<<<1, 1, 0, stream>>>();
        CK(cudaStreamSynchronize(stream));
        std::vector<double> per(launches);
        double total = 0;
        const int burst = 128; /* as goshmem-perf: untimed sync between bursts, queue never full */
        for (int i = 0; i < launches; i++) {
            if (i % burst == 0 && i > 0) CK(cudaStreamSynchronize(stream));
            auto a = std::chrono::steady_clock::now();
            perf_empty<<<1, 1, 0, stream>>>();
            auto b = std::chrono::steady_clock::now();
            per[i] = std::chrono::duration<double, std::nano>(b - a).count();
            total += per[i];
        }
        CK(cudaStreamSynchronize(stream));
        Summary s = summarize(per);
        char t[160];
        snprintf(t, sizeof t, "mean per <<<>>> launch, bursts of %d with untimed sync between (p99 per call)", burst);
        emit("cudart", "launch", 0, launches, total / launches / 1000, s.p99_ns / 1000, 0, "-", t);
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; i++) {
            auto a = std::chrono::steady_clock::now();
            perf_empty<<<1, 1, 0, stream>>>();
            auto b = std::chrono::steady_clock::now();
            per[i] = std::chrono::duration<double, std::nano>(b - a).count();
        }
        auto t1 = std::chrono::steady_clock::now();
        CK(cudaStreamSynchronize(stream));
        double mean = std::chrono::duration<double, std::nano>(t1 - t0).count() / launches;
        s = summarize(per);
        snprintf(t, sizeof t, "mean of %d back-to-back async launches (p99 per call)", launches);
        emit("cudart", "launch_b2b", 0, launches, mean / 1000, s.p99_ns / 1000, 0, "-", t);
        for (int i = 0; i < launches; i++) {
            auto a = std::chrono::steady_clock::now();
            perf_empty<<<1, 1, 0, stream>>>();
            CK(cudaStreamSynchronize(stream));
            auto b = std::chrono::steady_clock::now();
            per[i] = std::chrono::duration<double, std::nano>(b - a).count();
        }
        s = summarize(per);
        snprintf(t, sizeof t, "per launch+cudaStreamSynchronize, host clock");
        emit("cudart", "launch_sync", 0, launches, s.med_ns / 1000, s.p99_ns / 1000, 0, "-", t);
    }
    nvshmem_barrier_all();
}

/* ---- device collective rows (coll.cuh): NVSHMEM perftest shapes ----
 * Sizes: the collective's nelems * element size, 8 B up; thread scope
 * below 512 elements and warp below 4096 (as perftest/device/coll), block
 * up to -coll-maxsize. Iterations: -coll-iters up to 1 MiB, then
 * scaled down by size (at least 10); warm-up -coll-warmup (2 above 1 MiB).
 * The same policy as goshmem-perf (devcoll.go: collIters). */
static int pc_iters(long long size)
{
    if (size <= (1 << 20)) return coll_iters;
    return std::max(10, (int)((long long)coll_iters * (1 << 20) / size));
}
static int pc_warm(long long size) { return size <= (1 << 20) ? coll_warmup : std::min(coll_warmup, 2); }

#ifndef NO_COLL
typedef void (*pc_kernel)(int, void *, const void *, unsigned long long, int, int, int, unsigned long long *);
static void coll_rows(size_t bufsz)
{
    struct {
        const char *name;
        int esz;
        bool times_npes; /* dst (alltoall: and src) hold n * npes elements */
        pc_kernel k[3];
    } rows[] = {
        {"reduce_sum_float", 4, false, {pc_reduce_sum_float_thread, pc_reduce_sum_float_warp, pc_reduce_sum_float_block}},
        {"reduce_sum_int64", 8, false, {pc_reduce_sum_int64_thread, pc_reduce_sum_int64_warp, pc_reduce_sum_int64_block}},
        {"broadcast", 8, false, {pc_broadcast_thread, pc_broadcast_warp, pc_broadcast_block}},
        {"fcollect", 8, true, {pc_fcollect_thread, pc_fcollect_warp, pc_fcollect_block}},
        {"alltoall", 8, true, {pc_alltoall_thread, pc_alltoall_warp, pc_alltoall_block}},
#ifndef PC_NO_REDUCESCATTER
        {"reducescatter_sum_float", 4, true, {pc_reducescatter_sum_float_thread, pc_reducescatter_sum_float_warp,
                                              pc_reducescatter_sum_float_block}},
#endif
    };
    const char *scopes[3] = {"thread", "warp", "block"};
    /* NVSHMEM's reducescatter asserts unless n * npes elements fit half the per-team reduce
     * scratch (NVSHMEM_REDUCE_SCRATCH_SIZE, 512 KiB by default); rows stop below that */
    long long rs_cap = 512ll << 10;
    if (const char *e = getenv("NVSHMEM_REDUCE_SCRATCH_SIZE")) {
        char *end;
        rs_cap = strtoll(e, &end, 10);
        if (*end == 'k' || *end == 'K') rs_cap <<= 10;
        else if (*end == 'm' || *end == 'M') rs_cap <<= 20;
        else if (*end == 'g' || *end == 'G') rs_cap <<= 30;
    }
    rs_cap = rs_cap / 2 / npes;
    std::vector<unsigned long long> meta(2);
    for (auto &r : rows) {
        if (!want(r.name) && !want("coll")) continue;
        for (int sc = 0; sc < 3; sc++) {
            long long top = std::min(coll_max, (long long)(bufsz / (r.times_npes ? npes : 1)));
            for (long long size = 8; size <= top; size *= 2) {
                long long n = size / r.esz;
                if ((sc == 0 && n >= 512) || (sc == 1 && n >= 4096)) break;
                if (rs_cap > 0 && strstr(r.name, "reducescatter") && size > rs_cap) {
                    if (me == 0)
                        fprintf(stderr, "nvshmem_perf: %s/%s stops at %lld B: NVSHMEM asserts unless n * npes elements "
                                        "fit half of NVSHMEM_REDUCE_SCRATCH_SIZE\n", r.name, scopes[sc], size / 2);
                    break;
                }
                int it = pc_iters(size), w = pc_warm(size);
                int team = (int)NVSHMEM_TEAM_WORLD, root = 0;
                void *dst = dbuf, *src = sbuf;
                unsigned long long nn = (unsigned long long)n;
                void *args[] = {&team, &dst, &src, &nn, &root, &it, &w, &d_meta};
                nvshmem_barrier_all();
                /* the largest block that launches (as goshmem-perf does): nvshmemx_collective_launch
                 * reports a block it cannot launch on stderr but may return 0, leaving meta stale */
                int threads = coll_threads, occ = 0;
                while (threads > 32) {
                    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (const void *)r.k[sc], threads, 0));
                    if (occ > 0) break;
                    threads /= 2;
                }
                CK(cudaMemset(d_meta, 0, 2 * sizeof(unsigned long long)));
                int rc = nvshmemx_collective_launch((const void *)r.k[sc], dim3(1), dim3(threads), args, 0, stream);
                if (rc != 0) {
                    fprintf(stderr, "nvshmem_perf: PE %d: collective launch of %s/%s: %d\n", me, r.name, scopes[sc], rc);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                CK(cudaStreamSynchronize(stream));
                if (me == 0) {
                    CK(cudaMemcpy(meta.data(), d_meta, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
                    if (meta[0] == 0 || meta[1] <= meta[0]) {
                        fprintf(stderr, "nvshmem_perf: %s/%s %lld B at %d threads did not run (meta %llu %llu)\n", r.name,
                                scopes[sc], size, threads, meta[0], meta[1]);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                    double per = (double)(meta[1] - meta[0]) / it; /* ns per call */
                    char t[160];
                    snprintf(t, sizeof t, "globaltimer around %d calls in one kernel (after %d + a block barrier), 1 block x %d threads",
                             it, w, threads);
                    emit("nvshmem", r.name, size, it, per / 1000, per / 1000, per > 0 ? (double)size / per : 0, scopes[sc], t);
                }
                nvshmem_barrier_all();
            }
        }
    }
}
#endif

/* ---- on-stream rows: host clock around N enqueues + one stream sync ---- */
static double now_ns()
{
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static void onstream_rows(size_t bufsz)
{
    if (want("barrier_on_stream") || want("on_stream")) {
        for (int i = 0; i < 10; i++) nvshmemx_barrier_all_on_stream(stream);
        CK(cudaStreamSynchronize(stream));
        nvshmem_barrier_all();
        double t0 = now_ns();
        for (int i = 0; i < stream_iters; i++) nvshmemx_barrier_all_on_stream(stream);
        double enq = (now_ns() - t0) / stream_iters;
        CK(cudaStreamSynchronize(stream));
        double per = (now_ns() - t0) / stream_iters;
        char t[200];
        snprintf(t, sizeof t, "host clock around %d nvshmemx_barrier_all_on_stream + one cudaStreamSynchronize; enqueue %.2f us/call",
                 stream_iters, enq / 1000);
        emit("nvshmem", "barrier_on_stream", 0, stream_iters, per / 1000, per / 1000, 0, "-", t);
        nvshmem_barrier_all();
    }
    /* one row per size from 8 B: `call(n floats)` timed like goshmem-perf's streamSweep; the
     * movers' size is one block (fcollect and alltoall move one per member) */
    auto sweep = [&](const char *name, const char *what, long long top, auto call) {
        for (long long size = 8; size <= top; size *= 2) {
            size_t n = (size_t)size / 4;
            int it = pc_iters(size);
            for (int i = 0; i < 2; i++) call(n);
            CK(cudaStreamSynchronize(stream));
            nvshmem_barrier_all();
            double t0 = now_ns();
            for (int i = 0; i < it; i++) call(n);
            double enq = (now_ns() - t0) / it;
            CK(cudaStreamSynchronize(stream));
            double per = (now_ns() - t0) / it;
            char t[240];
            snprintf(t, sizeof t, "host clock around %d %s + one cudaStreamSynchronize; enqueue %.2f us/call", it, what, enq / 1000);
            emit("nvshmem", name, size, it, per / 1000, per / 1000, (double)size / per, "-", t);
            nvshmem_barrier_all();
        }
    };
    long long top = std::min(coll_max, (long long)bufsz), ptop = std::min(coll_max, (long long)bufsz / npes);
    float *d = (float *)dbuf;
    const float *s = (const float *)sbuf;
    if (want("sum_reduce_on_stream") || want("on_stream"))
        sweep("sum_reduce_on_stream", "nvshmemx_float_sum_reduce_on_stream", top,
              [&](size_t n) { nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, d, s, n, stream); });
    if (want("broadcast_on_stream") || want("on_stream"))
        sweep("broadcast_on_stream", "nvshmemx_float_broadcast_on_stream(root 0)", top,
              [&](size_t n) { nvshmemx_float_broadcast_on_stream(NVSHMEM_TEAM_WORLD, d, s, n, 0, stream); });
    if (want("fcollect_on_stream") || want("on_stream"))
        sweep("fcollect_on_stream", "nvshmemx_float_fcollect_on_stream", ptop,
              [&](size_t n) { nvshmemx_float_fcollect_on_stream(NVSHMEM_TEAM_WORLD, d, s, n, stream); });
    if (want("alltoall_on_stream") || want("on_stream"))
        sweep("alltoall_on_stream", "nvshmemx_float_alltoall_on_stream", ptop,
              [&](size_t n) { nvshmemx_float_alltoall_on_stream(NVSHMEM_TEAM_WORLD, d, s, n, stream); });
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        auto arg = [&](const char *f) { return strcmp(argv[i], f) == 0 && i + 1 < argc; };
        if (arg("-iters")) iters = atoi(argv[++i]);
        else if (arg("-warmup")) warmup = atoi(argv[++i]);
        else if (arg("-maxsize")) maxsize = atoi(argv[++i]);
        else if (arg("-maxsize-thread")) maxsize_thread = atoi(argv[++i]);
        else if (arg("-bw-maxsize")) bw_max = atoll(argv[++i]);
        else if (arg("-ctas")) ctas = atoi(argv[++i]);
        else if (arg("-bw-threads")) bw_threads = atoi(argv[++i]);
        else if (arg("-launches")) launches = atoi(argv[++i]);
        else if (arg("-only")) only = argv[++i];
        else if (arg("-coll-maxsize")) coll_max = atoll(argv[++i]);
        else if (arg("-coll-threads")) coll_threads = atoi(argv[++i]);
        else if (arg("-coll-iters")) coll_iters = atoi(argv[++i]);
        else if (arg("-coll-warmup")) coll_warmup = atoi(argv[++i]);
        else if (arg("-stream-iters")) stream_iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "-no-concurrent") == 0) concurrent = false;
        else if (strcmp(argv[i], "-coll") == 0) coll_on = true;
        else {
            fprintf(stderr, "nvshmem_perf: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(me % ndev));
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (me == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof id, MPI_UINT8_T, 0, MPI_COMM_WORLD);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(me, npes, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "nvshmem_perf: PE %d: nvshmemx_init_attr failed\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    peer = npes > 1 ? (me + 1) % npes : me;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t bufsz = (size_t)std::max((long long)maxsize, bw_max);
    sbuf = (char *)nvshmem_malloc(bufsz);
    dbuf = (char *)nvshmem_malloc(bufsz);
    flag_p = (unsigned long long *)nvshmem_calloc(256, 8);
    flag_s = (unsigned long long *)nvshmem_calloc(256, 8);
    if (!sbuf || !dbuf || !flag_p || !flag_s) {
        fprintf(stderr, "nvshmem_perf: PE %d: nvshmem_malloc of %zu bytes failed (raise NVSHMEM_SYMMETRIC_SIZE)\n", me,
                bufsz);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CK(cudaMemset(sbuf, me + 1, bufsz));
    CK(cudaMemset(dbuf, 0, bufsz));
    CK(cudaMalloc(&d_samples, sizeof(long long) * std::max(iters, 1)));
    CK(cudaMalloc(&d_meta, sizeof(unsigned long long) * (8 + 2 * ctas)));
    CK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    /* Several PEs on one GPU: NVSHMEM supports its collectives and on-stream calls only in
     * "full MPG" mode (MPS running, and the PEs' CUDA_MPS_ACTIVE_THREAD_PERCENTAGE adding up to
     * at most 100, or NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1); in "limited MPG" they
     * exit or launch nothing, so those rows are refused rather than timed. */
    int st = nvshmemx_init_status();
    const char *mpg = st == NVSHMEM_STATUS_FULL_MPG      ? "full MPG (several PEs per GPU)"
                      : st == NVSHMEM_STATUS_LIMITED_MPG ? "limited MPG (several PEs per GPU)"
                                                         : "one PE per GPU";
    if (st == NVSHMEM_STATUS_LIMITED_MPG && (coll_on || !only.empty())) {
        if (me == 0)
            fprintf(stderr, "nvshmem_perf: NVSHMEM runs in limited MPG mode: no collective or on-stream rows "
                            "(start MPS and set NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1, or "
                            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE adding up to <= 100 on the GPU)\n");
        limited_mpg = true;
    }
    if (me == 0) {
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, me % ndev));
        int drv = 0, rtv = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rtv);
        int vmaj = 0, vmin = 0;
        nvshmem_info_get_version(&vmaj, &vmin);
        fprintf(stderr, "# nvshmem_perf: NVSHMEM (OpenSHMEM spec %d.%d), %d PEs, %s, %d SMs, %s, driver %d runtime %d, iters=%d warmup=%d\n",
                vmaj, vmin, npes, p.name, p.multiProcessorCount, mpg, drv, rtv, iters, warmup);
    }

    struct {
        const char *name;
        lat_kernel k;
        int threads;
        const char *scope;
        bool get;
    } lat[] = {
        {"put_lat", perf_put_thread, 1, "thread", false},  {"put_lat", perf_put_warp, 32, "warp", false},
        {"put_lat", perf_put_block, 1024, "block", false}, {"get_lat", perf_get_thread, 1, "thread", true},
        {"get_lat", perf_get_warp, 32, "warp", true},      {"get_lat", perf_get_block, 1024, "block", true},
    };
    for (auto &l : lat) {
        if (!want(l.name)) continue;
        long long top = strcmp(l.scope, "thread") == 0 ? maxsize_thread : maxsize;
        for (long long size = 8; size <= top; size *= 2) lat_row(l.name, l.k, l.threads, l.scope, size, l.get);
    }
    if (want("p_lat")) lat_row("p_lat", perf_p_thread, 1, "thread", 8, false);
    if (want("g_lat")) lat_row("g_lat", perf_g_thread, 1, "thread", 8, true);
    if (want("floor")) floor_rows();
    if (concurrent && npes > 1) {
        if (want("pingpong_p")) pingpong_row("pingpong_p", 0);
        if (want("pingpong_putsignal")) pingpong_row("pingpong_putsignal", 1);
        if (want("barrier")) {
            barrier_row(1);
            barrier_row(1024);
        }
    }
    if (want("put_bw")) bw_rows();
    if (want("launch")) launch_rows();
    if (concurrent && npes > 1 && !limited_mpg && (coll_on || !only.empty())) {
#ifndef NO_COLL
        coll_rows(bufsz);
#endif
        onstream_rows(bufsz);
    }
    nvshmem_barrier_all();
    nvshmem_free(sbuf);
    nvshmem_free(dbuf);
    nvshmem_free(flag_p);
    nvshmem_free(flag_s);
    nvshmem_finalize();
    MPI_Finalize();
    return 0;
}
