// kernels.cu: compile check of the goshmem device API under nvcc. Every
// device call family is used at least once; `make hdrcheck` builds it to a
// fatbin (sm_90 SASS + compute_90 PTX) and checks the symbol
// goshmemi_device_state with cuobjdump. The kernels are also a smoke test
// when loaded on a GPU (extern "C": names unmangled for cuModuleGetFunction).
#include <goshmem.h>

// RMA: putmem/getmem (+nbi, warp, block), typed put/get/p/g (+nbi), sized.
extern "C" __global__ void k_rma(char *sym, float *fsym, double *dsym, long *lsym, const char *local, size_t n,
                                 int pe)
{
    goshmem_putmem(sym, local, n, pe);
    goshmem_putmem_nbi(sym + 1, local, n - 1, pe);
    goshmem_getmem((char *)local, sym, n, pe);
    goshmem_getmem_nbi((char *)local, sym, n, pe);
    goshmemx_putmem_warp(sym, local, n, pe);
    goshmemx_putmem_nbi_warp(sym, local, n, pe);
    goshmemx_getmem_warp((char *)local, sym, n, pe);
    goshmemx_getmem_nbi_warp((char *)local, sym, n, pe);
    goshmemx_putmem_block(sym, local, n, pe);
    goshmemx_putmem_nbi_block(sym, local, n, pe);
    goshmemx_getmem_block((char *)local, sym, n, pe);
    goshmemx_getmem_nbi_block((char *)local, sym, n, pe);
    goshmem_float_put(fsym, (const float *)local, n / 4, pe);
    goshmem_float_put_nbi(fsym, (const float *)local, n / 4, pe);
    goshmem_double_get(dsym, dsym + 8, 4, pe);
    goshmem_double_get_nbi(dsym, dsym + 8, 4, pe);
    goshmemx_float_put_nbi_block(fsym, fsym + 32, 32, pe);
    goshmemx_float_put_warp(fsym, fsym + 32, 32, pe);
    goshmemx_long_get_block(lsym, lsym + 4, 4, pe);
    goshmemx_long_get_nbi_warp(lsym, lsym + 4, 4, pe);
    goshmem_put64(lsym, lsym + 2, 2, pe);
    goshmemx_put128_block(lsym, lsym + 4, 1, pe);
    goshmem_get32_nbi(fsym, fsym + 1, 1, pe);
    goshmem_float_p(fsym, 1.0f, pe);
    goshmem_double_p(dsym, goshmem_double_g(dsym + 1, pe), pe);
    goshmem_char_p(sym, goshmem_char_g(sym + 1, pe), pe);
    goshmem_short_p((short *)sym, 3, pe);
    goshmem_int8_p((int8_t *)sym, (int8_t)goshmem_uint16_g((uint16_t *)sym, pe), pe);
    goshmem_size_p((size_t *)lsym, goshmem_ptrdiff_g((ptrdiff_t *)lsym, pe), pe);
    goshmem_fence();
    goshmem_ctx_fence(GOSHMEM_CTX_DEFAULT);
    goshmem_quiet();
    goshmem_ctx_quiet(GOSHMEM_CTX_DEFAULT);
    if (goshmem_ptr(sym, pe) != nullptr) *(char *)goshmem_ptr(sym, pe) = (char)goshmem_my_pe();
    lsym[0] = goshmem_n_pes();
}

// Signals: signal_op, putmem_signal (+nbi, warp, block), typed put_signal, wait, fetch.
extern "C" __global__ void k_signal(float *dst, const float *src, size_t n, uint64_t *sig, uint64_t round, int pe)
{
    goshmem_putmem_signal(dst, src, n * 4, sig, round, GOSHMEM_SIGNAL_SET, pe);
    goshmem_putmem_signal_nbi(dst, src, n * 4, sig, 1, GOSHMEM_SIGNAL_ADD, pe);
    goshmemx_putmem_signal_warp(dst, src, n * 4, sig, round, GOSHMEM_SIGNAL_SET, pe);
    goshmemx_putmem_signal_nbi_warp(dst, src, n * 4, sig, round, GOSHMEM_SIGNAL_SET, pe);
    goshmemx_putmem_signal_block(dst, src, n * 4, sig, round, GOSHMEM_SIGNAL_SET, pe);
    goshmemx_putmem_signal_nbi_block(dst, src, n * 4, sig, 1, GOSHMEM_SIGNAL_ADD, pe);
    goshmem_float_put_signal(dst, src, n, sig, round, GOSHMEM_SIGNAL_SET, pe);
    goshmemx_float_put_signal_nbi_block(dst, src, n, sig, round, GOSHMEM_SIGNAL_SET, pe);
    goshmem_signal_op(sig, 1, GOSHMEM_SIGNAL_ADD, pe);
    goshmem_signal_op(sig, round, GOSHMEM_SIGNAL_SET, pe);
    if (threadIdx.x == 0) {
        uint64_t v = goshmem_signal_wait_until(sig, GOSHMEM_CMP_GE, round);
        ((uint64_t *)dst)[0] = v + goshmem_signal_fetch(sig);
    }
}

