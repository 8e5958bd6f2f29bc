/* tests/ibgda/e2e/race.c: CQ polling against publishers in flight.
 *
 * The NIC fetches WQEs up to the doorbell record, which goshmemi_ibgda_publish
 * stores before sq_ready_idx; so a CQE can name a WQE that a poller's
 * snapshot of sq_ready_idx does not cover yet (the publisher is between its
 * two stores, or published after the poller loaded sq_ready_idx). On the GPU
 * the window is wide: a poller's reads of a host-memory CQ are PCIe round
 * trips while other threads publish NOPs the soft NIC completes in
 * microseconds (devtest t_rma, 256 threads in goshmem_quiet: "published 205
 * WQEBBs, completed 183", every CQE written also consumed).
 *
 * This file is its own translation unit so that it can define the poll hook
 * (GOSHMEMI_IBGDA_POLL_HOOK) that widens the window on the host. */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int e2e_hook_ns; /* the storm's delay after the poller loads sq_ready_idx */
static void e2e_poll_hook(void)
{
    int ns = __atomic_load_n(&e2e_hook_ns, __ATOMIC_RELAXED);
    if (ns > 0) {
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
    }
}
#define GOSHMEMI_IBGDA_POLL_HOOK() e2e_poll_hook()

#include "race.h"

/* The NIC's side: CQE number `pi` completing the WQE at WQEBB index wc
 * (body first, then op_own with the lap's owner bit). */
static void nic_cqe(goshmemi_ibgda_qp_t *qp, uint64_t pi, uint16_t wc)
{
    goshmemi_mlx5_cqe64_t *c = (goshmemi_mlx5_cqe64_t *)qp->cq_buf + (pi & (qp->cq_cqe_cnt - 1));
    memset(c, 0, 60);
    c->sop_drop_qpn = goshmemi_htobe32(qp->qpn);
    c->wqe_counter = goshmemi_htobe16(wc);
    c->signature = 0;
    __atomic_store_n(&c->op_own, (uint8_t)((GOSHMEMI_MLX5_CQE_REQ << 4) | ((pi / qp->cq_cqe_cnt) & 1)),
                     __ATOMIC_RELEASE);
}

static goshmemi_ibgda_op_t nop(int signaled)
{
    goshmemi_ibgda_op_t op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_NOP, 0, 0, 0, 0, 0, 0, signaled);
    return op;
}

#define EXPECT(cond, ...)                                                                                             \
    do {                                                                                                              \
        if (!(cond)) {                                                                                                \
            snprintf(env->msg, sizeof env->msg, __VA_ARGS__);                                                         \
            return -1;                                                                                                \
        }                                                                                                             \
    } while (0)

int e2e_poll_race(e2e_env_t *env, int q)
{
    goshmemi_ibgda_qp_t *qp = env->qp[q];
    goshmemi_ibgda_op_t op;
    uint64_t start, target;
    int r;
    char payload[37] = {0};
    qp->timeout_ns = 100u * 1000u * 1000u; /* a lost completion ends quiet_wait in 100 ms */

    /* 1. baseline: a signaled NOP, its CQE, one poll retires it */
    op = nop(1);
    EXPECT(goshmemi_ibgda_post(qp, &op) == 0, "post NOP 0");
    nic_cqe(qp, 0, 0);
    r = goshmemi_ibgda_poll_cq(qp);
    EXPECT(r == 1 && qp->sq_done_idx == 1, "baseline: poll %d, done %lu", r, (unsigned long)qp->sq_done_idx);

    /* 2. a publisher between its doorbell-record store and its sq_ready_idx
     * store (goshmemi_ibgda_publish, unrolled), and the NIC has already
     * completed its signaled NOP: the CQE names WQE 1, sq_ready_idx is 1 */
    start = goshmemi_ibgda_fetch_add_u64(&qp->sq_resv_idx, 1);
    EXPECT(start == 1, "reserved %lu", (unsigned long)start);
    op = nop(1);
    goshmemi_ibgda_build_wqe(qp, start, &op, 1, 1);
    goshmemi_ibgda_max_u64(&qp->sq_signaled_idx, 2);
    goshmemi_ibgda_release_dbr(&qp->dbrec[GOSHMEMI_MLX5_SND_DBR], goshmemi_htobe32(2));
    nic_cqe(qp, 1, 1);
    r = goshmemi_ibgda_poll_cq(qp);
    EXPECT(r == 0 && qp->cq_cons_idx == 1 && qp->sq_done_idx == 1,
           "CQE for a WQE past sq_ready_idx: poll %d, consumed %lu, done %lu (want 0, 1, 1: left in the CQ, "
           "not consumed with done clamped to sq_ready_idx)",
           r, (unsigned long)qp->cq_cons_idx, (unsigned long)qp->sq_done_idx);
    goshmemi_ibgda_store_release_u64(&qp->sq_ready_idx, 2); /* the publisher goes on */
    r = goshmemi_ibgda_quiet_wait(qp, 2);
    EXPECT(r == 0 && qp->sq_done_idx == 2 && qp->cq_cons_idx == 2,
           "after sq_ready_idx moved: quiet_wait %d, done %lu, consumed %lu (want 0, 2, 2)", r,
           (unsigned long)qp->sq_done_idx, (unsigned long)qp->cq_cons_idx);

    /* 3. a CQE naming a WQE below sq_done_idx (wc - done wraps to ~2^16)
     * retires nothing; clamping it to sq_ready_idx would count the
     * unsignaled WQE 2 (never completed by the NIC) as done */
    op = nop(0);
    EXPECT(goshmemi_ibgda_post(qp, &op) == 0 && qp->sq_ready_idx == 3, "post unsignaled NOP 2");
    nic_cqe(qp, 2, 0);
    r = goshmemi_ibgda_poll_cq(qp);
    EXPECT(r == 1 && qp->sq_done_idx == 2, "CQE below done: poll %d, done %lu (want 1, 2)", r,
           (unsigned long)qp->sq_done_idx);
    target = goshmemi_ibgda_quiet_begin(qp); /* posts a signaled NOP at 3 */
    EXPECT(target == 4, "quiet target %lu", (unsigned long)target);
    nic_cqe(qp, 3, 3);
    r = goshmemi_ibgda_quiet_wait(qp, target);
    EXPECT(r == 0 && qp->sq_done_idx == 4, "quiet after the NOP: %d, done %lu", r, (unsigned long)qp->sq_done_idx);

    /* 4. the 16-bit wqe_counter across 2^16: every index jumps to 65534
     * (nothing outstanding), then NOPs at 65534, 65535, 65536 (wc 0) and a
     * 2-WQEBB inline write at 65537 (wc 1) */
    qp->sq_resv_idx = qp->sq_ready_idx = qp->sq_done_idx = qp->sq_signaled_idx = 65534;
    for (int k = 0; k < 3; k++) {
        op = nop(1);
        EXPECT(goshmemi_ibgda_post(qp, &op) == 0, "post NOP %d", 65534 + k);
    }
    EXPECT(goshmemi_ibgda_qp_put_inline(qp, 0x1000, 1, payload, sizeof payload, 1) == 0, "post inline write");
    EXPECT(qp->sq_ready_idx == 65539, "ready %lu", (unsigned long)qp->sq_ready_idx);
    nic_cqe(qp, 4, 65534);
    nic_cqe(qp, 5, 65535);
    r = goshmemi_ibgda_poll_cq(qp);
    EXPECT(r == 2 && qp->sq_done_idx == 65536, "below 2^16: poll %d, done %lu", r, (unsigned long)qp->sq_done_idx);
    nic_cqe(qp, 6, 0);
    nic_cqe(qp, 7, 1);
    r = goshmemi_ibgda_poll_cq(qp);
    EXPECT(r == 2 && qp->sq_done_idx == 65539, "across 2^16: poll %d, done %lu (want 2, 65539)", r,
           (unsigned long)qp->sq_done_idx);
    return 0;
}

