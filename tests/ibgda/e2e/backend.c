/* tests/ibgda/e2e/backend.c: see backend.h. Each pthread is one PE's "GPU
 * thread": goshmemx_host_set_state makes it that PE, and it calls the six
 * goshmemi_ibgda_* backend functions the device API's remote dispatch calls. */
#define _DEFAULT_SOURCE
#include "backend.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *bk_zalloc(size_t n)
{
    size_t r = (n + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, r);
    if (p)
        memset(p, 0, r);
    return p;
}

bk_env_t *bk_env_new(uint32_t sq_wqebb, uint32_t cqe_cnt)
{
    bk_env_t *env = bk_zalloc(sizeof *env);
    if (!env)
        return NULL;
    env->sq_wqebb = sq_wqebb;
    env->cqe_cnt = cqe_cnt;
    for (int me = 0; me < BK_PES; me++)
        env->pe[me].heap = bk_zalloc(BK_HEAP);
    for (int me = 0; me < BK_PES; me++) {
        bk_pe_t *p = &env->pe[me];
        int peer = 1 - me;
        p->slots = bk_zalloc((BK_SLOTS + BK_CTX) * GOSHMEMI_IBGDA_SLOT_BYTES);
        p->qps = bk_zalloc(BK_CTX * sizeof(goshmemi_ibgda_qp_t));
        p->lkey = BK_HEAP_KEY(me);
        for (int pe = 0; pe < BK_PES; pe++) {
            p->rkey[pe] = BK_HEAP_KEY(pe);
            p->remote_base[pe] = (uint64_t)(uintptr_t)env->pe[pe].heap;
            for (int c = 0; c < BK_CTX; c++)
                p->qp_index[c * BK_PES + pe] = pe == peer ? (uint32_t)c : GOSHMEMI_IBGDA_NO_QP;
        }
        for (int c = 0; c < BK_CTX; c++) {
            goshmemi_ibgda_qp_t *qp = &p->qps[c];
            qp->version = GOSHMEMI_IBGDA_QP_VERSION;
            qp->qpn = 0x100u + 16u * (uint32_t)me + (uint32_t)c;
            qp->sq_buf = bk_zalloc((size_t)sq_wqebb * 64);
            qp->sq_wqebb_cnt = sq_wqebb;
            qp->cq_buf = bk_zalloc((size_t)cqe_cnt * 64);
            qp->cq_cqe_cnt = cqe_cnt;
            goshmemi_ibgda_cq_init(qp->cq_buf, cqe_cnt);
            p->dbrec[c] = bk_zalloc(8);
            p->db[c] = bk_zalloc(8);
            p->cq_dbrec[c] = bk_zalloc(8);
            qp->dbrec = p->dbrec[c];
            qp->db = p->db[c];
            qp->cq_dbrec = p->cq_dbrec[c];
            qp->err_word = &p->err_word;
            qp->lkey_tab = &p->lkey;
            qp->rkey_tab = p->rkey;
            qp->n_lkeys = 1;
            qp->n_rkeys = BK_PES;
            qp->scratch_laddr = (uint64_t)(uintptr_t)(p->slots + BK_SLOTS * GOSHMEMI_IBGDA_SLOT_BYTES + 8 * c);
            qp->scratch_lkey = BK_SLOT_KEY(me);
        }
        goshmemi_ibgda_state_t *s = &p->ib;
        s->version = GOSHMEMI_IBGDA_STATE_VERSION;
        s->size = sizeof *s;
        s->my_pe = me;
        s->n_pes = BK_PES;
        s->n_ctx = BK_CTX;
        s->n_qps = BK_CTX;
        s->inline_max = BK_INLINE;
        s->heap_lkey = BK_HEAP_KEY(me);
        s->heap_base = (uint64_t)(uintptr_t)p->heap;
        s->heap_size = BK_HEAP;
        s->qps = p->qps;
        s->qp_index = p->qp_index;
        s->rkey = p->rkey;
        s->remote_base = p->remote_base;
        s->slots = p->slots;
        s->slot_busy = p->slot_busy;
        s->n_slots = BK_SLOTS;
        s->slot_lkey = BK_SLOT_KEY(me);
        s->fence_pending = p->fence_pending;

        goshmemi_device_state_t *d = &p->dev;
        d->version = GOSHMEMI_DEVICE_STATE_VERSION;
        d->size = sizeof *d;
        d->my_pe = me;
        d->n_pes = BK_PES;
        d->heap_size = BK_HEAP;
        d->heap_base[me] = (uint64_t)(uintptr_t)p->heap;
        d->heap_base[peer] = 0; /* not load/store reachable: the remote path */
        d->remote_transport = GOSHMEMI_REMOTE_IBGDA;
        d->ibgda_state = (uint64_t)(uintptr_t)s;
    }
    return env;
}

