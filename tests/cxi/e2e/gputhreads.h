/* "GPU threads" for the CXI e2e test: OS threads running
 * include/goshmem/cxi.h in host mode against the Go monitor (cxi.Rank). */
#ifndef CXI_E2E_GPUTHREADS_H
#define CXI_E2E_GPUTHREADS_H
#include <stdint.h>

typedef struct e2e_result {
    int rc;              /* first non-OK GOSHMEMX_CXI_* code */
    uint64_t violations; /* barrier property violations seen */
    uint64_t am_bad;     /* active messages with wrong contents */
    uint64_t am_got;
    uint64_t max_ns;     /* slowest barrier */
    uint64_t total_ns;
} e2e_result_t;

/* Runs `iters` barriers on the thread's own CXI state `cxi` (rank `pe` of
 * n), checking that after barrier i every rank's arrive[] >= i; then, when
 * am_msgs > 0, sends am_msgs active messages to every rank and receives
 * theirs in the same loop. Blocks until done. */
void e2e_run(void *cxi, int pe, int n, int iters, int am_msgs, volatile int64_t *arrive, e2e_result_t *res);
#endif
