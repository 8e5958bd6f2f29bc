/*
 * floor: the hardware floor under any two-PE shared-memory library here.
 * Two processes (fork) sharing one anonymous MAP_SHARED mapping, plain C11.
 *
 *  put_lat    size 8: an 8 B copy into the shared mapping followed by
 *             atomic_thread_fence(memory_order_seq_cst); timed per iteration
 *             with clock_gettime(CLOCK_MONOTONIC), timer cost included.
 *  pingpong_p size 8: one cache line bounced between the two processes:
 *             parent stores 2i+1, child waits for it and stores 2i+2, parent
 *             waits for 2i+2; round trip timed per iteration.
 *  pingpong_p size 8, lib floor/2line: the same round trip with one line per
 *             process, each polled by its owner and written by the other: the
 *             shape of every p + wait_until ping-pong between two PEs' heaps
 *             (a symmetric variable is a different line on each PE).
 *  barrier    size 0: each process release-stores the epoch into the other's
 *             line and polls its own until it holds the epoch: the least a
 *             two-PE barrier over flags in two heaps can do; timed per
 *             iteration on the parent.
 *
 * Each process is pinned to its own CPU when at least 2 are available.
 * Flags: -iters N (default 200000), -warmup N (1000), -json; -maxsize is
 * (and -seg, -barrier-iters) accepted and ignored so run.sh can pass the same flags as to oshbench.
 * Build: gcc -O2 -std=c11 -o floor floor.c
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long opt_iters = 200000;
static long opt_warmup = 1000;
static int opt_json = 0;

struct shared {
    _Alignas(64) _Atomic long line;   /* ping-pong cache line */
    char pad1[64 - sizeof(long)];
    _Alignas(64) _Atomic long own[2][8]; /* own[p][0]: process p's polled line (2-line rows) */
    _Alignas(64) _Atomic int phase;   /* control: 1 = ping-pong start, 9 = exit */
    char pad2[64 - sizeof(int)];
    _Alignas(64) char data[64];       /* put target */
};

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void stats(uint64_t *s, long n, double *med, double *p99) {
    qsort(s, (size_t)n, sizeof *s, cmp_u64);
    double m = (n & 1) ? (double)s[n / 2] : 0.5 * ((double)s[n / 2 - 1] + (double)s[n / 2]);
    long i99 = (long)((double)n * 0.99 + 0.999999) - 1;
    if (i99 < 0) i99 = 0;
    if (i99 >= n) i99 = n - 1;
    *med = m / 1000.0;
    *p99 = (double)s[i99] / 1000.0;
}

static void emit_lib(const char *lib, const char *name, int size, long iters, double med, double p99,
                     const char *note) {
    if (opt_json)
        printf("{\"lib\":\"%s\",\"name\":\"%s\",\"size\":%d,\"iters\":%ld,\"median_us\":%.3f,"
               "\"p99_us\":%.3f,\"bw_gbs\":0,\"timing\":\"%s\"}\n",
               lib, name, size, iters, med, p99, note);
    else
        printf("%-12s %-12s %10d %8ld %10.3f %10.3f %9.3f  %s\n", lib, name, size, iters, med, p99, 0.0, note);
    fflush(stdout);
}
static void emit(const char *name, long iters, double med, double p99, const char *note) {
    emit_lib("floor", name, 8, iters, med, p99, note);
}

/* Rows (c) and (d), one side: process p (0 parent, 1 child). Returns after
 * `total` rounds; samples (parent only) get the per-round times. */
static void two_line_pingpong(struct shared *sh, int p, long total, uint64_t *samples) {
    _Atomic long *mine = &sh->own[p][0], *theirs = &sh->own[1 - p][0];
    for (long i = 1; i <= total; i++) {
        uint64_t t0 = now_ns();
        if (p == 0) {
            atomic_store_explicit(theirs, i, memory_order_release);
            while (atomic_load_explicit(mine, memory_order_acquire) < i) { }
        } else {
            while (atomic_load_explicit(mine, memory_order_acquire) < i) { }
            atomic_store_explicit(theirs, i, memory_order_release);
        }
        uint64_t dt = now_ns() - t0;
        if (samples && i > opt_warmup) samples[i - 1 - opt_warmup] = dt;
    }
}
static void flag_barrier(struct shared *sh, int p, long base, long total, uint64_t *samples) {
    _Atomic long *mine = &sh->own[p][0], *theirs = &sh->own[1 - p][0];
    for (long i = 1; i <= total; i++) {
        long e = base + i;
        uint64_t t0 = now_ns();
        atomic_store_explicit(theirs, e, memory_order_release);
        while (atomic_load_explicit(mine, memory_order_acquire) < e) { }
        uint64_t dt = now_ns() - t0;
        if (samples && i > opt_warmup) samples[i - 1 - opt_warmup] = dt;
    }
}

