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
 * Flags: -iters N (100000; barrier uses N/10), -warmup N (1000),
 *        -maxsize BYTES (4 MiB), -json (JSON lines instead of a table;
 *        the header then goes to stderr), -seg heap|data (where the symmetric
 *        buffers live: shmem_malloc heap, default, or static data segment,
 *        which caps maxsize at 4 MiB), -only NAME (run the rows whose name
 *        contains NAME).
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
               "\"median_us\":%.3f,\"p99_us\":%.3f,\"bw_gbs\":%.3f,\"seg\":\"%s\",\"timing\":\"%s\"}\n",
               name, size, iters, med, p99, bw, opt_data_seg ? "data" : "heap", note);
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

/* ---------------------------------------------------------------- main */

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [-iters N] [-warmup N] [-maxsize BYTES] [-json]\n"
            "  -iters N       iterations per latency test (default 100000; barrier N/10)\n"
            "  -warmup N      warm-up iterations (default 1000)\n"
            "  -maxsize BYTES largest size for put_lat/get_lat/put_bw (default 4194304)\n"
            "  -json          JSON lines on stdout instead of a table\n"
            "  -seg heap|data symmetric buffers from shmem_malloc (default) or static data\n"
            "  -only NAME     run only the rows whose name contains NAME (lock: any PE count)\n",
            argv0);
}

static int parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-') a++; /* accept --flag too */
        if (!strcmp(a, "-json")) { opt_json = 1; continue; }
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
