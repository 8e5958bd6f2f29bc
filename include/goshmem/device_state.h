/* goshmem device state: the one struct the Go host fills and every kernel
 * reads. Layout is shared between Go (internal/cuda: devstate.go mirrors it
 * and checks the size) and C/CUDA. Never edit a released version in place:
 * add fields at the end and bump GOSHMEMI_DEVICE_STATE_VERSION's minor part;
 * an incompatible change bumps its major part (version 2: the team table
 * and the epochs in device memory, sized by max_teams).
 *
 * Dependents: include/goshmem/ headers (device API), shmem (host side, writes it
 * with cuMemcpyHtoD and sets each module's __constant__ pointer).
 */
#ifndef GOSHMEM_DEVICE_STATE_H
#define GOSHMEM_DEVICE_STATE_H

#include <stdint.h>

/* The layout helpers below: usable from host code (the Go tests, host
 * programs that size a heap) and from kernels. */
#if defined(__CUDACC__)
#define GOSHMEMI_LAYOUT_FN static __host__ __device__ __forceinline__
#else
#define GOSHMEMI_LAYOUT_FN static inline
#endif

#define GOSHMEMI_MAX_PES 128 /* PEs reachable by load/store from one GPU */

/* Front of every PE's device heap (bytes), the control area the allocator
 * never hands out, for the state's max_teams team slots (GOSHMEM_MAX_TEAMS,
 * predefined teams included): team slot s is the TEAM_SLOT_BYTES (34 KiB)
 * at goshmemi_team_slot_off(s) = s * TEAM_SLOT_BYTES, then 64 KiB are
 * reserved; goshmemi_device_control_bytes(max_teams) is the end. No offset
 * within the control area depends on max_teams. A slot holds:
 *   [0, PSYNC_SLOT_BYTES)
 *                     the 2 KiB psync slot:
 *                     lines 0-7    barrier rounds (coll.h; <= 7 rounds for <= 128 PEs)
 *                     line 8       this PE's own words: the collective counter
 *                                  (word 0, coll_data.h), the kernel library's
 *                                  fused-grid flag and finished-block count
 *                                  (words 1 and 2, gpulib/lib.cu)
 *                     lines 9-15   on-stream sync words written and waited on by
 *                                  stream memory operations (cuStreamBatchMemOp:
 *                                  package shmem's *OnStream barriers and syncs,
 *                                  epochs counted by the host; no kernel reads them):
 *                                  a team of at most STREAM_SYNC_FLAT_MAX members
 *                                  uses word i of line 9, written by member i; a
 *                                  larger one word 0 of line 9+k for round k
 *                     bytes 1024+  collective flags, one uint64_t per team member
 *                                  (written by that member, coll_data.h)
 *                     The host zeroes it when it assigns the slot to a team.
 *   COLL_SCRATCH_IN_SLOT
 *                     collective scratch, COLL_SCRATCH_SLOT_BYTES (two halves,
 *                     used alternately; never needs zeroing)
 *   COLL_LL_IN_SLOT   the small collectives' LL packets (coll_data.h),
 *                     COLL_LL_SLOT_BYTES (two halves, used alternately); only
 *                     packets are ever stored there, and the host zeroes
 *                     this PE's with its psync slot */
#define GOSHMEMI_PSYNC_ROUNDS 32
#define GOSHMEMI_PSYNC_LINE 64
#define GOSHMEMI_PSYNC_SLOT_BYTES (GOSHMEMI_PSYNC_ROUNDS * GOSHMEMI_PSYNC_LINE)
#define GOSHMEMI_COLL_COUNTER_OFF 512    /* within a psync slot: line 8, word 0 */
#define GOSHMEMI_LIB_GRID_GO_OFF 520     /* within a psync slot: line 8, word 1 */
#define GOSHMEMI_LIB_GRID_DONE_OFF 528   /* within a psync slot: line 8, word 2 (32 bits) */
#define GOSHMEMI_STREAM_SYNC_OFF 576     /* within a psync slot: line 9, one line per round */
#define GOSHMEMI_STREAM_SYNC_ROUNDS 7    /* ceil(log2(GOSHMEMI_MAX_PES)) */
#define GOSHMEMI_STREAM_SYNC_FLAT_MAX 8  /* members of a flat sync: one word each in one line */
#define GOSHMEMI_COLL_FLAGS_OFF 1024     /* within a psync slot: flags[GOSHMEMI_MAX_PES] */
#define GOSHMEMI_COLL_SCRATCH_SLOT_BYTES 16384
#define GOSHMEMI_COLL_LL_SLOT_BYTES 16384
#define GOSHMEMI_COLL_SCRATCH_IN_SLOT GOSHMEMI_PSYNC_SLOT_BYTES /* within a team slot */
#define GOSHMEMI_COLL_LL_IN_SLOT (GOSHMEMI_COLL_SCRATCH_IN_SLOT + GOSHMEMI_COLL_SCRATCH_SLOT_BYTES)
#define GOSHMEMI_TEAM_SLOT_BYTES (GOSHMEMI_COLL_LL_IN_SLOT + GOSHMEMI_COLL_LL_SLOT_BYTES)
#define GOSHMEMI_CONTROL_RESERVED_BYTES 65536 /* after the last team slot */

