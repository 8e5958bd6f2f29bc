/* goshmem device API: fence and quiet (completion and ordering).
 *
 * On the load/store path (CUDA IPC / NVLink) a put is a sequence of stores
 * issued by the calling thread; there are no queues, so "completion" is
 * visibility: quiet makes every prior store/AMO of the calling thread
 * visible to every PE before anything the thread does next.
 * Scope: .sys, or .gpu when state->all_peers_same_device (ordering.h).
 * Remote PEs (remote.h): when a remote transport is configured, quiet also
 * waits for the completion of every remote request (ctx_quiet: of that
 * context's queues; quiet: of all), and fence orders them (the proxy's
 * rings are in order already).
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_QUIET_H
#define GOSHMEM_QUIET_H

#include "ordering.h"
#include "remote.h"

/* Completes all puts, AMOs and stores to symmetric memory issued by the
 * calling thread (any context, any PE): after it returns they are visible
 * to every PE, and they are ordered before every later memory operation of
 * this thread, loads included. Other threads' puts are not covered (use a
 * __syncthreads() first and call from one thread, or the _block variant of
 * the operation that needs it).
 * CUDA: fence.sc.sys (fence.sc.gpu when all peers share this GPU).
 * Ref: OpenSHMEM 1.5 §9.9.2 (shmem_quiet). */
GOSHMEMI_FN void goshmem_quiet(void)
{
    goshmemi_quiet_fence(goshmemi_sys_scope());
    if (goshmemi_remote_configured()) goshmemi_remote_quiet(-1);
}

/* goshmem_quiet restricted to ctx. On the load/store path a context has no
 * queues of its own, so this is goshmem_quiet (same cost and guarantee).
 * Ref: OpenSHMEM 1.5 §9.9.2 (shmem_ctx_quiet). */
GOSHMEMI_FN void goshmem_ctx_quiet(goshmem_ctx_t ctx)
{
    goshmemi_quiet_fence(goshmemi_sys_scope());
    if (goshmemi_remote_configured()) goshmemi_remote_quiet(ctx);
}

/* Orders delivery: puts, AMOs and stores to symmetric memory issued by the
 * calling thread before the fence are delivered to each PE before those
 * issued after it (to the same PE). No completion: use quiet to reuse a
 * get_nbi destination. A receiver that observes a post-fence store with an
 * acquire (wait_until, signal_wait_until, test) sees the pre-fence data.
 * CUDA: fence.acq_rel.sys (.gpu when all peers share this GPU): with the
 * later signal/flag store it forms a release pattern.
 * Ref: OpenSHMEM 1.5 §9.9.1 (shmem_fence). */
GOSHMEMI_FN void goshmem_fence(void)
{
    goshmemi_order_fence(goshmemi_sys_scope());
    if (goshmemi_remote_configured()) goshmemi_remote_fence(-1);
}

/* goshmem_fence restricted to ctx (same as goshmem_fence on this path). */
GOSHMEMI_FN void goshmem_ctx_fence(goshmem_ctx_t ctx)
{
    goshmemi_order_fence(goshmemi_sys_scope());
    if (goshmemi_remote_configured()) goshmemi_remote_fence(ctx);
}

#endif /* GOSHMEM_QUIET_H */
