/* goshmem device API: the CXI GPU-triggered path (docs/cxi.md).
 *
 * On Slingshot a kernel cannot post NIC work; it can only release work the
 * host pre-staged as libfabric deferred work (fi_trigger(3) FI_QUEUE_WORK:
 * trigger counter, threshold, operation, completion counter). A host monitor
 * (Go package cxi) arms that work one instance ahead in two slots, publishes
 * a readiness epoch per slot, retires completed work by its own bookkeeping
 * and re-arms. The kernel:
 *   1. waits (bounded) for the slot's readiness epoch, counting stalls;
 *   2. triggers: a system-scope release store of the slot's doorbell word
 *      (host-pinned). The monitor forwards it with fi_cntr_add: EMULATION of
 *      the CXI counter MMIO write (fi_cxi_cntr_add), which needs Slingshot.
 *      When the monitor has not armed the slot for this instance it issues
 *      the same writes itself (host fallback): the kernel waits on the same
 *      flags either way;
 *   3. polls GPU-visible flags the deferred RMA writes land in.
 * Waits never hang: a stopped monitor (state->stop) or an expired deadline
 * (state->timeout_ns) returns GOSHMEMX_CXI_ETIMEDOUT.
 *
 * Primitives (call from ONE thread; other threads __syncthreads around it):
 *   goshmemx_cxi_barrier()                 dissemination barrier over all PEs
 *   goshmemx_cxi_am_send(pe, h, f, a, n)   active message: payload, then sequence
 *   goshmemx_cxi_am_poll(pe, &msg)         take the next message from pe
 *
 * The state lives in host-pinned memory mapped into the GPU (its device
 * address is goshmemi_device_state_t.cxi_state); it is versioned and
 * size-asserted, and mirrored in Go by cxi/layout.go (checked by a test).
 * Host mode (gcc/g++): the same code with __atomic builtins, so tests run
 * "GPU threads" as OS threads against the Go monitor.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_CXI_H
#define GOSHMEM_CXI_H

#include "ordering.h"

#define GOSHMEMI_CXI_MAX_ROUNDS 32 /* dissemination rounds: ceil(log2 P) <= 32 */
#define GOSHMEMI_CXI_SLOTS 2       /* double-buffered stage-ahead */
#define GOSHMEMI_CXI_AM_ARGS 5     /* 64-bit arguments per active message */

#define GOSHMEMX_CXI_OK 0
#define GOSHMEMX_CXI_ETIMEDOUT 1 /* monitor stopped or deadline passed */
#define GOSHMEMX_CXI_EINVAL 2    /* bad PE / argument count */
#define GOSHMEMX_CXI_ENOTREADY 3 /* no CXI state (host did not set it up) */

/* doorbell bit: this trigger already advanced the NIC counter by MMIO */
#define GOSHMEMI_CXI_DB_MMIO 0x8000ull

/* state->flags */
#define GOSHMEMI_CXI_FLAG_MMIO 1u /* slots have real CXI counter MMIO addresses */

/* One double-buffer slot of a channel: the monitor's readiness epoch and
 * the kernel's doorbell, each on its own 64-byte line half. */
typedef struct goshmemi_cxi_slot {
    uint64_t armed;    /* monitor -> GPU: instance+1 armed here (0: none) */
    uint64_t doorbell; /* GPU -> monitor: ((instance+1) << 16) | [DB_MMIO] | triggers so far */
    uint64_t mmio;     /* CXI counter MMIO address of this slot's trigger counter, 0 in emulation */
    uint64_t pad_[5];
} goshmemi_cxi_slot_t;

/* An active message: the sequence first (the release indicator), then the
 * header {handler id, source PE, flags} and the arguments. */
typedef struct goshmemx_cxi_msg {
    uint64_t seq;
    uint32_t handler;
    int32_t src_pe;
    uint32_t flags;
    uint32_t nargs;
    uint64_t args[GOSHMEMI_CXI_AM_ARGS];
} goshmemx_cxi_msg_t;

/* Per-peer active-message channel (one per PE, including this one's own). */
typedef struct goshmemi_cxi_am_peer {
    goshmemi_cxi_slot_t slot[GOSHMEMI_CXI_SLOTS]; /* send channel to that PE */
    goshmemx_cxi_msg_t send[GOSHMEMI_CXI_SLOTS];  /* staging: payload source (GPU-written) */
    uint64_t seqsrc[GOSHMEMI_CXI_SLOTS];          /* monitor-written source of the sequence write */
    uint64_t credit;      /* written remotely by that PE's monitor: messages it consumed from us */
    uint64_t consumed;    /* messages we consumed from that PE (receiver) */
    uint64_t sent;        /* messages we sent to that PE (sender-owned) */
    uint64_t credit_sent; /* monitor: last `consumed` forwarded to that PE */
    uint64_t pad_[2];
    goshmemx_cxi_msg_t mbox[GOSHMEMI_CXI_SLOTS]; /* remote-written: messages from that PE */
} goshmemi_cxi_am_peer_t;