void bk_env_free(bk_env_t *env)
{
    for (int me = 0; me < BK_PES; me++) {
        bk_pe_t *p = &env->pe[me];
        for (int c = 0; c < BK_CTX; c++) {
            free(p->qps[c].sq_buf);
            free(p->qps[c].cq_buf);
            free(p->dbrec[c]);
            free(p->db[c]);
            free(p->cq_dbrec[c]);
        }
        free(p->qps);
        free(p->slots);
        free(p->heap);
    }
    free(env);
}

/* ---- the script ------------------------------------------------------------ */

typedef struct bk_arg {
    bk_env_t *env;
    int me;
    pthread_barrier_t *bar;
} bk_arg_t;

static pthread_mutex_t bk_msg_mu = PTHREAD_MUTEX_INITIALIZER;

static void bk_failf(bk_env_t *env, int me, const char *f, ...)
{
    va_list ap;
    pthread_mutex_lock(&bk_msg_mu);
    if (!env->failed) {
        int k = snprintf(env->msg, sizeof env->msg, "PE %d: ", me);
        va_start(ap, f);
        vsnprintf(env->msg + k, sizeof env->msg - (size_t)k, f, ap);
        va_end(ap);
        env->failed = 1;
    }
    pthread_mutex_unlock(&bk_msg_mu);
}

#define BK_EXPECT(cond, ...)                                                                                           \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            bk_failf(env, me, __VA_ARGS__);                                                                            \
    } while (0)

static uint8_t bk_byte(int pe, int region, size_t i) { return (uint8_t)(pe * 97 + region * 31 + i * 7 + (i >> 8)); }

static void bk_fill(uint8_t *p, int pe, int region, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = bk_byte(pe, region, i);
}

/* First index where p differs from the pattern, or -1. */
static long bk_diff(const uint8_t *p, int pe, int region, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != bk_byte(pe, region, i))
            return (long)i;
    return -1;
}

static uint64_t bk_load(const uint8_t *heap, size_t off) { return __atomic_load_n((const uint64_t *)(heap + off), __ATOMIC_ACQUIRE); }

/* goshmem_signal_wait_until(EQ)'s host-mode equivalent: poll the host-order
 * word; 10 s limit so a broken test fails instead of hanging. */
static int bk_wait_eq(const uint8_t *heap, size_t off, uint64_t want)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (bk_load(heap, off) != want) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10)
            return -1;
        sched_yield();
    }
    return 0;
}

