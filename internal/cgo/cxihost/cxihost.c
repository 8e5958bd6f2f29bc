#define _GNU_SOURCE 1
#include <goshmem.h>
#include <string.h>
#include <time.h>
#include "cxihost.h"

static _Thread_local goshmemi_device_state_t cxih_st;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cxih_attach(void *cxi, int pe, int n)
{
    memset(&cxih_st, 0, sizeof cxih_st);
    cxih_st.version = GOSHMEMI_DEVICE_STATE_VERSION;
    cxih_st.size = sizeof cxih_st;
    cxih_st.my_pe = pe;
    cxih_st.n_pes = n;
    cxih_st.cxi_state = (uint64_t)(uintptr_t)cxi;
    goshmemx_host_set_state(&cxih_st);
}

double cxih_compute(int64_t iters)
{
    double x = 1.0, a = 0.999999, b = 1e-7;
    for (int64_t i = 0; i < iters; i++) x = x * a + b; /* dependent chain: ~4 cycles each */
    return x;
}

static void begin(cxih_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->min_ns = UINT64_MAX;
}

static void sample(cxih_result_t *res, uint64_t dt)
{
    res->total_ns += dt;
    if (dt > res->max_ns) res->max_ns = dt;
    if (dt < res->min_ns) res->min_ns = dt;
}

void cxih_phases(int64_t iters, int phases, cxih_result_t *res)
{
    begin(res);
    uint64_t t0 = now_ns();
    double s = 0;
    for (int p = 0; p < phases; p++) {
        s += cxih_compute(iters);
        int rc = goshmemx_cxi_barrier();
        if (rc != GOSHMEMX_CXI_OK) { res->rc = rc; break; }
        res->done++;
    }
    res->total_ns = now_ns() - t0;
    res->sink = s;
}

void cxih_barriers(int64_t count, cxih_result_t *res)
{
    begin(res);
    for (int64_t i = 0; i < count; i++) {
        uint64_t t0 = now_ns();
        int rc = goshmemx_cxi_barrier();
        if (rc != GOSHMEMX_CXI_OK) { res->rc = rc; return; }
        sample(res, now_ns() - t0);
        res->done++;
    }
}

void cxih_triggers(int64_t count, cxih_result_t *res)
{
    begin(res);
    goshmemi_cxi_state_t *cx = goshmemi_cxi();
    if (cx == NULL) { res->rc = GOSHMEMX_CXI_ENOTREADY; return; }
    uint64_t t0 = now_ns();
    for (int64_t i = 0; i < count; i++) goshmemi_release_store_u64(&cx->bench_doorbell, (uint64_t)i, 1);
    res->total_ns = now_ns() - t0;
    res->done = (uint64_t)count;
}

void cxih_check(int iters, uint64_t skew_ns, int am, uint64_t *board, cxih_result_t *res)
{
    begin(res);
    goshmemi_cxi_state_t *cx = goshmemi_cxi();
    if (cx == NULL) { res->rc = GOSHMEMX_CXI_ENOTREADY; return; }
    int pe = cx->rank, n = cx->nranks;
    for (int i = 0; i < iters; i++) {
        if (i % n == pe) {
            struct timespec ts = {(time_t)(skew_ns / 1000000000ull), (long)(skew_ns % 1000000000ull)};
            nanosleep(&ts, NULL);
        }
        __atomic_store_n(&board[pe * CXIH_BOARD_STRIDE], (uint64_t)i + 1, __ATOMIC_RELEASE);
        uint64_t t0 = now_ns();
        int rc = goshmemx_cxi_barrier();
        if (rc != GOSHMEMX_CXI_OK) { res->rc = rc; return; }
        uint64_t dt = now_ns() - t0;
        if (i % n != pe) sample(res, dt);
        for (int q = 0; q < n; q++) {
            uint64_t seen = __atomic_load_n(&board[q * CXIH_BOARD_STRIDE], __ATOMIC_ACQUIRE);
            if (seen < (uint64_t)i + 1) {
                if (res->early++ == 0) { res->early_iter = i; res->early_pe = q; res->early_seen = seen; }
                break;
            }
        }
        res->done++;
    }
    if (am <= 0 || cx->am_off == 0) return;
    int sent[GOSHMEMI_MAX_PES] = {0}, next[GOSHMEMI_MAX_PES] = {0};
    uint64_t want = (uint64_t)am * (uint64_t)n;
    uint64_t deadline = now_ns() + 60ull * 1000000000ull;
    int all_sent = 0;
    while (res->am_got < want || all_sent < n) {
        all_sent = 0;
        for (int q = 0; q < n; q++) {
            goshmemi_cxi_am_peer_t *ch = goshmemi_cxi_am(cx, q);
            if (sent[q] >= am) { all_sent++; continue; }
            uint64_t k = ch->sent;
            if (k >= 2 && __atomic_load_n(&ch->credit, __ATOMIC_ACQUIRE) < k - 1) continue; /* no credit yet */
            uint64_t args[4] = {(uint64_t)pe, (uint64_t)sent[q], (uint64_t)q, 0xC0FFEEull * (uint64_t)(sent[q] + 1)};
            int rc = goshmemx_cxi_am_send(q, 7, 5, args, 4);
            if (rc != GOSHMEMX_CXI_OK) { res->rc = rc; return; }
            sent[q]++;
        }
        for (int q = 0; q < n; q++) {
            goshmemx_cxi_msg_t m;
            while (goshmemx_cxi_am_poll(q, &m)) {
                if (m.handler != 7 || m.src_pe != q || m.flags != 5 || m.nargs != 4 || m.args[0] != (uint64_t)q ||
                    m.args[1] != (uint64_t)next[q] || m.args[2] != (uint64_t)pe ||
                    m.args[3] != 0xC0FFEEull * (uint64_t)(next[q] + 1) || m.args[4] != 0)
                    res->am_bad++;
                next[q]++;
                res->am_got++;
            }
        }
        if (now_ns() > deadline) { res->rc = GOSHMEMX_CXI_ETIMEDOUT; return; }
    }
}
