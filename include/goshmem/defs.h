/* goshmem device API: compiler modes, constants and public types.
 *
 * One header, two compilers:
 *   - nvcc (__CUDACC__): every function is `static __device__ __forceinline__`
 *     and inlines into the user's kernel (no -rdc needed); ordering is PTX
 *     inline asm (ordering.h).
 *   - gcc -std=c11 / g++ -std=c++17 (host mode): every function is
 *     `static inline` host C using __atomic builtins, so the protocols run on
 *     the CPU where a "GPU thread" is an OS thread (tests/hdr/).
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_DEFS_H
#define GOSHMEM_DEFS_H

#include <stddef.h>
#include <stdint.h>

#include "device_state.h"

#if defined(__CUDACC__)
#define GOSHMEMI_CUDA 1
/* Every device entry point: inlined into the caller's kernel. */
#define GOSHMEMI_FN static __device__ __forceinline__
/* Cold paths (error reporting) stay out of line so hot paths stay small. */
#define GOSHMEMI_COLD static __device__ __noinline__
#else
#define GOSHMEMI_CUDA 0
#define GOSHMEMI_FN static inline
#if defined(__GNUC__)
#define GOSHMEMI_COLD static __attribute__((noinline, cold))
#else
#define GOSHMEMI_COLD static
#endif
#endif

/* Called between the loads of a registered-buffer lookup (proxy.h,
 * ibgda/backend.h): nothing, unless a host-mode test (tests/hdr) defines it
 * to change the table at those points. */
#ifndef GOSHMEMI_REG_LOAD_HOOK
#define GOSHMEMI_REG_LOAD_HOOK() ((void)0)
#endif

#if defined(__GNUC__) || defined(__CUDACC__)
#define GOSHMEMI_LIKELY(x) __builtin_expect(!!(x), 1)
#define GOSHMEMI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GOSHMEMI_LIKELY(x) (x)
#define GOSHMEMI_UNLIKELY(x) (x)
#endif

/* Nanoseconds for wait deadlines and device-side timing (CUDA: %globaltimer;
 * host mode: C11 timespec_get(TIME_UTC), no POSIX feature macros needed).
 * The one clock of the device API (ibgda/, cxi.h, proxy.h). It lives here,
 * not in ordering.h, because the standalone IBGDA headers (ibgda/ibgda.h)
 * include only this file: ordering.h pulls in state.h, whose __constant__
 * goshmemi_device_state would then appear in every IBGDA-only module. */