/* Symmetric offset of team slot slot (its psync slot). */
GOSHMEMI_LAYOUT_FN uint64_t goshmemi_team_slot_off(int32_t slot)
{
    return (uint64_t)(uint32_t)slot * GOSHMEMI_TEAM_SLOT_BYTES;
}
/* Bytes of the control area of max_teams slots: the first symmetric
 * offset the allocator hands out. */
GOSHMEMI_LAYOUT_FN uint64_t goshmemi_device_control_bytes(uint32_t max_teams)
{
    return (uint64_t)max_teams * GOSHMEMI_TEAM_SLOT_BYTES + GOSHMEMI_CONTROL_RESERVED_BYTES;
}

/* Rows of the team table that the state also holds inline (team_inline):
 * kernels read them from the state's constant copy (state.h), so a team in
 * one of the first slots (the node team, the first splits: slots are handed
 * out lowest first) costs no load from the table in device memory. */
#define GOSHMEMI_INLINE_TEAMS 32

typedef struct goshmemi_team {
    int32_t start, stride, size; /* members: start + i*stride, i < size */
    int32_t my_index;            /* -1 when this PE is not a member */
    int32_t slot;                /* team slot: psync words, epoch, scratch */
    int32_t pad_;
} goshmemi_team_t;

typedef struct goshmemi_device_state {
    uint32_t version;      /* GOSHMEMI_DEVICE_STATE_VERSION */
    uint32_t size;         /* sizeof(goshmemi_device_state_t) */
    int32_t my_pe;
    int32_t n_pes;
    uint64_t heap_size;    /* bytes of device heap per PE, control area included */
    /* heap_base[pe]: this GPU's address of PE pe's device heap (peer-mapped
     * with CUDA IPC), or 0 when pe is not load/store reachable. */
    uint64_t heap_base[GOSHMEMI_MAX_PES];
    /* The team table: max_teams rows, indexed by goshmem_team_t, in this
     * PE's device memory (the host writes a row when it publishes a team;
     * row 0, the world, is not read: see coll.h; rows below
     * GOSHMEMI_INLINE_TEAMS are read from team_inline). */
    goshmemi_team_t *teams;
    /* Barrier and collective epochs, one per team slot (max_teams words),
     * in this PE's device memory: the struct is per-PE, and device code
     * updates them (one block at a time). */
    uint64_t *team_epoch;
    /* GOSHMEM_MAX_TEAMS: rows of teams[], words of team_epoch[] and team
     * slots of the control area. Every PE has the same value. */
    uint32_t max_teams;
    uint32_t pad_teams_;
    /* Rows [0, GOSHMEMI_INLINE_TEAMS) of teams[] again (the host writes
     * both); device code reads these rows here (goshmemi_team_row). */
    goshmemi_team_t team_inline[GOSHMEMI_INLINE_TEAMS];
    /* error flag the host polls: nonzero when a device call saw bad input */
    uint64_t error_code;
    uint64_t error_info;
    /* Nonzero when every PE with heap_base[pe] != 0 lives on this same GPU
     * (CUDA IPC peers sharing one device) and no host agent reads the heap
     * concurrently: quiet, fence, signals, waits and AMOs then use GPU scope
     * (fence.sc.gpu, st.release.gpu, atom.gpu) instead of system scope.
     * Zero (the safe default) means system scope: a peer on another GPU
     * over NVLink, or host-pinned memory, needs .sys. */
    uint32_t all_peers_same_device;
    /* How this GPU reaches a PE whose heap_base[pe] is 0 (not load/store
     * reachable): GOSHMEMI_REMOTE_NONE (such a PE is an error),
     * GOSHMEMI_REMOTE_PROXY (descriptors to host proxy workers, see
     * proxy_state) or GOSHMEMI_REMOTE_IBGDA (GPU-built mlx5 WQEs, see
     * ibgda_state). */
    uint32_t remote_transport;
    /* Device addresses of the per-transport device states (0 when that
     * transport is not configured): proxy rings (internal/transport/proxy),
     * IBGDA queue pairs (ibgda/), CXI trigger state (cxi/). Each struct is
     * versioned and size-asserted in its own header. */
    uint64_t proxy_state;
    uint64_t ibgda_state;
    uint64_t cxi_state;
    /* Device address of this PE's goshmemi_error_record_t in host-mapped
     * memory (0: none): the first failing device call writes it before it
     * traps, so the host can name the failure after the trap, when the
     * context can no longer copy device memory. */
    uint64_t error_host;
    /* The largest block (bytes per member) a small reduce, reducescatter,
     * fcollect or alltoall over load/store members sends as LL packets
     * (coll_data.h), capped by the LL region; 0: never (the flag round
     * instead). GOSHMEM_GPU_COLL_LL; every member has the same value. */
    uint32_t coll_ll_bytes;
    uint32_t pad_ll_;
    uint64_t reserved[10];
} goshmemi_device_state_t;

