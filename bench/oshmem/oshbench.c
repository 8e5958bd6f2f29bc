/*
 * oshbench: OpenSHMEM (oshmem) peer benchmark for goshmem's `make bench`.
 *
 * 2 PEs. PE 0 measures, PE 1 is the target/partner (it waits in
 * shmem_barrier_all, which drives progress, while PE 0 measures one-sided
 * operations). Row names match goshmem's own bench tool so rows can be joined.
 * The lock row runs at any PE count (every PE contends): -only lock.
 *
 * Build: oshcc -O2 -std=c11 -o oshbench oshbench.c
 * Run:   oshrun --allow-run-as-root --oversubscribe -np 2 \
 *               --mca opal_common_ucx_opal_mem_hooks 0 ./oshbench [flags]
 *
 * -coll: the collective rows only, at any number of PEs (see bench_coll).
 *
 * Flags: -iters N (100000; barrier uses N/10), -warmup N (1000),
 *        -maxsize BYTES (4 MiB), -json (JSON lines instead of a table;
 *        the header then goes to stderr), -seg heap|data (where the symmetric
 *        buffers live: shmem_malloc heap, default, or static data segment,
 *        which caps maxsize at 4 MiB), -only NAME (run the rows whose name
 *        contains NAME); -coll (collective rows, any PE
 *        count), -coll-iters N (2000: iterations of a collective row up to
 *        4 KiB, scaled down above, at least 100), -coll-maxsize BYTES (1 MiB),
 *        -rows a,b,... (with -coll: only the named rows).
 *
 * Timing: clock_gettime(CLOCK_MONOTONIC) around every iteration (timer cost,
 * ~20 ns, included), median and p99 over the iterations after the warm-up.
 * put_bw times whole windows (W putmem_nbi + one quiet): iters = windows,
 * median_us/p99_us = time of one window, bw_GBs = W*size / median window time.
 * iput_bw/iget_bw likewise, with windows of 16 shmem_long_iput (+ quiet) or
 * shmem_long_iget at stride 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef SHMEM_CMP_EQ
#define SHMEM_CMP_EQ _SHMEM_CMP_EQ
#endif

#define BW_WINDOW 64
#define BW_TARGET_NS 50000000ull /* ~50 ms per put_bw size, at least 10 windows */
#define BW_MAX_WINDOWS 100000
#define LOCK_ROUNDS 10 /* lock: timed rounds, median reported (goshmem-perf's lockRounds) */

static long opt_iters = 100000;
static long opt_warmup = 1000;
static long opt_barrier_iters = -1; /* -1: iters/10 */
static size_t opt_maxsize = 4u << 20;
static int opt_json = 0;
static const char *opt_only = NULL; /* -only: substring of the row names to run */

static int want(const char *name) { return !opt_only || strstr(name, opt_only) != NULL; }

static int opt_coll = 0;
static long opt_coll_iters = 2000;
static size_t opt_coll_maxsize = 1u << 20;
static const char *opt_rows = NULL; /* -rows a,b,c: only these collective rows */

