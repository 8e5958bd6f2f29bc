/* The floor under the proxy's tuned enqueue on this GPU (issue 7): one
 * thread posts N 16-byte descriptors with plain posted stores, the way
 * goshmemx_proxy_producer_uint64_p does, minus everything else, so the
 * cost of the store itself can be told from goshmem's. Not part of the
 * library; a diagnostic. Variants (per-iteration clock64, as px_enqueue):
 *   0  st.global.v2.u64 into host-pinned slots (the tuned "one posted 16 B store")
 *   1  0 + st.global.u64 of the head into GPU memory (what the producer does now)
 *   2  0 + st.global.u64 of the head into host-pinned memory
 *   3  st.global.v2.u64 into GPU memory (no PCIe)
 *   4  0 through st.global.wt (write-through hint)
 *   5  st.relaxed.sys.global.v2.u64 + the head store (goshmem's producer)
 *   6  st.volatile v2 + head store       7  st.relaxed.gpu v2 + head store
 *   8  st.relaxed.sys v2 alone
 * each with no CPU reader and with a host thread consuming the slots as a
 * proxy worker does (reads the phase bit, acknowledges nothing).
 * Build and run: nvcc -O3 -std=c++17 -arch=sm_90 -o enqueue_floor enqueue_floor.cu && ./enqueue_floor */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

__device__ __forceinline__ long long clk()
{
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
}

__device__ __forceinline__ unsigned long long gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

/* total[0]: clock64 ticks of the loop, total[1]: its globaltimer ns */
template <int V>
__global__ void floor_kernel(unsigned long long *slots, unsigned long long *head, int lg, int n, long long *samples,
                             long long *total)
{
    unsigned long long g0 = gtimer();
    long long t0 = clk();
    for (int i = 0; i < n; i++) {
        long long c0 = clk();
        unsigned long long *s = slots + 2 * (i & ((1 << lg) - 1));
        unsigned long long w0 = ((unsigned long long)i << 24) | 0x11 | (((i >> lg) & 1) ^ 1);
        unsigned long long w1 = (unsigned long long)i * 7;
        if (V == 4)
            asm volatile("st.global.wt.v2.u64 [%0], {%1, %2};" ::"l"(s), "l"(w0), "l"(w1) : "memory");
        else if (V == 5 || V == 8)
            asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(s), "l"(w0), "l"(w1) : "memory");
        else if (V == 6)
            asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(s), "l"(w0), "l"(w1) : "memory");
        else if (V == 7)
            asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(s), "l"(w0), "l"(w1) : "memory");
        else
            asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(s), "l"(w0), "l"(w1) : "memory");
        if (V == 1 || V == 2 || V == 5 || V == 6 || V == 7)
            asm volatile("st.global.u64 [%0], %1;" ::"l"(head), "l"((unsigned long long)i + 1) : "memory");
        long long c1 = clk();
        samples[i] = c1 - c0;
    }
    total[0] = clk() - t0;
    total[1] = (long long)(gtimer() - g0);
}

static void run(int v, bool poller, unsigned long long *hslots, unsigned long long *dslots_host,
                unsigned long long *dslots_dev, unsigned long long *head_dev, unsigned long long *head_host, int lg,
                int n, long long *samples, long long *total)
{
    std::atomic<bool> stop{false};
    std::thread th;
    if (poller) {
        memset(hslots, 0, (size_t)16 << lg);
        th = std::thread([&] {
            unsigned long long t = 0;
            volatile unsigned long long *s = hslots;
            while (!stop.load(std::memory_order_relaxed) && t < (unsigned long long)n) {
                unsigned long long w0 = s[2 * (t & ((1ull << lg) - 1))];
                if ((w0 & 1) == (((t >> lg) & 1) ^ 1) && (w0 >> 24) == (t & 0xffffffffffull)) t++;
            }
        });
    } else {
        memset(hslots, 0, (size_t)16 << lg);
    }
    unsigned long long *slots = v == 3 ? dslots_dev : dslots_host;
    unsigned long long *head = v == 2 ? head_host : head_dev;
    switch (v) {
    case 0: floor_kernel<0><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 1: floor_kernel<1><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 2: floor_kernel<2><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 3: floor_kernel<3><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 4: floor_kernel<4><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 5: floor_kernel<5><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 6: floor_kernel<6><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    case 7: floor_kernel<7><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    default: floor_kernel<8><<<1, 1>>>(slots, head, lg, n, samples, total); break;
    }
    CK(cudaDeviceSynchronize());
    stop = true;
    if (th.joinable()) th.join();
    std::vector<long long> h(n);
    long long tt[2];
    CK(cudaMemcpy(h.data(), samples, sizeof(long long) * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(tt, total, sizeof tt, cudaMemcpyDeviceToHost));
    const double ghz = (double)tt[0] / (double)tt[1], tot = (double)tt[0];
    std::vector<long long> w(h.begin() + n / 10, h.end()); /* drop warm-up */
    std::sort(w.begin(), w.end());
    const char *names[] = {"v2 store to host-pinned slot", "v2 host-pinned + head store to GPU memory",
                           "v2 host-pinned + head store to host-pinned", "v2 store to GPU memory",
                           "v2.wt store to host-pinned slot",
                           "st.relaxed.sys v2 host-pinned + head store to GPU memory (goshmem's producer)",
                           "st.volatile v2 host-pinned + head store to GPU memory",
                           "st.relaxed.gpu v2 host-pinned + head store to GPU memory",
                           "st.relaxed.sys v2 host-pinned, no head store"};
    printf("{\"variant\":%d,\"what\":\"%s\",\"cpu_reader\":%s,\"n\":%d,\"median_us\":%.4f,\"p99_us\":%.4f,"
           "\"mean_us_loop\":%.4f,\"ghz\":%.3f}\n",
           v, names[v], poller ? "true" : "false", n, w[w.size() / 2] / ghz / 1e3, w[w.size() * 99 / 100] / ghz / 1e3,
           tot / n / ghz / 1e3, ghz);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000, lg = 14;
    CK(cudaSetDevice(0));
    unsigned long long *hslots, *dslots_host, *dslots_dev, *head_dev, *head_hostp, *head_host;
    long long *samples, *total;
    CK(cudaHostAlloc((void **)&hslots, (size_t)16 << lg, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dslots_host, hslots, 0));
    CK(cudaHostAlloc((void **)&head_hostp, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&head_host, head_hostp, 0));
    CK(cudaMalloc((void **)&dslots_dev, (size_t)16 << lg));
    CK(cudaMalloc((void **)&head_dev, 64));
    CK(cudaMalloc((void **)&samples, sizeof(long long) * n));
    CK(cudaMalloc((void **)&total, 2 * sizeof(long long)));
    if (n > (1 << lg)) n = 1 << lg; /* no lap: the poller's check stays simple */
    for (int rep = 0; rep < 2; rep++)
        for (int v = 0; v < 9; v++)
            for (int p = 0; p < 2; p++) run(v, p == 1, hslots, dslots_host, dslots_dev, head_dev, head_host, lg, n,
                                             samples, total);
    return 0;
}
