/* tests/ibgda/e2e/posters.c: see posters.h. Host mode of the device header:
 * a pthread stands in for a GPU thread; the SoftNIC goroutine is the NIC. */
#define _DEFAULT_SOURCE
#include "posters.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *zalloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (p)
        memset(p, 0, (n + 63) & ~(size_t)63);
    return p;
}

e2e_env_t *e2e_env_new(int nqp, uint32_t sq_wqebb, uint32_t cqe_cnt, int threads, int iters, uint32_t lkey,
                       uint32_t rkey)
{
    e2e_env_t *env = zalloc(sizeof *env);
    e2e_layout_t *l = &env->l;
    uint64_t T = (uint64_t)threads, I = (uint64_t)iters, w = 0;
    if (nqp > E2E_MAX_QP || threads > E2E_MAX_THREADS)
        return NULL;
    env->nqp = nqp;
    env->threads = threads;
    env->iters = iters;
    env->lkey = lkey;
    env->rkey = rkey;
    l->slot_a = w, w += T * I;
    l->slot_b = w, w += T * I;
    l->slot_c = w, w += T * I;
    l->warp = w, w += T * E2E_WARP;
    l->counter = w, w += 1;
    l->cas = w, w += 1;
    l->sig_add = w, w += T;
    l->sig_set = w, w += T;
    l->remote_words = w;
    w = 0;
    l->src = w, w += T * I;
    l->fetch = w, w += T * I;
    l->getbuf = w, w += T;
    l->casbuf = w, w += T;
    l->scratch = w, w += E2E_MAX_QP;
    l->local_words = w;
    env->remote = zalloc(l->remote_words * 8);
    env->local = zalloc(l->local_words * 8);
    for (int q = 0; q < nqp; q++) {
        goshmemi_ibgda_qp_t *qp = zalloc(sizeof *qp);
        qp->version = GOSHMEMI_IBGDA_QP_VERSION;
        qp->qpn = 0x100 + (uint32_t)q;
        qp->sq_buf = zalloc((size_t)sq_wqebb * 64);
        qp->sq_wqebb_cnt = sq_wqebb;
        qp->cq_buf = zalloc((size_t)cqe_cnt * 64);
        qp->cq_cqe_cnt = cqe_cnt;
        goshmemi_ibgda_cq_init(qp->cq_buf, cqe_cnt);
        if (q & 1) /* odd QPs keep the WQEBB-count shadow, even ones read DS back from the SQ */
            qp->sq_nbb = zalloc(sq_wqebb);
        env->dbrec[q] = zalloc(8);
        env->db[q] = zalloc(8);
        env->cq_dbrec[q] = zalloc(8);
        qp->dbrec = env->dbrec[q];
        qp->db = env->db[q];
        qp->cq_dbrec = env->cq_dbrec[q];
        qp->err_word = &env->err_word;
        qp->lkey_tab = &env->lkey;
        qp->rkey_tab = &env->rkey;
        qp->n_lkeys = qp->n_rkeys = 1;
        qp->scratch_laddr = (uint64_t)(uintptr_t)&env->local[l->scratch + (uint64_t)q];
        qp->scratch_lkey = lkey;
        env->qp[q] = qp;
    }
    return env;
}

void e2e_env_free(e2e_env_t *env)
{
    for (int q = 0; q < env->nqp; q++) {
        free(env->qp[q]->sq_buf);
        free(env->qp[q]->cq_buf);
        free(env->qp[q]->sq_nbb);
        free(env->qp[q]);
        free(env->dbrec[q]);
        free(env->db[q]);
        free(env->cq_dbrec[q]);
    }
    free(env->remote);
    free(env->local);
    free(env);
}

static pthread_mutex_t msg_mu = PTHREAD_MUTEX_INITIALIZER;
static void fail(e2e_env_t *env, const char *what, int t, int i, long a, long b)
{
    pthread_mutex_lock(&msg_mu);
    if (!env->msg[0])
        snprintf(env->msg, sizeof env->msg, "thread %d iter %d: %s (%ld, %ld)", t, i, what, a, b);
    pthread_mutex_unlock(&msg_mu);
}