typedef struct goshmemi_cxi_state {
    uint32_t version; /* GOSHMEMI_CXI_STATE_VERSION */
    uint32_t size;    /* sizeof(goshmemi_cxi_state_t) */
    int32_t rank;
    int32_t nranks;
    uint32_t rounds;   /* ceil(log2 nranks) */
    uint32_t flags;    /* GOSHMEMI_CXI_FLAG_* */
    uint64_t stop;     /* monitor -> GPU: nonzero once the monitor stopped */
    uint64_t heartbeat;/* monitor loop count */
    uint64_t timeout_ns; /* waiter deadline per wait (0: none) */
    uint64_t error;    /* first asynchronous error the monitor saw (0: none) */
    uint64_t barrier_instance; /* GPU-owned: instances begun */
    uint64_t ready_stalls;     /* GPU-owned: triggers that found their slot not yet armed */
    uint64_t am_off;   /* byte offset from this struct to goshmemi_cxi_am_peer_t[nranks] (0: no AM):
                        * an offset, not an address, so the host (its mapping) and the GPU (the
                        * cuMemHostRegister device mapping) read the same region */
    uint64_t scratch_[2];    /* monitor-owned: sources of fallback and credit writes (cxi/channel.go) */
    uint64_t bench_doorbell; /* a doorbell no monitor watches: the trigger-cost benchmark rings it */
    uint64_t reserved_[3];
    goshmemi_cxi_slot_t barrier_slot[GOSHMEMI_CXI_SLOTS];
    uint64_t sig[GOSHMEMI_CXI_SLOTS][GOSHMEMI_CXI_MAX_ROUNDS]; /* remote-written round flags */
    uint64_t src[GOSHMEMI_CXI_SLOTS][GOSHMEMI_CXI_MAX_ROUNDS]; /* monitor-written write sources */
} goshmemi_cxi_state_t;

#define GOSHMEMI_CXI_STATE_VERSION ((2u << 16) + (uint32_t)sizeof(goshmemi_cxi_state_t)) /* 2: am_off */

#if defined(__cplusplus)
static_assert(sizeof(goshmemi_cxi_slot_t) == 64, "goshmemi_cxi_slot_t: update cxi/layout.go");
static_assert(sizeof(goshmemx_cxi_msg_t) == 64, "goshmemx_cxi_msg_t: update cxi/layout.go");
static_assert(sizeof(goshmemi_cxi_am_peer_t) == 448, "goshmemi_cxi_am_peer_t: update cxi/layout.go");
static_assert(sizeof(goshmemi_cxi_state_t) == 128 + 128 + 1024, "goshmemi_cxi_state_t: update cxi/layout.go");
#else
_Static_assert(sizeof(goshmemi_cxi_slot_t) == 64, "goshmemi_cxi_slot_t: update cxi/layout.go");
_Static_assert(sizeof(goshmemx_cxi_msg_t) == 64, "goshmemx_cxi_msg_t: update cxi/layout.go");
_Static_assert(sizeof(goshmemi_cxi_am_peer_t) == 448, "goshmemi_cxi_am_peer_t: update cxi/layout.go");
_Static_assert(sizeof(goshmemi_cxi_state_t) == 128 + 128 + 1024, "goshmemi_cxi_state_t: update cxi/layout.go");
#endif

/* ---- plumbing ------------------------------------------------------------- */

/* The CXI state: the thread's device state's cxi_state (NULL when unset). */
GOSHMEMI_FN goshmemi_cxi_state_t *goshmemi_cxi(void)
{
    goshmemi_device_state_t *st = goshmemi_device_state;
    if (st == NULL) return NULL;
    goshmemi_cxi_state_t *cx = (goshmemi_cxi_state_t *)(uintptr_t)st->cxi_state;
    if (cx == NULL || cx->version != GOSHMEMI_CXI_STATE_VERSION) return NULL;
    return cx;
}

