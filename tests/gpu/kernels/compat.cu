// tests/gpu/kernels/compat.cu: the NVSHMEM names (include/goshmem/nvshmem_compat.h)
// on the GPU, checked with values like devtest.cu. One block of >= 64 threads.
#include <goshmem/nvshmem_compat.h>

#define FAIL()                                                                                                        \
    do {                                                                                                              \
        atomicAdd(&res[0], 1);                                                                                        \
        atomicCAS(&res[1], 0, __LINE__);                                                                              \
    } while (0)
#define CHECK(c)                                                                                                      \
    do {                                                                                                              \
        if (!(c)) FAIL();                                                                                             \
    } while (0)

extern "C" __global__ void c_compat(char *buf, int *res, int want_pe, int want_npes, int rounds)
{
    const int me = nvshmem_my_pe(), np = nvshmem_n_pes();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    int *iv = (int *)buf;
    uint64_t *sig = (uint64_t *)(buf + 256);
    long *lv = (long *)(buf + 512);
    char *inbox = buf + 1024, *src = buf + 8192, *got = buf + 16384;
    const int n = 300;
    if (tid == 0) {
        CHECK(me == want_pe && np == want_npes);
        CHECK(nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD) == me && nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD) == np);
        /* the node team is published at Init in its fixed slot (NVSHMEM_TEAM_SHARED == NVSHMEMX_TEAM_NODE) */
        const int nm = nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE), nn = nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED);
        CHECK(nm >= 0 && nm < nn && nn <= np && nvshmem_team_translate_pe(NVSHMEM_TEAM_SHARED, nm, NVSHMEM_TEAM_WORLD) == me);
        /* load/store peers give an address; a peer behind the proxy or IBGDA (heap_base 0) gives NULL */
        CHECK((nvshmem_ptr(buf, right) != NULL) == (goshmemi_cstate()->heap_base[right] != 0) &&
              nvshmem_ptr(buf, np) == NULL);
        nvshmem_int_p(&iv[0], 42 + me, right);
        nvshmem_quiet();
    }
    nvshmemx_barrier_all_block();
    if (tid == 0) CHECK(nvshmem_int_g(&iv[0], me) == 42 + left);
    for (int r = 1; r <= rounds; r++) {
        for (int i = tid; i < n; i += nt) src[i] = (char)(r * 3 + i + me);
        __syncthreads();
        nvshmemx_putmem_signal_nbi_block(inbox, src, n, sig, (uint64_t)r, NVSHMEM_SIGNAL_SET, right);
        if (tid == 0) CHECK(nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, (uint64_t)r) == (uint64_t)r);
        __syncthreads();
        for (int i = tid; i < n; i += nt) CHECK(((volatile char *)inbox)[i] == (char)(r * 3 + i + left));
        nvshmemx_barrier_all_block(); // everyone consumed its inbox before the next round
    }
    // typed get/put, fence, atomics, waits, team barrier
    if (tid < 32) nvshmemx_getmem_warp(got, src, n, right);
    __syncwarp();
    if (tid < 32)
        for (int i = tid; i < n; i += 32) CHECK(got[i] == (char)(rounds * 3 + i + right));
    if (tid == 0) {
        long v[4] = {1, 2, 3, 4 + me};
        nvshmem_long_put(lv, v, 4, right);
        nvshmem_fence();
        nvshmemx_signal_op(sig + 8, 1, NVSHMEM_SIGNAL_ADD, right);
        nvshmem_uint64_wait_until(sig + 8, NVSHMEM_CMP_EQ, 1);
        CHECK(lv[0] == 1 && lv[3] == 4 + left);
        long w[4];
        nvshmem_long_get(w, lv, 4, right);
        CHECK(w[3] == 4 + me);
        CHECK(nvshmem_signal_fetch(sig + 8) == 1);
        (void)nvshmem_int_atomic_fetch_add(&iv[1], 1, 0);
        nvshmem_int_atomic_inc(&iv[2], 0);
        (void)nvshmem_int_atomic_compare_swap(&iv[3], 0, me + 1, 0);
        nvshmem_quiet();
    }
    nvshmemx_barrier_all_block();
    if (tid == 0) {
        CHECK(nvshmem_int_atomic_fetch(&iv[1], 0) == np);
        CHECK(nvshmem_int_atomic_fetch(&iv[2], 0) == np);
        int c = nvshmem_int_atomic_fetch(&iv[3], 0);
        CHECK(c >= 1 && c <= np);
        nvshmem_barrier(NVSHMEM_TEAM_WORLD);
        nvshmem_sync_all();
        nvshmem_barrier_all();
        res[2] = rounds;
    }
    nvshmemx_sync_all_block();
}