#define RADDR(env, word) ((uint64_t)(uintptr_t)&(env)->remote[word])
#define LADDR(env, word) ((uint64_t)(uintptr_t)&(env)->local[word])

typedef struct {
    e2e_env_t *env;
    int t, nqp_work;
    int rc;
} thr_arg_t;

static uint64_t val(int t, int i, uint64_t salt) { return ((uint64_t)(t + 1) << 40) ^ ((uint64_t)i << 8) ^ salt; }

static void *poster(void *vp)
{
    thr_arg_t *a = vp;
    e2e_env_t *env = a->env;
    const e2e_layout_t *l = &env->l;
    int t = a->t, I = env->iters;
    goshmemi_ibgda_qp_t *qp = env->qp[t % a->nqp_work];
    uint64_t TI = (uint64_t)t * (uint64_t)I;
    int rc = 0;
    for (int i = 0; i < I && !rc; i++) {
        uint64_t v = val(t, i, 0xa);
        /* 1. put, inline payload, unsignaled */
        rc |= goshmemi_ibgda_qp_put_inline(qp, RADDR(env, l->slot_a + TI + i), env->rkey, &v, 8, 0);
        /* 2. put from a data pointer (the NIC gathers local memory) */
        env->local[l->src + TI + i] = val(t, i, 0xb);
        rc |= goshmemi_ibgda_qp_put(qp, LADDR(env, l->src + TI + i), env->lkey, RADDR(env, l->slot_b + TI + i),
                                 env->rkey, 8, (i & 7) == 7);
        /* 3. fetch-add 1 on the shared counter; the old value lands in fetch[] */
        {
            goshmemi_ibgda_op_t op = goshmemi_ibgda_op_amo(GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, LADDR(env, l->fetch + TI + i),
                                                           env->lkey, RADDR(env, l->counter), env->rkey, 1, 0, 0);
            rc |= goshmemi_ibgda_post(qp, &op);
            env->fa_ops[t]++;
        }
        /* 4. put_signal: data, then SIGNAL_ADD 1 (even i) or SIGNAL_SET i+1 (odd i) under one doorbell */
        {
            uint64_t d = val(t, i, 0xc);
            int add = (i & 1) == 0;
            rc |= goshmemi_ibgda_qp_put_signal(qp, (uint64_t)(uintptr_t)&d, 0, RADDR(env, l->slot_c + TI + i), env->rkey,
                                            8, 1, RADDR(env, add ? l->sig_add + t : l->sig_set + t), env->rkey,
                                            add ? 1 : (uint64_t)i + 1, add ? GOSHMEM_SIGNAL_ADD : GOSHMEM_SIGNAL_SET,
                                            0);
        }
        /* 5. warp-cooperative: 32 lanes, one reservation, one doorbell */
        if ((i & 7) == 0) {
            goshmemi_ibgda_op_t ops[E2E_WARP];
            uint64_t vals[E2E_WARP];
            for (int lane = 0; lane < E2E_WARP; lane++) {
                vals[lane] = val(t, i, 0x100 + (uint64_t)lane);
                ops[lane] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&vals[lane],
                                                   0, RADDR(env, l->warp + (uint64_t)t * E2E_WARP + lane), env->rkey,
                                                   8, 1, 0);
            }
            rc |= goshmemi_ibgda_post_warp(qp, ops, E2E_WARP);
        }
        /* 6. batch of 3 WQEs, one doorbell: re-put slot_a (same value) */
        if ((i & 3) == 1) {
            goshmemi_ibgda_op_t ops[3];
            for (int k = 0; k < 3; k++)
                ops[k] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&v, 0,
                                                RADDR(env, l->slot_a + TI + i), env->rkey, 8, 1, 0);
            rc |= goshmemi_ibgda_post_batch(qp, ops, 3);
        }
        /* 7. quiet (ctx scope), then read back what this thread wrote */
        if ((i & 15) == 15) {
            rc |= goshmemi_ibgda_qp_quiet(qp);
            rc |= goshmemi_ibgda_qp_get(qp, LADDR(env, l->getbuf + t), env->lkey, RADDR(env, l->slot_a + TI + i),
                                     env->rkey, 8, 0);
            rc |= goshmemi_ibgda_qp_quiet(qp);
            if (__atomic_load_n(&env->local[l->getbuf + t], __ATOMIC_ACQUIRE) != v)
                fail(env, "get after quiet", t, i, (long)env->local[l->getbuf + t], (long)v);
            if (__atomic_load_n(&env->remote[l->slot_b + TI + i], __ATOMIC_ACQUIRE) != val(t, i, 0xb))
                fail(env, "put visible after quiet", t, i, 0, 0);
        }
        /* 8. compare-swap increment of the shared CAS word (signaled; quiet per try) */
        if ((i & 7) == 3) {
            uint64_t guess = 0;
            for (int tries = 0; tries < 100000; tries++) {
                goshmemi_ibgda_op_t op =
                    goshmemi_ibgda_op_amo(GOSHMEMI_MLX5_OPCODE_ATOMIC_CS, LADDR(env, l->casbuf + t), env->lkey,
                                          RADDR(env, l->cas), env->rkey, guess + 1, guess, 1);
                rc |= goshmemi_ibgda_post(qp, &op);
                rc |= goshmemi_ibgda_qp_quiet(qp);
                if (rc)
                    break;
                uint64_t old = goshmemi_be64toh(__atomic_load_n(&env->local[l->casbuf + t], __ATOMIC_ACQUIRE));
                if (old == guess) {
                    env->cas_ok[t]++;
                    break;
                }
                guess = old;
            }
        }
    }
    rc |= goshmemi_ibgda_qp_quiet(qp);
    if (rc)
        fail(env, "post/quiet returned an error", t, -1, rc, (long)env->err_word);
    a->rc = rc;
    return NULL;
}