static void *bk_pe_main(void *a_)
{
    bk_arg_t *a = a_;
    bk_env_t *env = a->env;
    int me = a->me, peer = 1 - me;
    bk_pe_t *p = &env->pe[me];
    uint8_t *heap = p->heap, *peer_heap = env->pe[peer].heap;
    uint8_t stack16[16], stack600[600], got600[600];
    uint64_t v, w;
    long d;

    goshmemx_host_set_state(&p->dev);

    /* ---- phase 1: puts and AMOs to the peer ---- */
    bk_fill(stack16, me, 1, sizeof stack16);
    goshmemi_ibgda_put(0, peer, BK_A, stack16, sizeof stack16, 0); /* inline */
    memset(stack16, 0, sizeof stack16);                            /* reusable on return */
    bk_fill(heap + BK_SRC_B, me, 2, 1000);
    goshmemi_ibgda_put(0, peer, BK_B, heap + BK_SRC_B, 1000, 0); /* data pointer, blocking */
    bk_fill(stack600, me, 3, sizeof stack600);
    goshmemi_ibgda_put(1, peer, BK_C, stack600, sizeof stack600, 0); /* not registered: inline chunks */
    memset(stack600, 0, sizeof stack600);
    v = 0x1122334455667700ull + (uint64_t)me;
    goshmemi_ibgda_put(0, peer, BK_P, &v, 8, 0); /* p */

    /* 8-byte AMOs on the peer's word (0 at start) */
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_ADD, 8, 5, 0, 1);
    BK_EXPECT(w == 0, "fetch_add returned %llu, want 0", (unsigned long long)w);
    (void)goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_ADD, 8, 7, 0, 0); /* add, no result */
    /* contexts are separate ordering domains (their own QPs): ctx 1's fetch
     * sees ctx 0's add only once that add completed */
    goshmemi_ibgda_quiet(0);
    w = goshmemi_ibgda_amo(1, peer, BK_W8, GOSHMEMI_AMO_FETCH, 8, 0, 0, 1);
    BK_EXPECT(w == 12, "fetch after add 5 + add 7 = %llu, want 12", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_CSWAP, 8, 100, 12, 1);
    BK_EXPECT(w == 12, "cswap(12 -> 100) returned %llu, want 12", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_CSWAP, 8, 7, 1, 1);
    BK_EXPECT(w == 100, "failing cswap(1 -> 7) returned %llu, want 100", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_SWAP, 8, 200, 0, 1);
    BK_EXPECT(w == 100, "swap(200) returned %llu, want 100", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_AND, 8, 0xf0, 0, 1);
    BK_EXPECT(w == 200, "fetch_and returned %llu, want 200", (unsigned long long)w);
    (void)goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_OR, 8, 0x3, 0, 0);
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_XOR, 8, 0xff, 0, 1);
    BK_EXPECT(w == 0xc3, "fetch_xor returned %#llx, want 0xc3 ((200 & 0xf0) | 3)", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_FETCH, 8, 0, 0, 1);
    BK_EXPECT(w == 0x3c, "fetch after xor = %#llx, want 0x3c", (unsigned long long)w);
    (void)goshmemi_ibgda_amo(0, peer, BK_W8, GOSHMEMI_AMO_SET, 8, 0x55 + (uint64_t)me, 0, 0);
    w = goshmemi_ibgda_amo(1, peer, BK_W8, GOSHMEMI_AMO_FETCH, 8, 0, 0, 1);
    BK_EXPECT(w == 0x55 + (uint64_t)me, "fetch after set = %#llx, want %#x", (unsigned long long)w, 0x55 + me);
    /* 4-byte AMOs on the two halves of one 8-byte word */
    w = goshmemi_ibgda_amo(0, peer, BK_W4, GOSHMEMI_AMO_ADD, 4, 3, 0, 1);
    BK_EXPECT(w == 0, "4-byte fetch_add (low) returned %llu, want 0", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W4 + 4, GOSHMEMI_AMO_ADD, 4, 0xffffffffu, 0, 1);
    BK_EXPECT(w == 0, "4-byte fetch_add (high) returned %llu, want 0", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W4 + 4, GOSHMEMI_AMO_ADD, 4, 2, 0, 1); /* wraps within 32 bits */
    BK_EXPECT(w == 0xffffffffu, "4-byte fetch_add returned %#llx, want 0xffffffff", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W4 + 4, GOSHMEMI_AMO_CSWAP, 4, 9, 1, 1);
    BK_EXPECT(w == 1, "4-byte cswap(1 -> 9) returned %llu, want 1", (unsigned long long)w);
    w = goshmemi_ibgda_amo(0, peer, BK_W4, GOSHMEMI_AMO_FETCH, 4, 0, 0, 1);
    BK_EXPECT(w == 3, "4-byte fetch (low) = %llu, want 3", (unsigned long long)w);
    goshmemi_ibgda_quiet(-1);
    pthread_barrier_wait(a->bar);

    /* ---- phase 1 checks, on this PE's heap (the peer wrote it) ---- */
    BK_EXPECT((d = bk_diff(heap + BK_A, peer, 1, 16)) < 0, "inline put: byte %ld differs", d);
    BK_EXPECT((d = bk_diff(heap + BK_B, peer, 2, 1000)) < 0, "data-pointer put: byte %ld differs", d);
    BK_EXPECT((d = bk_diff(heap + BK_C, peer, 3, 600)) < 0, "chunked inline put: byte %ld differs", d);
    BK_EXPECT(bk_load(heap, BK_P) == 0x1122334455667700ull + (uint64_t)peer, "p: %#llx",
              (unsigned long long)bk_load(heap, BK_P));
    BK_EXPECT(bk_load(heap, BK_W8) == 0x55 + (uint64_t)peer, "8-byte AMO word (host order) = %#llx, want %#x",
              (unsigned long long)bk_load(heap, BK_W8), 0x55 + peer);
    BK_EXPECT(bk_load(heap, BK_W4) == (9ull << 32 | 3), "4-byte AMO words (host order) = %#llx, want 0x900000003",
              (unsigned long long)bk_load(heap, BK_W4));

    /* ---- phase 2: gets ---- */
    goshmemi_ibgda_get(0, peer, heap + BK_GET, BK_B, 1000, 1); /* into the heap, nbi */
    goshmemi_ibgda_quiet(0);
    BK_EXPECT((d = bk_diff(heap + BK_GET, me, 2, 1000)) < 0, "get into the heap: byte %ld differs", d);
    goshmemi_ibgda_get(1, peer, got600, BK_C, sizeof got600, 0); /* not registered: bounce slots */
    BK_EXPECT((d = bk_diff(got600, me, 3, 600)) < 0, "get through bounce slots: byte %ld differs", d);
    v = 0;
    goshmemi_ibgda_get(0, peer, &v, BK_P, 8, 0); /* g */
    BK_EXPECT(v == 0x1122334455667700ull + (uint64_t)me, "g = %#llx", (unsigned long long)v);
    pthread_barrier_wait(a->bar);

    /* ---- phase 3: put_signal SET then ADD on one word; fence; quiet scopes ---- */
    bk_fill(stack16, me, 4, 16);
    goshmemi_ibgda_put_signal(0, peer, BK_SD1, stack16, 16, BK_SIG, 5, GOSHMEM_SIGNAL_SET, 0);
    bk_fill(heap + BK_SRC_SD2, me, 5, 2000);
    goshmemi_ibgda_put_signal(0, peer, BK_SD2, heap + BK_SRC_SD2, 2000, BK_SIG, 3, GOSHMEM_SIGNAL_ADD, 1);
    bk_fill(heap + BK_SRC_FX, me, 6, 1024);
    goshmemi_ibgda_put(0, peer, BK_FX, heap + BK_SRC_FX, 1024, 1);
    goshmemi_ibgda_fence(0);
    BK_EXPECT(p->fence_pending[0] == 1 && p->fence_pending[1] == 0,
              "fence(0): pending flags %u %u, want 1 (ctx 0's QP) and 0 (ctx 1's)", p->fence_pending[0],
              p->fence_pending[1]);
    v = 1;
    goshmemi_ibgda_put(0, peer, BK_FFLAG, &v, 8, 1);
    BK_EXPECT(p->fence_pending[0] == 0, "fence(0): the next WQE on ctx 0 did not take the fence");
    /* the target side: wait for SET + ADD = 8 on the host-order word */
    BK_EXPECT(bk_wait_eq(heap, BK_SIG, 8) == 0, "signal word stuck at %llu, want 8 (SET 5 then ADD 3)",
              (unsigned long long)bk_load(heap, BK_SIG));
    BK_EXPECT((d = bk_diff(heap + BK_SD1, peer, 4, 16)) < 0, "put_signal payload 1: byte %ld differs", d);
    BK_EXPECT((d = bk_diff(heap + BK_SD2, peer, 5, 2000)) < 0, "put_signal payload 2: byte %ld differs", d);
    BK_EXPECT(bk_wait_eq(heap, BK_FFLAG, 1) == 0, "fence flag never arrived");
    BK_EXPECT((d = bk_diff(heap + BK_FX, peer, 6, 1024)) < 0, "payload before the fence: byte %ld differs", d);

    /* ctx quiet: only ctx 0's QP is polled */
    {
        goshmemi_ibgda_qp_t *q1 = &p->qps[1];
        uint64_t cons1, ready1;
        bk_fill(heap + BK_SRC_Q1, me, 8, 4096);
        goshmemi_ibgda_put(1, peer, BK_Q1, heap + BK_SRC_Q1, 4096, 1);
        bk_fill(heap + BK_SRC_Q0, me, 7, 4096);
        goshmemi_ibgda_put(0, peer, BK_Q0, heap + BK_SRC_Q0, 4096, 1);
        cons1 = __atomic_load_n(&q1->cq_cons_idx, __ATOMIC_ACQUIRE);
        ready1 = __atomic_load_n(&q1->sq_ready_idx, __ATOMIC_ACQUIRE);
        goshmemi_ibgda_quiet(0);
        BK_EXPECT((d = bk_diff(peer_heap + BK_Q0, me, 7, 4096)) < 0, "after ctx 0 quiet: byte %ld of Q0 differs", d);
        BK_EXPECT(q1->cq_cons_idx == cons1, "ctx 0 quiet polled ctx 1's CQ (cq_cons_idx %llu -> %llu)",
                  (unsigned long long)cons1, (unsigned long long)q1->cq_cons_idx);
        goshmemi_ibgda_quiet(-1);
        BK_EXPECT(q1->sq_done_idx >= ready1, "PE-wide quiet: ctx 1 QP done %llu < published %llu",
                  (unsigned long long)q1->sq_done_idx, (unsigned long long)ready1);
        BK_EXPECT((d = bk_diff(peer_heap + BK_Q1, me, 8, 4096)) < 0, "after PE-wide quiet: byte %ld of Q1 differs",
                  d);
    }
    BK_EXPECT(p->qps[0].err == 0 && p->qps[1].err == 0 && p->err_word == 0, "error word %#llx",
              (unsigned long long)p->err_word);
    pthread_barrier_wait(a->bar);
    return NULL;
}