#if !GOSHMEMI_CUDA
#include <time.h>
#endif
GOSHMEMI_FN uint64_t goshmemi_now_ns(void)
{
#if GOSHMEMI_CUDA
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

#if defined(__cplusplus)
#define GOSHMEMI_EXTERN_C_BEGIN extern "C" {
#define GOSHMEMI_EXTERN_C_END }
#else
#define GOSHMEMI_EXTERN_C_BEGIN
#define GOSHMEMI_EXTERN_C_END
#endif

/* ---- comparison operators for wait_until / test / signal_wait_until ----
 * Ref: OpenSHMEM 1.5 §9.10 (point-to-point synchronization constants).
 * The values are NVSHMEM's (Ref: NVSHMEM 3.x nvshmem_constants.h
 * nvshmemi_cmp_type) and shmem.Cmp's (shmem/consts_test.go checks). */
#define GOSHMEM_CMP_EQ 0
#define GOSHMEM_CMP_NE 1
#define GOSHMEM_CMP_GT 2
#define GOSHMEM_CMP_LE 3
#define GOSHMEM_CMP_LT 4
#define GOSHMEM_CMP_GE 5
#define GOSHMEM_CMP_SENTINEL 6

/* ---- signal operators for signal_op / putmem_signal ----
 * Ref: OpenSHMEM 1.5 §9.8.1 (SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD). The
 * values are NVSHMEM's (Ref: NVSHMEM 3.x nvshmem_common_transport.h
 * nvshmemx_signal_op_t) so a value from NVSHMEM code or from Go
 * (shmem.SignalSet/SignalAdd) means the same here; any other value traps
 * (GOSHMEMI_ERR_INVALID_ARG), it is never taken for SET. */
#define GOSHMEM_SIGNAL_SET 9
#define GOSHMEM_SIGNAL_ADD 10
#define GOSHMEMI_SIGNAL_OP_VALID(op) ((op) == GOSHMEM_SIGNAL_SET || (op) == GOSHMEM_SIGNAL_ADD)

/* ---- contexts ----
 * On the load/store path (CUDA IPC / NVLink) every context issues plain
 * stores from the calling thread, so a context carries no queue: ctx_quiet
 * has the same scope as quiet (all prior stores of the calling thread). The
 * type exists so NVSHMEM code and the IBGDA path (per-QP contexts) share one
 * signature. */
typedef int32_t goshmem_ctx_t;
#define GOSHMEM_CTX_DEFAULT ((goshmem_ctx_t)0)
#define GOSHMEM_CTX_INVALID ((goshmem_ctx_t)-1)

/* ---- teams ----
 * A team is an index into goshmemi_device_state_t.teams[], in [0,
 * max_teams) (GOSHMEM_MAX_TEAMS; shmem's Team.DeviceID is the team's slot).
 * Slot 0 of the psync area and of team_epoch[] belongs to
 * GOSHMEM_TEAM_WORLD. Slot 1 is
 * the PEs of this PE's node in world order (shmem.TeamShared and
 * shmem.TeamNode, one team), published by shmem.Init before any split
 * (each node's team on its own members' words); when the node's PEs are
 * not evenly strided in the world it is not published, and a device call
 * on it traps GOSHMEMI_ERR_BAD_TEAM. Ref: NVSHMEM's NVSHMEM_TEAM_SHARED,
 * NVSHMEMX_TEAM_NODE; OpenSHMEM 1.6 §9.4.2 SHMEM_TEAM_SHARED. */
typedef int32_t goshmem_team_t;
#define GOSHMEM_TEAM_WORLD ((goshmem_team_t)0)
#define GOSHMEM_TEAM_SHARED ((goshmem_team_t)1)
#define GOSHMEM_TEAM_NODE ((goshmem_team_t)1)
#define GOSHMEM_TEAM_INVALID ((goshmem_team_t)-1)

/* ---- error codes written to goshmemi_device_state_t.error_code ----
 * The first error wins (compare-and-swap from 0); error_info then holds
 * GOSHMEMI_ERROR_INFO(pe, detail). A trapped CUDA context cannot copy
 * device memory any more, so the same code, info and message also go to
 * the host-mapped goshmemi_error_record_t at error_host (device_state.h),
 * which the host decodes after the fault. */
#define GOSHMEMI_ERR_NONE 0
#define GOSHMEMI_ERR_PE_UNREACHABLE 1   /* heap_base[pe] == 0 (info: pe, offset) */
#define GOSHMEMI_ERR_PE_OUT_OF_RANGE 2  /* pe < 0 or pe >= n_pes (info: pe, n_pes) */
#define GOSHMEMI_ERR_NOT_SYMMETRIC 3    /* address outside this PE's heap (info: pe, offset low 32 bits) */
#define GOSHMEMI_ERR_BAD_TEAM 4         /* invalid team or not a member (info: team, my_pe; out of range: team, max_teams) */
#define GOSHMEMI_ERR_NO_STATE 5         /* goshmemi_device_state is NULL (module not loaded by shmem.LoadModule) */
#define GOSHMEMI_ERR_BAD_STATE 6        /* version/size mismatch (info: version seen, expected) */
#define GOSHMEMI_ERR_INVALID_ARG 7      /* e.g. a comparison operator out of range (info: value, 0) */

#define GOSHMEMI_ERROR_INFO(hi, lo) (((uint64_t)(uint32_t)(hi) << 32) | (uint64_t)(uint32_t)(lo))

#endif /* GOSHMEM_DEFS_H */
