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
    /* cxih_check: barriers after which some peer's arrival number on the
     * board was below the barrier's (the barrier returned before that peer
     * entered it), and the first such: barrier, peer, number seen. */
    uint64_t early;
    int early_iter, early_pe;
    uint64_t early_seen;
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

/* Cross-process check: `iters` barriers; before entering barrier i each PE
 * stores i+1 in its slot of `board` (memory every PE of the job maps: slot
 * q at board[q * CXIH_BOARD_STRIDE], release), and after the barrier returns
 * reads every slot (acquire): a slot below i+1 means the barrier returned
 * before that PE arrived (counted in early). PE (i mod n) sleeps `skew_ns`
 * before its store, so a barrier that does not wait is caught. min_ns and
 * max_ns report the barriers a peer slept through (informational). Then
 * `am` active messages to every PE (contents and order checked). */
#define CXIH_BOARD_STRIDE 8 /* uint64_t words: one 64-byte line per PE */
void cxih_check(int iters, uint64_t skew_ns, int am, uint64_t *board, cxih_result_t *res);
#endif
