/* signalcheck: host-mode checks of the signal paths of the device API
 * (include/goshmem/signal.h) and of the NVSHMEM constants of the compat
 * header, one PE (this thread) whose peer PE 1 is reached through a proxy
 * ring that no worker serves:
 *   1. every typed put_signal_nbi (thread, _warp, _block; goshmem_ and
 *      nvshmem_ names) returns without waiting for the ring, with the
 *      payload request and then the signal AMO (SET or ADD) posted in that
 *      order; the blocking put_signal waits for completion (here: traps with
 *      GOSHMEMI_ERR_PROXY_TIMEOUT, as nothing completes);
 *   2. a signal operator other than GOSHMEM_SIGNAL_SET / _ADD traps with
 *      GOSHMEMI_ERR_INVALID_ARG on every signal entry point, local and
 *      remote, before anything is written or posted;
 *   3. the constants NVSHMEM code passes mean what they mean in NVSHMEM.
 * Built as C11 and as C++17 (signalcheck.cpp) by tests/hdr/run.sh.
 */
#include <goshmem.h>
#include <goshmem/nvshmem_compat.h>

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long g_passed, g_failed;

#define CHECK_EQ(exp, got)                                                                                            \
    do {                                                                                                              \
        unsigned long long e_ = (unsigned long long)(exp), g_ = (unsigned long long)(got);                            \
        if (e_ == g_) {                                                                                               \
            g_passed++;                                                                                               \
        } else {                                                                                                      \
            g_failed++;                                                                                               \
            fprintf(stderr, "%s:%d: %s: expected %llu (0x%llx), got %llu (0x%llx)\n", __FILE__, __LINE__, #got, e_,  \
                    e_, g_, g_);                                                                                      \
        }                                                                                                             \
    } while (0)

#define HEAP (1u << 16)
#define LG_SLOTS 6
#define NSLOTS (1u << LG_SLOTS)

static unsigned char g_heap0[HEAP] __attribute__((aligned(4096)));
static uint64_t g_slots[2 * NSLOTS] __attribute__((aligned(64)));
static goshmemi_proxy_reply_t g_replies[NSLOTS];
static goshmemi_proxy_state_t g_ps;
static goshmemi_device_state_t g_st;
#define NTEAMS 4 /* max_teams of g_st */
static goshmemi_team_t g_teams[NTEAMS];
static uint64_t g_epochs[NTEAMS];

static jmp_buf g_jmp;
static uint64_t g_code, g_info;
static void trap_hook(uint64_t code, uint64_t info, const char *what)
{
    (void)what;
    g_code = code;
    g_info = info;
    longjmp(g_jmp, 1);
}

/* Runs stmt; returns the trap code it raised (0: none). */
#define TRAP_OF(stmt)                                                                                                 \
    (g_st.error_code = 0, g_code = 0, g_info = 0, setjmp(g_jmp) == 0 ? ((void)(stmt), (uint64_t)0) : g_code)

static void setup(void)
{
    memset(&g_st, 0, sizeof g_st);
    memset(&g_ps, 0, sizeof g_ps);
    memset(g_slots, 0, sizeof g_slots);
    memset(g_replies, 0, sizeof g_replies);
    g_st.version = GOSHMEMI_DEVICE_STATE_VERSION;
    g_st.size = (uint32_t)sizeof g_st;
    g_st.my_pe = 0;
    g_st.n_pes = 2;
    g_st.heap_size = HEAP;
    g_st.heap_base[0] = (uint64_t)(uintptr_t)g_heap0;
    g_st.heap_base[1] = 0; /* PE 1: through the proxy */
    memset(g_teams, 0, sizeof g_teams);
    memset(g_epochs, 0, sizeof g_epochs);
    g_st.teams = g_teams;
    g_st.team_epoch = g_epochs;
    g_st.max_teams = NTEAMS;
    g_st.team_inline[0].size = 2;
    g_st.remote_transport = GOSHMEMI_REMOTE_PROXY;
    g_st.proxy_state = (uint64_t)(uintptr_t)&g_ps;
    g_ps.version = GOSHMEMI_PROXY_STATE_VERSION;
    g_ps.size = (uint32_t)sizeof g_ps;
    g_ps.nrings = 1;
    g_ps.nctx = 1;
    g_ps.timeout_ns = 2000000; /* 2 ms: a blocking call's wait ends in a trap */
    g_ps.ctx_first[0] = 0;
    g_ps.ctx_count[0] = 1;
    g_ps.rings[0].slots = (uint64_t)(uintptr_t)g_slots;
    g_ps.rings[0].replies = (uint64_t)(uintptr_t)g_replies;
    g_ps.rings[0].log2_slots = LG_SLOTS;
    g_ps.rings[0].mode = GOSHMEMI_PROXY_MPSC;
    g_ps.rings[0].ctx = 0;
    goshmemx_host_set_state(&g_st);
    goshmemx_host_set_block(0);
}