/* row_wanted: no -rows, or name is one of its comma-separated names. */
static int row_wanted(const char *name) {
    if (!opt_rows) return 1;
    size_t n = strlen(name);
    for (const char *p = opt_rows; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static int me, npes;
static uint64_t *samples; /* ns, PE 0 (and PE 1 for barrier) */
static long samples_cap;

/* symmetric objects: on the symmetric heap (shmem_malloc, default) or, with
 * -seg data, in the data segment (static variables). oshmem treats them very
 * differently: heap segments are shared-memory mapped and UCX reaches them by
 * direct load/store (rkey_ptr); the data segment goes through UCX transports. */
#define DATA_SEG_MAX (4u << 20)
static long flag_static, target_static, lock_static;
static char sbuf_static[DATA_SEG_MAX], dbuf_static[DATA_SEG_MAX];
static long *flagp;   /* ping-pong flag */
static long *targetp; /* p/g/amo target */
static long *lockp;   /* lock row's lock */
static char *sbuf;    /* symmetric source */
static char *dbuf;    /* symmetric destination */
static int opt_data_seg = 0;

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void stats(long n, double *median_us, double *p99_us) {
    if (n <= 0) { *median_us = *p99_us = 0; return; }
    qsort(samples, (size_t)n, sizeof(uint64_t), cmp_u64);
    double med = (n & 1) ? (double)samples[n / 2]
                         : 0.5 * ((double)samples[n / 2 - 1] + (double)samples[n / 2]);
    long i99 = (long)((double)n * 0.99 + 0.999999) - 1; /* ceil(0.99 n) - 1 */
    if (i99 < 0) i99 = 0;
    if (i99 >= n) i99 = n - 1;
    *median_us = med / 1000.0;
    *p99_us = (double)samples[i99] / 1000.0;
}

static void emit(const char *name, size_t size, long iters, double med, double p99,
                 double bw, const char *note) {
    if (me != 0) return;
    if (opt_json) {
        printf("{\"lib\":\"openshmem\",\"name\":\"%s\",\"size\":%zu,\"iters\":%ld,"
               "\"median_us\":%.3f,\"p99_us\":%.3f,\"bw_gbs\":%.3f,\"seg\":\"%s\",\"timing\":\"%s\","
               "\"npes\":%d}\n",
               name, size, iters, med, p99, bw, opt_data_seg ? "data" : "heap", note, npes);
    } else {
        printf("%-12s %10zu %8ld %10.3f %10.3f %9.3f  %s\n", name, size, iters, med, p99,
               bw, note);
    }
    fflush(stdout);
}

static void ensure_samples(long n) {
    if (n <= samples_cap) return;
    free(samples);
    samples = malloc((size_t)n * sizeof(uint64_t));
    if (!samples) { fprintf(stderr, "oshbench: out of memory\n"); shmem_global_exit(2); }
    samples_cap = n;
}

/* iterations for a size-dependent latency test: full count up to 32 KiB,
 * then keep bytes moved per size at iters*32 KiB, at least 100. */
static long iters_for(size_t size) {
    if (size < 65536) return opt_iters;
    long n = (long)((double)opt_iters * 32768.0 / (double)size);
    if (n < 100) n = 100;
    if (n > opt_iters) n = opt_iters;
    return n;
}
static long warmup_for(long n) { return opt_warmup < n ? opt_warmup : n; }

/* ---------------------------------------------------------------- tests */

static void bench_put_lat(size_t size) {
    long n = iters_for(size), w = warmup_for(n);
    shmem_barrier_all();
    if (me == 0) {
        for (long i = 0; i < w; i++) { shmem_putmem(dbuf, sbuf, size, 1); shmem_quiet(); }
        for (long i = 0; i < n; i++) {
            uint64_t t0 = now_ns();
            shmem_putmem(dbuf, sbuf, size, 1);
            shmem_quiet();
            samples[i] = now_ns() - t0;
        }
    }
    shmem_barrier_all();
    double med, p99;
    if (me == 1 && dbuf[size - 1] != 1) /* PE 0's sbuf holds 1s */
        fprintf(stderr, "oshbench: put_lat %zu: data did not arrive at PE 1\n", size);
    if (me == 0) { stats(n, &med, &p99); emit("put_lat", size, n, med, p99, size / (med * 1e3), "per-iter"); }
}

static void bench_get_lat(size_t size) {
    long n = iters_for(size), w = warmup_for(n);
    shmem_barrier_all();
    if (me == 0) {
        for (long i = 0; i < w; i++) shmem_getmem(sbuf, dbuf, size, 1);
        for (long i = 0; i < n; i++) {
            uint64_t t0 = now_ns();
            shmem_getmem(sbuf, dbuf, size, 1);
            samples[i] = now_ns() - t0;
        }
    }
    shmem_barrier_all();
    double med, p99;
    if (me == 0) { stats(n, &med, &p99); emit("get_lat", size, n, med, p99, size / (med * 1e3), "per-iter"); }
}

static void bench_p_lat(void) {
    long n = opt_iters, w = warmup_for(n);
    shmem_barrier_all();
    if (me == 0) {
        for (long i = 0; i < w; i++) { shmem_long_p(targetp, i, 1); shmem_quiet(); }
        for (long i = 0; i < n; i++) {
            uint64_t t0 = now_ns();
            shmem_long_p(targetp, i, 1);
            shmem_quiet();
            samples[i] = now_ns() - t0;
        }
    }
    shmem_barrier_all();
    double med, p99;
    if (me == 0) { stats(n, &med, &p99); emit("p_lat", sizeof(long), n, med, p99, 0, "per-iter"); }
}

static volatile long sink;
static void bench_g_lat(void) {
    long n = opt_iters, w = warmup_for(n);
    shmem_barrier_all();
    if (me == 0) {
        long acc = 0;
        for (long i = 0; i < w; i++) acc += shmem_long_g(targetp, 1);
        for (long i = 0; i < n; i++) {
            uint64_t t0 = now_ns();
            acc += shmem_long_g(targetp, 1);
            samples[i] = now_ns() - t0;
        }
        sink = acc;
    }
    shmem_barrier_all();
    double med, p99;
    if (me == 0) { stats(n, &med, &p99); emit("g_lat", sizeof(long), n, med, p99, 0, "per-iter"); }
}

static void bench_pingpong_p(void) {
    long n = opt_iters, w = warmup_for(n), total = w + n;
    *flagp = 0;
    shmem_barrier_all();
    if (me == 0) {
        for (long i = 1; i <= total; i++) {
            uint64_t t0 = now_ns();
            shmem_long_p(flagp, i, 1);
            shmem_long_wait_until(flagp, SHMEM_CMP_EQ, i);
            uint64_t dt = now_ns() - t0;
            if (i > w) samples[i - w - 1] = dt;
        }
    } else {
        for (long i = 1; i <= total; i++) {
            shmem_long_wait_until(flagp, SHMEM_CMP_EQ, i);
            shmem_long_p(flagp, i, 0);
        }
    }
    shmem_quiet();
    shmem_barrier_all();
    double med, p99;
    if (me == 0) { stats(n, &med, &p99); emit("pingpong_p", sizeof(long), n, med, p99, 0, "per-iter round trip"); }
}

static void bench_amo_fadd(void) {
    long n = opt_iters, w = warmup_for(n);
    *targetp = 0;
    shmem_barrier_all();
    if (me == 0) {
        long acc = 0;
        for (long i = 0; i < w; i++) acc += shmem_long_atomic_fetch_add(targetp, 1, 1);
        for (long i = 0; i < n; i++) {
            uint64_t t0 = now_ns();
            acc += shmem_long_atomic_fetch_add(targetp, 1, 1);
            samples[i] = now_ns() - t0;
        }
        sink = acc;
    }
    shmem_barrier_all();
    if (me == 1 && *targetp != w + n)
        fprintf(stderr, "oshbench: amo_fadd check failed: %ld != %ld\n", *targetp, w + n);
    double med, p99;
    if (me == 0) { stats(n, &med, &p99); emit("amo_fadd", sizeof(long), n, med, p99, 0, "per-iter"); }
}

static void bench_barrier(void) {
    long n = opt_barrier_iters, w = warmup_for(n);
    shmem_barrier_all();
    for (long i = 0; i < w; i++) shmem_barrier_all();
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        shmem_barrier_all();
        samples[i] = now_ns() - t0;
    }
    shmem_barrier_all();
    double med, p99;
    if (me == 0) { stats(n, &med, &p99); emit("barrier", 0, n, med, p99, 0, "per-iter, PE0"); }
}

static void bench_put_bw(size_t size) {
    /* PE 0 decides the window count (time-bounded) and tells PE 1 nothing:
     * PE 1 just waits in the closing barrier. */
    shmem_barrier_all();
    long nwin = 0;
    if (me == 0) {
        /* warm-up: 2 windows */
        for (int r = 0; r < 2; r++) {
            for (int k = 0; k < BW_WINDOW; k++) shmem_putmem_nbi(dbuf, sbuf, size, 1);
            shmem_quiet();
        }
        uint64_t start = now_ns();
        while (nwin < BW_MAX_WINDOWS && nwin < samples_cap) {
            uint64_t t0 = now_ns();
            for (int k = 0; k < BW_WINDOW; k++) shmem_putmem_nbi(dbuf, sbuf, size, 1);
            shmem_quiet();
            uint64_t t1 = now_ns();
            samples[nwin++] = t1 - t0;
            if (t1 - start >= BW_TARGET_NS && nwin >= 10) break;
        }
    }
    shmem_barrier_all();
    double med, p99;
    if (me == 0) {
        stats(nwin, &med, &p99);
        double bw = (double)size * BW_WINDOW / (med * 1e3); /* bytes/ns = GB/s */
        char note[64];
        snprintf(note, sizeof note, "per-window W=%d (us per window)", BW_WINDOW);
        emit("put_bw", size, nwin, med, p99, bw, note);
    }
}

/* iput_bw / iget_bw (goshmem-perf's rows of the same name): size bytes of
 * long at stride 2 on both sides (tst = sst = 2), PE 0 to or from PE 1,
 * timed per window of ISTRIDE_WINDOW calls (iput: then one quiet); the
 * buffers span 2*size bytes, so sizes go up to min(1 MiB, maxsize/2). */
#define ISTRIDE_WINDOW 16
#define ISTRIDE_MAX (1u << 20)
#define ISTRIDE_STRIDE 2

static void istrided_window(int put, size_t n) {
    for (int k = 0; k < ISTRIDE_WINDOW; k++) {
        if (put) shmem_long_iput((long *)dbuf, (const long *)sbuf, ISTRIDE_STRIDE, ISTRIDE_STRIDE, n, 1);
        else shmem_long_iget((long *)sbuf, (const long *)dbuf, ISTRIDE_STRIDE, ISTRIDE_STRIDE, n, 1);
    }
    if (put) shmem_quiet();
}

static void bench_istrided_bw(int put, size_t size) {
    size_t n = size / sizeof(long);
    shmem_barrier_all();
    long nwin = 0;
    if (me == 0) {
        for (int r = 0; r < 2; r++) istrided_window(put, n);
        uint64_t start = now_ns();
        while (nwin < BW_MAX_WINDOWS && nwin < samples_cap) {
            uint64_t t0 = now_ns();
            istrided_window(put, n);
            uint64_t t1 = now_ns();
            samples[nwin++] = t1 - t0;
            if (t1 - start >= BW_TARGET_NS && nwin >= 10) break;
        }
    }
    shmem_barrier_all();
    if (put && me == 1 && ((long *)dbuf)[ISTRIDE_STRIDE * (n - 1)] != 0x0101010101010101L)
        fprintf(stderr, "oshbench: iput_bw %zu: data did not arrive at PE 1\n", size);
    double med, p99;
    if (me == 0) {
        stats(nwin, &med, &p99);
        double bw = (double)size * ISTRIDE_WINDOW / (med * 1e3);
        char note[96];
        snprintf(note, sizeof note, "per-window W=%d, stride %d, 8 B elements (us per window)",
                 ISTRIDE_WINDOW, ISTRIDE_STRIDE);
        emit(put ? "iput_bw" : "iget_bw", size, nwin, med, p99, bw, note);
    }
}

/* Contended hand-overs: every PE loops set/clear k times between two
 * barriers (k = barrier_iters / LOCK_ROUNDS); a round's sample is its time
 * over the npes*k acquisitions; PE 0 reports the median of LOCK_ROUNDS
 * rounds, after a warm-up round of min(warmup, k). */
static void bench_lock(void) {
    long k = opt_barrier_iters / LOCK_ROUNDS;
    if (k < 1) k = 1;
    long w = warmup_for(k);
    shmem_barrier_all();
    for (long i = 0; i < w; i++) { shmem_set_lock(lockp); shmem_clear_lock(lockp); }
    for (int r = 0; r < LOCK_ROUNDS; r++) {
        shmem_barrier_all();
        uint64_t t0 = now_ns();
        for (long i = 0; i < k; i++) { shmem_set_lock(lockp); shmem_clear_lock(lockp); }
        shmem_barrier_all();
        samples[r] = (now_ns() - t0) / (uint64_t)(npes * k);
    }
    double med, p99;
    if (me == 0) {
        char note[96];
        snprintf(note, sizeof note, "per hand-over: %d PEs x %ld set/clear per round, median of %d rounds, PE0",
                 npes, k, LOCK_ROUNDS);
        stats(LOCK_ROUNDS, &med, &p99);
        emit("lock", sizeof(long), k, med, p99, 0, note);
    }
}

/* ---------------------------------------------------------------- collectives
 *
 * Rows shared with goshmem-perf host (cmd/goshmem-perf/hostcoll.go): every PE
 * runs the operation and then shmem_barrier_all, n times; PE 0's time of each
 * op + barrier pair is a sample (the operation done everywhere). size is the
 * bytes each PE contributes: the broadcast payload, the reduce/scan vector,
 * the collect block, the alltoall block per destination PE (alltoalls: the
 * payload per block, 8 B elements at source and dest stride 2).
 *
 * oshmem 4.1.4 implements OpenSHMEM 1.4: no teams, so the rows call the
 * active-set forms over every PE (shmem_broadcast64, shmem_long_sum_to_all,
 * ...), and it has no scans (shmem_TYPE_sum_inscan / _exscan are 1.6):
 * those rows are left out and the header says so. shmem_broadcast64 leaves
 * the root's target untouched (1.4 semantics); goshmem's Broadcast copies
 * into the root's dest too.
 */

static long coll_iters_for(size_t size) {
    if (size <= 4096) return opt_coll_iters;
    long n = (long)((double)opt_coll_iters * 4096.0 / (double)size);
    if (n < 100) n = 100;
    if (n > opt_coll_iters) n = opt_coll_iters;
    return n;
}
static long coll_warmup_for(long n) {
    long w = n / 10;
    if (w < 5) w = 5;
    return opt_warmup < w ? opt_warmup : w;
}

static long *coll_psync;  /* SHMEM_SYNC_SIZE longs, reused after each barrier */
static long *coll_pwrk;   /* reduce work array (longs or doubles) */
static char *coll_src, *coll_dst;

enum coll_op { C_BCAST, C_RED_LONG, C_RED_DOUBLE, C_FCOLLECT, C_COLLECT, C_ALLTOALL, C_ALLTOALLS };

static void coll_call(enum coll_op op, size_t size) {
    size_t n64 = size / 8;
    switch (op) {
    case C_BCAST:
        shmem_broadcast64(coll_dst, coll_src, n64, 0, 0, 0, npes, coll_psync);
        break;
    case C_RED_LONG:
        shmem_long_sum_to_all((long *)coll_dst, (const long *)coll_src, (int)n64, 0, 0, npes,
                              coll_pwrk, coll_psync);
        break;
    case C_RED_DOUBLE:
        shmem_double_sum_to_all((double *)coll_dst, (const double *)coll_src, (int)n64, 0, 0, npes,
                                (double *)coll_pwrk, coll_psync);
        break;
    case C_FCOLLECT:
        shmem_fcollect64(coll_dst, coll_src, n64, 0, 0, npes, coll_psync);
        break;
    case C_COLLECT:
        shmem_collect64(coll_dst, coll_src, n64, 0, 0, npes, coll_psync);
        break;
    case C_ALLTOALL:
        shmem_alltoall64(coll_dst, coll_src, n64, 0, 0, npes, coll_psync);
        break;
    case C_ALLTOALLS:
        shmem_alltoalls64(coll_dst, coll_src, 2, 2, n64, 0, 0, npes, coll_psync);
        break;
    }
}

static void bench_coll_row(const char *name, enum coll_op op, size_t size) {
    long n = coll_iters_for(size), w = coll_warmup_for(n);
    shmem_barrier_all();
    for (long i = 0; i < w; i++) { coll_call(op, size); shmem_barrier_all(); }
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        coll_call(op, size);
        shmem_barrier_all();
        samples[i] = now_ns() - t0;
    }
    shmem_barrier_all();
    if (me == 0) {
        double med, p99;
        stats(n, &med, &p99);
        emit(name, size, n, med, p99, 0, "per-iter op + barrier_all, PE0");
    }
}

