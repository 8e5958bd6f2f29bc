/* Host-mode runner of include/goshmem/cxi.h: the calling OS thread is the
 * "GPU thread" (the same header, compiled by gcc with __atomic builtins),
 * working on one PE's CXI state against the Go monitor (package cxi). */
#ifndef GOSHMEM_CXIHOST_H
#define GOSHMEM_CXIHOST_H
#include <stdint.h>

typedef struct cxih_result {
    int rc;              /* first non-OK GOSHMEMX_CXI_* code */
    uint64_t done;       /* operations completed */
    uint64_t total_ns;
    uint64_t max_ns;     /* slowest single operation */
    uint64_t min_ns;
    uint64_t am_got, am_bad;
    double sink;         /* compute result (keeps the work alive) */
} cxih_result_t;

/* Makes cxi (a goshmemi_cxi_state_t, host address) the calling thread's
 * CXI state as PE pe of n. Call first on the thread (per entry point). */
void cxih_attach(void *cxi, int pe, int n);

/* `iters` dependent FMAs (a fixed amount of compute). */
double cxih_compute(int64_t iters);

/* The phase workload, GPU-triggered: `phases` phases of `iters` FMAs each,
 * goshmemx_cxi_barrier after every phase, in one call (one "kernel"). */
void cxih_phases(int64_t iters, int phases, cxih_result_t *res);

/* `count` barriers back to back; per-barrier min/max. */
void cxih_barriers(int64_t count, cxih_result_t *res);

/* `count` triggers: the release store of the doorbell (the emulated
 * trigger's only GPU-side instruction) to the state's bench_doorbell. */
void cxih_triggers(int64_t count, cxih_result_t *res);

/* Cross-process check: `iters` barriers where PE (i mod n) sleeps
 * `skew_ns` before entering barrier i (every other PE's barrier i must then
 * last about that long: max_ns/min_ns report the shortest such barrier in
 * min_ns), then `am` active messages to every PE (contents and order checked). */
void cxih_check(int iters, uint64_t skew_ns, int am, cxih_result_t *res);
#endif