/* Ring contents since the last reset: op of descriptor i, its roff, its arg. */
static unsigned desc_op(unsigned i) { return (unsigned)((g_slots[2 * i] >> 1) & 0x1f); }
static uint64_t desc_roff(unsigned i) { return g_slots[2 * i] >> 24; }
static unsigned desc_arg(unsigned i) { return (unsigned)((g_slots[2 * i] >> 16) & 0xff); }
static uint64_t ring_head(void) { return g_ps.rings[0].head; }
static void ring_reset(void)
{
    memset(g_slots, 0, sizeof g_slots);
    g_ps.rings[0].head = 0;
    g_ps.rings[0].cached_tail = 0;
    g_ps.rings[0].done = 0;
}

/* A put_signal_nbi of n elements posted the payload (one PUT, or inline
 * chunks for 1..8 bytes) then the signal AMO, without waiting. */
static void expect_put_signal_posted(uint64_t dst_off, size_t bytes, uint64_t sig_off, unsigned amo)
{
    unsigned k = bytes <= 8 ? 1u : 1u; /* 1..8 bytes: one inline; more: one referenced PUT */
    CHECK_EQ(k + 1, ring_head());
    CHECK_EQ(bytes <= 8 ? GOSHMEMI_PROXY_OP_PUT_INLINE : GOSHMEMI_PROXY_OP_PUT, desc_op(0));
    CHECK_EQ(dst_off, desc_roff(0));
    CHECK_EQ(GOSHMEMI_PROXY_OP_AMO, desc_op(k));
    CHECK_EQ(sig_off, desc_roff(k));
    CHECK_EQ(amo | GOSHMEMI_PROXY_AMO_8B, desc_arg(k));
    CHECK_EQ(0, g_code);
}