/* Trigger: publish the doorbell. With release != 0 it is a system-scope
 * release, so the monitor (a host thread) that reads it with acquire sees
 * every store before it (an active message's payload in the staging slot),
 * and with real CXI counter MMIO (GOSHMEMI_CXI_FLAG_MMIO and an armed slot)
 * the same fence orders the payload before the NIC counter write. With
 * release == 0 the trigger is one posted store: only for a caller whose
 * last instruction was already a fence.acq_rel.sys after everything the
 * triggered operation depends on (a barrier round after the previous
 * round's acquire: fence + relaxed store is the release pattern, PTX ISA
 * §8.8). Rule: GPU->host handoff needs .sys scope (host threads are in the
 * system scope only). */
GOSHMEMI_FN void goshmemi_cxi_ring_doorbell(goshmemi_cxi_slot_t *sl, uint64_t instance, uint64_t triggers,
                                            uint64_t mmio_add, int release)
{
    uint64_t mmio = mmio_add != 0 ? sl->mmio : 0;
    if (release) goshmemi_order_fence(1);
    if (mmio != 0) {
        /* fi_cxi_cntr_add: the value stored to the MMIO address is added to
         * the NIC counter; the NIC may read the payload as soon as the
         * counter reaches the threshold (hence the fence above). */
        goshmemi_relaxed_store_u64((volatile void *)(uintptr_t)mmio, mmio_add, 1);
    }
    /* Bit 15 tells the monitor the NIC counter was already advanced. The
     * fence above (or the caller's) makes this relaxed store a release. */
    goshmemi_relaxed_store_u64(&sl->doorbell, ((instance + 1) << 16) | (mmio != 0 ? GOSHMEMI_CXI_DB_MMIO : 0) | triggers, 1);
}

/* Wait until *p >= v (acquire), failing on a stopped monitor or deadline.
 * The stop word and clock are checked every 256 polls (host-pinned reads
 * cost a PCIe round trip on the GPU). */
GOSHMEMI_FN int goshmemi_cxi_wait_ge(goshmemi_cxi_state_t *cx, const uint64_t *p, uint64_t v)
{
    uint64_t deadline = 0;
    uint64_t tmo = goshmemi_relaxed_load_u64(&cx->timeout_ns, 1);
    for (uint32_t i = 0;; i++) {
        if (goshmemi_relaxed_load_u64(p, 1) >= v) break;
        if ((i & 255u) == 255u) {
            if (goshmemi_relaxed_load_u64(&cx->stop, 1) != 0) return GOSHMEMX_CXI_ETIMEDOUT;
            if (tmo != 0) {
                uint64_t now = goshmemi_now_ns();
                if (deadline == 0) deadline = now + tmo;
                else if (now > deadline) return GOSHMEMX_CXI_ETIMEDOUT;
            }
        }
        goshmemi_poll_pause();
    }
    goshmemi_order_fence(1); /* acquire: see what the writer released before v */
    return GOSHMEMX_CXI_OK;
}

/* Bounded wait for a slot's readiness epoch (the monitor armed `instance`
 * there). Returns 1 when armed; 0 after `spins` polls (the monitor then
 * completes the instance by the host fallback). */
GOSHMEMI_FN int goshmemi_cxi_ready(goshmemi_cxi_slot_t *sl, uint64_t instance, uint32_t spins)
{
    for (uint32_t i = 0; i <= spins; i++) {
        if (goshmemi_acquire_load_u64(&sl->armed, 1) == instance + 1) return 1;
        goshmemi_poll_pause();
    }
    return 0;
}

#ifndef GOSHMEMX_CXI_READY_SPINS
#define GOSHMEMX_CXI_READY_SPINS 4096u /* polls before a trigger goes to the host fallback */
#endif

/* ---- barrier --------------------------------------------------------------- */

/* Dissemination barrier over all PEs (R = ceil(log2 P) rounds), GPU-triggered:
 * instance k uses slot k mod 2, where the monitor armed R deferred writes
 * (round r: "write k+1 to PE (me + 2^r) mod P's sig[slot][r]" at trigger
 * threshold r+1). Round r: trigger once, then wait for sig[slot][r] >= k+1
 * from PE (me - 2^r) mod P. Completion guarantee: on return every PE has
 * entered this instance, and memory each PE released before entering it
 * is visible (acquire on every round flag; release on every trigger).
 * Returns GOSHMEMX_CXI_OK or GOSHMEMX_CXI_ETIMEDOUT (stopped monitor or
 * deadline: never hangs), GOSHMEMX_CXI_ENOTREADY without CXI state. */
