/* goshmem device state: the one struct the Go host fills and every kernel
 * reads. Layout is shared between Go (internal/cuda: devstate.go mirrors it
 * and checks the size) and C/CUDA. Never edit a released version in place:
 * add fields at the end and bump GOSHMEMI_DEVICE_STATE_VERSION's minor part.
 *
 * Dependents: include/goshmem/ headers (device API), shmem (host side, writes it
 * with cuMemcpyHtoD and sets each module's __constant__ pointer).
 */
#ifndef GOSHMEM_DEVICE_STATE_H
#define GOSHMEM_DEVICE_STATE_H

#include <stdint.h>

#define GOSHMEMI_MAX_PES 128 /* PEs reachable by load/store from one GPU */
#define GOSHMEMI_MAX_TEAMS 32

/* Front of every PE's device heap (bytes), the control area the allocator
 * never hands out:
 *   [0, PSYNC_BYTES)  one 2 KiB psync slot per team slot s (at s * PSYNC_SLOT_BYTES):
 *                     lines 0-7    barrier rounds (coll.h; <= 7 rounds for <= 128 PEs)
 *                     line 8       this PE's own collective counters (coll_data.h)
 *                     lines 9-15   on-stream sync words written and waited on by
 *                                  stream memory operations (cuStreamBatchMemOp:
 *                                  package shmem's *OnStream barriers and syncs,
 *                                  epochs counted by the host; no kernel reads them):
 *                                  a team of at most STREAM_SYNC_FLAT_MAX members
 *                                  uses word i of line 9, written by member i; a
 *                                  larger one word 0 of line 9+k for round k
 *                     bytes 1024+  collective flags, one uint64_t per team member
 *                                  (written by that member, coll_data.h)
 *                     The host zeroes a slot when it assigns it to a team.
 *   then 64 KiB       reserved
 *   COLL_SCRATCH_OFF  collective scratch, COLL_SCRATCH_SLOT_BYTES per team slot
 *                     (two halves, used alternately; never needs zeroing)
 *   COLL_LL_OFF       the small collectives' LL packets (coll_data.h),
 *                     COLL_LL_SLOT_BYTES per team slot (two halves, used
 *                     alternately); only packets are ever stored there, and
 *                     the host zeroes this PE's slot with its psync slot */
#define GOSHMEMI_PSYNC_ROUNDS 32
#define GOSHMEMI_PSYNC_LINE 64
#define GOSHMEMI_PSYNC_SLOT_BYTES (GOSHMEMI_PSYNC_ROUNDS * GOSHMEMI_PSYNC_LINE)
#define GOSHMEMI_PSYNC_BYTES (GOSHMEMI_MAX_TEAMS * GOSHMEMI_PSYNC_SLOT_BYTES)
#define GOSHMEMI_COLL_COUNTER_OFF 512 /* within a psync slot */
#define GOSHMEMI_STREAM_SYNC_OFF 576  /* within a psync slot: line 9, one line per round */
#define GOSHMEMI_STREAM_SYNC_ROUNDS 7 /* ceil(log2(GOSHMEMI_MAX_PES)) */
#define GOSHMEMI_STREAM_SYNC_FLAT_MAX 8 /* members of a flat sync: one word each in one line */
#define GOSHMEMI_COLL_FLAGS_OFF 1024  /* within a psync slot: flags[GOSHMEMI_MAX_PES] */
#define GOSHMEMI_COLL_SCRATCH_OFF (GOSHMEMI_PSYNC_BYTES + 65536)
#define GOSHMEMI_COLL_SCRATCH_SLOT_BYTES 16384
#define GOSHMEMI_COLL_LL_OFF (GOSHMEMI_COLL_SCRATCH_OFF + GOSHMEMI_MAX_TEAMS * GOSHMEMI_COLL_SCRATCH_SLOT_BYTES)
#define GOSHMEMI_COLL_LL_SLOT_BYTES 16384
#define GOSHMEMI_DEVICE_CONTROL_BYTES (GOSHMEMI_COLL_LL_OFF + GOSHMEMI_MAX_TEAMS * GOSHMEMI_COLL_LL_SLOT_BYTES)