static void t_typed_nbi(void)
{
    float *fd = (float *)(g_heap0 + 4096), *fs = (float *)(g_heap0 + 8192);
    double *dd = (double *)(g_heap0 + 4096), *ds = (double *)(g_heap0 + 8192);
    uint64_t *sig = (uint64_t *)(g_heap0 + 256);
    const uint64_t doff = 4096, soff = 256;
    for (int i = 0; i < 64; i++) fs[i] = (float)i;
#define NBI_CASE(call, bytes, amo)                                                                                    \
    do {                                                                                                              \
        ring_reset();                                                                                                 \
        CHECK_EQ(0, TRAP_OF(call));                                                                                   \
        expect_put_signal_posted(doff, bytes, soff, amo);                                                             \
    } while (0)
    NBI_CASE(goshmem_float_put_signal_nbi(fd, fs, 64, sig, 1, GOSHMEM_SIGNAL_SET, 1), 256, GOSHMEMI_AMO_SET);
    NBI_CASE(goshmemx_float_put_signal_nbi_warp(fd, fs, 64, sig, 1, GOSHMEM_SIGNAL_ADD, 1), 256, GOSHMEMI_AMO_ADD);
    NBI_CASE(goshmemx_float_put_signal_nbi_block(fd, fs, 64, sig, 1, GOSHMEM_SIGNAL_SET, 1), 256, GOSHMEMI_AMO_SET);
    NBI_CASE(goshmem_double_put_signal_nbi(dd, ds, 3, sig, 7, GOSHMEM_SIGNAL_ADD, 1), 24, GOSHMEMI_AMO_ADD);
    NBI_CASE(goshmem_int64_put_signal_nbi((int64_t *)dd, (const int64_t *)ds, 1, sig, 7, GOSHMEM_SIGNAL_SET, 1), 8,
             GOSHMEMI_AMO_SET);
    NBI_CASE(nvshmem_float_put_signal_nbi(fd, fs, 64, sig, 1, NVSHMEM_SIGNAL_ADD, 1), 256, GOSHMEMI_AMO_ADD);
    NBI_CASE(nvshmemx_float_put_signal_nbi_block(fd, fs, 64, sig, 1, NVSHMEM_SIGNAL_SET, 1), 256, GOSHMEMI_AMO_SET);
    NBI_CASE(goshmem_putmem_signal_nbi(fd, fs, 256, sig, 1, GOSHMEM_SIGNAL_SET, 1), 256, GOSHMEMI_AMO_SET);
#undef NBI_CASE
    /* the blocking forms wait until the worker read the payload: nothing
     * serves this ring, so they time out (the nbi ones above did not wait) */
    ring_reset();
    CHECK_EQ(GOSHMEMI_ERR_PROXY_TIMEOUT, TRAP_OF(goshmem_float_put_signal(fd, fs, 64, sig, 1, GOSHMEM_SIGNAL_SET, 1)));
    CHECK_EQ(GOSHMEMI_ERROR_INFO(0, GOSHMEMI_PROXY_WAIT_DONE), g_info);
    ring_reset();
    CHECK_EQ(GOSHMEMI_ERR_PROXY_TIMEOUT,
             TRAP_OF(goshmemx_double_put_signal_block(dd, ds, 8, sig, 1, GOSHMEM_SIGNAL_ADD, 1)));
    ring_reset();
    CHECK_EQ(GOSHMEMI_ERR_PROXY_TIMEOUT,
             TRAP_OF(nvshmemx_float_put_signal_warp(fd, fs, 64, sig, 1, NVSHMEM_SIGNAL_ADD, 1)));
}