GOSHMEMI_FN int goshmemx_cxi_barrier(void)
{
    goshmemi_cxi_state_t *cx = goshmemi_cxi();
    if (cx == NULL) return GOSHMEMX_CXI_ENOTREADY;
    uint64_t k = cx->barrier_instance;
    uint32_t s = (uint32_t)(k & 1u);
    goshmemi_cxi_slot_t *sl = &cx->barrier_slot[s];
    int armed = goshmemi_cxi_ready(sl, k, 0);
    if (!armed) {
        cx->ready_stalls++;
        armed = goshmemi_cxi_ready(sl, k, GOSHMEMX_CXI_READY_SPINS);
    }
    for (uint32_t r = 0; r < cx->rounds; r++) {
        /* round 0 releases this PE's earlier memory; rounds >= 1 follow the
         * previous round's acquire fence (goshmemi_cxi_wait_ge), which
         * already orders it: their trigger is one posted store */
        goshmemi_cxi_ring_doorbell(sl, k, r + 1, armed ? 1 : 0, r == 0);
        int rc = goshmemi_cxi_wait_ge(cx, &cx->sig[s][r], k + 1);
        if (rc != GOSHMEMX_CXI_OK) return rc;
    }
    cx->barrier_instance = k + 1;
    return GOSHMEMX_CXI_OK;
}

/* ---- active messages -------------------------------------------------------- */

GOSHMEMI_FN goshmemi_cxi_am_peer_t *goshmemi_cxi_am(goshmemi_cxi_state_t *cx, int pe)
{
    return (goshmemi_cxi_am_peer_t *)((char *)cx + cx->am_off) + pe;
}

/* Sends an active message to pe: handler id, flags and nargs (<= 5)
 * arguments. Message n to pe uses mailbox slot n mod 2 there (slot =
 * sequence): the payload is written first, then the sequence n+1 (the
 * deferred sequence write is released by the payload write's completion),
 * so a receiver that sees the sequence sees the whole message. Waits for a
 * credit (pe consumed message n-2) first: back-pressure, never overwrite.
 * Returns GOSHMEMX_CXI_OK, _ETIMEDOUT, _EINVAL or _ENOTREADY. */
GOSHMEMI_FN int goshmemx_cxi_am_send(int pe, uint32_t handler, uint32_t flags, const uint64_t *args, uint32_t nargs)
{
    goshmemi_cxi_state_t *cx = goshmemi_cxi();
    if (cx == NULL || cx->am_off == 0) return GOSHMEMX_CXI_ENOTREADY;
    if ((uint32_t)pe >= (uint32_t)cx->nranks || nargs > GOSHMEMI_CXI_AM_ARGS) return GOSHMEMX_CXI_EINVAL;
    goshmemi_cxi_am_peer_t *ch = goshmemi_cxi_am(cx, pe);
    uint64_t n = ch->sent;
    uint32_t s = (uint32_t)(n & 1u);
    if (n >= GOSHMEMI_CXI_SLOTS) {
        int rc = goshmemi_cxi_wait_ge(cx, &ch->credit, n - 1);
        if (rc != GOSHMEMX_CXI_OK) return rc;
    }
    goshmemi_cxi_slot_t *sl = &ch->slot[s];
    int armed = goshmemi_cxi_ready(sl, n, GOSHMEMX_CXI_READY_SPINS);
    goshmemx_cxi_msg_t *m = &ch->send[s];
    m->handler = handler;
    m->src_pe = cx->rank;
    m->flags = flags;
    m->nargs = nargs;
    for (uint32_t i = 0; i < GOSHMEMI_CXI_AM_ARGS; i++) m->args[i] = i < nargs ? args[i] : 0;
    goshmemi_cxi_ring_doorbell(sl, n, 1, armed ? 1 : 0, 1); /* release: payload before doorbell */
    ch->sent = n + 1;
    return GOSHMEMX_CXI_OK;
}

/* Takes the next message from pe when it has arrived: returns 1 and copies
 * it to *out (acquire on the sequence: the payload is complete), 0 when none
 * is there yet. The slot is handed back (credit) through the monitor. */
GOSHMEMI_FN int goshmemx_cxi_am_poll(int pe, goshmemx_cxi_msg_t *out)
{
    goshmemi_cxi_state_t *cx = goshmemi_cxi();
    if (cx == NULL || cx->am_off == 0 || (uint32_t)pe >= (uint32_t)cx->nranks) return 0;
    goshmemi_cxi_am_peer_t *ch = goshmemi_cxi_am(cx, pe);
    uint64_t n = ch->consumed;
    goshmemx_cxi_msg_t *m = &ch->mbox[n & 1u];
    if (goshmemi_relaxed_load_u64(&m->seq, 1) != n + 1) return 0;
    goshmemi_order_fence(1); /* acquire: the payload landed before the sequence */
    *out = *m;
    goshmemi_release_store_u64(&ch->consumed, n + 1, 1); /* the monitor returns the credit */
    return 1;
}

#endif /* GOSHMEM_CXI_H */
