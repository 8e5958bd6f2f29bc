/* goshmem device API (umbrella header).
 *
 * Header-only, NVSHMEM-shaped device API for CUDA kernels: every call is a
 * static __device__ __forceinline__ function that inlines into the kernel,
 * so kernels need no -rdc and no device library. The same header compiles
 * as host C11/C++17 (gcc, g++) where a "GPU thread" is an OS thread: that
 * is how the protocols are unit-tested (tests/hdr/, `make hdrcheck`).
 *
 *   #include <goshmem.h>          // native names: goshmem_*, goshmemx_*
 *   #include <goshmem/nvshmem_compat.h>   // or: nvshmem_* / nvshmemx_* names
 *
 * Build (no -rdc):
 *   nvcc -std=c++17 -I include -gencode arch=compute_90,code=sm_90                                                   \
 *        -gencode arch=compute_90,code=compute_90 -fatbin kernels.cu
 * Load with shmem.LoadModule (Go), which sets the module's
 * `goshmemi_device_state` pointer (state.h explains the symbol).
 *
 * Files (each states its ordering/completion guarantees):
 *   goshmem/device_state.h  the host<->device ABI struct (versioned, size-asserted)
 *   goshmem/defs.h          modes, constants (GOSHMEM_CMP_*, GOSHMEM_SIGNAL_*, ctx, team)
 *   goshmem/state.h         state pointer, my_pe/n_pes, ptr, addressing, error trap
 *   goshmem/ordering.h      PTX / __atomic ordering primitives named for purpose
 *   goshmem/fp16.h          goshmem_half_t / goshmem_bfloat16_t (CUDA's __half / __nv_bfloat16)
 *   goshmem/types.h         type tables for the typed calls
 *   goshmem/proxy.h         the CPU-proxy remote path: 16-byte descriptor rings, completion counters
 *   goshmem/remote.h        routing of PEs without load/store access to a remote backend (proxy, IBGDA)
 *   goshmem/quiet.h         quiet, fence, ctx_quiet, ctx_fence
 *   goshmem/rma.h           put/get/p/g, _nbi, _warp, _block, sized
 *   goshmem/wait.h          wait_until[_all/_any/_some][_vector], test[_all/_any/_some]
 *   goshmem/signal.h        signal_op, putmem_signal / TYPE_put_signal, signal_wait_until, signal_fetch
 *   goshmem/amo.h           atomics
 *   goshmem/coll.h          barrier_all, sync_all, barrier(team), team_sync, team queries
 *   goshmem/coll_data.h     reduce, reducescatter, broadcast, fcollect, alltoall (+ *mem)
 *   goshmem/nvshmem_compat.h  nvshmem_* names -> goshmem_*
 *   goshmem/cxi.h           CXI GPU-triggered barrier and active messages (goshmemx_cxi_*)
 */
#ifndef GOSHMEM_H
#define GOSHMEM_H

#include "goshmem/device_state.h"
#include "goshmem/defs.h"
#include "goshmem/state.h"
#include "goshmem/ordering.h"
#include "goshmem/types.h"
#include "goshmem/proxy.h"
#include "goshmem/remote.h"
#include "goshmem/quiet.h"
#include "goshmem/rma.h"
#include "goshmem/wait.h"
#include "goshmem/signal.h"
#include "goshmem/amo.h"
#include "goshmem/coll.h"
#include "goshmem/coll_data.h"
#include "goshmem/cxi.h"

#endif /* GOSHMEM_H */