int e2e_run_threads(e2e_env_t *env, int nqp_work)
{
    pthread_t th[E2E_MAX_THREADS];
    thr_arg_t args[E2E_MAX_THREADS];
    int rc = 0;
    for (int t = 0; t < env->threads; t++) {
        args[t].env = env;
        args[t].t = t;
        args[t].nqp_work = nqp_work;
        args[t].rc = 0;
        pthread_create(&th[t], NULL, poster, &args[t]);
    }
    for (int t = 0; t < env->threads; t++) {
        pthread_join(th[t], NULL);
        rc |= args[t].rc;
    }
    /* PE-wide quiet over every working QP */
    if (goshmemi_ibgda_qp_quiet_all(env->qp, nqp_work) != 0)
        rc = -1;
    return rc || env->msg[0] ? -1 : 0;
}

/* Is there a NIC-written CQE not yet consumed on qp? (reads, consumes nothing) */
static int cqe_pending(goshmemi_ibgda_qp_t *qp)
{
    goshmemi_mlx5_cqe64_t *c = (goshmemi_mlx5_cqe64_t *)qp->cq_buf + (qp->cq_cons_idx & (qp->cq_cqe_cnt - 1));
    return goshmemi_mlx5_cqe_is_sw_owned(goshmemi_ibgda_load_op_own(&c->op_own), qp->cq_cons_idx, qp->cq_cqe_cnt);
}