int bk_run(bk_env_t *env)
{
    pthread_t th[BK_PES];
    bk_arg_t args[BK_PES];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, BK_PES);
    for (int me = 0; me < BK_PES; me++) {
        args[me] = (bk_arg_t){env, me, &bar};
        pthread_create(&th[me], NULL, bk_pe_main, &args[me]);
    }
    for (int me = 0; me < BK_PES; me++)
        pthread_join(th[me], NULL);
    pthread_barrier_destroy(&bar);
    return env->failed ? -1 : 0;
}

/* ---- failure paths ------------------------------------------------------------ */

_Thread_local jmp_buf bk_trap_jmp;
_Thread_local uint64_t bk_trap_code;

void bk_trap_hook(uint64_t code, uint64_t info, const char *what)
{
    (void)info;
    (void)what;
    bk_trap_code = code;
    longjmp(bk_trap_jmp, 1);
}

uint64_t bk_timeout_run(bk_env_t *env, uint64_t timeout_ns, uint64_t *report)
{
    bk_pe_t *p = &env->pe[0];
    uint64_t v = 42;
    for (int c = 0; c < BK_CTX; c++)
        p->qps[c].timeout_ns = timeout_ns;
    p->ib.timeout_ns = timeout_ns;
    p->ib.report = report;
    goshmemx_host_set_state(&p->dev);
    goshmemx_host_trap_hook = bk_trap_hook;
    bk_trap_code = 0;
    if (setjmp(bk_trap_jmp) == 0) {
        goshmemi_ibgda_put(0, 1, BK_P, &v, 8, 0); /* inline: posted, not waited for */
        goshmemi_ibgda_quiet(-1);                                /* waits for the NIC */
    }
    goshmemx_host_trap_hook = NULL;
    return bk_trap_code;
}

uint64_t bk_order_run(bk_env_t *env, uint32_t flags, uint64_t *report) { return bk_order_put_once(env, flags, report); }

int bk_order_default(void) { return GOSHMEMI_IBGDA_ORDER; }
