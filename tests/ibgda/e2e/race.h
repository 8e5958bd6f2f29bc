/* tests/ibgda/e2e: CQ polling against publishers in flight (race.c). */
#ifndef GOSHMEM_TESTS_IBGDA_E2E_RACE_H
#define GOSHMEM_TESTS_IBGDA_E2E_RACE_H

#include "posters.h"

/* A CQE for a WQE past the poller's sq_ready_idx, a CQE below sq_done_idx
 * and the 16-bit wqe_counter across 2^16, on QP q with no NIC running (the
 * test writes the CQEs): 0, or -1 with env->msg. */
int e2e_poll_race(e2e_env_t *env, int q);
/* `threads` threads post an unsignaled put and quiet QP q, `rounds` times
 * in lockstep (a barrier per round), with pollers sleeping hook_ns after
 * loading sq_ready_idx; a SoftNIC must run QP q: 0, or -1 with env->msg. */
int e2e_quiet_storm(e2e_env_t *env, int q, int threads, int rounds, int hook_ns);

#endif
