// compat_kernels.cu: compile check of the NVSHMEM names
// (include/goshmem/nvshmem_compat.h) under nvcc, written as NVSHMEM code
// is: one include, NVSHMEM's names, constants and types only. Every device
// family the compat header maps is used at least once (thread, _warp and
// _block forms); `make hdrcheck` builds it to a fatbin and checks it like
// kernels.cu. A host function calls the NVSHMEM host API the way ported
// programs do (declared by nvshmem_host.h; never linked), so a whole
// NVSHMEM .cu is known to compile by its include alone.
#include <goshmem/nvshmem_compat.h>

// what nvshmem.h brings in: half, bfloat16, cooperative groups
namespace cg = cooperative_groups;
static_assert(sizeof(half) == 2 && sizeof(__nv_bfloat16) == 2, "cuda_fp16.h / cuda_bf16.h");
static_assert(NVSHMEM_SIGNAL_SET == 9 && NVSHMEM_SIGNAL_ADD == 10, "NVSHMEM's signal-op values");
static_assert(NVSHMEM_CMP_EQ == 0 && NVSHMEM_CMP_NE == 1 && NVSHMEM_CMP_GT == 2 && NVSHMEM_CMP_LE == 3 &&
                  NVSHMEM_CMP_LT == 4 && NVSHMEM_CMP_GE == 5,
              "NVSHMEM's comparison values");

// PE queries, teams, pointers, ordering, contexts.
extern "C" __global__ void c_query(int *out, const char *sym)
{
    cg::thread_block b = cg::this_thread_block();
    out[0] = nvshmem_my_pe();
    out[1] = nvshmem_n_pes();
    out[2] = nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD);
    out[3] = nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED);
    out[4] = nvshmem_team_translate_pe(NVSHMEMX_TEAM_NODE, 0, NVSHMEM_TEAM_WORLD);
    out[5] = nvshmem_ptr(sym, out[4]) != NULL;
    nvshmem_team_t t = NVSHMEM_TEAM_INVALID;
    nvshmem_ctx_t c = NVSHMEM_CTX_DEFAULT;
    out[6] = (int)t + (int)c + (int)b.thread_rank();
    nvshmem_fence();
    nvshmem_quiet();
    nvshmem_ctx_fence(c);
    nvshmem_ctx_quiet(c);
}

// RMA: untyped, typed, sized; thread, warp, block; blocking and nbi; p/g.
extern "C" __global__ void c_rma(char *sym, float *fsym, double *dsym, long *lsym, const char *local, size_t n,
                                 int pe)
{
    nvshmem_putmem(sym, local, n, pe);
    nvshmem_getmem((char *)local, sym, n, pe);
    nvshmem_putmem_nbi(sym, local, n, pe);
    nvshmem_getmem_nbi((char *)local, sym, n, pe);
    nvshmemx_putmem_warp(sym, local, n, pe);
    nvshmemx_getmem_nbi_warp((char *)local, sym, n, pe);
    nvshmemx_putmem_nbi_block(sym, local, n, pe);
    nvshmemx_getmem_block((char *)local, sym, n, pe);
    nvshmem_float_put(fsym, fsym + 64, 16, pe);
    nvshmem_double_get(dsym, dsym + 8, 4, pe);
    nvshmem_long_put_nbi(lsym, lsym + 4, 2, pe);
    nvshmem_int_get_nbi((int *)lsym, (const int *)lsym + 8, 2, pe);
    nvshmemx_float_put_block(fsym, fsym + 64, 16, pe);
    nvshmemx_float_get_nbi_warp(fsym, fsym + 64, 16, pe);
    nvshmemx_uint64_put_nbi_block((uint64_t *)lsym, (const uint64_t *)lsym + 4, 2, pe);
    nvshmem_put64(lsym, lsym + 2, 2, pe);
    nvshmem_get32_nbi(fsym, fsym + 1, 1, pe);
    nvshmemx_put128_warp(lsym, lsym + 4, 1, pe);
    nvshmemx_get16_block((short *)sym, (const short *)sym + 8, 4, pe);
    nvshmem_float_p(fsym, 1.5f, pe);
    nvshmem_double_p(dsym, nvshmem_double_g(dsym + 1, pe), pe);
    nvshmem_char_p(sym, nvshmem_char_g(sym + 1, pe), pe);
    nvshmem_size_p((size_t *)lsym, nvshmem_ptrdiff_g((ptrdiff_t *)lsym, pe), pe);
}

