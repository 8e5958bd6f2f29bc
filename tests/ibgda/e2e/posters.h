/* tests/ibgda/e2e: host threads ("GPU threads") posting through
 * include/goshmem/ibgda/ into SQs that the Go SoftNIC (ibgda/softnic.go,
 * an emulation) executes. Driven from e2e_test.go via hostthreads_cgo.go. */
#ifndef GOSHMEM_TESTS_IBGDA_E2E_POSTERS_H
#define GOSHMEM_TESTS_IBGDA_E2E_POSTERS_H

#include <stddef.h>
#include <stdint.h>

#include <goshmem/ibgda/ibgda.h>

#define E2E_MAX_QP 16
#define E2E_MAX_THREADS 16
#define E2E_WARP 32

/* Remote region layout, in 8-byte words (threads T, iterations I):
 *   slot_a[T*I]  put_inline values         slot_b[T*I] put (data pointer)
 *   slot_c[T*I]  put_signal data           warp[T*32]  warp-cooperative puts
 *   counter      fetch-add target (BE)     cas         compare-swap target (BE)
 *   sig_add[T]   SIGNAL_ADD words (BE)     sig_set[T]  SIGNAL_SET words (host order)
 * Local region: src[T*I] (put sources), fetch[T*I] (fetch-add results, BE),
 *   getbuf[T], casbuf[T], scratch[E2E_MAX_QP]. */
typedef struct e2e_layout {
    uint64_t slot_a, slot_b, slot_c, warp, counter, cas, sig_add, sig_set, remote_words;
    uint64_t src, fetch, getbuf, casbuf, scratch, local_words;
} e2e_layout_t;

typedef struct e2e_env {
    int nqp;
    int threads, iters;
    goshmemi_ibgda_qp_t *qp[E2E_MAX_QP];
    uint32_t *dbrec[E2E_MAX_QP];
    uint64_t *db[E2E_MAX_QP];
    uint32_t *cq_dbrec[E2E_MAX_QP];
    uint64_t *local, *remote;
    uint32_t lkey, rkey;
    uint64_t err_word; /* PE-wide first error */
    e2e_layout_t l;
    uint64_t cas_ok[E2E_MAX_THREADS]; /* successful CAS increments per thread */
    uint64_t fa_ops[E2E_MAX_THREADS];
    char msg[256]; /* first failure seen by a C thread */
} e2e_env_t;

e2e_env_t *e2e_env_new(int nqp, uint32_t sq_wqebb, uint32_t cqe_cnt, int threads, int iters, uint32_t lkey,
                       uint32_t rkey);
void e2e_env_free(e2e_env_t *env);
/* Runs `threads` pthreads over QPs [0, nqp_work); returns 0 or -1 (env->msg). */
int e2e_run_threads(e2e_env_t *env, int nqp_work);
/* ctx (per-QP) quiet polls only its CQ; PE-wide quiet polls all: 0 or -1. */
int e2e_scope_check(e2e_env_t *env, int qa, int qb);
/* Posts op kind `kind` (0: bad rkey, 1: bad lkey, 2: bad opcode) on QP q
 * and returns quiet's result; the error word is in env->qp[q]->err. */
int e2e_error_post(e2e_env_t *env, int q, int kind);
/* Posts a valid op on QP q and returns quiet's result. */
int e2e_post_after_error(e2e_env_t *env, int q);
/* One exclusive owner posts env->iters puts on QP q in batches of up to
 * `batch` ops (posters.c says what it checks): 0 or -1 (env->msg). */
int e2e_excl_run(e2e_env_t *env, int q, int batch);

#endif
