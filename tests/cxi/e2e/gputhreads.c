#define _GNU_SOURCE 1
#include <goshmem.h>
#include <string.h>
#include <time.h>
#include "gputhreads.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void e2e_run(void *cxi, int pe, int n, int iters, int am_msgs, volatile int64_t *arrive, e2e_result_t *res)
{
    goshmemi_device_state_t st;
    memset(&st, 0, sizeof st);
    st.version = GOSHMEMI_DEVICE_STATE_VERSION;
    st.size = sizeof st;
    st.my_pe = pe;
    st.n_pes = n;
    st.cxi_state = (uint64_t)(uintptr_t)cxi;
    goshmemx_host_set_state(&st);
    memset(res, 0, sizeof *res);
    for (int i = 1; i <= iters; i++) {
        __atomic_store_n(&arrive[pe], i, __ATOMIC_SEQ_CST);
        uint64_t t0 = now_ns();
        int rc = goshmemx_cxi_barrier();
        uint64_t dt = now_ns() - t0;
        res->total_ns += dt;
        if (dt > res->max_ns) res->max_ns = dt;
        if (rc != GOSHMEMX_CXI_OK) { res->rc = rc; goto out; }
        for (int q = 0; q < n; q++)
            if (__atomic_load_n(&arrive[q], __ATOMIC_SEQ_CST) < i) res->violations++;
    }
    if (am_msgs > 0) {
        goshmemi_cxi_state_t *cx = goshmemi_cxi();
        int sent[64] = {0}, next[64] = {0};
        uint64_t want = (uint64_t)am_msgs * (uint64_t)n;
        int all_sent = 0;
        uint64_t deadline = now_ns() + 30ull * 1000000000ull;
        while (res->am_got < want || all_sent < n) {
            all_sent = 0;
            for (int q = 0; q < n; q++) {
                goshmemi_cxi_am_peer_t *ch = goshmemi_cxi_am(cx, q);
                if (sent[q] >= am_msgs) { all_sent++; continue; }
                uint64_t k = ch->sent;
                if (k >= 2 && __atomic_load_n(&ch->credit, __ATOMIC_ACQUIRE) < k - 1) continue; /* no credit yet */
                uint64_t args[3] = {(uint64_t)pe, (uint64_t)sent[q], (uint64_t)q};
                int rc = goshmemx_cxi_am_send(q, 9, 3, args, 3);
                if (rc != GOSHMEMX_CXI_OK) { res->rc = rc; goto out; }
                sent[q]++;
            }
            for (int q = 0; q < n; q++) {
                goshmemx_cxi_msg_t m;
                while (goshmemx_cxi_am_poll(q, &m)) { /* the "handler": check and count */
                    if (m.handler != 9 || m.src_pe != q || m.flags != 3 || m.nargs != 3 || m.args[0] != (uint64_t)q ||
                        m.args[1] != (uint64_t)next[q] || m.args[2] != (uint64_t)pe)
                        res->am_bad++;
                    next[q]++;
                    res->am_got++;
                }
            }
            if (now_ns() > deadline) { res->rc = GOSHMEMX_CXI_ETIMEDOUT; goto out; }
        }
    }
out:
    goshmemx_host_set_state(NULL);
}