static void bench_coll(void) {
    static const size_t csizes[] = {8, 1024, 65536, 1048576};
    static const struct { const char *name; enum coll_op op; } rows[] = {
        {"bcast", C_BCAST},         {"reduce_sum_int64", C_RED_LONG},
        {"reduce_sum_float64", C_RED_DOUBLE}, {"fcollect", C_FCOLLECT},
        {"collect", C_COLLECT},     {"alltoall", C_ALLTOALL},
        {"alltoalls", C_ALLTOALLS},
    };
    size_t maxs = opt_coll_maxsize;
    /* src and dst hold npes blocks at stride 2 (alltoalls). */
    size_t buf = 2 * maxs * (size_t)npes;
    coll_src = shmem_malloc(buf);
    coll_dst = shmem_malloc(buf);
    size_t wrk = maxs / 8 / 2 + 1;
    if (wrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE) wrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    coll_pwrk = shmem_malloc(wrk * sizeof(double));
    coll_psync = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
    if (!coll_src || !coll_dst || !coll_pwrk || !coll_psync) {
        if (me == 0) fprintf(stderr, "oshbench: shmem_malloc for the collective rows (2 x %zu bytes) failed: raise SHMEM_SYMMETRIC_HEAP_SIZE\n", buf);
        shmem_global_exit(2);
    }
    for (size_t i = 0; i < buf / 8; i++) ((long *)coll_src)[i] = (long)(me + 1);
    memset(coll_dst, 0, buf);
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) coll_psync[i] = SHMEM_SYNC_VALUE;
    long cap = coll_iters_for(8);
    ensure_samples(cap);
    shmem_barrier_all();

    if (row_wanted("barrier")) bench_barrier();
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t k = 0; k < sizeof csizes / sizeof csizes[0]; k++)
            if (csizes[k] <= maxs && row_wanted(rows[r].name)) bench_coll_row(rows[r].name, rows[r].op, csizes[k]);

    /* A check that the rows computed something: the int64 sum of PE+1. */
    ((long *)coll_src)[0] = me + 1;
    shmem_barrier_all();
    coll_call(C_RED_LONG, 8);
    shmem_barrier_all();
    long want = (long)npes * (npes + 1) / 2;
    if (((long *)coll_dst)[0] != want)
        fprintf(stderr, "oshbench: PE %d: sum reduce check: %ld, want %ld\n", me, ((long *)coll_dst)[0], want);
    shmem_barrier_all();
    shmem_free(coll_psync);
    shmem_free(coll_pwrk);
    shmem_free(coll_dst);
    shmem_free(coll_src);
}