// Signals: signal_op, putmem_signal and typed put_signal in every scope,
// blocking and nbi; fetch and wait.
extern "C" __global__ void c_signal(float *dst, const float *src, size_t n, uint64_t *sig, uint64_t round, int pe)
{
    nvshmemx_signal_op_t add = NVSHMEM_SIGNAL_ADD;
    nvshmem_putmem_signal(dst, src, n * 4, sig, round, NVSHMEM_SIGNAL_SET, pe);
    nvshmem_putmem_signal_nbi(dst, src, n * 4, sig, 1, add, pe);
    nvshmemx_putmem_signal_warp(dst, src, n * 4, sig, round, NVSHMEM_SIGNAL_SET, pe);
    nvshmemx_putmem_signal_nbi_block(dst, src, n * 4, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmem_float_put_signal(dst, src, n, sig, round, NVSHMEM_SIGNAL_SET, pe);
    nvshmem_float_put_signal_nbi(dst, src, n, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmemx_double_put_signal_block((double *)dst, (const double *)src, n / 2, sig, round, NVSHMEM_SIGNAL_SET, pe);
    nvshmemx_int_put_signal_nbi_warp((int *)dst, (const int *)src, n, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, pe);
    if (nvshmem_signal_fetch(sig) < round) (void)nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, round);
}

// Point-to-point synchronization: wait_until and test, all/any/some and
// their vector forms.
extern "C" __global__ void c_wait(int *ivars, uint64_t *u64, size_t n, size_t *idx, const int *status, int *out)
{
    nvshmemx_cmp_type_t ge = NVSHMEM_CMP_GE;
    nvshmem_int_wait_until(ivars, NVSHMEM_CMP_NE, 0);
    out[0] = nvshmem_int_test(ivars, ge, 1);
    nvshmem_int_wait_until_all(ivars, n, status, NVSHMEM_CMP_GT, 0);
    out[1] = (int)nvshmem_int_wait_until_any(ivars, n, status, NVSHMEM_CMP_EQ, 1);
    out[2] = (int)nvshmem_int_wait_until_some(ivars, n, idx, status, NVSHMEM_CMP_LE, 5);
    nvshmem_uint64_wait_until_all_vector(u64, n, status, NVSHMEM_CMP_LT, u64 + n);
    out[3] = (int)nvshmem_uint64_wait_until_any_vector(u64, n, status, NVSHMEM_CMP_GE, u64 + n);
    out[4] = (int)nvshmem_uint64_wait_until_some_vector(u64, n, idx, status, NVSHMEM_CMP_GE, u64 + n);
    out[5] = nvshmem_int_test_all(ivars, n, status, NVSHMEM_CMP_EQ, 1);
    out[6] = (int)nvshmem_int_test_any(ivars, n, status, NVSHMEM_CMP_EQ, 1);
    out[7] = (int)nvshmem_int_test_some(ivars, n, idx, status, NVSHMEM_CMP_EQ, 1);
}

// Atomics: standard, extended, bitwise.
extern "C" __global__ void c_amo(int *i, long long *ll, uint64_t *u, float *f, double *d, int pe)
{
    (void)nvshmem_int_atomic_fetch_add(i, 1, pe);
    nvshmem_int_atomic_add(i, 1, pe);
    (void)nvshmem_int_atomic_fetch_inc(i, pe);
    nvshmem_int_atomic_inc(i, pe);
    (void)nvshmem_longlong_atomic_compare_swap(ll, 0, 1, pe);
    (void)nvshmem_longlong_atomic_swap(ll, 2, pe);
    nvshmem_uint64_atomic_set(u, 3, pe);
    (void)nvshmem_uint64_atomic_fetch(u, pe);
    (void)nvshmem_uint64_atomic_fetch_and(u, 1, pe);
    nvshmem_uint64_atomic_or(u, 2, pe);
    (void)nvshmem_uint64_atomic_fetch_xor(u, 4, pe);
    nvshmem_uint64_atomic_and(u, 7, pe);
    (void)nvshmem_float_atomic_swap(f, 1.0f, pe);
    nvshmem_double_atomic_set(d, nvshmem_double_atomic_fetch(d, pe), pe);
}

// Barriers and team syncs in every scope.
extern "C" __global__ void c_sync(void)
{
    nvshmem_barrier_all();
    nvshmem_sync_all();
    nvshmemx_barrier_all_warp();
    nvshmemx_sync_all_block();
    nvshmem_barrier(NVSHMEM_TEAM_WORLD);
    nvshmem_team_sync(NVSHMEM_TEAM_SHARED);
    nvshmemx_barrier_block(NVSHMEMX_TEAM_NODE);
    nvshmemx_team_sync_warp(NVSHMEM_TEAM_WORLD);
}

// Collectives by their NVSHMEM names (coll_data.h's, mapped in the
// compat header's collectives block): every family, thread/warp/block,
// integer, float and 16-bit float types.
extern "C" __global__ void c_coll(int *i, float *f, half *h, __nv_bfloat16 *b, char *m, size_t n)
{
    int r = nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, i, i + n, n);
    r |= nvshmemx_int32_xor_reduce_warp(NVSHMEM_TEAM_SHARED, (int32_t *)i, (const int32_t *)i + n, n);
    r |= nvshmemx_float_max_reduce_block(NVSHMEM_TEAM_WORLD, f, f + n, n);
    r |= nvshmem_half_sum_reduce(NVSHMEM_TEAM_WORLD, h, h + n, n);
    r |= nvshmemx_bfloat16_prod_reduce_block(NVSHMEMX_TEAM_NODE, b, b + n, n);
    r |= nvshmem_int_sum_reducescatter(NVSHMEM_TEAM_WORLD, i, i + n, 1);
    r |= nvshmem_float_broadcast(NVSHMEM_TEAM_WORLD, f, f + n, n, 0);
    r |= nvshmemx_int_fcollect_block(NVSHMEM_TEAM_WORLD, i, i + n, 1);
    r |= nvshmemx_half_alltoall_warp(NVSHMEM_TEAM_WORLD, h, h + n, 1);
    r |= nvshmem_broadcastmem(NVSHMEM_TEAM_WORLD, m, m + 64, 8, 0);
    r |= nvshmemx_fcollectmem_warp(NVSHMEM_TEAM_WORLD, m, m + 64, 8);
    r |= nvshmemx_alltoallmem_block(NVSHMEM_TEAM_WORLD, m, m + 64, 8);
    r |= nvshmem_sync(NVSHMEM_TEAM_WORLD);
    r |= nvshmemx_team_sync_block(NVSHMEM_TEAM_SHARED);
    i[0] = r;
}