static void pin(int cpu) {
    cpu_set_t set;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort */
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-') a++;
        if (!strcmp(a, "-json")) { opt_json = 1; continue; }
        if (i + 1 >= argc) { fprintf(stderr, "floor: missing value for %s\n", argv[i]); return 2; }
        long v = strtol(argv[++i], NULL, 0);
        if (!strcmp(a, "-iters")) opt_iters = v > 0 ? v : 1;
        else if (!strcmp(a, "-warmup")) opt_warmup = v >= 0 ? v : 0;
        else if (!strcmp(a, "-maxsize") || !strcmp(a, "-barrier-iters") || !strcmp(a, "-seg")) { /* ignored */ }
        else { fprintf(stderr, "floor: unknown flag %s\n", argv[i - 1]); return 2; }
    }

    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) { perror("floor: mmap"); return 1; }
    memset((void *)sh, 0, sizeof *sh);
    uint64_t *samples = malloc((size_t)opt_iters * sizeof *samples);
    if (!samples) { fprintf(stderr, "floor: out of memory\n"); return 1; }

    long total = opt_warmup + opt_iters;
    pid_t pid = fork();
    if (pid < 0) { perror("floor: fork"); return 1; }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never spin on after the parent died */
        if (getppid() == 1) _exit(1);
        pin(1);
        while (atomic_load_explicit(&sh->phase, memory_order_acquire) != 1) { }
        for (long i = 0; i < total; i++) {
            long want = 2 * i + 1;
            while (atomic_load_explicit(&sh->line, memory_order_acquire) != want) { }
            atomic_store_explicit(&sh->line, want + 1, memory_order_release);
        }
        while (atomic_load_explicit(&sh->phase, memory_order_acquire) != 2) { }
        two_line_pingpong(sh, 1, total, NULL);
        while (atomic_load_explicit(&sh->phase, memory_order_acquire) != 3) { }
        flag_barrier(sh, 1, total, total, NULL);
        _exit(0);
    }
    pin(0);

    if (!opt_json)
        printf("# floor (fork + shared anonymous mmap, C11 atomics), 2 processes, iters=%ld warmup=%ld\n"
               "%-12s %-12s %10s %8s %10s %10s %9s  %s\n",
               opt_iters, opt_warmup, "lib", "name", "size", "iters", "median_us", "p99_us", "bw_GBs",
               "timing");

    /* (a) 8 B copy + seq_cst fence; the child is spinning on phase meanwhile. */
    uint64_t src = 0x0123456789abcdefull;
    for (long i = 0; i < total; i++) {
        uint64_t t0 = now_ns();
        src += (uint64_t)i;
        memcpy(sh->data, &src, 8);
        atomic_thread_fence(memory_order_seq_cst);
        uint64_t dt = now_ns() - t0;
        if (i >= opt_warmup) samples[i - opt_warmup] = dt;
    }
    double med, p99;
    stats(samples, opt_iters, &med, &p99);
    emit("put_lat", opt_iters, med, p99, "per-iter, 8 B memcpy + seq_cst fence, timer included");

    /* (b) ping-pong on one cache line. */
    atomic_store_explicit(&sh->phase, 1, memory_order_release);
    for (long i = 0; i < total; i++) {
        long ping = 2 * i + 1;
        uint64_t t0 = now_ns();
        atomic_store_explicit(&sh->line, ping, memory_order_release);
        while (atomic_load_explicit(&sh->line, memory_order_acquire) != ping + 1) { }
        uint64_t dt = now_ns() - t0;
        if (i >= opt_warmup) samples[i - opt_warmup] = dt;
    }
    stats(samples, opt_iters, &med, &p99);
    emit("pingpong_p", opt_iters, med, p99, "per-iter round trip, one cache line");

    /* (c) ping-pong on two lines, each polled by its owner. */
    atomic_store_explicit(&sh->phase, 2, memory_order_release);
    two_line_pingpong(sh, 0, total, samples);
    stats(samples, opt_iters, &med, &p99);
    emit_lib("floor/2line", "pingpong_p", 8, opt_iters, med, p99,
             "per-iter round trip, one line per process (the p + wait_until shape)");

    /* (d) two-process flag barrier (epochs continue from (c)'s last value). */
    atomic_store_explicit(&sh->phase, 3, memory_order_release);
    flag_barrier(sh, 0, total, total, samples);
    int status = 0;
    waitpid(pid, &status, 0);
    stats(samples, opt_iters, &med, &p99);
    emit_lib("floor", "barrier", 0, opt_iters, med, p99,
             "per-iter on the parent: release-store the epoch into the other's line, poll own line");
    free(samples);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
}
