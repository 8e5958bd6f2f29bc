/* hdrcheck: CPU tests of the goshmem device API (include/goshmem.h) in host
 * mode. Each "PE" is an OS thread with its own goshmemi_device_state_t whose
 * heap_base[] point at per-PE heaps carved from one allocation, exactly as a
 * GPU sees CUDA-IPC-mapped peer heaps.
 *
 * Built twice by `make hdrcheck`:
 *   gcc -std=c11   -Wall -Wextra -Werror -O2 -pthread -Iinclude tests/hdr/hdrcheck.c
 *   g++ -std=c++17 -Wall -Wextra -Werror -O2 -pthread -Iinclude tests/hdr/hdrcheck.cpp
 * Prints `hdrcheck: N passed, 0 failed` and exits 0, or nonzero on failure.
 */
#define _GNU_SOURCE 1

/* t_reg_find changes the tables of registered buffers between a lookup's loads */
static void reg_hook(void);
#define GOSHMEMI_REG_LOAD_HOOK() reg_hook()

#include <goshmem.h>
#include <goshmem/nvshmem_compat.h>

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- tiny test framework ------------------------------------------------ */

static unsigned long g_passed, g_failed;
static const char *g_test = "";

static int cur_pe(void) { return goshmemi_device_state ? goshmemi_device_state->my_pe : -1; }

static void check_report(int ok, const char *file, int line, const char *what, unsigned long long exp,
                         unsigned long long got)
{
    if (ok) {
        __atomic_fetch_add(&g_passed, 1, __ATOMIC_RELAXED);
        return;
    }
    if (__atomic_fetch_add(&g_failed, 1, __ATOMIC_RELAXED) < 50)
        fprintf(stderr, "%s:%d: [%s] PE %d: %s: expected %llu (0x%llx), got %llu (0x%llx)\n", file, line, g_test,
                cur_pe(), what, exp, exp, got, got);
}