// Point-to-point synchronization.
extern "C" __global__ void k_wait(int *ivars, long *lv, uint64_t *u, size_t n, int *out)
{
    int status[4] = {0, 0, 1, 0};
    size_t idx[4];
    int vec[4] = {1, 2, 3, 4};
    goshmem_int_wait_until(ivars, GOSHMEM_CMP_EQ, 1);
    goshmem_long_wait_until(lv, GOSHMEM_CMP_GT, 0L);
    goshmem_uint64_wait_until(u, GOSHMEM_CMP_NE, 0);
    goshmem_int_wait_until_all(ivars, n, status, GOSHMEM_CMP_GE, 1);
    out[0] = (int)goshmem_int_wait_until_any(ivars, n, status, GOSHMEM_CMP_LT, 5);
    out[1] = (int)goshmem_int_wait_until_some(ivars, n, idx, status, GOSHMEM_CMP_LE, 5);
    goshmem_int_wait_until_all_vector(ivars, 4, status, GOSHMEM_CMP_GE, vec);
    out[2] = (int)goshmem_int_wait_until_any_vector(ivars, 4, nullptr, GOSHMEM_CMP_GE, vec);
    out[3] = (int)goshmem_int_wait_until_some_vector(ivars, 4, idx, nullptr, GOSHMEM_CMP_GE, vec);
    out[4] = goshmem_int_test(ivars, GOSHMEM_CMP_EQ, 1) + goshmem_uint64_test(u, GOSHMEM_CMP_GT, 2);
    out[5] = goshmem_int_test_all(ivars, n, status, GOSHMEM_CMP_EQ, 1);
    out[6] = (int)goshmem_int_test_any(ivars, n, status, GOSHMEM_CMP_EQ, 1);
    out[7] = (int)goshmem_int_test_some(ivars, n, idx, status, GOSHMEM_CMP_EQ, 1) + (int)idx[0];
    goshmem_short_wait_until((short *)(ivars + 8), GOSHMEM_CMP_NE, (short)0);
}

// Atomics (32- and 64-bit, fetching and not, bitwise, float/double extended).
extern "C" __global__ void k_amo(int *i, long *l, unsigned long long *ull, uint32_t *u32, int64_t *i64, float *f,
                                 double *d, long *out, int pe)
{
    out[0] = goshmem_int_atomic_fetch_add(i, 1, pe);
    goshmem_int_atomic_add(i, 2, pe);
    out[1] = goshmem_long_atomic_fetch_inc(l, pe);
    goshmem_long_atomic_inc(l, pe);
    out[2] = goshmem_int_atomic_compare_swap(i, 0, 1, pe);
    out[3] = goshmem_longlong_atomic_swap((long long *)l, 5, pe);
    out[4] = goshmem_int_atomic_fetch(i, pe);
    goshmem_int_atomic_set(i, 0, pe);
    out[5] = (long)goshmem_ulonglong_atomic_fetch_and(ull, 0xffull, pe);
    out[6] = (long)goshmem_uint32_atomic_fetch_or(u32, 1u, pe);
    out[7] = (long)goshmem_int64_atomic_fetch_xor(i64, 3, pe);
    goshmem_ulonglong_atomic_and(ull, 1ull, pe);
    goshmem_uint32_atomic_or(u32, 2u, pe);
    goshmem_int64_atomic_xor(i64, 1, pe);
    goshmem_uint64_atomic_add((uint64_t *)ull, 7, pe);
    out[8] = (long)goshmem_size_atomic_fetch_add((size_t *)l, 1, pe);
    out[9] = goshmem_ptrdiff_atomic_compare_swap((ptrdiff_t *)l, 1, 2, pe);
    out[10] = (long)goshmem_uint_atomic_fetch_inc((unsigned int *)u32, pe);
    goshmem_float_atomic_set(f, 1.5f, pe);
    out[11] = (long)goshmem_float_atomic_swap(f, 2.5f, pe);
    out[12] = (long)goshmem_double_atomic_fetch(d, pe);
    goshmem_double_atomic_set(d, goshmem_double_atomic_swap(d, 3.0, pe), pe);
}

// Barriers and teams.
extern "C" __global__ void k_barrier_thread(int *out)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        goshmem_barrier_all();
        goshmem_sync_all();
        goshmem_barrier(GOSHMEM_TEAM_WORLD);
        goshmem_team_sync(GOSHMEM_TEAM_WORLD);
        out[0] = goshmem_team_my_pe(GOSHMEM_TEAM_WORLD) + goshmem_team_n_pes(GOSHMEM_TEAM_WORLD) +
                 goshmem_team_translate_pe(GOSHMEM_TEAM_WORLD, 0, 1);
    }
}
extern "C" __global__ void k_barrier_warp(void)
{
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        goshmemx_barrier_all_warp();
        goshmemx_sync_all_warp();
        goshmemx_barrier_warp(GOSHMEM_TEAM_WORLD);
        goshmemx_team_sync_warp(GOSHMEM_TEAM_WORLD);
    }
}
extern "C" __global__ void k_barrier_block(void)
{
    if (blockIdx.x == 0) {
        goshmemx_barrier_all_block();
        goshmemx_sync_all_block();
        goshmemx_barrier_block(1);
        goshmemx_team_sync_block(1);
    }
}
extern "C" __global__ void k_check_state(int *ok)
{
    goshmemx_check_state();
    *ok = goshmemx_state_ok();
}