/* The host-mapped error record (error_host): written once, by the thread
 * whose compare-and-swap of code from 0 wins. */
typedef struct goshmemi_error_record {
    uint64_t code;   /* GOSHMEMI_ERR_* (0: no device error yet) */
    uint64_t info;   /* GOSHMEMI_ERROR_INFO(hi, lo), as error_info */
    int32_t pe;      /* my_pe of the state */
    uint32_t block;  /* the failing thread's linear block index */
    uint32_t thread; /* and its linear thread index in the block */
    uint32_t done;   /* 1 once every field above and `what` are written */
    char what[96];   /* the failing call's message, NUL-terminated (truncated) */
} goshmemi_error_record_t;

#define GOSHMEMI_REMOTE_NONE 0u
#define GOSHMEMI_REMOTE_PROXY 1u
#define GOSHMEMI_REMOTE_IBGDA 2u

#define GOSHMEMI_DEVICE_STATE_VERSION ((2u << 16) + (uint32_t)sizeof(goshmemi_device_state_t))

#if defined(__cplusplus)
static_assert(sizeof(goshmemi_device_state_t) == 16 + 8 + 8 * GOSHMEMI_MAX_PES + 24 + 24 * GOSHMEMI_INLINE_TEAMS + 16 + 8 + 120,
              "goshmemi_device_state_t layout changed: update devstate.go");
static_assert(sizeof(goshmemi_team_t) == 24, "goshmemi_team_t layout changed: update devstate.go");
#else
_Static_assert(sizeof(goshmemi_device_state_t) == 16 + 8 + 8 * GOSHMEMI_MAX_PES + 24 + 24 * GOSHMEMI_INLINE_TEAMS + 16 + 8 + 120,
               "goshmemi_device_state_t layout changed: update devstate.go");
_Static_assert(sizeof(goshmemi_team_t) == 24, "goshmemi_team_t layout changed: update devstate.go");
#endif
#if defined(__cplusplus)
static_assert(sizeof(goshmemi_error_record_t) == 128, "goshmemi_error_record_t layout changed: update devstate.go");
#else
_Static_assert(sizeof(goshmemi_error_record_t) == 128, "goshmemi_error_record_t layout changed: update devstate.go");
#endif

/* the psync slot layout above: barrier rounds fit in lines 0-7, line 8's
 * words in it, the stream sync rounds in lines 9-15, flags in the upper
 * kilobyte */
#define GOSHMEMI_PSYNC_LAYOUT_OK                                                                                      \
    (GOSHMEMI_MAX_PES <= 128 && GOSHMEMI_COLL_FLAGS_OFF + 8 * GOSHMEMI_MAX_PES <= GOSHMEMI_PSYNC_SLOT_BYTES &&         \
     GOSHMEMI_COLL_COUNTER_OFF + GOSHMEMI_PSYNC_LINE <= GOSHMEMI_STREAM_SYNC_OFF &&                                   \
     GOSHMEMI_COLL_COUNTER_OFF < GOSHMEMI_LIB_GRID_GO_OFF && GOSHMEMI_LIB_GRID_GO_OFF < GOSHMEMI_LIB_GRID_DONE_OFF &&    \
     GOSHMEMI_LIB_GRID_DONE_OFF + 4 <= GOSHMEMI_COLL_COUNTER_OFF + GOSHMEMI_PSYNC_LINE &&                              \
     GOSHMEMI_STREAM_SYNC_OFF + GOSHMEMI_STREAM_SYNC_ROUNDS * GOSHMEMI_PSYNC_LINE <= GOSHMEMI_COLL_FLAGS_OFF &&         \
     8 * GOSHMEMI_STREAM_SYNC_FLAT_MAX <= GOSHMEMI_PSYNC_LINE)
#if defined(__cplusplus)
static_assert(GOSHMEMI_PSYNC_LAYOUT_OK, "psync slot layout: flags or barrier rounds overflow the slot");
#else
_Static_assert(GOSHMEMI_PSYNC_LAYOUT_OK, "psync slot layout: flags or barrier rounds overflow the slot");
#endif

#endif
