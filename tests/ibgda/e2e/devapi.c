/* tests/ibgda/e2e/devapi.c: the same two PEs as backend.c, but through the
 * device API (goshmem_* from <goshmem.h>): with heap_base[peer] == 0 and
 * remote_transport == GOSHMEMI_REMOTE_IBGDA, remote.h routes every call to
 * the IBGDA backend, whose WQEs the Go SoftNIC (an emulation) executes. */
#define _DEFAULT_SOURCE
#include <goshmem.h>

#include "backend.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct dv_arg {
    bk_env_t *env;
    int me;
    pthread_barrier_t *bar;
} dv_arg_t;

static pthread_mutex_t dv_msg_mu = PTHREAD_MUTEX_INITIALIZER;

static void dv_failf(bk_env_t *env, int me, const char *f, ...)
{
    va_list ap;
    pthread_mutex_lock(&dv_msg_mu);
    if (!env->failed) {
        int k = snprintf(env->msg, sizeof env->msg, "PE %d (device API): ", me);
        va_start(ap, f);
        vsnprintf(env->msg + k, sizeof env->msg - (size_t)k, f, ap);
        va_end(ap);
        env->failed = 1;
    }
    pthread_mutex_unlock(&dv_msg_mu);
}

#define DV_EXPECT(cond, ...)                                                                                           \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            dv_failf(env, me, __VA_ARGS__);                                                                            \
    } while (0)

static uint8_t dv_byte(int pe, int region, size_t i) { return (uint8_t)(pe * 53 + region * 17 + i * 5 + (i >> 8)); }

static long dv_diff(const uint8_t *p, int pe, int region, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != dv_byte(pe, region, i))
            return (long)i;
    return -1;
}

