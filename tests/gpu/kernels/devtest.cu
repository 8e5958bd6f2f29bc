// tests/gpu/kernels/devtest.cu: device test suite for include/goshmem.h.
// Driven by tests/gpu/devtest (Go, mpirun -np N). Every kernel is
// PE-parametric (ring: right = me+1, left = me-1) and checks values: a
// failed check adds 1 to res[0] and records the first failing source line
// in res[1]; res[2..] carry values the host prints or checks too.
// `buf` is one symmetric device array (shmem.AllocDevice[uint8]) that the
// host zeroes before every kernel; each kernel carves its own regions.
//
// Build: nvcc -std=c++17 -Iinclude -gencode arch=compute_90,code=sm_90
//        -gencode arch=compute_90,code=compute_90 -fatbin devtest.cu
#include <goshmem.h>

#define FAIL()                                                                                                        \
    do {                                                                                                              \
        atomicAdd(&res[0], 1);                                                                                        \
        atomicCAS(&res[1], 0, __LINE__);                                                                              \
    } while (0)
#define CHECK(c)                                                                                                      \
    do {                                                                                                              \
        if (!(c)) FAIL();                                                                                             \
    } while (0)

__device__ int g_not_symmetric; // a device global outside the heap (goshmem_ptr -> NULL)

__device__ __forceinline__ unsigned tid_() { return threadIdx.x; }
__device__ __forceinline__ unsigned char pat(int pe, int phase, size_t i)
{
    return (unsigned char)(pe * 37 + phase * 101 + i * 13 + 1);
}

// ---- info ----------------------------------------------------------------
extern "C" __global__ void t_info(int *res)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        res[2] = goshmem_my_pe();
        res[3] = goshmem_n_pes();
        res[4] = goshmemx_state_ok();
        goshmemx_check_state();
    }
}

// ---- putmem / getmem: thread, warp, block, _nbi; 3 alignments --------------
// One block (>= 64 threads). Region: src = buf, dst = buf + 64 KiB.
extern "C" __global__ void t_rma(char *buf, int *res, int n)
{
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const unsigned tid = tid_(), nt = blockDim.x;
    char *src = buf, *dst = buf + 65536;
    const int offs[3][2] = {{0, 0}, {1, 1}, {3, 6}}; // (src, dst) misalignment
    int phase = 0;
    for (int mode = 0; mode < 12; mode++) {
        for (int o = 0; o < 3; o++) {
            phase++;
            char *s = src + offs[o][0], *d = dst + offs[o][1];
            for (int i = tid; i < n + 64; i += nt) dst[i] = 0;
            for (int i = tid; i < n; i += nt) s[i] = (char)pat(me, phase, i);
            goshmemx_barrier_all_block(); // A: every src filled, every dst cleared
            const bool put = mode < 6;
            switch (mode) {
            case 0: if (tid == 0) goshmem_putmem(d, s, n, right); break;
            case 1: if (tid == 0) goshmem_putmem_nbi(d, s, n, right); break;
            case 2: if (tid < 32) goshmemx_putmem_warp(d, s, n, right); break;
            case 3: if (tid < 32) goshmemx_putmem_nbi_warp(d, s, n, right); break;
            case 4: goshmemx_putmem_block(d, s, n, right); break;
            case 5: goshmemx_putmem_nbi_block(d, s, n, right); break;
            // gets: my dst <- right's src
            case 6: if (tid == 0) goshmem_getmem(d, s, n, right); break;
            case 7: if (tid == 0) { goshmem_getmem_nbi(d, s, n, right); goshmem_quiet(); } break;
            case 8: if (tid < 32) goshmemx_getmem_warp(d, s, n, right); break;
            case 9: if (tid < 32) { goshmemx_getmem_nbi_warp(d, s, n, right); goshmem_quiet(); } break;
            case 10: goshmemx_getmem_block(d, s, n, right); break;
            default: goshmemx_getmem_nbi_block(d, s, n, right); goshmem_quiet(); break;
            }
            goshmemx_barrier_all_block(); // B: puts complete, everyone done reading srcs
            const int from = put ? left : right;
            for (int i = tid; i < n; i += nt)
                if ((unsigned char)((volatile char *)d)[i] != pat(from, phase, i)) { FAIL(); break; }
            // guard bytes around the copy stay zero
            if (tid < (unsigned)offs[o][1]) CHECK(((volatile char *)dst)[tid] == 0);
            if (tid < 32) CHECK(((volatile char *)d)[n + tid] == 0);
            __syncthreads();
        }
    }
    if (tid == 0) res[2] = phase;
}