/* ---------------------------------------------------------------- main */

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [-iters N] [-warmup N] [-maxsize BYTES] [-json]\n"
            "  -iters N       iterations per latency test (default 100000; barrier N/10)\n"
            "  -warmup N      warm-up iterations (default 1000)\n"
            "  -maxsize BYTES largest size for put_lat/get_lat/put_bw (default 4194304)\n"
            "  -json          JSON lines on stdout instead of a table\n"
            "  -seg heap|data symmetric buffers from shmem_malloc (default) or static data\n"
            "  -only NAME     run only the rows whose name contains NAME (lock: any PE count)\n"
            "  -coll          only the collective rows (any number of PEs)\n"
            "  -coll-iters N  iterations of a collective row up to 4 KiB (default 2000; fewer above, at least 100)\n"
            "  -coll-maxsize B largest collective size (default 1048576)\n"
            "  -rows a,b,...  with -coll: only these rows (barrier, bcast, reduce_sum_int64, ...)\n",
            argv0);
}

static int parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-') a++; /* accept --flag too */
        if (!strcmp(a, "-json")) { opt_json = 1; continue; }
        if (!strcmp(a, "-coll")) { opt_coll = 1; continue; }
        if (!strcmp(a, "-rows") && i + 1 < argc) { opt_rows = argv[++i]; continue; }
        if (!strcmp(a, "-seg") && i + 1 < argc) {
            if (!strcmp(argv[i + 1], "data")) opt_data_seg = 1;
            else if (!strcmp(argv[i + 1], "heap")) opt_data_seg = 0;
            else { fprintf(stderr, "oshbench: -seg heap|data\n"); return 2; }
            i++;
            continue;
        }
        if (!strcmp(a, "-only") && i + 1 < argc) { opt_only = argv[++i]; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "-help")) { usage(argv[0]); return 1; }
        if (i + 1 >= argc) { usage(argv[0]); return 2; }
        char *end;
        long long v = strtoll(argv[i + 1], &end, 0);
        if (*end || v < 0) { fprintf(stderr, "oshbench: bad value for %s: %s\n", a, argv[i + 1]); return 2; }
        if (!strcmp(a, "-iters")) opt_iters = (long)v;
        else if (!strcmp(a, "-warmup")) opt_warmup = (long)v;
        else if (!strcmp(a, "-maxsize")) opt_maxsize = (size_t)v;
        else if (!strcmp(a, "-barrier-iters")) opt_barrier_iters = (long)v;
        else if (!strcmp(a, "-coll-iters")) opt_coll_iters = v < 1 ? 1 : (long)v;
        else if (!strcmp(a, "-coll-maxsize")) opt_coll_maxsize = (size_t)v;
        else { fprintf(stderr, "oshbench: unknown flag %s\n", argv[i]); usage(argv[0]); return 2; }
        i++;
    }
    if (opt_iters < 1) opt_iters = 1;
    if (opt_barrier_iters < 0) opt_barrier_iters = opt_iters / 10;
    if (opt_barrier_iters < 1) opt_barrier_iters = 1;
    if (opt_maxsize < 8) opt_maxsize = 8;
    return 0;
}