static void *dv_pe_main(void *a_)
{
    dv_arg_t *a = a_;
    bk_env_t *env = a->env;
    int me = a->me, peer = 1 - me;
    bk_pe_t *p = &env->pe[me];
    uint8_t *heap = p->heap; /* this PE's copy of every symmetric object */
    uint8_t buf[600];
    long d;

    goshmemx_host_set_state(&p->dev);

    /* putmem: small from the stack, large from the heap, large from the stack */
    for (size_t i = 0; i < 16; i++)
        buf[i] = dv_byte(me, 1, i);
    goshmem_putmem(heap + BK_A, buf, 16, peer);
    for (size_t i = 0; i < 1000; i++)
        heap[BK_SRC_B + i] = dv_byte(me, 2, i);
    goshmem_putmem_nbi(heap + BK_B, heap + BK_SRC_B, 1000, peer);
    for (size_t i = 0; i < 600; i++)
        buf[i] = dv_byte(me, 3, i);
    goshmemx_ctx_putmem((goshmem_ctx_t)1, heap + BK_C, buf, 600, peer);
    goshmem_ctx_quiet((goshmem_ctx_t)1);
    goshmem_long_p((long *)(heap + BK_P), 0x7100 + me, peer);
    /* AMOs */
    {
        long *w8 = (long *)(heap + BK_W8);
        int *w4 = (int *)(heap + BK_W4);
        long r = goshmem_long_atomic_fetch_add(w8, 40, peer);
        DV_EXPECT(r == 0, "long fetch_add returned %ld, want 0", r);
        goshmem_long_atomic_add(w8, 2, peer);
        r = goshmem_long_atomic_compare_swap(w8, 42, 1000 + me, peer);
        DV_EXPECT(r == 42, "long compare_swap returned %ld, want 42", r);
        r = goshmem_long_atomic_fetch(w8, peer);
        DV_EXPECT(r == 1000 + me, "long fetch returned %ld, want %d", r, 1000 + me);
        int q = goshmem_int_atomic_fetch_add(w4 + 1, -5, peer);
        DV_EXPECT(q == 0, "int fetch_add returned %d, want 0", q);
        q = goshmem_int_atomic_swap(w4, 77, peer);
        DV_EXPECT(q == 0, "int swap returned %d, want 0", q);
        q = goshmem_int_atomic_fetch(w4 + 1, peer);
        DV_EXPECT(q == -5, "int fetch returned %d, want -5", q);
    }
    goshmem_quiet();
    pthread_barrier_wait(a->bar);

    DV_EXPECT((d = dv_diff(heap + BK_A, peer, 1, 16)) < 0, "putmem (small): byte %ld differs", d);
    DV_EXPECT((d = dv_diff(heap + BK_B, peer, 2, 1000)) < 0, "putmem_nbi (heap source): byte %ld differs", d);
    DV_EXPECT((d = dv_diff(heap + BK_C, peer, 3, 600)) < 0, "ctx putmem (stack source): byte %ld differs", d);
    DV_EXPECT(*(long *)(heap + BK_P) == 0x7100 + peer, "p: %ld", *(long *)(heap + BK_P));
    {
        long g = goshmem_long_g((long *)(heap + BK_P), peer);
        DV_EXPECT(g == 0x7100 + me, "g returned %ld, want %d", g, 0x7100 + me);
        memset(buf, 0, sizeof buf);
        goshmem_getmem(buf, heap + BK_C, 600, peer);
        DV_EXPECT((d = dv_diff(buf, me, 3, 600)) < 0, "getmem (to the stack): byte %ld differs", d);
        goshmem_getmem_nbi(heap + BK_GET, heap + BK_B, 1000, peer);
        goshmem_quiet();
        DV_EXPECT((d = dv_diff(heap + BK_GET, me, 2, 1000)) < 0, "getmem_nbi (to the heap): byte %ld differs", d);
    }
    pthread_barrier_wait(a->bar);

    /* put_signal SET, then ADD, on one word; the target waits for 8 */
    {
        uint64_t *sig = (uint64_t *)(heap + BK_SIG);
        for (size_t i = 0; i < 16; i++)
            buf[i] = dv_byte(me, 4, i);
        goshmem_putmem_signal(heap + BK_SD1, buf, 16, sig, 5, GOSHMEM_SIGNAL_SET, peer);
        for (size_t i = 0; i < 2000; i++)
            heap[BK_SRC_SD2 + i] = dv_byte(me, 5, i);
        goshmem_putmem_signal_nbi(heap + BK_SD2, heap + BK_SRC_SD2, 2000, sig, 3, GOSHMEM_SIGNAL_ADD, peer);
        goshmem_fence();
        goshmem_long_p((long *)(heap + BK_FFLAG), 1, peer);
        uint64_t v = goshmem_signal_wait_until(sig, GOSHMEM_CMP_EQ, 8);
        DV_EXPECT(v == 8, "signal_wait_until returned %llu, want 8", (unsigned long long)v);
        DV_EXPECT((d = dv_diff(heap + BK_SD1, peer, 4, 16)) < 0, "putmem_signal payload 1: byte %ld differs", d);
        DV_EXPECT((d = dv_diff(heap + BK_SD2, peer, 5, 2000)) < 0, "putmem_signal payload 2: byte %ld differs", d);
        goshmem_quiet();
    }
    pthread_barrier_wait(a->bar);
    DV_EXPECT(*(long *)(heap + BK_FFLAG) == 1, "flag after fence: %ld", *(long *)(heap + BK_FFLAG));
    DV_EXPECT(p->dev.error_code == 0, "device error code %llu", (unsigned long long)p->dev.error_code);
    return NULL;
}

int dv_run(bk_env_t *env)
{
    pthread_t th[BK_PES];
    dv_arg_t args[BK_PES];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, BK_PES);
    for (int me = 0; me < BK_PES; me++) {
        args[me] = (dv_arg_t){env, me, &bar};
        pthread_create(&th[me], NULL, dv_pe_main, &args[me]);
    }
    for (int me = 0; me < BK_PES; me++)
        pthread_join(th[me], NULL);
    pthread_barrier_destroy(&bar);
    return env->failed ? -1 : 0;
}