// ---- typed put/get/p/g (every RMA type), sized put/get -------------------
#define TV(TYPE, pe, i) ((TYPE)((pe) * 100 + phase * 7 + (i)))
#define TYPED_PHASE(NAME, TYPE, BITS)                                                                                 \
    {                                                                                                                 \
        phase++;                                                                                                      \
        const int N = 33;                                                                                             \
        TYPE *s = (TYPE *)buf, *d = (TYPE *)(buf + 65536), *g = (TYPE *)(buf + 131072), *pp = (TYPE *)(buf + 196608); \
        for (int i = tid; i < 2 * N; i += nt) {                                                                       \
            d[i] = (TYPE)0;                                                                                           \
            g[i] = (TYPE)0;                                                                                           \
        }                                                                                                             \
        for (int i = tid; i < N; i += nt) s[i] = TV(TYPE, me, i);                                                     \
        if (tid == 0) pp[0] = (TYPE)0;                                                                                \
        goshmemx_barrier_all_block();                                                                                 \
        if (tid == 0) {                                                                                               \
            goshmem_##NAME##_put(d, s, N, right);                                                                     \
            goshmem_##NAME##_p(pp, TV(TYPE, me, 999), right);                                                         \
            CHECK(goshmem_##NAME##_g(s + 5, right) == TV(TYPE, right, 5));                                            \
            goshmem_##NAME##_get(g, s, 7, right);                                                                     \
            goshmem_##NAME##_get_nbi(g + 7, s + 7, 3, right);                                                         \
        }                                                                                                             \
        if (tid >= 32 && tid < 64) goshmemx_##NAME##_put_nbi_warp(d + N, s, 11, right);                               \
        goshmemx_##NAME##_put_block(d + N + 11, s + 11, 11, right);                                                   \
        goshmemx_##NAME##_put_nbi_block(d + N + 22, s + 22, N - 22, right);                                           \
        if (tid < 32) goshmemx_##NAME##_get_warp(g + 10, s + 10, 5, right);                                           \
        goshmemx_##NAME##_get_block(g + 15, s + 15, 9, right);                                                        \
        if (tid >= 32 && tid < 64) goshmemx_##NAME##_get_nbi_warp(g + 24, s + 24, 4, right);                          \
        goshmemx_##NAME##_get_nbi_block(g + 28, s + 28, N - 28, right);                                               \
        goshmem_quiet();                                                                                              \
        goshmemx_barrier_all_block();                                                                                 \
        for (int i = tid; i < N; i += nt) {                                                                           \
            CHECK(((volatile TYPE *)d)[i] == TV(TYPE, left, i));                                                      \
            CHECK(((volatile TYPE *)d)[N + i] == TV(TYPE, left, i));                                                  \
            CHECK(((volatile TYPE *)g)[i] == TV(TYPE, right, i));                                                     \
        }                                                                                                             \
        if (tid == 0) CHECK(((volatile TYPE *)pp)[0] == TV(TYPE, left, 999));                                         \
        if (tid == 0) types++;                                                                                        \
        __syncthreads(); /* checks done before the next phase clears d/g */                                         \
    }
#define SIZED_PHASE(BITS, BYTES)                                                                                      \
    {                                                                                                                 \
        phase++;                                                                                                      \
        const int N = 9;                                                                                              \
        char *s = buf, *d = buf + 65536, *g = buf + 131072;                                                          \
        for (int i = tid; i < 2 * N * BYTES; i += nt) d[i] = g[i] = 0;                                                \
        for (int i = tid; i < N * BYTES; i += nt) s[i] = (char)pat(me, phase, i);                                     \
        goshmemx_barrier_all_block();                                                                                 \
        if (tid == 0) goshmem_put##BITS(d, s, N, right);                                                              \
        goshmemx_put##BITS##_nbi_block(d + N * BYTES, s, N, right);                                                   \
        if (tid < 32) goshmemx_get##BITS##_warp(g, s, N, right);                                                      \
        if (tid == 0) goshmem_get##BITS##_nbi(g + N * BYTES, s, N, right);                                            \
        goshmem_quiet();                                                                                              \
        goshmemx_barrier_all_block();                                                                                 \
        for (int i = tid; i < N * BYTES; i += nt) {                                                                   \
            CHECK((unsigned char)((volatile char *)d)[i] == pat(left, phase, i));                                     \
            CHECK((unsigned char)((volatile char *)d)[N * BYTES + i] == pat(left, phase, i));                         \
            CHECK((unsigned char)((volatile char *)g)[i] == pat(right, phase, i));                                    \
            CHECK((unsigned char)((volatile char *)g)[N * BYTES + i] == pat(right, phase, i));                        \
        }                                                                                                             \
        if (tid == 0) sizes++;                                                                                        \
        __syncthreads();                                                                                              \
    }
extern "C" __global__ void t_typed(char *buf, int *res)
{
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const unsigned tid = tid_(), nt = blockDim.x;
    int phase = 0, types = 0, sizes = 0;
    GOSHMEMI_FOR_RMA_TYPES(TYPED_PHASE)
    GOSHMEMI_FOR_SIZES(SIZED_PHASE)
    if (tid == 0) {
        res[2] = types;
        res[3] = sizes;
    }
}

// ---- ordering: fence / quiet / ctx_quiet / ctx_fence ----------------------
// Thread 0 sends `rounds` (data, flag) pairs to the right PE; thread 32
// receives from the left: after seeing flag >= v (acquire), data >= v.
extern "C" __global__ void t_order(char *buf, int *res, int rounds)
{
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np;
    long long *data = (long long *)buf, *data2 = (long long *)(buf + 128);
    uint64_t *flag = (uint64_t *)(buf + 256);
    if (threadIdx.x == 0) {
        for (int k = 1; k <= rounds; k++) {
            goshmem_longlong_p(data, k, right);
            switch (k & 3) {
            case 0: goshmem_fence(); break;
            case 1: goshmem_quiet(); break;
            case 2: goshmem_ctx_quiet(GOSHMEM_CTX_DEFAULT); break;
            default: goshmem_ctx_fence(GOSHMEM_CTX_DEFAULT); break;
            }
            goshmem_uint64_p(flag, (uint64_t)k, right);
            // quiet: a completed put is seen by a later get
            goshmem_longlong_p(data2, 7 * k, right);
            goshmem_quiet();
            CHECK(goshmem_longlong_g(data2, right) == 7 * k);
        }
    } else if (threadIdx.x == 32) {
        uint64_t last = 0;
        int seen = 0;
        while (last < (uint64_t)rounds) {
            uint64_t v = goshmem_signal_wait_until(flag, GOSHMEM_CMP_GT, last);
            CHECK(v > last && v <= (uint64_t)rounds);
            long long d = goshmem_longlong_g(data, me);
            CHECK(d >= (long long)v);
            last = v;
            seen++;
        }
        res[2] = seen;
    }
}

// ---- signals: putmem_signal (+nbi, warp, block), typed put_signal,
// putmem + fence + signal_op; SET r and ADD 1 both leave sig == r ---------
extern "C" __global__ void t_signal(char *buf, int *res, int n, int rounds)
{
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const unsigned tid = tid_(), nt = blockDim.x;
    char *inbox = buf, *src = buf + 65536;
    uint64_t *sig = (uint64_t *)(buf + 131072), *ack = (uint64_t *)(buf + 131072 + 64);
    int variants[10] = {0};
    for (int r = 1; r <= rounds; r++) {
        const int v = r % 10;
        for (int i = tid; i < n; i += nt) src[i] = (char)pat(me, r, i);
        __syncthreads();
        int checkn = n;
        switch (v) {
        case 0: if (tid == 0) goshmem_putmem_signal(inbox, src, n, sig, r, GOSHMEM_SIGNAL_SET, right); break;
        case 1: if (tid == 0) goshmem_putmem_signal_nbi(inbox, src, n, sig, 1, GOSHMEM_SIGNAL_ADD, right); break;
        case 2: if (tid < 32) goshmemx_putmem_signal_warp(inbox, src, n, sig, r, GOSHMEM_SIGNAL_SET, right); break;
        case 3: if (tid >= 32 && tid < 64) goshmemx_putmem_signal_nbi_warp(inbox, src, n, sig, 1, GOSHMEM_SIGNAL_ADD, right); break;
        case 4: goshmemx_putmem_signal_block(inbox, src, n, sig, r, GOSHMEM_SIGNAL_SET, right); break;
        case 5: goshmemx_putmem_signal_nbi_block(inbox, src, n, sig, 1, GOSHMEM_SIGNAL_ADD, right); break;
        case 6:
            checkn = (n / 4) * 4;
            if (tid == 0) goshmem_int_put_signal((int *)inbox, (const int *)src, n / 4, sig, r, GOSHMEM_SIGNAL_SET, right);
            break;
        case 7:
            checkn = (n / 8) * 8;
            goshmemx_double_put_signal_nbi_block((double *)inbox, (const double *)src, n / 8, sig, 1, GOSHMEM_SIGNAL_ADD, right);
            break;
        case 8:
            goshmemx_putmem_block(inbox, src, n, right);
            if (tid == 0) {
                goshmem_fence();
                goshmem_signal_op(sig, r, GOSHMEM_SIGNAL_SET, right);
            }
            break;
        default:
            if (tid < 32) goshmemx_putmem_nbi_warp(inbox, src, n, right);
            __syncthreads();
            if (tid == 0) {
                goshmem_quiet();
                goshmem_signal_op(sig, 1, GOSHMEM_SIGNAL_ADD, right);
            }
            break;
        }
        __syncthreads();
        if (tid == 0) {
            uint64_t got = goshmem_signal_wait_until(sig, GOSHMEM_CMP_GE, (uint64_t)r);
            CHECK(got == (uint64_t)r);
            CHECK(goshmem_signal_fetch(sig) == (uint64_t)r);
            variants[v]++;
        }
        __syncthreads();
        for (int i = tid; i < checkn; i += nt)
            if ((unsigned char)((volatile char *)inbox)[i] != pat(left, r, i)) { FAIL(); break; }
        __syncthreads();
        if (tid == 0) {
            goshmem_signal_op(ack, 1, GOSHMEM_SIGNAL_ADD, left); // my inbox is free again
            goshmem_uint64_wait_until(ack, GOSHMEM_CMP_GE, (uint64_t)r); // right consumed mine
        }
        __syncthreads();
    }
    if (tid == 0) {
        int covered = 0;
        for (int v = 0; v < 10; v++) covered += variants[v] > 0;
        res[2] = covered;
        res[3] = (int)goshmem_signal_fetch(sig);
    }
}

// ---- wait_until / _all / _any / _some (+_vector), test / _all / _any / _some
extern "C" __global__ void t_wait(char *buf, int *res)
{
    if (threadIdx.x != 0) return;
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np;
    long long *iv = (long long *)buf;           // 16
    int *ii = (int *)(buf + 256);               // 4
    uint64_t *uu = (uint64_t *)(buf + 512);     // 4
    short *ss = (short *)(buf + 768);           // 4
    unsigned *ui = (unsigned *)(buf + 1024);    // 4
    size_t idx[16];
    int checks = 0;
    // phase 1: nothing set yet
    CHECK(goshmem_longlong_test(&iv[0], GOSHMEM_CMP_EQ, 5) == 0);
    CHECK(goshmem_longlong_test(&iv[0], GOSHMEM_CMP_EQ, 0) == 1);
    CHECK(goshmem_longlong_test_any(iv, 4, NULL, GOSHMEM_CMP_NE, 0) == SIZE_MAX);
    CHECK(goshmem_longlong_test_some(iv, 4, idx, NULL, GOSHMEM_CMP_NE, 0) == 0);
    CHECK(goshmem_longlong_test_all(iv, 4, NULL, GOSHMEM_CMP_EQ, 0) == 1);
    CHECK(goshmem_longlong_test_all(iv, 4, NULL, GOSHMEM_CMP_NE, 0) == 0);
    checks += 6;
    goshmem_barrier_all();
    // phase 2: single waits, several types
    goshmem_longlong_p(&iv[0], 5, right);
    goshmem_int_p(&ii[0], 7, right);
    goshmem_uint64_p(&uu[0], 1ull << 40, right);
    goshmem_short_p(&ss[0], -3, right);
    goshmem_uint_p(&ui[0], 0xfffffff0u, right);
    goshmem_quiet();
    goshmem_longlong_wait_until(&iv[0], GOSHMEM_CMP_EQ, 5);
    goshmem_int_wait_until(&ii[0], GOSHMEM_CMP_GE, 7);
    goshmem_uint64_wait_until(&uu[0], GOSHMEM_CMP_GT, 1ull << 39);
    goshmem_short_wait_until(&ss[0], GOSHMEM_CMP_LT, 0);
    goshmem_uint_wait_until(&ui[0], GOSHMEM_CMP_NE, 0);
    CHECK(goshmem_longlong_test(&iv[0], GOSHMEM_CMP_EQ, 5) == 1);
    CHECK(goshmem_int_test(&ii[0], GOSHMEM_CMP_LE, 7) == 1);
    CHECK(goshmem_int_test(&ii[0], GOSHMEM_CMP_LT, 7) == 0);
    CHECK(goshmem_uint64_test(&uu[0], GOSHMEM_CMP_EQ, 1ull << 40) == 1);
    CHECK(ss[0] == -3 && ui[0] == 0xfffffff0u);
    checks += 5;
    // phase 3: wait_until_all over iv[1..8], set in reverse order
    for (int i = 8; i >= 1; i--) goshmem_longlong_p(&iv[i], 10 + i, right);
    goshmem_longlong_wait_until_all(&iv[1], 8, NULL, GOSHMEM_CMP_GE, 11);
    for (int i = 1; i <= 8; i++) CHECK(((volatile long long *)iv)[i] == 10 + i);
    CHECK(goshmem_longlong_test_all(&iv[1], 8, NULL, GOSHMEM_CMP_GT, 10) == 1);
    checks += 9;
    goshmem_barrier_all();
    // phase 4: wait_until_any with a status mask over iv[9..12]: only index 2 is active and set last
    {
        int status[4] = {1, 1, 0, 1};
        goshmem_longlong_p(&iv[9], 1, right);
        goshmem_longlong_p(&iv[10], 1, right);
        goshmem_longlong_p(&iv[12], 1, right);
        goshmem_quiet();
        goshmem_longlong_p(&iv[11], 1, right);
        size_t a = goshmem_longlong_wait_until_any(&iv[9], 4, status, GOSHMEM_CMP_EQ, 1);
        CHECK(a == 2);
        CHECK(goshmem_longlong_test_any(&iv[9], 4, status, GOSHMEM_CMP_EQ, 1) == 2);
        int none[4] = {1, 1, 1, 1};
        CHECK(goshmem_longlong_test_any(&iv[9], 4, none, GOSHMEM_CMP_EQ, 1) == SIZE_MAX);
        checks += 3;
    }
    // phase 5: wait_until_some over iv[13..15]: 13 and 15 get 3, 14 stays 0
    goshmem_longlong_p(&iv[13], 3, right);
    goshmem_longlong_p(&iv[15], 3, right);
    goshmem_quiet();
    goshmem_barrier_all();
    {
        size_t k = goshmem_longlong_wait_until_some(&iv[13], 3, idx, NULL, GOSHMEM_CMP_EQ, 3);
        CHECK(k == 2 && idx[0] == 0 && idx[1] == 2);
        k = goshmem_longlong_test_some(&iv[13], 3, idx, NULL, GOSHMEM_CMP_EQ, 3);
        CHECK(k == 2 && idx[0] == 0 && idx[1] == 2);
        int st[3] = {1, 0, 0};
        k = goshmem_longlong_test_some(&iv[13], 3, idx, st, GOSHMEM_CMP_EQ, 3);
        CHECK(k == 1 && idx[0] == 2);
        checks += 3;
    }
    // phase 6: _vector forms on iv[1..3] = {11, 12, 13}
    {
        long long all[3] = {11, 12, 13}, any[3] = {0, 12, 0}, some[3] = {11, 0, 13};
        int st[3] = {1, 0, 0};
        goshmem_longlong_wait_until_all_vector(&iv[1], 3, NULL, GOSHMEM_CMP_EQ, all);
        CHECK(goshmem_longlong_wait_until_any_vector(&iv[1], 3, st, GOSHMEM_CMP_EQ, any) == 1);
        size_t k = goshmem_longlong_wait_until_some_vector(&iv[1], 3, idx, NULL, GOSHMEM_CMP_EQ, some);
        CHECK(k == 2 && idx[0] == 0 && idx[1] == 2);
        checks += 2;
    }
    goshmem_barrier_all();
    res[2] = checks;
}

// ---- atomics ---------------------------------------------------------------
// Many blocks x threads on every PE; the host checks the final values.
// Layout (offsets into buf, all on the target PE named):
//   0    u64 ctr (PE 0, fetch_add permutation source)
//   64   int i32ctr (PE np-1: inc, fetch_inc, add)
//   128  long long lock (PE 0), 192 long long lockval (PE 0)
//   256  uint or32, 260 uint and32 (host sets ~0), 264 uint xor32
//   272  u64 or64, 280 u64 and64 (host sets ~0), 288 u64 xor64  (PE 0)
//   320  int swapw (PE 0), 384 int swapold[np] (PE 0)
//   1024 double dset[np] (set by the left PE), 2048 float fswap (PE 0)
//   4096 u64 fetch-monotonic failures; 65536 int hits[ctr values]
extern "C" __global__ void t_amo(char *buf, int *res, int iters, int locks, int nhits)
{
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np;
    unsigned long long *ctr = (unsigned long long *)buf;
    int *i32 = (int *)(buf + 64);
    long long *lock = (long long *)(buf + 128), *lockval = (long long *)(buf + 192);
    unsigned *or32 = (unsigned *)(buf + 256), *and32 = (unsigned *)(buf + 260), *xor32 = (unsigned *)(buf + 264);
    uint64_t *or64 = (uint64_t *)(buf + 272), *and64 = (uint64_t *)(buf + 280), *xor64 = (uint64_t *)(buf + 288);
    int *swapw = (int *)(buf + 320), *swapold = (int *)(buf + 384);
    double *dset = (double *)(buf + 1024);
    float *fswap = (float *)(buf + 2048);
    int *hits = (int *)(buf + 65536);
    unsigned long long prev = 0;
    for (int k = 0; k < iters; k++) {
        unsigned long long old = goshmem_ulonglong_atomic_fetch_add(ctr, 1ull, 0);
        if (old < (unsigned long long)nhits)
            goshmem_int_atomic_add(&hits[old], 1, 0);
        else
            FAIL();
        unsigned long long f = goshmem_ulonglong_atomic_fetch(ctr, 0);
        CHECK(f > old && f >= prev); // monotonic, and includes my own add
        prev = f;
        goshmem_int_atomic_inc(i32, np - 1);
        (void)goshmem_int_atomic_fetch_inc(i32, np - 1);
        goshmem_int32_atomic_add(i32, 2, np - 1);
    }
    if (threadIdx.x == 0) {
        for (int l = 0; l < locks; l++) {
            const long long mine = me * 1024 + blockIdx.x + 1;
            while (goshmem_longlong_atomic_compare_swap(lock, 0, mine, 0) != 0) {
            }
            goshmem_quiet(); // acquire
            long long x = goshmem_longlong_g(lockval, 0);
            goshmem_longlong_p(lockval, x + 1, 0);
            goshmem_quiet(); // release
            CHECK(goshmem_longlong_atomic_swap(lock, 0, 0) == mine);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        unsigned o = goshmem_uint_atomic_fetch_or(or32, 1u << me, 0);
        CHECK((o & (1u << me)) == 0);
        goshmem_uint_atomic_and(and32, ~(1u << me), 0);
        unsigned x = goshmem_uint_atomic_fetch_xor(xor32, 1u << me, 0);
        CHECK((x & (1u << me)) == 0);
        goshmem_uint64_atomic_or(or64, 1ull << (32 + me), 0);
        uint64_t a = goshmem_uint64_atomic_fetch_and(and64, ~(1ull << (32 + me)), 0);
        CHECK((a & (1ull << (32 + me))) != 0);
        goshmem_uint64_atomic_xor(xor64, 3ull << (2 * me), 0);
        (void)goshmem_int32_atomic_fetch_or((int32_t *)(buf + 296), 1 << me, 0);
        int old = goshmem_int_atomic_swap(swapw, me + 1, 0);
        goshmem_int_p(&swapold[me], old, 0);
        goshmem_double_atomic_set(&dset[me], 0.5 + me, right);
        (void)goshmem_float_atomic_swap(fswap, 1.25f, 0);
        goshmem_quiet();
    }
}

// ---- barrier_all / sync_all: thread, warp, block -----------------------
// form: 0 thread, 1 warp, 2 block; sync: 0 barrier_all, 1 sync_all.
// Round r: the leader stores r into slot[r&1][me] on every PE, runs the
// barrier, and then must see r in every PE's slot; counts rounds on PE 0.
extern "C" __global__ void t_barrier(char *buf, int *res, int rounds, int form, int sync)
{
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const unsigned tid = tid_();
    unsigned long long *slot = (unsigned long long *)buf; // [2][128]
    unsigned long long *total = (unsigned long long *)(buf + 4096);
    const bool leader = tid == 0;
    const bool in = form == 2 || (form == 1 && tid < 32) || (form == 0 && tid == 0);
    unsigned long long t0 = goshmemi_now_ns();
    for (int r = 1; r <= rounds; r++) {
        unsigned long long *s = slot + (r & 1) * 128;
        if (leader)
            for (int j = 0; j < np; j++) goshmem_ulonglong_p(&s[me], (unsigned long long)r, j);
        if (in) {
            if (form == 0) {
                if (sync) goshmem_sync_all(); else goshmem_barrier_all();
            } else if (form == 1) {
                if (sync) goshmemx_sync_all_warp(); else goshmemx_barrier_all_warp();
            } else {
                if (sync) goshmemx_sync_all_block(); else goshmemx_barrier_all_block();
            }
        }
        if (leader) {
            for (int j = 0; j < np; j++) CHECK(goshmem_ulonglong_g(&s[j], me) == (unsigned long long)r);
            goshmem_ulonglong_atomic_inc(total, 0);
        }
    }
    if (leader) {
        unsigned long long dt = goshmemi_now_ns() - t0;
        res[2] = (int)(dt / 1000); // microseconds for all rounds
        res[3] = rounds;
    }
}

// ---- team barrier/sync on split teams; team queries -------------------
// teamA: device id of a team this PE is in (my index idxA of nA members,
// world PE of member j = startA + j*strideA); teamB: a second team's id or -1.
extern "C" __global__ void t_team(char *buf, int *res, int teamA, int idxA, int nA, int startA, int strideA,
                                  int teamB, int idxB, int nB, int rounds)
{
    const int me = goshmem_my_pe();
    const unsigned tid = tid_();
    unsigned long long *slot = (unsigned long long *)buf;
    if (tid == 0) {
        CHECK(goshmem_team_my_pe(teamA) == idxA);
        CHECK(goshmem_team_n_pes(teamA) == nA);
        CHECK(goshmem_team_translate_pe(teamA, idxA, GOSHMEM_TEAM_WORLD) == me);
        CHECK(goshmem_team_translate_pe(GOSHMEM_TEAM_WORLD, me, teamA) == idxA);
        CHECK(goshmem_team_translate_pe(teamA, nA, GOSHMEM_TEAM_WORLD) == -1);
        CHECK(goshmem_team_my_pe(GOSHMEM_TEAM_WORLD) == me);
        if (teamB >= 0) {
            CHECK(goshmem_team_my_pe(teamB) == idxB);
            CHECK(goshmem_team_n_pes(teamB) == nB);
        } else {
            CHECK(goshmem_team_my_pe(teamB) == -1);
        }
    }
    for (int r = 1; r <= rounds; r++) {
        unsigned long long *s = slot + (r & 1) * 128;
        if (tid == 0)
            for (int j = 0; j < nA; j++) goshmem_ulonglong_p(&s[idxA], (unsigned long long)r, startA + j * strideA);
        switch (r & 3) {
        case 0: if (tid == 0) goshmem_barrier(teamA); break;
        case 1: goshmemx_barrier_block(teamA); break;
        case 2: if (tid < 32) goshmemx_team_sync_warp(teamA); break;
        default: if (tid == 0) goshmem_team_sync(teamA); break;
        }
        if (tid == 0)
            for (int j = 0; j < nA; j++) CHECK(goshmem_ulonglong_g(&s[j], me) == (unsigned long long)r);
        __syncthreads();
    }
    if (teamB >= 0) {
        for (int r = 0; r < 4; r++) goshmemx_barrier_block(teamB);
        if (tid == 0) goshmem_team_sync(teamB);
    }
    goshmemx_barrier_all_block();
    if (tid == 0) res[2] = rounds;
}

// ---- goshmem_ptr ----------------------------------------------------------
extern "C" __global__ void t_ptr(char *buf, int *res)
{
    if (threadIdx.x != 0) return;
    const int me = goshmem_my_pe(), np = goshmem_n_pes();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    int *a = (int *)(buf + 1024);
    // a PE reached through a remote transport (GOSHMEM_GPU_TRANSPORT=proxy)
    // has no load/store address: goshmem_ptr is NULL exactly for those
    const bool remote = goshmemi_cstate()->remote_transport != GOSHMEMI_REMOTE_NONE;
    for (int j = 0; j < np; j++)
        CHECK(goshmem_ptr(a, j) != NULL || (remote && j != me && goshmemi_cstate()->heap_base[j] == 0));
    CHECK(goshmem_ptr(a, me) == (void *)a);
    CHECK(goshmem_ptr(a, np) == NULL);
    CHECK(goshmem_ptr(a, -1) == NULL);
    CHECK(goshmem_ptr(&g_not_symmetric, me) == NULL);
    int *ra = (int *)goshmem_ptr(a, right);
    if (ra != NULL)
        ra[me] = 1000 + me; // plain store through the peer mapping
    else
        goshmem_int_p(&a[me], 1000 + me, right); // the remote path
    goshmem_barrier_all();
    CHECK(((volatile int *)a)[left] == 1000 + left);
    res[2] = 1;
}

// ---- fault: an illegal address (the -fault mode) ---------------------------
extern "C" __global__ void t_fault(int *p)
{
    (void)p;
    if (threadIdx.x == 0) *(volatile int *)(uintptr_t)64 = 1; // unmapped: cudaErrorIllegalAddress
}

// ---- a benign kernel (the non-faulting PE in -fault mode) ---------------
extern "C" __global__ void t_nop(int *res)
{
    if (threadIdx.x == 0) res[2] = 1;
}