/* ---- the storm: every thread posts, then quiets, each round ------------- */

typedef struct {
    e2e_env_t *env;
    int q, t, threads, rounds;
    pthread_barrier_t *bar;
} storm_arg_t;

static pthread_mutex_t storm_mu = PTHREAD_MUTEX_INITIALIZER;

static void *storm_thread(void *vp)
{
    storm_arg_t *a = vp;
    e2e_env_t *env = a->env;
    goshmemi_ibgda_qp_t *qp = env->qp[a->q];
    const e2e_layout_t *l = &env->l;
    for (int r = 0; r < a->rounds; r++) {
        uint64_t v = ((uint64_t)(a->t + 1) << 32) | (uint64_t)r;
        uint64_t word = l->slot_a + (uint64_t)a->t * (uint64_t)env->iters + (uint64_t)(r % env->iters);
        int rc = goshmemi_ibgda_qp_put_inline(qp, (uint64_t)(uintptr_t)&env->remote[word], env->rkey, &v, 8, 0);
        if (!rc)
            rc = goshmemi_ibgda_qp_quiet(qp);
        if (!rc && __atomic_load_n(&env->remote[word], __ATOMIC_ACQUIRE) != v)
            rc = 1;
        if (rc) {
            pthread_mutex_lock(&storm_mu);
            if (!env->msg[0])
                snprintf(env->msg, sizeof env->msg,
                         "thread %d round %d: %s (rc %d): published %lu WQEBBs, completed %lu, CQEs consumed %lu", a->t,
                         r, rc == GOSHMEMI_IBGDA_ERR_TIMEOUT ? "quiet timed out" : "put not visible after quiet", rc,
                         (unsigned long)__atomic_load_n(&qp->sq_ready_idx, __ATOMIC_ACQUIRE),
                         (unsigned long)__atomic_load_n(&qp->sq_done_idx, __ATOMIC_ACQUIRE),
                         (unsigned long)qp->cq_cons_idx);
            pthread_mutex_unlock(&storm_mu);
            /* keep the barrier count: the others see msg and stop */
        }
        pthread_barrier_wait(a->bar);
        if (__atomic_load_n(&env->msg[0], __ATOMIC_ACQUIRE))
            break;
    }
    return NULL;
}

int e2e_quiet_storm(e2e_env_t *env, int q, int threads, int rounds, int hook_ns)
{
    pthread_t th[E2E_MAX_THREADS];
    storm_arg_t args[E2E_MAX_THREADS];
    pthread_barrier_t bar;
    if (threads > E2E_MAX_THREADS || threads > env->threads)
        return -1;
    env->qp[q]->timeout_ns = 2000ull * 1000 * 1000;
    __atomic_store_n(&e2e_hook_ns, hook_ns, __ATOMIC_RELAXED);
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        args[t] = (storm_arg_t){env, q, t, threads, rounds, &bar};
        pthread_create(&th[t], NULL, storm_thread, &args[t]);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    __atomic_store_n(&e2e_hook_ns, 0, __ATOMIC_RELAXED);
    return env->msg[0] ? -1 : 0;
}