int main(int argc, char **argv) {
    int prc = parse_args(argc, argv);
    /* parse before init so -h does not need oshrun; but a bad flag must
     * still exit cleanly on both PEs: init, then exit with the code. */
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (prc != 0) { shmem_finalize(); return prc == 1 ? 0 : prc; }
    if (opt_coll) {
        if (me == 0) {
            FILE *h = opt_json ? stderr : stdout;
            fprintf(h, "# OpenSHMEM (oshmem %d.%d.%d, spec %d.%d), %d PEs, collective rows: coll_iters=%ld "
                       "barrier_iters=%ld warmup=%ld coll_maxsize=%zu; active-set calls (the library has no "
                       "teams); no scan rows (shmem_TYPE_sum_inscan/exscan are OpenSHMEM 1.6, not in this library)\n",
                    OSHMEM_MAJOR_VERSION, OSHMEM_MINOR_VERSION, OSHMEM_RELEASE_VERSION, SHMEM_MAJOR_VERSION,
                    SHMEM_MINOR_VERSION, npes, opt_coll_iters, opt_barrier_iters, opt_warmup, opt_coll_maxsize);
            if (!opt_json)
                fprintf(h, "%-12s %10s %8s %10s %10s %9s  %s\n", "name", "size", "iters",
                        "median_us", "p99_us", "bw_GBs", "timing");
            fflush(h);
        }
        ensure_samples(opt_barrier_iters);
        bench_coll();
        free(samples);
        shmem_finalize();
        return 0;
    }
    int two_pe_rows = want("put_lat") || want("get_lat") || want("p_lat") || want("g_lat") ||
                      want("pingpong_p") || want("amo_fadd") || want("barrier") || want("put_bw");
    if (npes != 2 && two_pe_rows) {
        if (me == 0) fprintf(stderr, "oshbench: needs exactly 2 PEs (got %d; -only lock runs at any count)\n", npes);
        shmem_finalize();
        return 2;
    }

    if (opt_data_seg) {
        if (opt_maxsize > DATA_SEG_MAX) opt_maxsize = DATA_SEG_MAX;
        sbuf = sbuf_static;
        dbuf = dbuf_static;
        flagp = &flag_static;
        targetp = &target_static;
        lockp = &lock_static;
    } else {
        sbuf = shmem_malloc(opt_maxsize);
        dbuf = shmem_malloc(opt_maxsize);
        flagp = shmem_malloc(128);
        targetp = shmem_malloc(128);
        lockp = shmem_malloc(128);
        if (lockp) *lockp = 0; /* the barrier before the lock row publishes it */
    }
    if (!sbuf || !dbuf || !flagp || !targetp || !lockp) {
        if (me == 0) fprintf(stderr, "oshbench: shmem_malloc(%zu) failed\n", opt_maxsize);
        shmem_global_exit(2);
    }
    memset(sbuf, me + 1, opt_maxsize);
    memset(dbuf, 0, opt_maxsize);

    long cap = opt_iters;
    if (opt_barrier_iters > cap) cap = opt_barrier_iters;
    if (BW_MAX_WINDOWS > cap) cap = BW_MAX_WINDOWS;
    ensure_samples(cap);

    if (me == 0) {
        char name[SHMEM_MAX_NAME_LEN + 1] = {0};
        int maj = 0, min = 0;
        shmem_info_get_name(name);
        shmem_info_get_version(&maj, &min);
        FILE *h = opt_json ? stderr : stdout;
        if (!strcmp(name, SHMEM_VENDOR_STRING)) name[0] = 0; /* oshmem returns the same */
        fprintf(h, "# OpenSHMEM (oshmem %d.%d.%d, spec %d.%d, %s%s%s), %d PEs, iters=%ld "
                   "barrier_iters=%ld warmup=%ld maxsize=%zu seg=%s\n",
                OSHMEM_MAJOR_VERSION, OSHMEM_MINOR_VERSION, OSHMEM_RELEASE_VERSION, maj, min,
                name, name[0] ? ", " : "", SHMEM_VENDOR_STRING, npes, opt_iters, opt_barrier_iters, opt_warmup,
                opt_maxsize, opt_data_seg ? "data" : "heap");
        if (!opt_json)
            fprintf(h, "%-12s %10s %8s %10s %10s %9s  %s\n", "name", "size", "iters",
                    "median_us", "p99_us", "bw_GBs", "timing");
        fflush(h);
    }

    if (want("put_lat")) for (size_t s = 8; s <= opt_maxsize; s <<= 1) bench_put_lat(s);
    if (want("get_lat")) for (size_t s = 8; s <= opt_maxsize; s <<= 1) bench_get_lat(s);
    if (want("p_lat")) bench_p_lat();
    if (want("g_lat")) bench_g_lat();
    if (want("pingpong_p")) bench_pingpong_p();
    if (want("amo_fadd")) bench_amo_fadd();
    if (want("barrier")) bench_barrier();
    if (want("put_bw")) for (size_t s = 4096; s <= opt_maxsize; s <<= 1) bench_put_bw(s);
    if (want("iput_bw")) for (size_t s = 4096; s <= ISTRIDE_MAX && 2 * s <= opt_maxsize; s <<= 1) bench_istrided_bw(1, s);
    if (want("iget_bw")) for (size_t s = 4096; s <= ISTRIDE_MAX && 2 * s <= opt_maxsize; s <<= 1) bench_istrided_bw(0, s);
    if (want("lock")) bench_lock();

    shmem_barrier_all();
    if (!opt_data_seg) {
        shmem_free(lockp);
        shmem_free(targetp);
        shmem_free(flagp);
        shmem_free(dbuf);
        shmem_free(sbuf);
    }
    free(samples);
    shmem_finalize();
    return 0;
}