/* One bad operator op to PE pe (0: load/store; 1: proxy), every entry point. */
static void bad_op_case(const int op, const int pe)
{
    uint64_t *const sig = (uint64_t *)(g_heap0 + 256);
    unsigned char *const d = g_heap0 + 4096, *const s = g_heap0 + 8192;
    {
        {
            ring_reset();
            *sig = 5;
            memset(d, 0xee, 64);
            memset(s, 0x11, 64);
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(goshmem_signal_op(sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERROR_INFO(op, pe), g_info);
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, g_st.error_code);
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(nvshmemx_signal_op(sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(goshmem_putmem_signal(d, s, 64, sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(goshmem_putmem_signal_nbi(d, s, 64, sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(goshmemx_putmem_signal_warp(d, s, 64, sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(goshmemx_putmem_signal_nbi_block(d, s, 64, sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG,
                     TRAP_OF(goshmem_int_put_signal((int *)d, (const int *)s, 16, sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG,
                     TRAP_OF(goshmemx_float_put_signal_nbi_warp((float *)d, (const float *)s, 16, sig, 1, op, pe)));
            CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG,
                     TRAP_OF(nvshmem_uint64_put_signal_nbi((uint64_t *)d, (const uint64_t *)s, 8, sig, 1, op, pe)));
            /* the proxy backend checks too (it is called directly by ports) */
            if (pe == 1)
                CHECK_EQ(GOSHMEMI_ERR_INVALID_ARG, TRAP_OF(goshmemi_proxy_put_signal(0, 1, 4096, s, 64, 256, 1, op, 1)));
            CHECK_EQ(0, ring_head());    /* nothing posted */
            CHECK_EQ(5, *sig);           /* nothing signalled */
            CHECK_EQ(0xee, d[0]);        /* nothing copied */
            CHECK_EQ(0xee, d[63]);
        }
    }
}

static void t_bad_signal_op(void)
{
    uint64_t *sig = (uint64_t *)(g_heap0 + 256);
    unsigned char *d = g_heap0 + 4096, *s = g_heap0 + 8192;
    static const int bad[] = {0, 1, 2, 8, 11, -1, 0x7fffffff};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bad_op_case(bad[i], 0);
        bad_op_case(bad[i], 1);
    }
    /* the good ones still work on the load/store path */
    *sig = 5;
    CHECK_EQ(0, TRAP_OF(goshmem_signal_op(sig, 3, GOSHMEM_SIGNAL_ADD, 0)));
    CHECK_EQ(8, *sig);
    CHECK_EQ(0, TRAP_OF(nvshmemx_signal_op(sig, 2, NVSHMEM_SIGNAL_SET, 0)));
    CHECK_EQ(2, *sig);
    CHECK_EQ(0, TRAP_OF(goshmem_int_put_signal_nbi((int *)d, (const int *)s, 16, sig, 4, GOSHMEM_SIGNAL_ADD, 0)));
    CHECK_EQ(6, *sig);
    CHECK_EQ(0x11, d[63]);
}

static void t_constants(void)
{
    /* Ref: NVSHMEM 3.x nvshmem_common_transport.h, nvshmem_constants.h */
    CHECK_EQ(9, NVSHMEM_SIGNAL_SET);
    CHECK_EQ(10, NVSHMEM_SIGNAL_ADD);
    CHECK_EQ(0, NVSHMEM_CMP_EQ);
    CHECK_EQ(1, NVSHMEM_CMP_NE);
    CHECK_EQ(2, NVSHMEM_CMP_GT);
    CHECK_EQ(3, NVSHMEM_CMP_LE);
    CHECK_EQ(4, NVSHMEM_CMP_LT);
    CHECK_EQ(5, NVSHMEM_CMP_GE);
    CHECK_EQ(GOSHMEM_TEAM_WORLD, NVSHMEM_TEAM_WORLD);
    CHECK_EQ(GOSHMEM_TEAM_SHARED, NVSHMEM_TEAM_SHARED);
    CHECK_EQ(GOSHMEM_TEAM_NODE, NVSHMEMX_TEAM_NODE);
    nvshmem_team_t t = NVSHMEM_TEAM_SHARED;
    nvshmemx_signal_op_t op = NVSHMEM_SIGNAL_ADD;
    CHECK_EQ(1, (int)t);
    CHECK_EQ(10, (int)op);
    /* GOSHMEM_TEAM_SHARED is slot 1 (published by shmem.Init): a team
     * call on it reads row 1 (inline in the state) */
    g_st.team_inline[1].start = 0, g_st.team_inline[1].stride = 1, g_st.team_inline[1].size = 2, g_st.team_inline[1].my_index = 0;
    g_st.team_inline[1].slot = 1;
    CHECK_EQ(2, nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED));
    CHECK_EQ(0, nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE));
    CHECK_EQ(1, nvshmem_team_translate_pe(NVSHMEMX_TEAM_NODE, 1, NVSHMEM_TEAM_WORLD));
    g_st.team_inline[1].size = 0; /* not published (irregular node placement): team calls trap */
    CHECK_EQ(GOSHMEMI_ERR_BAD_TEAM, TRAP_OF(nvshmem_barrier(NVSHMEM_TEAM_SHARED)));
}

int main(void)
{
    setup();
    goshmemx_host_trap_hook = trap_hook;
    fprintf(stderr, "signalcheck: device-call failure messages below are expected:\n");
    t_typed_nbi();
    t_bad_signal_op();
    t_constants();
    goshmemx_host_trap_hook = NULL;
    goshmemx_host_set_state(NULL);
    printf("signalcheck: %lu passed, %lu failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