int e2e_scope_check(e2e_env_t *env, int qa, int qb)
{
    goshmemi_ibgda_qp_t *a = env->qp[qa], *b = env->qp[qb];
    const e2e_layout_t *l = &env->l;
    uint64_t v = 0x5c0fe, w = 0x5c0ff;
    /* a signaled put on qb; wait until the NIC has written its CQE */
    if (goshmemi_ibgda_qp_put_inline(b, RADDR(env, l->slot_a), env->rkey, &v, 8, 1))
        return -1;
    while (!cqe_pending(b))
        goshmemi_ibgda_pause();
    uint64_t b_ci = b->cq_cons_idx;
    /* ctx quiet on qa: completes qa's put, leaves qb's CQE alone */
    if (goshmemi_ibgda_qp_put_inline(a, RADDR(env, l->slot_a + 1), env->rkey, &w, 8, 0) || goshmemi_ibgda_qp_quiet(a))
        return -1;
    if (__atomic_load_n(&env->remote[l->slot_a + 1], __ATOMIC_ACQUIRE) != w) {
        snprintf(env->msg, sizeof env->msg, "ctx quiet: put on QP %d not visible", qa);
        return -1;
    }
    if (b->cq_cons_idx != b_ci || !cqe_pending(b)) {
        snprintf(env->msg, sizeof env->msg, "ctx quiet on QP %d polled QP %d's CQ", qa, qb);
        return -1;
    }
    /* PE-wide quiet: polls every QP, consuming qb's CQE */
    goshmemi_ibgda_qp_t *all[2] = {a, b};
    if (goshmemi_ibgda_qp_quiet_all(all, 2))
        return -1;
    if (b->cq_cons_idx == b_ci || cqe_pending(b)) {
        snprintf(env->msg, sizeof env->msg, "PE-wide quiet did not poll QP %d", qb);
        return -1;
    }
    return 0;
}

int e2e_error_post(e2e_env_t *env, int q, int kind)
{
    goshmemi_ibgda_qp_t *qp = env->qp[q];
    const e2e_layout_t *l = &env->l;
    uint64_t v = 7;
    goshmemi_ibgda_op_t op;
    switch (kind) {
    case 0: /* unknown rkey */
        op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&v, 0,
                                    RADDR(env, l->slot_a), env->rkey ^ 0xffff, 8, 1, 0);
        break;
    case 1: /* unknown lkey on a gather */
        op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, LADDR(env, l->src), env->lkey ^ 0xffff,
                                    RADDR(env, l->slot_a), env->rkey, 8, 0, 0);
        break;
    case 2: /* remote address past the region */
        op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&v, 0,
                                    RADDR(env, l->remote_words), env->rkey, 8, 1, 0);
        break;
    default: /* misaligned atomic */
        op = goshmemi_ibgda_op_amo(GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, LADDR(env, l->getbuf), env->lkey,
                                   RADDR(env, l->counter) + 4, env->rkey, 1, 0, 0);
        break;
    }
    (void)goshmemi_ibgda_post(qp, &op); /* unsignaled: the error CQE comes anyway */
    return goshmemi_ibgda_qp_quiet(qp);
}

int e2e_post_after_error(e2e_env_t *env, int q)
{
    uint64_t v = 9;
    int rc = goshmemi_ibgda_qp_put_inline(env->qp[q], RADDR(env, env->l.slot_a), env->rkey, &v, 8, 1);
    int rq = goshmemi_ibgda_qp_quiet(env->qp[q]);
    return rc ? rc : rq;
}

/* The exclusive owner (goshmemi_ibgda_excl_*): one thread owns QP q and
 * posts env->iters 8-byte puts, inline ones of val(0, i, 0xe) into
 * slot_a[i] (even i) and data-pointer ones of val(0, i, 0xf) into
 * slot_b[i] (odd i), in batches of 1..batch of them (the size cycles).
 * Every 5th batch also carries an inline put of 100 bytes (a 2-WQEBB WQE)
 * into the warp words. Batches longer than the one-pass bound take the
 * exact path; a small ring makes both paths wait for space. Once, the
 * same batch is first posted with an invalid last op (inline payload over
 * the limit): ERR_ARG, and nothing announced (sq_ready_idx, the owner's
 * index and the doorbell record unchanged). Then a shared-path post after
 * goshmemi_ibgda_excl_end and a quiet. Returns 0 or -1 (env->msg). */