/* CHECK_EQ(expected, got): compares as 64-bit unsigned (bit patterns). */
#define CHECK_EQ(exp, got)                                                                                            \
    do {                                                                                                              \
        unsigned long long e_ = (unsigned long long)(exp), g_ = (unsigned long long)(got);                            \
        check_report(e_ == g_, __FILE__, __LINE__, #got, e_, g_);                                                     \
    } while (0)
#define CHECK(cond)                                                                                                   \
    do {                                                                                                              \
        int c_ = !!(cond); /* evaluated once: cond may have side effects */                                           \
        check_report(c_, __FILE__, __LINE__, #cond, 1, (unsigned long long)c_);                                       \
    } while (0)

/* ---- the emulated job: N PEs, one heap each ------------------------------ */

#define HEAP_BYTES (4u << 20)
#define MAX_TEST_PES 12
/* team slots (max_teams) of the test states: more than the 32 of device
 * state version 1, so the table lives in memory the state points at */
#define TEST_TEAMS 40

typedef struct world {
    int n;
    unsigned char *heaps;            /* n * HEAP_BYTES, 64-byte aligned */
    goshmemi_device_state_t *states; /* n states */
    goshmemi_team_t *tables;         /* n team tables of TEST_TEAMS rows */
    uint64_t *epochs;                /* n * TEST_TEAMS team epochs */
    size_t next_off;                 /* symmetric bump allocator */
} world_t;

static void world_init(world_t *w, int n, int same_device, goshmemi_device_state_t *states)
{
    w->n = n;
    w->heaps = (unsigned char *)aligned_alloc(4096, (size_t)n * HEAP_BYTES);
    memset(w->heaps, 0, (size_t)n * HEAP_BYTES);
    w->states = states ? states : (goshmemi_device_state_t *)calloc((size_t)n, sizeof(goshmemi_device_state_t));
    memset(w->states, 0, (size_t)n * sizeof(goshmemi_device_state_t));
    w->tables = (goshmemi_team_t *)calloc((size_t)n * TEST_TEAMS, sizeof(goshmemi_team_t));
    w->epochs = (uint64_t *)calloc((size_t)n * TEST_TEAMS, sizeof(uint64_t));
    w->next_off = (size_t)goshmemi_device_control_bytes(TEST_TEAMS);
    for (int pe = 0; pe < n; pe++) {
        goshmemi_device_state_t *st = &w->states[pe];
        st->version = GOSHMEMI_DEVICE_STATE_VERSION;
        st->size = (uint32_t)sizeof(*st);
        st->my_pe = pe;
        st->n_pes = n;
        st->heap_size = HEAP_BYTES;
        st->teams = w->tables + (size_t)pe * TEST_TEAMS;
        st->team_epoch = w->epochs + (size_t)pe * TEST_TEAMS;
        st->max_teams = TEST_TEAMS;
        for (int q = 0; q < n; q++) st->heap_base[q] = (uint64_t)(uintptr_t)(w->heaps + (size_t)q * HEAP_BYTES);
        st->team_inline[0].start = 0;
        st->team_inline[0].stride = 1;
        st->team_inline[0].size = n;
        st->team_inline[0].my_index = pe;
        st->team_inline[0].slot = 0;
        st->teams[0] = st->team_inline[0];
        st->all_peers_same_device = (uint32_t)same_device;
    }
}

static void world_free(world_t *w, int free_states)
{
    free(w->heaps);
    free(w->tables);
    free(w->epochs);
    if (free_states) free(w->states);
}

/* Symmetric allocation: the same offset on every PE. */
static size_t sym_alloc(world_t *w, size_t bytes)
{
    size_t off = w->next_off;
    w->next_off = (off + bytes + 63) & ~(size_t)63;
    if (w->next_off > HEAP_BYTES) {
        fprintf(stderr, "hdrcheck: test heap exhausted\n");
        exit(2);
    }
    return off;
}

/* This PE's address of symmetric offset off. */
#define SYM(T, off) ((T *)(uintptr_t)(goshmemi_device_state->heap_base[goshmemi_device_state->my_pe] + (off)))

typedef void (*pe_fn)(world_t *w, int pe, void *arg);
typedef struct pe_arg {
    world_t *w;
    int pe;
    pe_fn fn;
    void *arg;
} pe_arg_t;

static void *pe_main(void *p)
{
    pe_arg_t *a = (pe_arg_t *)p;
    goshmemx_host_set_state(&a->w->states[a->pe]);
    a->fn(a->w, a->pe, a->arg);
    goshmemx_host_set_state(NULL);
    return NULL;
}

/* Runs fn on every PE of w, one thread each, and joins them. */
static void run_pes(world_t *w, pe_fn fn, void *arg)
{
    pthread_t th[MAX_TEST_PES];
    pe_arg_t args[MAX_TEST_PES];
    for (int pe = 0; pe < w->n; pe++) {
        args[pe].w = w;
        args[pe].pe = pe;
        args[pe].fn = fn;
        args[pe].arg = arg;
        if (pthread_create(&th[pe], NULL, pe_main, &args[pe]) != 0) {
            perror("pthread_create");
            exit(2);
        }
    }
    for (int pe = 0; pe < w->n; pe++) pthread_join(th[pe], NULL);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* ---- 1. put/get/p/g, typed and untyped, all group variants ---------------- */

typedef struct rma_arg {
    size_t buf, dst, src_local, pslots;
} rma_arg_t;

#define RMA_MAX 4096

#define TYPED_ROUNDTRIP(NAME, TYPE)                                                                                   \
    do {                                                                                                              \
        TYPE *src = SYM(TYPE, a->src_local);                                                                          \
        TYPE *dst = SYM(TYPE, a->dst);                                                                                \
        size_t cnt = RMA_MAX / sizeof(TYPE);                                                                          \
        for (size_t i = 0; i < cnt; i++) src[i] = (TYPE)(mix((uint64_t)(pe * 1000003 + i)) % 100);                    \
        goshmem_barrier_all();                                                                                        \
        goshmem_##NAME##_put(dst, src, cnt, right);                                                                   \
        goshmem_barrier_all();                                                                                        \
        for (size_t i = 0; i < cnt; i++) CHECK_EQ((TYPE)(mix((uint64_t)(left * 1000003 + i)) % 100), dst[i]);         \
        TYPE tmp[RMA_MAX / sizeof(TYPE)];                                                                             \
        goshmem_##NAME##_get(tmp, src, cnt, right);                                                                   \
        for (size_t i = 0; i < cnt; i++) CHECK_EQ((TYPE)(mix((uint64_t)(right * 1000003 + i)) % 100), tmp[i]);        \
        goshmemx_##NAME##_get_nbi_block(tmp, dst, 3, left);                                                           \
        goshmem_quiet();                                                                                              \
        for (size_t i = 0; i < 3; i++) CHECK_EQ((TYPE)(mix((uint64_t)((left - 1 + n) % n * 1000003 + i)) % 100),      \
                                                tmp[i]);                                                              \
        TYPE *ps = SYM(TYPE, a->pslots);                                                                              \
        goshmem_##NAME##_p(&ps[pe], (TYPE)(pe + 7), right); /* slot pe on the right neighbour */                      \
        goshmem_barrier_all();                                                                                        \
        CHECK_EQ((TYPE)(left + 7), ps[left]);                                                                         \
        CHECK_EQ((TYPE)(pe + 7), goshmem_##NAME##_g(&ps[pe], right));                                                 \
        goshmem_barrier_all();                                                                                        \
    } while (0)

static void t_rma(world_t *w, int pe, void *arg)
{
    rma_arg_t *a = (rma_arg_t *)arg;
    int n = w->n, right = (pe + 1) % n, left = (pe - 1 + n) % n;
    unsigned char *buf = SYM(unsigned char, a->buf);
    unsigned char *dst = SYM(unsigned char, a->dst);
    static const size_t sizes[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 63, 64, 100, 1000, 4095, 4096};
    static const size_t offs[] = {0, 1, 3, 8, 13};

    CHECK_EQ(pe, goshmem_my_pe());
    CHECK_EQ(n, goshmem_n_pes());
    CHECK_EQ(pe, nvshmem_my_pe());
    CHECK(goshmem_ptr(dst, pe) == (void *)dst);
    CHECK(goshmem_ptr(dst, right) == (void *)(uintptr_t)(goshmemi_device_state->heap_base[right] + a->dst));
    CHECK(goshmem_ptr(dst, n) == NULL);

    /* untyped: every size x misalignment x group variant x blocking/nbi */
    for (int variant = 0; variant < 8; variant++) {
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
                size_t sz = sizes[si], so = offs[oi], doff = offs[(oi + 2) % 5];
                uint64_t tag = mix((uint64_t)(variant * 7919 + si * 131 + oi * 17 + pe));
                for (size_t i = 0; i < sz; i++) buf[so + i] = (unsigned char)(mix(tag + i) & 0xff);
                memset(dst, 0xEE, RMA_MAX + 64);
                goshmem_barrier_all();
                switch (variant) {
                case 0: goshmem_putmem(dst + doff, buf + so, sz, right); break;
                case 1: goshmem_putmem_nbi(dst + doff, buf + so, sz, right); goshmem_quiet(); break;
                case 2: goshmemx_putmem_warp(dst + doff, buf + so, sz, right); break;
                case 3: goshmemx_putmem_block(dst + doff, buf + so, sz, right); break;
                case 4: goshmemx_putmem_nbi_warp(dst + doff, buf + so, sz, right); goshmem_ctx_quiet(GOSHMEM_CTX_DEFAULT); break;
                case 5: goshmemx_putmem_nbi_block(dst + doff, buf + so, sz, right); goshmem_quiet(); break;
                case 6: goshmem_put8(dst + doff, buf + so, sz, right); break;
                default: nvshmemx_putmem_block(dst + doff, buf + so, sz, right); break;
                }
                goshmem_barrier_all();
                uint64_t ltag = mix((uint64_t)(variant * 7919 + si * 131 + oi * 17 + left));
                int bad = 0;
                for (size_t i = 0; i < sz; i++) bad += dst[doff + i] != (unsigned char)(mix(ltag + i) & 0xff);
                CHECK_EQ(0, bad);
                CHECK_EQ(0xEE, dst[doff + sz]); /* no overrun */
                if (doff) CHECK_EQ(0xEE, dst[doff - 1]);
                /* get the right neighbour's buf back */
                unsigned char tmp[RMA_MAX + 64];
                memset(tmp, 0x55, sizeof tmp);
                switch (variant % 4) {
                case 0: goshmem_getmem(tmp, buf + so, sz, right); break;
                case 1: goshmem_getmem_nbi(tmp, buf + so, sz, right); goshmem_quiet(); break;
                case 2: goshmemx_getmem_warp(tmp, buf + so, sz, right); break;
                default: goshmemx_getmem_block(tmp, buf + so, sz, right); break;
                }
                uint64_t rtag = mix((uint64_t)(variant * 7919 + si * 131 + oi * 17 + right));
                bad = 0;
                for (size_t i = 0; i < sz; i++) bad += tmp[i] != (unsigned char)(mix(rtag + i) & 0xff);
                CHECK_EQ(0, bad);
                CHECK_EQ(0x55, tmp[sz]);
                goshmem_barrier_all();
            }
        }
    }

    /* typed */
    TYPED_ROUNDTRIP(float, float);
    TYPED_ROUNDTRIP(double, double);
    TYPED_ROUNDTRIP(char, char);
    TYPED_ROUNDTRIP(short, short);
    TYPED_ROUNDTRIP(int, int);
    TYPED_ROUNDTRIP(long, long);
    TYPED_ROUNDTRIP(longlong, long long);
    TYPED_ROUNDTRIP(int8, int8_t);
    TYPED_ROUNDTRIP(int16, int16_t);
    TYPED_ROUNDTRIP(uint32, uint32_t);
    TYPED_ROUNDTRIP(uint64, uint64_t);
    TYPED_ROUNDTRIP(size, size_t);
    TYPED_ROUNDTRIP(ptrdiff, ptrdiff_t);

    /* p/g of exact bit patterns, incl. float/double and negatives */
    {
        double *d = SYM(double, a->pslots);
        goshmem_double_p(&d[pe], -1.5 * (pe + 1), right);
        goshmem_barrier_all();
        CHECK(d[left] == -1.5 * (left + 1));
        CHECK(goshmem_double_g(&d[pe], right) == -1.5 * (pe + 1));
        int16_t *s = SYM(int16_t, a->pslots + 256);
        goshmem_int16_p(&s[pe], (int16_t)(-300 - pe), left);
        nvshmem_float_p(SYM(float, a->pslots + 512) + pe, 0.25f * pe, right);
        goshmem_barrier_all();
        CHECK_EQ((uint16_t)(int16_t)(-300 - right), (uint16_t)s[right]);
        CHECK(nvshmem_float_g(SYM(float, a->pslots + 512) + pe, right) == 0.25f * pe);
        CHECK(SYM(float, a->pslots + 512)[left] == 0.25f * left);
        goshmem_barrier_all();
    }
}

/* ---- 2. put_signal: payload visible when the signal is seen --------------- */

#define PS_ROUNDS 3000
#define PS_BYTES 2048

typedef struct ps_arg {
    size_t payload, sig, ack;
} ps_arg_t;

static void t_put_signal(world_t *w, int pe, void *arg)
{
    ps_arg_t *a = (ps_arg_t *)arg;
    int n = w->n;
    /* pairs: even PE sends to pe+1 (odd receives); a trailing odd PE idles */
    if (pe % 2 == 0 && pe + 1 < n) {
        int to = pe + 1;
        uint64_t *ack = SYM(uint64_t, a->ack);
        unsigned char *src = (unsigned char *)malloc(PS_BYTES);
        for (uint64_t r = 1; r <= PS_ROUNDS; r++) {
            size_t len = 8 + (size_t)(mix(r) % (PS_BYTES - 8));
            for (size_t i = 0; i < len; i++) src[i] = (unsigned char)(r + i);
            memcpy(src, &r, 8); /* first word carries the round too */
            unsigned char *dst = SYM(unsigned char, a->payload);
            uint64_t *sig = SYM(uint64_t, a->sig);
            switch (r % 6) {
            case 0: goshmem_putmem_signal(dst, src, len, sig, r, GOSHMEM_SIGNAL_SET, to); break;
            case 1: goshmem_putmem_signal_nbi(dst, src, len, sig, 1, GOSHMEM_SIGNAL_ADD, to); break;
            case 2: goshmemx_putmem_signal_warp(dst, src, len, sig, r, GOSHMEM_SIGNAL_SET, to); break;
            case 3: goshmemx_putmem_signal_nbi_block(dst, src, len, sig, 1, GOSHMEM_SIGNAL_ADD, to); break;
            case 4: goshmem_uint8_put_signal((uint8_t *)dst, src, len, sig, r, GOSHMEM_SIGNAL_SET, to); break;
            default: nvshmemx_putmem_signal_nbi_block(dst, src, len, sig, r, NVSHMEM_SIGNAL_SET, to); break;
            }
            /* wait for the receiver to consume round r before reusing its buffer */
            CHECK_EQ(r, goshmem_signal_wait_until(ack, GOSHMEM_CMP_GE, r) >= r ? r : 0);
        }
        free(src);
    } else if (pe % 2 == 1) {
        int from = pe - 1;
        uint64_t *sig = SYM(uint64_t, a->sig);
        unsigned char *dst = SYM(unsigned char, a->payload);
        unsigned long bad = 0;
        for (uint64_t r = 1; r <= PS_ROUNDS; r++) {
            uint64_t v = goshmem_signal_wait_until(sig, GOSHMEM_CMP_GE, r);
            if (v != r) bad++;
            size_t len = 8 + (size_t)(mix(r) % (PS_BYTES - 8));
            uint64_t first;
            memcpy(&first, dst, 8);
            if (first != r) bad++;
            for (size_t i = 8; i < len; i++)
                if (dst[i] != (unsigned char)(r + i)) {
                    bad++;
                    break;
                }
            CHECK_EQ(r, goshmem_signal_fetch(sig));
            goshmem_fence(); /* our payload reads complete before the ack (signal_op is relaxed) */
            goshmem_signal_op(SYM(uint64_t, a->ack), r, GOSHMEM_SIGNAL_SET, from);
        }
        CHECK_EQ(0, bad);
    }
    goshmem_barrier_all();
}

/* ---- 3. signal ADD from every PE, fence ordering --------------------------- */

#define ADD_ROUNDS 500

typedef struct sa_arg {
    size_t sig, data, flag;
} sa_arg_t;

static void t_signal_add(world_t *w, int pe, void *arg)
{
    sa_arg_t *a = (sa_arg_t *)arg;
    int n = w->n;
    uint64_t *sig = SYM(uint64_t, a->sig);
    for (int i = 0; i < ADD_ROUNDS; i++) {
        goshmem_signal_op(sig, (uint64_t)(pe + 1), GOSHMEM_SIGNAL_ADD, 0);
        nvshmemx_signal_op(sig, 1000, NVSHMEM_SIGNAL_ADD, n - 1);
    }
    uint64_t want0 = (uint64_t)ADD_ROUNDS * (uint64_t)n * (uint64_t)(n + 1) / 2;
    uint64_t wantl = (uint64_t)ADD_ROUNDS * 1000u * (uint64_t)n;
    if (n == 1) want0 += wantl;
    if (pe == 0) CHECK_EQ(want0, goshmem_signal_wait_until(sig, GOSHMEM_CMP_EQ, want0));
    if (pe == n - 1 && n > 1) CHECK_EQ(wantl, nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, wantl));
    goshmem_barrier_all();

    /* put + fence + p(flag): data visible once the flag is seen */
    if (n >= 2) {
        int to = (pe + 1) % n;
        long *data = SYM(long, a->data);
        long *flag = SYM(long, a->flag);
        for (long r = 1; r <= ADD_ROUNDS; r++) {
            long vals[4] = {r, r * 2, r * 3, r * 4};
            goshmem_long_put(data + 4 * (r % 2), vals, 4, to);
            goshmem_fence();
            goshmem_long_p(flag, r, to);
            goshmem_long_wait_until(flag, GOSHMEM_CMP_GE, r);
            long *got = data + 4 * (r % 2);
            CHECK_EQ(r * 3, got[2]);
            CHECK_EQ(r * 4, got[3]);
            goshmem_sync_all(); /* nobody overwrites the other half before it was read */
        }
    }
    goshmem_barrier_all();
}

/* ---- 4. wait_until family ------------------------------------------------- */

typedef struct wf_arg {
    size_t ivars, ivars64;
} wf_arg_t;

static void t_wait_family(world_t *w, int pe, void *arg)
{
    wf_arg_t *a = (wf_arg_t *)arg;
    int n = w->n;
    int *iv = SYM(int, a->ivars);
    uint64_t *iv64 = SYM(uint64_t, a->ivars64);
    for (int round = 1; round <= 50; round++) {
        if (pe == 0) {
            int status[MAX_TEST_PES] = {0};
            status[0] = 1; /* nobody writes slot 0 */
            /* before anyone writes (they wait for our go below): nothing holds */
            CHECK_EQ(0, goshmem_int_test(&iv[1], GOSHMEM_CMP_EQ, round));
            CHECK_EQ(SIZE_MAX, goshmem_int_test_any(iv, (size_t)n, status, GOSHMEM_CMP_EQ, round));
            CHECK_EQ(n == 1 ? 1 : 0, goshmem_int_test_all(iv, (size_t)n, status, GOSHMEM_CMP_EQ, round));
            for (int q = 1; q < n; q++) goshmem_uint64_p(&iv64[0], (uint64_t)round, q); /* go */
            if (n > 1) {
                size_t any = goshmem_int_wait_until_any(iv, (size_t)n, status, GOSHMEM_CMP_EQ, round);
                CHECK(any >= 1 && any < (size_t)n);
                CHECK_EQ(round, iv[any]);
                size_t idx[MAX_TEST_PES];
                size_t cnt = goshmem_int_wait_until_some(iv, (size_t)n, idx, status, GOSHMEM_CMP_GE, round);
                CHECK(cnt >= 1 && cnt <= (size_t)n - 1);
                for (size_t k = 0; k < cnt; k++) CHECK_EQ(round, iv[idx[k]]);
                goshmem_int_wait_until_all(iv, (size_t)n, status, GOSHMEM_CMP_EQ, round);
                for (int q = 1; q < n; q++) CHECK_EQ(round, iv[q]);
                CHECK_EQ(1, goshmem_int_test_all(iv, (size_t)n, status, GOSHMEM_CMP_EQ, round));
                CHECK_EQ((size_t)n - 1, goshmem_int_test_some(iv, (size_t)n, idx, status, GOSHMEM_CMP_LE, round));
                int vec[MAX_TEST_PES];
                for (int q = 0; q < n; q++) vec[q] = q == 0 ? -1 : round - 1;
                goshmem_int_wait_until_all_vector(iv, (size_t)n, status, GOSHMEM_CMP_GT, vec);
                CHECK(goshmem_int_wait_until_any_vector(iv, (size_t)n, status, GOSHMEM_CMP_GT, vec) < (size_t)n);
                CHECK_EQ((size_t)n - 1, goshmem_int_wait_until_some_vector(iv, (size_t)n, idx, status,
                                                                           GOSHMEM_CMP_NE, vec));
            }
            /* every element masked: any/some return at once */
            int all_masked[MAX_TEST_PES];
            for (int q = 0; q < n; q++) all_masked[q] = 1;
            CHECK_EQ(SIZE_MAX, goshmem_int_wait_until_any(iv, (size_t)n, all_masked, GOSHMEM_CMP_EQ, 12345));
            CHECK_EQ(0, goshmem_int_wait_until_some(iv, (size_t)n, NULL, all_masked, GOSHMEM_CMP_EQ, 12345));
        } else {
            goshmem_uint64_wait_until(&iv64[0], GOSHMEM_CMP_GE, (uint64_t)round);
            CHECK_EQ(1, goshmem_uint64_test(&iv64[0], GOSHMEM_CMP_GE, (uint64_t)round));
            if ((pe + round) % 3 == 0) sched_yield();
            goshmem_int_p(&iv[pe], round, 0);
        }
        goshmem_barrier_all();
    }
    /* every comparison operator, signed and unsigned */
    {
        short *sv = SYM(short, a->ivars + 256);
        *sv = -5;
        CHECK_EQ(1, goshmem_short_test(sv, GOSHMEM_CMP_LT, 0));
        CHECK_EQ(1, goshmem_short_test(sv, GOSHMEM_CMP_LE, -5));
        CHECK_EQ(0, goshmem_short_test(sv, GOSHMEM_CMP_GT, -5));
        CHECK_EQ(1, goshmem_short_test(sv, GOSHMEM_CMP_GE, -5));
        CHECK_EQ(1, goshmem_short_test(sv, GOSHMEM_CMP_NE, 5));
        CHECK_EQ(1, goshmem_short_test(sv, GOSHMEM_CMP_EQ, -5));
        unsigned long *uv = SYM(unsigned long, a->ivars + 320);
        *uv = ~0ul;
        CHECK_EQ(1, goshmem_ulong_test(uv, GOSHMEM_CMP_GT, 1ul));
        CHECK_EQ(1, nvshmem_ulong_test(uv, NVSHMEM_CMP_GT, 1ul));
    }
    goshmem_barrier_all();
}

/* ---- 5. atomics ------------------------------------------------------------ */

#define AMO_ITERS 2000
static uint64_t g_fetched[MAX_TEST_PES * AMO_ITERS];

typedef struct amo_arg {
    size_t ctr_int, ctr_long, ctr_u64, ctr_i32, lock, protected_ctr, bits, fl;
} amo_arg_t;

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static void t_atomics(world_t *w, int pe, void *arg)
{
    amo_arg_t *a = (amo_arg_t *)arg;
    int n = w->n, owner = n - 1;
    /* fetch_add permutation on the owner */
    for (int i = 0; i < AMO_ITERS; i++)
        g_fetched[pe * AMO_ITERS + i] = (uint64_t)goshmem_long_atomic_fetch_add(SYM(long, a->ctr_long), 1, owner);
    /* mixed non-fetching ops on other types */
    for (int i = 0; i < AMO_ITERS; i++) {
        goshmem_int_atomic_add(SYM(int, a->ctr_int), 2, 0);
        goshmem_int_atomic_inc(SYM(int, a->ctr_int), 0);
        (void)goshmem_uint64_atomic_fetch_inc(SYM(uint64_t, a->ctr_u64), (pe + 1) % n);
        nvshmem_int32_atomic_add(SYM(int32_t, a->ctr_i32), -1, 0);
    }
    goshmem_barrier_all();
    if (pe == 0) {
        qsort(g_fetched, (size_t)n * AMO_ITERS, sizeof(uint64_t), cmp_u64);
        int bad = 0;
        for (size_t i = 0; i < (size_t)n * AMO_ITERS; i++) bad += g_fetched[i] != i;
        CHECK_EQ(0, bad);
        CHECK_EQ((long)n * AMO_ITERS, goshmem_long_atomic_fetch(SYM(long, a->ctr_long), owner));
        CHECK_EQ(3 * n * AMO_ITERS, *SYM(int, a->ctr_int));
        CHECK_EQ((uint32_t)(-(int32_t)(n * AMO_ITERS)), (uint32_t)*SYM(int32_t, a->ctr_i32));
    }
    CHECK_EQ(AMO_ITERS, *SYM(uint64_t, a->ctr_u64));

    /* CAS spin lock on PE 0 protecting a non-atomic counter on PE 0 */
    for (int i = 0; i < AMO_ITERS / 4; i++) {
        while (goshmem_int_atomic_compare_swap(SYM(int, a->lock), 0, pe + 1, 0) != 0) goshmemi_poll_pause();
        goshmem_quiet(); /* acquire: CAS then fence */
        long v = goshmem_long_g(SYM(long, a->protected_ctr), 0);
        goshmem_long_p(SYM(long, a->protected_ctr), v + 1, 0);
        goshmem_quiet(); /* release: the increment lands before the unlock */
        CHECK_EQ(pe + 1, goshmem_int_atomic_swap(SYM(int, a->lock), 0, 0));
    }
    goshmem_barrier_all();
    CHECK_EQ((long)n * (AMO_ITERS / 4), goshmem_long_g(SYM(long, a->protected_ctr), 0));

    /* bitwise: or, xor, and */
    uint64_t *bits = SYM(uint64_t, a->bits);
    uint64_t old = goshmem_uint64_atomic_fetch_or(bits, 1ull << pe, 0);
    CHECK_EQ(0, old & (1ull << pe));
    goshmem_uint32_atomic_xor(SYM(uint32_t, a->bits + 8), 0xF0u << pe, 0);
    goshmem_barrier_all();
    uint64_t all = (n == 64) ? ~0ull : ((1ull << n) - 1);
    CHECK_EQ(all, goshmem_uint64_atomic_fetch(bits, 0));
    goshmem_barrier_all();
    goshmem_uint64_atomic_and(bits, ~(1ull << pe), 0);
    (void)goshmem_ulonglong_atomic_fetch_xor(SYM(unsigned long long, a->bits + 16), 1ull << (pe * 3), 0);
    goshmem_barrier_all();
    CHECK_EQ(0, goshmem_uint64_atomic_fetch(bits, 0));
    {
        uint32_t x = 0;
        for (int q = 0; q < n; q++) x ^= 0xF0u << q;
        CHECK_EQ(x, goshmem_uint32_atomic_fetch(SYM(uint32_t, a->bits + 8), 0));
        unsigned long long y = 0;
        for (int q = 0; q < n; q++) y ^= 1ull << (q * 3);
        CHECK_EQ(y, goshmem_ulonglong_atomic_fetch(SYM(unsigned long long, a->bits + 16), 0));
    }
    goshmem_barrier_all();

    /* float/double set/swap/fetch; int64 compare_swap returns old on failure */
    if (pe == 0) {
        goshmem_double_atomic_set(SYM(double, a->fl), 2.5, owner);
        CHECK(goshmem_double_atomic_swap(SYM(double, a->fl), -7.25, owner) == 2.5);
        CHECK(goshmem_double_atomic_fetch(SYM(double, a->fl), owner) == -7.25);
        goshmem_float_atomic_set(SYM(float, a->fl + 8), 1.5f, owner);
        CHECK(nvshmem_float_atomic_fetch(SYM(float, a->fl + 8), owner) == 1.5f);
        int64_t *c = SYM(int64_t, a->fl + 16);
        CHECK_EQ(0, goshmem_int64_atomic_compare_swap(c, 0, -9, owner));
        CHECK_EQ((uint64_t)-9, goshmem_int64_atomic_compare_swap(c, 0, 5, owner));
        CHECK_EQ((uint64_t)-9, goshmem_int64_atomic_fetch(c, owner));
        CHECK_EQ(41, goshmem_size_atomic_fetch_add(SYM(size_t, a->fl + 24), 1, owner) + 41);
        CHECK_EQ(-3, goshmem_ptrdiff_atomic_fetch_add(SYM(ptrdiff_t, a->fl + 32), 5, owner) - 3);
    }
    goshmem_barrier_all();
}

/* ---- 6. barrier_all / sync_all / team barriers ----------------------------- */

#define BAR_ROUNDS 300

typedef struct bar_arg {
    size_t slots; /* [2][MAX_TEST_PES] longs */
    int team;     /* team to use (world unless a split test) */
} bar_arg_t;

static void t_barrier(world_t *w, int pe, void *arg)
{
    bar_arg_t *a = (bar_arg_t *)arg;
    long *slots = SYM(long, a->slots);
    goshmem_team_t team = (goshmem_team_t)a->team;
    int tn = goshmem_team_n_pes(team), me = goshmem_team_my_pe(team);
    (void)w;
    (void)pe;
    if (me < 0) return; /* not a member */
    const goshmemi_team_t t = goshmemi_team_row(goshmemi_device_state, team);
    int start = team == GOSHMEM_TEAM_WORLD ? 0 : t.start, stride = team == GOSHMEM_TEAM_WORLD ? 1 : t.stride;
    for (long r = 1; r <= BAR_ROUNDS; r++) {
        long *buf = slots + (r % 2) * MAX_TEST_PES;
        /* tell every member we reached round r (double-buffered by parity) */
        for (int i = 0; i < tn; i++) goshmem_long_p(&buf[me], r, start + i * stride);
        switch (r % 6) {
        case 0: goshmem_barrier_all(); break;
        case 1: goshmem_barrier(team); break;
        case 2: goshmemx_barrier_all_block(); break;
        case 3: goshmemx_barrier_warp(team); break;
        case 4: nvshmem_barrier(team); break;
        default: nvshmemx_barrier_block(team); break;
        }
        int bad = 0;
        for (int i = 0; i < tn; i++) bad += __atomic_load_n(&buf[i], __ATOMIC_RELAXED) != r;
        CHECK_EQ(0, bad);
    }
    /* sync (no quiet): store ordering still makes the values visible here */
    for (long r = BAR_ROUNDS + 1; r <= BAR_ROUNDS + 100; r++) {
        long *buf = slots + (r % 2) * MAX_TEST_PES;
        for (int i = 0; i < tn; i++) goshmem_long_p(&buf[me], r, start + i * stride);
        switch (r % 4) {
        case 0: goshmem_team_sync(team); break;
        case 1: goshmemx_team_sync_block(team); break;
        case 2: team == GOSHMEM_TEAM_WORLD ? goshmem_sync_all() : goshmem_team_sync(team); break;
        default: team == GOSHMEM_TEAM_WORLD ? goshmemx_sync_all_warp() : goshmemx_team_sync_warp(team); break;
        }
        int bad = 0;
        for (int i = 0; i < tn; i++) bad += __atomic_load_n(&buf[i], __ATOMIC_RELAXED) != r;
        CHECK_EQ(0, bad);
    }
}

/* split teams: world barriers in t_barrier need all PEs, so a split test uses
 * only team calls */
static void t_team_split(world_t *w, int pe, void *arg)
{
    bar_arg_t *a = (bar_arg_t *)arg;
    long *slots = SYM(long, a->slots);
    (void)w;
    /* teams 1 (even PEs) and 2 (odd PEs) share psync slot 1 (disjoint members);
     * team 3 = PEs {0, 3} (stride 3) uses slot 2 */
    goshmem_team_t mine = (goshmem_team_t)(pe % 2 == 0 ? 1 : 2);
    int tn = goshmem_team_n_pes(mine), me = goshmem_team_my_pe(mine);
    CHECK(me >= 0);
    CHECK_EQ(pe, goshmem_team_translate_pe(mine, me, GOSHMEM_TEAM_WORLD));
    CHECK_EQ(me, goshmem_team_translate_pe(GOSHMEM_TEAM_WORLD, pe, mine));
    CHECK_EQ(-1, goshmem_team_translate_pe(GOSHMEM_TEAM_WORLD, pe, (goshmem_team_t)(pe % 2 == 0 ? 2 : 1)));
    const goshmemi_team_t t = goshmemi_team_row(goshmemi_device_state, mine);
    for (long r = 1; r <= BAR_ROUNDS; r++) {
        long *buf = slots + (r % 2) * MAX_TEST_PES;
        for (int i = 0; i < tn; i++) goshmem_long_p(&buf[me], r, t.start + i * t.stride);
        if (r % 2) goshmem_barrier(mine);
        else goshmemx_team_sync_block(mine);
        int bad = 0;
        for (int i = 0; i < tn; i++) bad += __atomic_load_n(&buf[i], __ATOMIC_RELAXED) != r;
        CHECK_EQ(0, bad);
    }
    if (goshmem_team_my_pe(3) >= 0) {
        long *buf = slots + 2 * MAX_TEST_PES;
        for (long r = 1; r <= BAR_ROUNDS; r++) {
            int other = pe == 0 ? 3 : 0;
            goshmem_long_p(&buf[(r % 2) * 2 + goshmem_team_my_pe(3)], r, other);
            goshmem_barrier(3);
            CHECK_EQ(r, __atomic_load_n(&buf[(r % 2) * 2 + goshmem_team_translate_pe(GOSHMEM_TEAM_WORLD, other, 3)],
                                        __ATOMIC_RELAXED));
        }
    }
}

/* ---- 7. errors: unreachable PE, bad PE, bad address, bad team, bad cmp ----- */

static jmp_buf g_trap_jmp;
static uint64_t g_trap_code;
static void trap_hook(uint64_t code, uint64_t info, const char *what)
{
    (void)info;
    (void)what;
    g_trap_code = code;
    longjmp(g_trap_jmp, 1);
}

static int g_sink;

#define EXPECT_TRAP(code_, stmt)                                                                                      \
    do {                                                                                                              \
        st->error_code = 0;                                                                                           \
        st->error_info = 0;                                                                                           \
        g_trap_code = 0;                                                                                              \
        if (setjmp(g_trap_jmp) == 0) {                                                                                \
            stmt;                                                                                                     \
            CHECK(!"expected a trap");                                                                                \
        }                                                                                                             \
        CHECK_EQ(code_, g_trap_code);                                                                                 \
    } while (0)

static void t_errors(void)
{
    world_t w;
    world_init(&w, 4, 0, NULL);
    goshmemi_device_state_t *st = &w.states[0];
    st->heap_base[2] = 0; /* PE 2 not load/store reachable from PE 0 */
    goshmemx_host_set_state(st);
    size_t off = sym_alloc(&w, 64);
    int *x = SYM(int, off);
    fprintf(stderr, "hdrcheck: the next messages are expected (error-path tests):\n");
    goshmemx_host_trap_hook = trap_hook;

    CHECK(goshmem_ptr(x, 2) == NULL);
    CHECK(goshmem_ptr(x, 1) != NULL);
    EXPECT_TRAP(GOSHMEMI_ERR_PE_UNREACHABLE, goshmem_int_p(x, 1, 2));
    CHECK_EQ(GOSHMEMI_ERR_PE_UNREACHABLE, st->error_code);
    CHECK_EQ(2, st->error_info >> 32);
    CHECK_EQ(off, st->error_info & 0xffffffffu);
    EXPECT_TRAP(GOSHMEMI_ERR_PE_UNREACHABLE, goshmem_putmem(x, x + 1, 4, 2));
    EXPECT_TRAP(GOSHMEMI_ERR_PE_OUT_OF_RANGE, g_sink = goshmem_int_g(x, 4));
    CHECK_EQ(GOSHMEMI_ERROR_INFO(4, 4), st->error_info);
    EXPECT_TRAP(GOSHMEMI_ERR_PE_OUT_OF_RANGE, goshmem_int_atomic_inc(x, -1));
    EXPECT_TRAP(GOSHMEMI_ERR_NOT_SYMMETRIC, goshmem_int_p(&g_sink, 1, 1));
    EXPECT_TRAP(GOSHMEMI_ERR_NOT_SYMMETRIC, goshmem_putmem(x, x, HEAP_BYTES, 1)); /* runs past the heap */
    EXPECT_TRAP(GOSHMEMI_ERR_BAD_TEAM, goshmem_barrier(5));                        /* teams[5] empty */
    EXPECT_TRAP(GOSHMEMI_ERR_BAD_TEAM, goshmem_team_sync(TEST_TEAMS)); /* handles are < max_teams */
    CHECK_EQ(GOSHMEMI_ERROR_INFO(TEST_TEAMS, TEST_TEAMS), st->error_info);
    EXPECT_TRAP(GOSHMEMI_ERR_BAD_TEAM, goshmem_barrier(-2));
    CHECK_EQ(-1, goshmem_team_n_pes(TEST_TEAMS));
    CHECK_EQ(-1, goshmem_team_my_pe(TEST_TEAMS));
    EXPECT_TRAP(GOSHMEMI_ERR_INVALID_ARG, goshmem_int_wait_until(x, 99, 0));
    /* first error wins: a second failure does not overwrite the record */
    st->error_code = 0;
    if (setjmp(g_trap_jmp) == 0) goshmem_int_p(x, 1, 2);
    if (setjmp(g_trap_jmp) == 0) goshmem_int_p(x, 1, 9);
    CHECK_EQ(GOSHMEMI_ERR_PE_UNREACHABLE, st->error_code);
    /* no state at all */
    goshmemx_host_set_state(NULL);
    g_trap_code = 0;
    if (setjmp(g_trap_jmp) == 0) g_sink = goshmem_my_pe();
    CHECK_EQ(GOSHMEMI_ERR_NO_STATE, g_trap_code);
    /* version check */
    goshmemx_host_set_state(st);
    CHECK_EQ(1, goshmemx_state_ok());
    st->version ^= 1;
    CHECK_EQ(0, goshmemx_state_ok());
    EXPECT_TRAP(GOSHMEMI_ERR_BAD_STATE, goshmemx_check_state());
    st->version ^= 1;
    goshmemx_host_trap_hook = NULL;

    /* without a hook the process aborts; the state (in shared memory here, as
     * a GPU's would be host-mapped) still tells the host what happened */
    goshmemi_device_state_t *shared = (goshmemi_device_state_t *)mmap(
        NULL, sizeof(goshmemi_device_state_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    memcpy(shared, st, sizeof *st);
    shared->error_code = 0;
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        goshmemx_host_set_state(shared);
        goshmem_int_p(x, 1, 2);
        _exit(0); /* not reached */
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(SIGABRT, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    CHECK_EQ(GOSHMEMI_ERR_PE_UNREACHABLE, shared->error_code);
    CHECK_EQ(GOSHMEMI_ERROR_INFO(2, off), shared->error_info);
    munmap(shared, sizeof *shared);
    fprintf(stderr, "hdrcheck: (end of expected messages)\n");
    goshmemx_host_set_state(NULL);
    world_free(&w, 1);
}

/* ---- the tables of registered buffers (proxy, IBGDA) ------------------- */

/* A lookup in a table of registered buffers (goshmemi_proxy_reg_find,
 * goshmemi_ibgdab_reg_lkey) while the host refills a slot. The host clears
 * the slot's end, then writes its other fields, end last (proxy: base;
 * IBGDA: lkey, then base). GOSHMEMI_REG_LOAD_HOOK (defined above, before
 * the header) applies the host's writes between the lookup's loads, by a
 * schedule: every way to spread the refill's writes over the lookup's
 * first REG_HOOKS load points. Each answer must be the answer of one table
 * state the refill passed through: never a mix of two registrations.
 *
 * Slot 0 goes from A to C, and from A to T (a range that ends where A ends:
 * a refill the end alone cannot tell apart). Slot 1 holds B, which lies
 * between C and A, so that C's base with A's end would cover it.
 *
 * What it cannot show: loads the GPU performs out of order (the hooks run
 * in program order), and a slot refilled twice or more within one lookup,
 * which the lookup does not handle yet (docs/gpu.md, RegisterDevice). */
#define REG_C_BASE 0x10000u
#define REG_C_END 0x20000u
#define REG_B_BASE 0x50000u
#define REG_B_END 0x51000u
#define REG_A_BASE 0x60000u
#define REG_A_END 0x70000u
#define REG_T_BASE 0x68000u
#define REG_HOOKS 9

typedef struct reg_write {
    int field; /* 0 end, 1 base, 2 lkey */
    uint64_t v;
} reg_write_t;

typedef struct reg_answer {
    uint32_t slot; /* slot + 1, 0: none */
    uint64_t off;
    uint32_t lkey;
} reg_answer_t;

static struct {
    int ibgda; /* the table the writes go to */
    goshmemi_proxy_regs_t *proxy;
    goshmemi_ibgda_regs_t *ib;
    const reg_write_t *writes;
    int nwrites, applied, calls;
    int sched[REG_HOOKS]; /* writes applied at each load point */
} g_reg;

static void reg_apply(const reg_write_t *w)
{
    if (g_reg.ibgda) {
        goshmemi_ibgda_reg_t *r = &g_reg.ib->reg[0];
        if (w->field == 0) r->end = w->v;
        else if (w->field == 1) r->base = w->v;
        else r->lkey = (uint32_t)w->v;
    } else {
        goshmemi_proxy_reg_t *r = &g_reg.proxy->reg[0];
        if (w->field == 0) r->end = w->v;
        else if (w->field == 1) r->base = w->v;
    }
}

static void reg_hook(void)
{
    if (g_reg.writes == NULL || g_reg.calls >= REG_HOOKS) return;
    for (int k = 0; k < g_reg.sched[g_reg.calls] && g_reg.applied < g_reg.nwrites; k++)
        reg_apply(&g_reg.writes[g_reg.applied++]);
    g_reg.calls++;
}

/* The answer for [a, a+n) of the table as it is now. */
static reg_answer_t reg_expect(uint64_t a, uint64_t n)
{
    reg_answer_t r = {0, 0, 0};
    for (uint32_t i = 0; i < 2; i++) {
        uint64_t base = g_reg.ibgda ? g_reg.ib->reg[i].base : g_reg.proxy->reg[i].base;
        uint64_t end = g_reg.ibgda ? g_reg.ib->reg[i].end : g_reg.proxy->reg[i].end;
        if (end != 0 && a >= base && a < end && n <= end - a) {
            r.slot = i + 1, r.off = a - base, r.lkey = g_reg.ibgda ? g_reg.ib->reg[i].lkey : 0;
            return r;
        }
    }
    return r;
}

static reg_answer_t reg_lookup(void *table_state, uint64_t a, uint64_t n)
{
    reg_answer_t r = {0, 0, 0};
    if (g_reg.ibgda) {
        int found = 0;
        r.lkey = goshmemi_ibgdab_reg_lkey((const goshmemi_ibgda_state_t *)table_state, (const void *)(uintptr_t)a,
                                          (size_t)n, &found);
        if (found) r.slot = 1; /* the IBGDA lookup names no slot: any match counts as one */
        return r;
    }
    r.slot = goshmemi_proxy_reg_find((goshmemi_proxy_state_t *)table_state, (const void *)(uintptr_t)a, (size_t)n,
                                     &r.off);
    return r;
}

/* Slot 0 holds A (lkey 1), slot 1 B (lkey 2); table n = 2. */
static void reg_reset(void)
{
    if (g_reg.ibgda) {
        memset(g_reg.ib, 0, sizeof *g_reg.ib);
        g_reg.ib->reg[0].base = REG_A_BASE, g_reg.ib->reg[0].end = REG_A_END, g_reg.ib->reg[0].lkey = 1;
        g_reg.ib->reg[1].base = REG_B_BASE, g_reg.ib->reg[1].end = REG_B_END, g_reg.ib->reg[1].lkey = 2;
        g_reg.ib->n = 2;
    } else {
        memset(g_reg.proxy, 0, sizeof *g_reg.proxy);
        g_reg.proxy->reg[0].base = REG_A_BASE, g_reg.proxy->reg[0].end = REG_A_END;
        g_reg.proxy->reg[1].base = REG_B_BASE, g_reg.proxy->reg[1].end = REG_B_END;
        g_reg.proxy->n = 2;
    }
}

/* Every schedule of writes (the refill of slot 0) against lookups of
 * addresses in A, B, C and T; *schedules counts the schedules run. */
static void reg_schedules(void *table_state, const reg_write_t *writes, int nwrites, int twin, unsigned long *schedules)
{
    static const uint64_t addrs[] = {REG_A_BASE + 0x800, REG_B_BASE + 0x800, REG_C_BASE + 0x800, REG_T_BASE + 0x800};
    int sched[REG_HOOKS];
    memset(sched, 0, sizeof sched);
    for (;;) {
        int total = 0;
        for (int h = 0; h < REG_HOOKS; h++) total += sched[h];
        if (total <= nwrites) {
            for (size_t k = 0; k < sizeof addrs / sizeof addrs[0]; k++) {
                /* the answers of the states the refill passes through */
                reg_answer_t want[8];
                reg_reset();
                for (int w = 0; w <= nwrites; w++) {
                    want[w] = reg_expect(addrs[k], 8);
                    if (g_reg.ibgda) want[w].slot = want[w].slot != 0, want[w].off = 0;
                    if (w < nwrites) reg_apply(&writes[w]);
                }
                reg_reset();
                g_reg.writes = writes, g_reg.nwrites = nwrites, g_reg.applied = 0, g_reg.calls = 0;
                memcpy(g_reg.sched, sched, sizeof sched);
                reg_answer_t got = reg_lookup(table_state, addrs[k], 8);
                g_reg.writes = NULL;
                int ok = 0;
                for (int w = 0; w <= nwrites; w++)
                    ok |= got.slot == want[w].slot && got.off == want[w].off && got.lkey == want[w].lkey;
                /* An address that only A held, looked up while A is
                 * unregistered (a kernel using a buffer being freed: the
                 * caller's race), may get the new registration's lkey with
                 * A's base when the new end equals A's: the NIC then fails the
                 * access with an error completion. Addresses of a buffer that
                 * stays registered (B) and of the new one are exact after one
                 * refill. */
                if (!ok && g_reg.ibgda && twin && addrs[k] == REG_A_BASE + 0x800)
                    ok = got.slot == 1 && got.lkey == 3;
                CHECK(ok);
                if (!ok)
                    fprintf(stderr, "hdrcheck: reg_find %s: address %#llx: slot %u off %#llx lkey %u is no state's\n",
                            g_reg.ibgda ? "ibgda" : "proxy", (unsigned long long)addrs[k], got.slot,
                            (unsigned long long)got.off, got.lkey);
            }
            (*schedules)++;
        }
        int h = 0; /* next schedule: count in base nwrites + 1 */
        while (h < REG_HOOKS && ++sched[h] > nwrites) sched[h++] = 0;
        if (h == REG_HOOKS) break;
    }
}

static void t_reg_find(void)
{
    static const reg_write_t proxy_to_c[] = {{0, 0}, {1, REG_C_BASE}, {0, REG_C_END}};
    static const reg_write_t proxy_to_t[] = {{0, 0}, {1, REG_T_BASE}, {0, REG_A_END}};
    static const reg_write_t ib_to_c[] = {{0, 0}, {2, 3}, {1, REG_C_BASE}, {0, REG_C_END}};
    static const reg_write_t ib_to_t[] = {{0, 0}, {2, 3}, {1, REG_T_BASE}, {0, REG_A_END}};
    goshmemi_proxy_state_t *ps = (goshmemi_proxy_state_t *)calloc(1, sizeof *ps);
    goshmemi_ibgda_state_t *is = (goshmemi_ibgda_state_t *)calloc(1, sizeof *is);
    g_reg.proxy = (goshmemi_proxy_regs_t *)calloc(1, sizeof *g_reg.proxy);
    g_reg.ib = (goshmemi_ibgda_regs_t *)calloc(1, sizeof *g_reg.ib);
    CHECK(ps != NULL && is != NULL && g_reg.proxy != NULL && g_reg.ib != NULL);
    uint64_t off = 0;
    int found = 1;

    /* without a table nothing is registered */
    CHECK_EQ(0, goshmemi_proxy_reg_find(ps, (void *)(uintptr_t)(REG_B_BASE + 8), 8, &off));
    CHECK_EQ(0, goshmemi_ibgdab_reg_lkey(is, (void *)(uintptr_t)(REG_B_BASE + 8), 8, &found));
    CHECK_EQ(0, found);
    ps->regs = (uint64_t)(uintptr_t)g_reg.proxy;
    is->regs = g_reg.ib;

    /* the bounds of a match, a free slot, the scan bound n */
    g_reg.ibgda = 0;
    reg_reset();
    g_reg.proxy->reg[2].base = REG_B_BASE + 0x4000; /* end 0: free */
    g_reg.proxy->n = 3;
    CHECK_EQ(2, goshmemi_proxy_reg_find(ps, (void *)(uintptr_t)(REG_B_BASE + 0x10), 0xff0, &off));
    CHECK_EQ(0x10, off);
    CHECK_EQ(0, goshmemi_proxy_reg_find(ps, (void *)(uintptr_t)(REG_B_BASE + 0x10), 0xff1, &off));
    CHECK_EQ(0, goshmemi_proxy_reg_find(ps, (void *)(uintptr_t)(REG_B_BASE + 0x4000), 8, &off));
    CHECK_EQ(0, goshmemi_proxy_reg_find(ps, (void *)(uintptr_t)(REG_B_END), 8, &off));
    g_reg.proxy->n = 1;
    CHECK_EQ(0, goshmemi_proxy_reg_find(ps, (void *)(uintptr_t)(REG_B_BASE + 0x10), 8, &off));
    g_reg.ibgda = 1;
    reg_reset();
    CHECK_EQ(2, goshmemi_ibgdab_reg_lkey(is, (void *)(uintptr_t)(REG_B_BASE + 0x10), 0xff0, &found));
    CHECK_EQ(1, found);
    CHECK_EQ(0, goshmemi_ibgdab_reg_lkey(is, (void *)(uintptr_t)(REG_B_BASE + 0x10), 0xff1, &found));
    CHECK_EQ(0, found);
    g_reg.ib->n = 1;
    CHECK_EQ(0, goshmemi_ibgdab_reg_lkey(is, (void *)(uintptr_t)(REG_B_BASE + 0x10), 8, &found));
    CHECK_EQ(0, found);

    /* refills between the loads */
    unsigned long schedules = 0;
    g_reg.ibgda = 0;
    reg_schedules(ps, proxy_to_c, 3, 0, &schedules);
    reg_schedules(ps, proxy_to_t, 3, 1, &schedules);
    g_reg.ibgda = 1;
    reg_schedules(is, ib_to_c, 4, 0, &schedules);
    reg_schedules(is, ib_to_t, 4, 1, &schedules);
    CHECK(schedules > 1000);
    free(ps), free(is), free(g_reg.proxy), free(g_reg.ib);
    g_reg.proxy = NULL, g_reg.ib = NULL;
}

/* ---- driver ------------------------------------------------------------------ */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "hdrcheck: TIMEOUT (a wait or barrier hung)\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

static void run_suite(int n, int same_device)
{
    world_t w;
    char name[64];
    world_init(&w, n, same_device, NULL);

    snprintf(name, sizeof name, "rma n=%d", n);
    g_test = name;
    rma_arg_t ra;
    ra.buf = sym_alloc(&w, RMA_MAX + 64);
    ra.dst = sym_alloc(&w, RMA_MAX + 64);
    ra.src_local = sym_alloc(&w, RMA_MAX);
    ra.pslots = sym_alloc(&w, 1024);
    run_pes(&w, t_rma, &ra);

    snprintf(name, sizeof name, "put_signal n=%d", n);
    ps_arg_t pa;
    pa.payload = sym_alloc(&w, PS_BYTES);
    pa.sig = sym_alloc(&w, 8);
    pa.ack = sym_alloc(&w, 8);
    run_pes(&w, t_put_signal, &pa);

    snprintf(name, sizeof name, "signal_add n=%d", n);
    sa_arg_t sa;
    sa.sig = sym_alloc(&w, 8);
    sa.data = sym_alloc(&w, 8 * sizeof(long));
    sa.flag = sym_alloc(&w, sizeof(long));
    run_pes(&w, t_signal_add, &sa);

    snprintf(name, sizeof name, "wait_family n=%d", n);
    wf_arg_t wa;
    wa.ivars = sym_alloc(&w, 512);
    wa.ivars64 = sym_alloc(&w, 64);
    run_pes(&w, t_wait_family, &wa);

    snprintf(name, sizeof name, "atomics n=%d", n);
    amo_arg_t aa;
    aa.ctr_int = sym_alloc(&w, 8);
    aa.ctr_long = sym_alloc(&w, 8);
    aa.ctr_u64 = sym_alloc(&w, 8);
    aa.ctr_i32 = sym_alloc(&w, 8);
    aa.lock = sym_alloc(&w, 8);
    aa.protected_ctr = sym_alloc(&w, 8);
    aa.bits = sym_alloc(&w, 64);
    aa.fl = sym_alloc(&w, 64);
    run_pes(&w, t_atomics, &aa);

    snprintf(name, sizeof name, "barrier n=%d", n);
    bar_arg_t ba;
    ba.slots = sym_alloc(&w, 3 * MAX_TEST_PES * sizeof(long));
    ba.team = GOSHMEM_TEAM_WORLD;
    run_pes(&w, t_barrier, &ba);

    /* the world by hand in row 37 and the last slot (past version 1's 32):
     * barrier(team) with a table entry */
    snprintf(name, sizeof name, "barrier team-table n=%d", n);
    for (int pe = 0; pe < n; pe++) {
        goshmemi_team_t *t = &w.states[pe].teams[37];
        t->start = 0, t->stride = 1, t->size = n, t->my_index = pe, t->slot = TEST_TEAMS - 1;
    }
    bar_arg_t bb;
    bb.slots = sym_alloc(&w, 3 * MAX_TEST_PES * sizeof(long));
    bb.team = 37;
    run_pes(&w, t_barrier, &bb);

    if (n == 6) {
        snprintf(name, sizeof name, "team split n=%d", n);
        for (int pe = 0; pe < n; pe++) {
            goshmemi_device_state_t *st = &w.states[pe];
            goshmemi_team_t *e = &st->team_inline[1], *o = &st->team_inline[2], *s3 = &st->team_inline[3];
            e->start = 0, e->stride = 2, e->size = 3, e->my_index = pe % 2 == 0 ? pe / 2 : -1, e->slot = 1;
            o->start = 1, o->stride = 2, o->size = 3, o->my_index = pe % 2 == 1 ? pe / 2 : -1, o->slot = 1;
            s3->start = 0, s3->stride = 3, s3->size = 2, s3->my_index = pe % 3 == 0 ? pe / 3 : -1, s3->slot = 2;
        }
        bar_arg_t bs;
        bs.slots = sym_alloc(&w, 3 * MAX_TEST_PES * sizeof(long));
        bs.team = 1;
        run_pes(&w, t_team_split, &bs);
    }
    world_free(&w, 1);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(600);
    /* all_peers_same_device alternates: the host-mode scope is not observable,
     * but both branches of goshmemi_sys_scope() run */
    static const int ns[] = {1, 2, 3, 4, 6, 8, 12}; /* 12: barriers in dissemination rounds (flat up to 8) */
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) run_suite(ns[i], (int)(i % 2));
    g_test = "reg_find";
    t_reg_find();
    g_test = "errors";
    t_errors();
    printf("hdrcheck: %lu passed, %lu failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