typedef struct goshmemi_team {
    int32_t start, stride, size; /* members: start + i*stride, i < size */
    int32_t my_index;            /* -1 when this PE is not a member */
    int32_t slot;                /* psync slot */
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
    /* barrier epochs per team slot live in this PE's own memory: the struct
     * is per-PE, and device code updates them (one block at a time). */
    uint64_t team_epoch[GOSHMEMI_MAX_TEAMS];
    goshmemi_team_t teams[GOSHMEMI_MAX_TEAMS];
    /* error flag the host polls: nonzero when a device call saw bad input */
    uint64_t error_code;
    uint64_t error_info;
    /* Nonzero when every PE with heap_base[pe] != 0 lives on this same GPU
     * (CUDA IPC peers sharing one device) and no host agent reads the heap
     * concurrently: quiet, fence, signals, waits and AMOs then use GPU scope
     * (fence.sc.gpu, st.release.gpu, atom.gpu) instead of system scope.
     * Zero (the safe default) means system scope: a peer on another GPU
     * over NVLink, or host-pinned memory, needs .sys. Taken from reserved[]
     * (size unchanged). */
    uint32_t all_peers_same_device;
    /* How this GPU reaches a PE whose heap_base[pe] is 0 (not load/store
     * reachable): GOSHMEMI_REMOTE_NONE (such a PE is an error),
     * GOSHMEMI_REMOTE_PROXY (descriptors to host proxy workers, see
     * proxy_state) or GOSHMEMI_REMOTE_IBGDA (GPU-built mlx5 WQEs, see
     * ibgda_state). Taken from reserved[] (size unchanged). */
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
     * context can no longer copy device memory. Taken from reserved[]. */
    uint64_t error_host;
    /* The largest block (bytes per member) a small reduce, reducescatter,
     * fcollect or alltoall over load/store members sends as LL packets
     * (coll_data.h), capped by the LL region; 0: never (the flag round
     * instead). GOSHMEM_GPU_COLL_LL; every member has the same value.
     * Taken from reserved[] (size unchanged). */
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

#define GOSHMEMI_DEVICE_STATE_VERSION ((1u << 16) + (uint32_t)sizeof(goshmemi_device_state_t))

#if defined(__cplusplus)
static_assert(sizeof(goshmemi_device_state_t) == 16 + 8 + 8 * GOSHMEMI_MAX_PES + 8 * GOSHMEMI_MAX_TEAMS +
                                                     24 * GOSHMEMI_MAX_TEAMS + 16 + 8 + 120,
              "goshmemi_device_state_t layout changed: update devstate.go");
#else
_Static_assert(sizeof(goshmemi_device_state_t) == 16 + 8 + 8 * GOSHMEMI_MAX_PES + 8 * GOSHMEMI_MAX_TEAMS +
                                                      24 * GOSHMEMI_MAX_TEAMS + 16 + 8 + 120,
               "goshmemi_device_state_t layout changed: update devstate.go");
#endif
#if defined(__cplusplus)
static_assert(sizeof(goshmemi_error_record_t) == 128, "goshmemi_error_record_t layout changed: update devstate.go");
#else
_Static_assert(sizeof(goshmemi_error_record_t) == 128, "goshmemi_error_record_t layout changed: update devstate.go");
#endif

/* the psync slot layout above: barrier rounds fit in lines 0-7, the stream
 * sync rounds in lines 9-15, flags in the upper kilobyte */
#define GOSHMEMI_PSYNC_LAYOUT_OK                                                                                      \
    (GOSHMEMI_MAX_PES <= 128 && GOSHMEMI_COLL_FLAGS_OFF + 8 * GOSHMEMI_MAX_PES <= GOSHMEMI_PSYNC_SLOT_BYTES &&         \
     GOSHMEMI_COLL_COUNTER_OFF + GOSHMEMI_PSYNC_LINE <= GOSHMEMI_STREAM_SYNC_OFF &&                                   \
     GOSHMEMI_STREAM_SYNC_OFF + GOSHMEMI_STREAM_SYNC_ROUNDS * GOSHMEMI_PSYNC_LINE <= GOSHMEMI_COLL_FLAGS_OFF &&         \
     8 * GOSHMEMI_STREAM_SYNC_FLAT_MAX <= GOSHMEMI_PSYNC_LINE)
#if defined(__cplusplus)
static_assert(GOSHMEMI_PSYNC_LAYOUT_OK, "psync slot layout: flags or barrier rounds overflow the slot");
#else
_Static_assert(GOSHMEMI_PSYNC_LAYOUT_OK, "psync slot layout: flags or barrier rounds overflow the slot");
#endif

#endif