int e2e_excl_run(e2e_env_t *env, int q, int batch)
{
    goshmemi_ibgda_qp_t *qp = env->qp[q];
    const e2e_layout_t *l = &env->l;
    const int I = env->iters;
    goshmemi_ibgda_op_t ops[64];
    uint64_t vals[64], big[13];
    int i = 0, nb = 0, rc;
    if (batch < 1 || batch > 60) {
        snprintf(env->msg, sizeof env->msg, "batch %d out of range [1, 60]", batch);
        return -1;
    }
    memset(big, 0x5a, sizeof big);
    goshmemi_ibgda_excl_t h = goshmemi_ibgda_excl_begin(qp);
    while (i < I) {
        int n = 1 + nb % batch, k = 0;
        if (n > I - i)
            n = I - i;
        for (int j = 0; j < n; j++, i++, k++) {
            if ((i & 1) == 0) {
                vals[k] = val(0, i, 0xe);
                ops[k] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)&vals[k], 0,
                                                RADDR(env, l->slot_a + i), env->rkey, 8, 1, 0);
            } else {
                env->local[l->src + i] = val(0, i, 0xf);
                ops[k] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, LADDR(env, l->src + i), env->lkey,
                                                RADDR(env, l->slot_b + i), env->rkey, 8, 0, (i % 16) == 15);
            }
        }
        if (nb % 5 == 4)
            ops[k++] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)big, 0,
                                              RADDR(env, l->warp), env->rkey, 100, 1, 0);
        if (nb == 7) {
            uint64_t ready = qp->sq_ready_idx;
            uint32_t rec = env->dbrec[q][GOSHMEMI_MLX5_SND_DBR];
            ops[k] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)big, 0,
                                            RADDR(env, l->warp), env->rkey, GOSHMEMI_IBGDA_MAX_INLINE + 1, 1, 0);
            rc = goshmemi_ibgda_excl_post_batch(&h, ops, k + 1);
            if (rc != GOSHMEMI_IBGDA_ERR_ARG || qp->sq_ready_idx != ready || h.resv != ready ||
                env->dbrec[q][GOSHMEMI_MLX5_SND_DBR] != rec) {
                snprintf(env->msg, sizeof env->msg,
                         "excl batch with an invalid op: rc %d (want %d), ready %llu -> %llu, owner %llu, dbrec %u -> %u",
                         rc, GOSHMEMI_IBGDA_ERR_ARG, (unsigned long long)ready, (unsigned long long)qp->sq_ready_idx,
                         (unsigned long long)h.resv, rec, env->dbrec[q][GOSHMEMI_MLX5_SND_DBR]);
                return -1;
            }
        }
        rc = goshmemi_ibgda_excl_post_batch(&h, ops, k);
        if (rc != 0) {
            snprintf(env->msg, sizeof env->msg, "excl batch %d (%d ops): rc %d", nb, k, rc);
            return -1;
        }
        nb++;
    }
    goshmemi_ibgda_excl_end(&h);
    if (qp->sq_resv_idx != qp->sq_ready_idx) {
        snprintf(env->msg, sizeof env->msg, "after excl_end: sq_resv_idx %llu != sq_ready_idx %llu",
                 (unsigned long long)qp->sq_resv_idx, (unsigned long long)qp->sq_ready_idx);
        return -1;
    }
    /* a shared-path post follows the owner's stretch */
    {
        uint64_t v = val(0, I, 0xe);
        rc = goshmemi_ibgda_qp_put_inline(qp, RADDR(env, l->slot_c), env->rkey, &v, 8, 1);
        if (rc == 0)
            rc = goshmemi_ibgda_qp_quiet(qp);
    }
    if (rc != 0) {
        snprintf(env->msg, sizeof env->msg, "shared post and quiet after the owner: rc %d", rc);
        return -1;
    }
    return 0;
}
