/*
 * copyfloor: the memory floor under a 2-PE collective of a given size on
 * this machine. Two processes (fork), each pinned to its own CPU when two
 * are available, copy with glibc memcpy at the same time, as two PEs do:
 *
 *   alltoall         size S: memcpy of 2 blocks of S bytes (src 2S -> dst 2S):
 *                    the bytes a PE of a 2-PE alltoall writes into dest
 *                    (its own block and its peer's).
 *   reduce_sum_int64 size S: memcpy of S bytes: a 2-PE sum-reduce reads S
 *                    (its half of both sources) and writes S (its half of
 *                    both dests), the same traffic as one copy of S, without
 *                    the adds.
 *
 * Each iteration is timed with clock_gettime(CLOCK_MONOTONIC); the parent's
 * median and p99 are printed as JSON lines (lib "floor", seg "copy"), the
 * rows of goshmem-perf host -coll they bound.
 * Flags: -iters N (default 500), -json (the only output format).
 * Build: gcc -O2 -std=c11 -o copyfloor copyfloor.c
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void pin(int i) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) return;
    int k = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        if (k++ == i) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
    }
}

int main(int argc, char **argv) {
    long iters = 500;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-iters") && i + 1 < argc) iters = atol(argv[++i]);
        else if (strcmp(argv[i], "-json") != 0) {
            fprintf(stderr, "usage: copyfloor [-iters N] [-json]\n");
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    static const size_t sizes[] = {65536, 1048576};
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    pin(child == 0 ? 1 : 0);
    uint64_t *t = malloc((size_t)iters * sizeof *t);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t s = sizes[k];
        char *src = aligned_alloc(4096, 2 * s), *dst = aligned_alloc(4096, 2 * s);
        if (!src || !dst || !t) { fprintf(stderr, "copyfloor: out of memory\n"); return 1; }
        memset(src, 1, 2 * s);
        memset(dst, 0, 2 * s);
        for (int shape = 0; shape < 2; shape++) {
            size_t bytes = shape == 0 ? 2 * s : s;
            for (long i = 0; i < iters / 10 + 1; i++) memcpy(dst, src, bytes);
            for (long i = 0; i < iters; i++) {
                uint64_t t0 = now_ns();
                memcpy(dst, src, bytes);
                t[i] = now_ns() - t0;
            }
            if (child == 0) continue;
            qsort(t, (size_t)iters, sizeof *t, cmp_u64);
            double med = (iters & 1) ? (double)t[iters / 2] : 0.5 * ((double)t[iters / 2 - 1] + (double)t[iters / 2]);
            long i99 = (long)((double)iters * 0.99 + 0.999999) - 1;
            if (i99 < 0) i99 = 0;
            printf("{\"lib\":\"floor\",\"name\":\"%s\",\"size\":%zu,\"iters\":%ld,\"median_us\":%.3f,"
                   "\"p99_us\":%.3f,\"bw_gbs\":%.3f,\"seg\":\"copy\",\"timing\":\"memcpy of %zu bytes, 2 processes at once\",\"npes\":2}\n",
                   shape == 0 ? "alltoall" : "reduce_sum_int64", s, iters, med / 1000, (double)t[i99] / 1000,
                   (double)bytes / med, bytes);
            fflush(stdout);
        }
        free(src);
        free(dst);
    }
    free(t);
    if (child == 0) return 0;
    int st = 0;
    waitpid(child, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