// maxloc on (value, location) pairs, as NVSHMEM's perftest redmaxloc calls it.
extern "C" __global__ void c_maxloc(double2 *d, const double2 *s, size_t n)
{
    int r = nvshmemx_double2_maxloc_reduce_block(NVSHMEM_TEAM_WORLD, d, s, 1);
    r |= nvshmem_double2_maxloc_reduce(NVSHMEM_TEAM_WORLD, d + 1, s + 1, n);
    d[0].y += r;
}

// The host side of a ported program: declared only (nvshmem_host.h), so a
// fatbin build compiles it and a host link would name the missing calls;
// the Go host API does this work in a goshmem program.
static int ported_main(void)
{
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (nvshmemx_get_uniqueid(&id) != NVSHMEMX_SUCCESS) return 1;
    nvshmemx_set_attr_uniqueid_args(0, 1, &id, &attr);
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    cudaStream_t s;
    cudaStreamCreate(&s);
    float *x = (float *)nvshmem_malloc(1024 * sizeof(float));
    void *args[] = {&x};
    int grid = 0;
    nvshmemx_collective_launch_query_gridsize((const void *)c_sync, dim3(32), args, 0, &grid);
    nvshmemx_collective_launch((const void *)c_sync, dim3(grid), dim3(32), args, 0, s);
    nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, x, x, 1024, s);
    nvshmemx_putmem_signal_on_stream(x, x, 16, (uint64_t *)x, 1, NVSHMEM_SIGNAL_SET, 0, s);
    nvshmemx_barrier_all_on_stream(s);
    cudaStreamSynchronize(s);
    nvshmem_free(x);
    nvshmem_finalize();
    return 0;
}
int (*volatile compat_ported_main)(void) = ported_main;
