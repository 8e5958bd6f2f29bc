/* goshmem IBGDA backend of the device API's remote dispatch: the six
 * goshmemi_ibgda_* calls that include/goshmem/remote.h (the remote dispatch
 * for PEs with heap_base[pe] == 0 and remote_transport ==
 * GOSHMEMI_REMOTE_IBGDA) makes, over the QP-level operations of qp.h.
 *
 * Contract (remote.h's, restated): off is the symmetric byte offset on the
 * target, already range-checked by the caller; ctx is the device context
 * (0 = default; ctx < 0 for fence/quiet = PE-wide); nbi = 1: the source
 * (put) is reusable / the destination (get) valid only after a quiet, 0: on
 * return; src/dst may be outside the symmetric heap; amo op is
 * GOSHMEMI_AMO_*, bytes 4 or 8; put_signal makes the payload visible before
 * the signal; calls come from one thread per group.
 *
 * State: the device state's `ibgda_state` names a goshmemi_ibgda_state_t
 * (versioned, size-asserted; Go mirror ibgda.EncodeState). QPs are per
 * (ctx, peer): qp_index[ctx * n_pes + pe] (GOSHMEMI_IBGDA_NO_QP for self
 * and load/store peers); ctx >= n_ctx uses ctx % n_ctx.
 *
 * How each call maps onto mlx5 WQEs:
 *   put   n <= inline_max: one inline RDMA write (the source is copied into
 *         the WQE: reusable on return, nbi or not). Source in the local heap:
 *         RDMA write with a data pointer (heap_lkey); nbi = 0 then waits for
 *         that QP's completion (the NIC has read the source). Source in a
 *         registered buffer (`regs`, below): the same with that buffer's
 *         lkey. Otherwise (large, outside both): inline writes of
 *         inline_max bytes.
 *   get   destination in the local heap, or (more than 8 bytes) in a
 *         registered buffer: RDMA read into it with its lkey (nbi = 0: that
 *         QP's quiet). Otherwise: RDMA reads into bounce slots (slot_lkey),
 *         completed, copied out (blocking even when nbi).
 *   amo   8-byte ADD: ATOMIC_FA (result to a slot when wanted, else to the
 *         QP's scratch word, no wait); 8-byte CSWAP: ATOMIC_CS; FETCH:
 *         ATOMIC_CS(compare 0, swap 0) (changes nothing); SET, SWAP, AND, OR,
 *         XOR and every 4-byte op: a compare-swap loop on the aligned 8-byte
 *         word that holds the operand (the other 4 bytes are kept). SET is not
 *         an RDMA write: IB atomicity (IB_ATOMIC_HCA) holds only among the
 *         NIC's atomics, and a write racing a fetch-add could be lost.
 *   put_signal  the payload WQE(s), then the signal WQE with the FENCE bit,
 *         the last payload WQE and the signal under one doorbell:
 *         SET = an 8-byte inline RDMA write of the value; ADD = ATOMIC_FA.
 *   fence  marks ctx's QPs (every QP for ctx < 0): the next WQE posted on
 *         each carries MLX5_WQE_CTRL_FENCE. An RC QP already executes writes
 *         and atomics in order at the responder; the fence bit also orders a
 *         WQE after earlier RDMA reads and atomics.
 *   quiet  ctx >= 0: goshmemi_ibgda_qp_quiet_all over that ctx's QPs only;
 *         ctx < 0: over every QP.
 *   An error CQE seen by any of these traps with GOSHMEMI_ERR_IBGDA_CQE,
 *   info = the QP's error word (GOSHMEMI_IBGDA_ERR_WORD: QPN, syndrome).
 *   A wait longer than GOSHMEM_TIMEOUT (state timeout_ns, copied into every
 *   QP's timeout_ns) traps with GOSHMEMI_ERR_IBGDA_TIMEOUT, info = (QPN,
 *   what). Before either trap the backend writes a report word
 *   (GOSHMEMI_IBGDA_REPORT) to the state's `report`, host memory the host
 *   can still read after the trap has made the GPU context unusable: the
 *   host names the QP, its PE and context in the error it returns.
 *
 * Registered buffers: GPU memory of this PE that another library allocated
 * (shmem.RegisterDevice), registered with the NIC by the host, is a slot
 * {base, end, lkey} of the table `regs` (GPU memory, host-written; end = 0:
 * free). The host writes end last when it adds a slot and clears it first
 * when it removes one, so a reader during a change matches nothing or the
 * whole slot; a buffer is used only while registered (the caller's rule).
 * Only sources and destinations outside the heap scan the table.
 *
 * Ordering: the doorbell path's ordering is a build choice
 * (ibgda/ordering.h). This backend defaults to GOSHMEM_IBGDA_ORDER_SYS: its
 * queues may be in host memory (the soft NIC's always are), where a
 * GPU-scope release neither orders the WQE before the doorbell record for
 * the host reader nor promises that the record ever becomes visible to it.
 * A kernel built with GOSHMEM_IBGDA_ORDER_GPU (or _NONE) against a state
 * whose flags say GOSHMEMI_IBGDA_STATE_HOST_QUEUES traps with
 * GOSHMEMI_ERR_IBGDA_ORDER at its first IBGDA call instead of hanging.
 *
 * Signal and AMO word representation: host order (little-endian), the same
 * bytes goshmem_signal_wait_until and the load/store path read and write.
 * SET is an RDMA write of those host-order bytes. The atomics rely on the
 * NIC's 8-byte atomic requester endianness mode being host endianness: the
 * operands travel big-endian in the WQE (mlx5_wqe_atomic_seg, __be64), the
 * responder applies them to the 8-byte word read in host order, and the
 * fetched value comes back big-endian in the local slot (read with
 * goshmemi_be64toh). Ref: Linux net/mlx5_core "Add setting ATOMIC endian
 * mode" (f91e6d8941bf: HW supports BE (0x0) and host endianness (0x1) for
 * standard 8 B atomics and mlx5_core configures host endianness when
 * supported) and IB/mlx5 "Advertise atomic capabilities" (da7525d2a9ae:
 * IB_ATOMIC_HCA only in that mode). The host setup must refuse a device
 * without the mode (atomic_req_8B_endianness_mode); the soft NIC emulates it
 * with SoftNIC.SetAtomicHostEndian(true). So SET, ADD and a wait agree on
 * one host-order word.
 *
 * Include <goshmem.h> (through remote.h), or this file directly in tests.
 */
#ifndef GOSHMEM_IBGDA_BACKEND_H
#define GOSHMEM_IBGDA_BACKEND_H

#include "../ordering.h"

/* System-scope doorbell ordering unless the build chose (see above). */
#if !defined(GOSHMEM_IBGDA_ORDER_GPU) && !defined(GOSHMEM_IBGDA_ORDER_SYS) && !defined(GOSHMEM_IBGDA_ORDER_NONE)
#define GOSHMEM_IBGDA_ORDER_SYS 1
#endif
#include "ibgda.h"

#define GOSHMEMI_IBGDA_BACKEND 1

/* Trap code of an error CQE seen by the backend (info: the QP's error word). */
#ifndef GOSHMEMI_ERR_IBGDA_CQE
#define GOSHMEMI_ERR_IBGDA_CQE 32
#endif
/* Trap code of a wait over GOSHMEM_TIMEOUT (info: QPN, GOSHMEMI_IBGDA_WAIT_*). */
#define GOSHMEMI_ERR_IBGDA_TIMEOUT 33
/* Trap code of a kernel whose doorbell ordering cannot reach the state's
 * queues (info: state flags, GOSHMEMI_IBGDA_ORDER of the kernel). */
#define GOSHMEMI_ERR_IBGDA_ORDER 34

/* What a timed-out wait waited for (report word and trap info). */
#define GOSHMEMI_IBGDA_WAIT_POST 1  /* posting: ring space (completions) or an earlier poster's publication */
#define GOSHMEMI_IBGDA_WAIT_QUIET 2 /* quiet / a blocking call: completions of published WQEs */
#define GOSHMEMI_IBGDA_WAIT_SLOT 3  /* a free bounce / result slot */
#define GOSHMEMI_IBGDA_WAIT_CQE 4   /* not a wait: an error CQE (detail: error word bits 31:0) */
#define GOSHMEMI_IBGDA_WAIT_ORDER 5 /* not a wait: ordering build vs host-memory queues (detail: flags) */

/* Report word, written to state->report before a trap:
 * [63] valid | [62:56] what (GOSHMEMI_IBGDA_WAIT_*) | [55:32] QPN (0: none)
 * | [31:0] detail (waits: sq_ready_idx[15:0] << 16 | sq_done_idx[15:0]). */
#define GOSHMEMI_IBGDA_REPORT(what, qpn, detail)                                                                      \
    ((1ull << 63) | ((uint64_t)((what) & 0x7fu) << 56) | ((uint64_t)((qpn) & 0xffffffu) << 32) |                     \
     (uint64_t)(uint32_t)(detail))

/* state->flags */
#define GOSHMEMI_IBGDA_STATE_HOST_QUEUES 1u /* SQs, doorbell records, doorbells, CQs in host memory */

#define GOSHMEMI_IBGDA_NO_QP 0xffffffffu
/* Bytes of one bounce / result slot. */
#define GOSHMEMI_IBGDA_SLOT_BYTES 256u

#define GOSHMEMI_IBGDA_STATE_SIZE 144
#define GOSHMEMI_IBGDA_STATE_VERSION ((1u << 16) + GOSHMEMI_IBGDA_STATE_SIZE)

/* Slots of the registered-buffer table. */
#define GOSHMEMI_IBGDA_MAX_REGS 256

/* One registered buffer (see "Registered buffers" above): device addresses
 * [base, end), the lkey its WQEs name; end = 0: a free slot. */
typedef struct goshmemi_ibgda_reg {
    uint64_t base;
    uint64_t end;
    uint32_t lkey;
    uint32_t pad_;
} goshmemi_ibgda_reg_t;

/* The table of registered buffers (GPU memory, host-written). */
typedef struct goshmemi_ibgda_regs {
    uint32_t n; /* slots [0, n) may be in use: the device scans those */
    uint32_t pad32_;
    uint64_t pad_;
    goshmemi_ibgda_reg_t reg[GOSHMEMI_IBGDA_MAX_REGS];
} goshmemi_ibgda_regs_t;

GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_ibgda_regs_t) == 16 + 24 * GOSHMEMI_IBGDA_MAX_REGS, "goshmemi_ibgda_regs_t size");

/* Shared host<->device layout: the host fills every field except the ones
 * marked device-written (zero them). Addresses are the poster's (GPU)
 * addresses; the NIC translates them through its memory regions. */
typedef struct goshmemi_ibgda_state {
    uint32_t version;              /* 0x00 GOSHMEMI_IBGDA_STATE_VERSION */
    uint32_t size;                 /* 0x04 sizeof(goshmemi_ibgda_state_t) */
    int32_t my_pe;                 /* 0x08 */
    int32_t n_pes;                 /* 0x0c */
    uint32_t n_ctx;                /* 0x10 contexts with their own QPs (>= 1) */
    uint32_t n_qps;                /* 0x14 entries of qps */
    uint32_t inline_max;           /* 0x18 largest inline payload, <= GOSHMEMI_IBGDA_MAX_INLINE */
    uint32_t heap_lkey;            /* 0x1c lkey of the local symmetric heap */
    uint64_t heap_base;            /* 0x20 local heap address (== device heap_base[my_pe]) */
    uint64_t heap_size;            /* 0x28 */
    goshmemi_ibgda_qp_t *qps;      /* 0x30 n_qps QPs */
    const uint32_t *qp_index;      /* 0x38 [ctx * n_pes + pe]: index into qps, or GOSHMEMI_IBGDA_NO_QP */
    const uint32_t *rkey;          /* 0x40 [pe]: rkey of pe's heap */
    const uint64_t *remote_base;   /* 0x48 [pe]: address of pe's heap in WQEs (raddr = base + off) */
    uint8_t *slots;                /* 0x50 n_slots * GOSHMEMI_IBGDA_SLOT_BYTES, registered under slot_lkey */
    uint32_t *slot_busy;           /* 0x58 n_slots words (device-written) */
    uint32_t n_slots;              /* 0x60 >= 1 */
    uint32_t slot_lkey;            /* 0x64 */
    uint32_t *fence_pending;       /* 0x68 n_qps words (device-written) */
    uint32_t slot_cursor;          /* 0x70 device-written */
    uint32_t flags;                /* 0x74 GOSHMEMI_IBGDA_STATE_* */
    uint64_t timeout_ns;           /* 0x78 GOSHMEM_TIMEOUT for the backend's own waits (slots); 0: none */
    uint64_t *report;              /* 0x80 host-readable report word (GOSHMEMI_IBGDA_REPORT), or NULL */
    const goshmemi_ibgda_regs_t *regs; /* 0x88 registered buffers, or NULL (was reserved: size unchanged) */
} goshmemi_ibgda_state_t;

GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_ibgda_state_t) == GOSHMEMI_IBGDA_STATE_SIZE, "goshmemi_ibgda_state_t size");

/* ---- small atomics on the state's device-written words (GPU scope) -------- */
GOSHMEMI_FN uint32_t goshmemi_ibgdab_fetch_add_u32(uint32_t *p, uint32_t v)
{
#if GOSHMEMI_CUDA
    return atomicAdd(p, v);
#else
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

GOSHMEMI_FN int goshmemi_ibgdab_cas_u32(uint32_t *p, uint32_t o, uint32_t n)
{
#if GOSHMEMI_CUDA
    int ok = atomicCAS(p, o, n) == o;
    __threadfence();
    return ok;
#else
    return __atomic_compare_exchange_n(p, &o, n, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
#endif
}

GOSHMEMI_FN uint32_t goshmemi_ibgdab_xchg_u32(uint32_t *p, uint32_t v)
{
#if GOSHMEMI_CUDA
    return atomicExch(p, v);
#else
    return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
#endif
}

GOSHMEMI_FN void goshmemi_ibgdab_store_release_u32(uint32_t *p, uint32_t v)
{
#if GOSHMEMI_CUDA
    __threadfence();
    *(volatile uint32_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/* ---- state ---------------------------------------------------------------- */

/* Report word for the host (first report wins, as far as a plain check
 * can tell: no atomics on host memory). System scope: the host reads it. */
GOSHMEMI_FN void goshmemi_ibgdab_report(const goshmemi_ibgda_state_t *s, uint64_t w)
{
    volatile uint64_t *r = (volatile uint64_t *)s->report;
    if (r == NULL || *r != 0)
        return;
    *r = w;
#if GOSHMEMI_CUDA
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#if GOSHMEMI_IBGDA_ORDER != 2
GOSHMEMI_COLD void goshmemi_ibgdab_fail_order(const goshmemi_ibgda_state_t *s)
{
    goshmemi_ibgdab_report(s, GOSHMEMI_IBGDA_REPORT(GOSHMEMI_IBGDA_WAIT_ORDER, 0, s->flags));
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_IBGDA_ORDER, GOSHMEMI_ERROR_INFO(s->flags, GOSHMEMI_IBGDA_ORDER),
                  "IBGDA: the queues are in host memory but this kernel was built with GPU-scope (or no) doorbell "
                  "ordering: rebuild it without GOSHMEM_IBGDA_ORDER_GPU/_NONE (the backend's default is _SYS)");
}
#endif

GOSHMEMI_FN goshmemi_ibgda_state_t *goshmemi_ibgda_state(void)
{
    goshmemi_ibgda_state_t *s = (goshmemi_ibgda_state_t *)(uintptr_t)goshmemi_cstate()->ibgda_state;
    if (GOSHMEMI_UNLIKELY(s == NULL || s->version != GOSHMEMI_IBGDA_STATE_VERSION))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_BAD_STATE,
                      GOSHMEMI_ERROR_INFO(s ? s->version : 0, GOSHMEMI_IBGDA_STATE_VERSION),
                      "IBGDA device state missing or of another version (ibgda_state)");
#if GOSHMEMI_IBGDA_ORDER != 2
    /* A GPU-scope (or no) release cannot publish WQEs to a host reader. */
    if (GOSHMEMI_UNLIKELY(s->flags & GOSHMEMI_IBGDA_STATE_HOST_QUEUES))
        goshmemi_ibgdab_fail_order(s);
#endif
    return s;
}

/* Ring / completion indices of qp for a report's detail. */
GOSHMEMI_FN uint32_t goshmemi_ibgdab_qp_detail(const goshmemi_ibgda_qp_t *qp)
{
    return (uint32_t)((*(const volatile uint64_t *)&qp->sq_ready_idx & 0xffffu) << 16) |
           (uint32_t)(*(const volatile uint64_t *)&qp->sq_done_idx & 0xffffu);
}

GOSHMEMI_COLD void goshmemi_ibgdab_fail_cqe(const goshmemi_ibgda_state_t *s, const goshmemi_ibgda_qp_t *qp)
{
    uint64_t w = *(const volatile uint64_t *)&qp->err;
    goshmemi_ibgdab_report(s, GOSHMEMI_IBGDA_REPORT(GOSHMEMI_IBGDA_WAIT_CQE, qp->qpn, (uint32_t)w));
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_IBGDA_CQE, w,
                  "IBGDA: error CQE (info: error word: QPN, syndrome, wqe_counter)");
}

/* A wait on qp (what: GOSHMEMI_IBGDA_WAIT_*) exceeded GOSHMEM_TIMEOUT. */
GOSHMEMI_COLD void goshmemi_ibgdab_fail_timeout(const goshmemi_ibgda_state_t *s, const goshmemi_ibgda_qp_t *qp,
                                                uint32_t what)
{
    uint32_t qpn = qp ? qp->qpn : 0;
    goshmemi_ibgdab_report(s, GOSHMEMI_IBGDA_REPORT(what, qpn, qp ? goshmemi_ibgdab_qp_detail(qp) : s->n_slots));
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_IBGDA_TIMEOUT, GOSHMEMI_ERROR_INFO(qpn, what),
                  "IBGDA: a wait for the NIC exceeded GOSHMEM_TIMEOUT (info: QPN, what): the NIC never saw the "
                  "doorbell, or never completed");
}

GOSHMEMI_COLD void goshmemi_ibgdab_fail_arg(int pe, uint64_t v, const char *what)
{
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(pe, v), what);
}

/* QP index of (ctx, pe); traps when pe has no QP. */
GOSHMEMI_FN uint32_t goshmemi_ibgdab_qpi(const goshmemi_ibgda_state_t *s, int ctx, int pe)
{
    uint32_t c = (uint32_t)(ctx < 0 ? 0 : ctx) % s->n_ctx;
    uint32_t qi = GOSHMEMI_IBGDA_NO_QP;
    if (GOSHMEMI_LIKELY((uint32_t)pe < (uint32_t)s->n_pes))
        qi = s->qp_index[c * (uint32_t)s->n_pes + (uint32_t)pe];
    if (GOSHMEMI_UNLIKELY(qi >= s->n_qps))
        goshmemi_ibgdab_fail_arg(pe, ctx, "IBGDA: no queue pair for this (ctx, PE) (info: pe, ctx)");
    return qi;
}

GOSHMEMI_FN int goshmemi_ibgdab_in_heap(const goshmemi_ibgda_state_t *s, const void *p, size_t n)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    return a >= s->heap_base && a - s->heap_base <= s->heap_size && (uint64_t)n <= s->heap_size - (a - s->heap_base);
}

/* The lkey of the registered buffer (table `regs`) that holds all of
 * [p, p+n), or 0 with *found = 0 when none does. Out of line: only
 * sources and destinations outside the heap come here. */
GOSHMEMI_COLD uint32_t goshmemi_ibgdab_reg_lkey(const goshmemi_ibgda_state_t *s, const void *p, size_t n, int *found)
{
    const goshmemi_ibgda_regs_t *rs = s->regs;
    uint64_t a = (uint64_t)(uintptr_t)p;
    uint32_t i, m;
    *found = 0;
    if (rs == NULL)
        return 0;
    m = goshmemi_relaxed_load_u32(&rs->n, 0);
    if (m > GOSHMEMI_IBGDA_MAX_REGS)
        m = GOSHMEMI_IBGDA_MAX_REGS;
    for (i = 0; i < m; i++) {
        /* A scan with relaxed loads finds a candidate, confirmed from one
         * consistent reading (as goshmemi_proxy_reg_find does). The host
         * clears end before it changes the rest and fills a slot in the
         * order lkey, base, end; end, base, lkey, then end again, each load
         * ordered after the one before: equal ends mean base belongs to the
         * entry end describes, a base just written comes with its lkey, and
         * a slot refilled meanwhile is read again. A buffer registered
         * throughout is always found with its own lkey. (An address of a
         * buffer unregistered during the lookup, the caller's race, can
         * get a successor's lkey when the successor ends where it did: the
         * NIC then refuses the access.) */
        uint64_t end = goshmemi_relaxed_load_u64(&rs->reg[i].end, 0), base, again;
        uint32_t lkey = 0;
        GOSHMEMI_REG_LOAD_HOOK();
        base = goshmemi_relaxed_load_u64(&rs->reg[i].base, 0);
        GOSHMEMI_REG_LOAD_HOOK();
        if (end == 0 || a < base || a >= end || (uint64_t)n > end - a)
            continue;
        end = goshmemi_acquire_load_u64(&rs->reg[i].end, 1);
        GOSHMEMI_REG_LOAD_HOOK();
        while (end != 0) {
            base = goshmemi_acquire_load_u64(&rs->reg[i].base, 1);
            GOSHMEMI_REG_LOAD_HOOK();
            lkey = goshmemi_acquire_load_u32(&rs->reg[i].lkey, 1);
            GOSHMEMI_REG_LOAD_HOOK();
            again = goshmemi_relaxed_load_u64(&rs->reg[i].end, 0);
            GOSHMEMI_REG_LOAD_HOOK();
            if (again == end)
                break;
            end = again;
        }
        if (end != 0 && a >= base && a < end && (uint64_t)n <= end - a) {
            *found = 1;
            return lkey;
        }
    }
    return 0;
}

/* Post n (1 or 2) ops on QP qi, with the FENCE bit on the first when a fence
 * is pending on that QP; traps on a bad op or an error CQE. */
GOSHMEMI_FN void goshmemi_ibgdab_post(goshmemi_ibgda_state_t *s, uint32_t qi, goshmemi_ibgda_op_t *ops, int n)
{
    goshmemi_ibgda_qp_t *qp = &s->qps[qi];
    int rc;
    if (*(volatile uint32_t *)&s->fence_pending[qi] && goshmemi_ibgdab_xchg_u32(&s->fence_pending[qi], 0))
        ops[0].fm = (uint8_t)(ops[0].fm | GOSHMEMI_MLX5_WQE_CTRL_FENCE);
    rc = n == 1 ? goshmemi_ibgda_post(qp, ops) : goshmemi_ibgda_post_batch(qp, ops, n);
    if (GOSHMEMI_UNLIKELY(rc != 0)) {
        if (rc == GOSHMEMI_IBGDA_ERR_ARG)
            goshmemi_ibgdab_fail_arg((int)qi, ops[0].len, "IBGDA: operation not encodable (info: qp index, length)");
        if (rc == GOSHMEMI_IBGDA_ERR_TIMEOUT)
            goshmemi_ibgdab_fail_timeout(s, qp, GOSHMEMI_IBGDA_WAIT_POST);
        goshmemi_ibgdab_fail_cqe(s, qp);
    }
}

/* Waits for the completions of qp's published WQEs; traps on an error CQE
 * or a timeout, naming the QP. */
GOSHMEMI_FN void goshmemi_ibgdab_wait_qp(goshmemi_ibgda_state_t *s, goshmemi_ibgda_qp_t *qp, uint64_t target)
{
    int rc = goshmemi_ibgda_quiet_wait(qp, target);
    if (GOSHMEMI_UNLIKELY(rc != GOSHMEMI_IBGDA_OK)) {
        if (rc == GOSHMEMI_IBGDA_ERR_TIMEOUT)
            goshmemi_ibgdab_fail_timeout(s, qp, GOSHMEMI_IBGDA_WAIT_QUIET);
        goshmemi_ibgdab_fail_cqe(s, qp);
    }
}

GOSHMEMI_FN void goshmemi_ibgdab_qp_quiet(goshmemi_ibgda_state_t *s, uint32_t qi)
{
    goshmemi_ibgda_qp_t *qp = &s->qps[qi];
    goshmemi_ibgdab_wait_qp(s, qp, goshmemi_ibgda_quiet_begin(qp));
    /* The NIC's writes (read data, fetched values) before the CQE are
     * visible to this thread from here. */
    goshmemi_cqe_owner_to_read_barrier();
}

/* ---- bounce / result slots -------------------------------------------------- */

GOSHMEMI_FN uint32_t goshmemi_ibgdab_slot_get(goshmemi_ibgda_state_t *s)
{
    uint32_t i = goshmemi_ibgdab_fetch_add_u32(&s->slot_cursor, 1), polls = 0;
    uint64_t t0 = 0;
    for (;;) {
        i %= s->n_slots;
        if (*(volatile uint32_t *)&s->slot_busy[i] == 0 && goshmemi_ibgdab_cas_u32(&s->slot_busy[i], 0, 1))
            return i;
        i++;
        goshmemi_ibgda_pause();
        if (GOSHMEMI_UNLIKELY((++polls & 1023u) == 0 && s->timeout_ns != 0)) {
            uint64_t now = goshmemi_now_ns();
            if (t0 == 0)
                t0 = now;
            else if (now - t0 > s->timeout_ns)
                goshmemi_ibgdab_fail_timeout(s, NULL, GOSHMEMI_IBGDA_WAIT_SLOT);
        }
    }
}

GOSHMEMI_FN void goshmemi_ibgdab_slot_put(goshmemi_ibgda_state_t *s, uint32_t i)
{
    goshmemi_ibgdab_store_release_u32(&s->slot_busy[i], 0);
}

GOSHMEMI_FN uint64_t goshmemi_ibgdab_slot_addr(const goshmemi_ibgda_state_t *s, uint32_t i)
{
    return (uint64_t)(uintptr_t)(s->slots + (uint64_t)i * GOSHMEMI_IBGDA_SLOT_BYTES);
}

/* ---- the six calls ------------------------------------------------------------ */

/* Inline RDMA writes of `src` in chunks of inline_max bytes. */
GOSHMEMI_FN void goshmemi_ibgdab_put_inline(goshmemi_ibgda_state_t *s, uint32_t qi, uint64_t raddr, uint32_t rkey,
                                            const void *src, size_t n)
{
    size_t o, c, lim = s->inline_max;
    for (o = 0; o < n; o += c) {
        goshmemi_ibgda_op_t op;
        c = n - o < lim ? n - o : lim;
        op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)((const char *)src + o), 0,
                                    raddr + o, rkey, (uint32_t)c, 1, 0);
        goshmemi_ibgdab_post(s, qi, &op, 1);
    }
}

/* The put's WQEs except the last (returned in *last, not posted), so
 * put_signal can post the last one with the signal under one doorbell.
 * Returns 1 when the source is read by the NIC (data pointer). */
GOSHMEMI_FN int goshmemi_ibgdab_put_ops(goshmemi_ibgda_state_t *s, uint32_t qi, int pe, uint64_t dst_off,
                                        const void *src, size_t n, goshmemi_ibgda_op_t *last)
{
    uint64_t raddr = s->remote_base[pe] + dst_off;
    uint32_t rkey = s->rkey[pe];
    uint32_t lkey = 0;
    size_t step, o = 0;
    int inl = 1, reg = 0;
    if (n <= s->inline_max) {
        step = n;
    } else {
        /* a data pointer from the heap or a registered buffer, else inline */
        if (goshmemi_ibgdab_in_heap(s, src, n)) {
            lkey = s->heap_lkey;
            reg = 1;
        } else {
            lkey = goshmemi_ibgdab_reg_lkey(s, src, n, &reg);
        }
        inl = !reg;
        step = reg ? GOSHMEMI_IBGDA_MAX_SGE_LEN / 2 : s->inline_max; /* 1 GiB per WQE */
    }
    if (n > step) {
        size_t head = ((n - 1) / step) * step; /* everything before the last chunk */
        if (inl) {
            goshmemi_ibgdab_put_inline(s, qi, raddr, rkey, src, head);
        } else {
            for (o = 0; o < head; o += step) {
                goshmemi_ibgda_op_t op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE,
                                                               (uint64_t)(uintptr_t)src + o, lkey, raddr + o,
                                                               rkey, (uint32_t)step, 0, 0);
                goshmemi_ibgdab_post(s, qi, &op, 1);
            }
        }
        o = head;
    }
    *last = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)src + o,
                                   inl ? 0 : lkey, raddr + o, rkey, (uint32_t)(n - o), inl, 0);
    return !inl;
}

GOSHMEMI_FN void goshmemi_ibgda_put(int ctx, int pe, uint64_t dst_off, const void *src, size_t n, int nbi)
{
    goshmemi_ibgda_state_t *s = goshmemi_ibgda_state();
    uint32_t qi = goshmemi_ibgdab_qpi(s, ctx, pe);
    goshmemi_ibgda_op_t last;
    int by_ptr;
    if (n == 0)
        return;
    by_ptr = goshmemi_ibgdab_put_ops(s, qi, pe, dst_off, src, n, &last);
    goshmemi_ibgdab_post(s, qi, &last, 1);
    if (by_ptr && !nbi)
        goshmemi_ibgdab_qp_quiet(s, qi); /* the NIC has read the source */
}

GOSHMEMI_FN void goshmemi_ibgda_get(int ctx, int pe, void *dst, uint64_t src_off, size_t n, int nbi)
{
    goshmemi_ibgda_state_t *s = goshmemi_ibgda_state();
    uint32_t qi = goshmemi_ibgdab_qpi(s, ctx, pe);
    uint64_t raddr = s->remote_base[pe] + src_off;
    uint32_t rkey = s->rkey[pe];
    uint32_t lkey = s->heap_lkey;
    size_t o, c;
    int reg = goshmemi_ibgdab_in_heap(s, dst, n);
    if (n == 0)
        return;
    if (!reg && n > 8)
        lkey = goshmemi_ibgdab_reg_lkey(s, dst, n, &reg);
    if (reg) { /* the heap or a registered buffer: read into it */
        const size_t step = GOSHMEMI_IBGDA_MAX_SGE_LEN / 2;
        for (o = 0; o < n; o += c) {
            goshmemi_ibgda_op_t op;
            c = n - o < step ? n - o : step;
            op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_READ, (uint64_t)(uintptr_t)dst + o, lkey,
                                        raddr + o, rkey, (uint32_t)c, 0, 0);
            goshmemi_ibgdab_post(s, qi, &op, 1);
        }
        if (!nbi)
            goshmemi_ibgdab_qp_quiet(s, qi);
        return;
    }
    {   /* neither the heap nor a registered buffer: through a bounce slot, one slot at a time */
        uint32_t sl = goshmemi_ibgdab_slot_get(s);
        uint64_t sa = goshmemi_ibgdab_slot_addr(s, sl);
        for (o = 0; o < n; o += c) {
            goshmemi_ibgda_op_t op;
            size_t k;
            c = n - o < GOSHMEMI_IBGDA_SLOT_BYTES ? n - o : GOSHMEMI_IBGDA_SLOT_BYTES;
            op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_READ, sa, s->slot_lkey, raddr + o, rkey,
                                        (uint32_t)c, 0, 1);
            goshmemi_ibgdab_post(s, qi, &op, 1);
            goshmemi_ibgdab_qp_quiet(s, qi);
            for (k = 0; k < c; k++)
                ((char *)dst)[o + k] = ((const volatile char *)(uintptr_t)sa)[k];
        }
        goshmemi_ibgdab_slot_put(s, sl);
    }
}

/* One 8-byte NIC atomic (ATOMIC_FA or ATOMIC_CS) on raddr; returns the old
 * value when `wait` (through a slot), else 0 (fetched value to the QP's
 * scratch word). */
GOSHMEMI_FN uint64_t goshmemi_ibgdab_atomic8(goshmemi_ibgda_state_t *s, uint32_t qi, uint8_t opcode, uint64_t raddr,
                                             uint32_t rkey, uint64_t swap_add, uint64_t compare, int wait)
{
    goshmemi_ibgda_qp_t *qp = &s->qps[qi];
    goshmemi_ibgda_op_t op;
    uint32_t sl;
    uint64_t v;
    if (!wait) {
        op = goshmemi_ibgda_op_amo(opcode, qp->scratch_laddr, qp->scratch_lkey, raddr, rkey, swap_add, compare, 0);
        goshmemi_ibgdab_post(s, qi, &op, 1);
        return 0;
    }
    sl = goshmemi_ibgdab_slot_get(s);
    op = goshmemi_ibgda_op_amo(opcode, goshmemi_ibgdab_slot_addr(s, sl), s->slot_lkey, raddr, rkey, swap_add, compare,
                               1);
    goshmemi_ibgdab_post(s, qi, &op, 1);
    goshmemi_ibgdab_qp_quiet(s, qi);
    v = goshmemi_be64toh(*(const volatile uint64_t *)(uintptr_t)goshmemi_ibgdab_slot_addr(s, sl));
    goshmemi_ibgdab_slot_put(s, sl);
    return v;
}

/* New value of the operand for a compare-swap loop (bytes 4 or 8). */
GOSHMEMI_FN uint64_t goshmemi_ibgdab_amo_apply(int op, uint64_t old, uint64_t v, uint64_t cmp)
{
    switch (op) {
    case GOSHMEMI_AMO_SET:
    case GOSHMEMI_AMO_SWAP:
        return v;
    case GOSHMEMI_AMO_CSWAP:
        return old == cmp ? v : old;
    case GOSHMEMI_AMO_ADD:
        return old + v;
    case GOSHMEMI_AMO_AND:
        return old & v;
    case GOSHMEMI_AMO_OR:
        return old | v;
    case GOSHMEMI_AMO_XOR:
        return old ^ v;
    default: /* FETCH */
        return old;
    }
}

GOSHMEMI_FN uint64_t goshmemi_ibgda_amo(int ctx, int pe, uint64_t off, int op, int bytes, uint64_t v, uint64_t cmp,
                                        int want_result)
{
    goshmemi_ibgda_state_t *s = goshmemi_ibgda_state();
    uint32_t qi = goshmemi_ibgdab_qpi(s, ctx, pe);
    uint32_t rkey = s->rkey[pe];
    uint64_t raddr, mask, guess, got;
    unsigned shift;
    if (GOSHMEMI_UNLIKELY((bytes != 4 && bytes != 8) || (unsigned)op > GOSHMEMI_AMO_XOR || (off & (uint64_t)(bytes - 1))))
        goshmemi_ibgdab_fail_arg(op, (uint64_t)bytes,
                                 "IBGDA AMO: op must be GOSHMEMI_AMO_*, width 4 or 8 bytes, offset aligned to it");
    if (op == GOSHMEMI_AMO_FETCH || op == GOSHMEMI_AMO_CSWAP || op == GOSHMEMI_AMO_SWAP)
        want_result = 1;
    raddr = s->remote_base[pe] + (off & ~(uint64_t)7);
    if (bytes == 8) {
        if (op == GOSHMEMI_AMO_ADD)
            return goshmemi_ibgdab_atomic8(s, qi, GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, raddr, rkey, v, 0, want_result);
        if (op == GOSHMEMI_AMO_CSWAP)
            return goshmemi_ibgdab_atomic8(s, qi, GOSHMEMI_MLX5_OPCODE_ATOMIC_CS, raddr, rkey, v, cmp, 1);
        if (op == GOSHMEMI_AMO_FETCH)
            return goshmemi_ibgdab_atomic8(s, qi, GOSHMEMI_MLX5_OPCODE_ATOMIC_CS, raddr, rkey, 0, 0, 1);
        shift = 0;
        mask = ~(uint64_t)0;
    } else {
        /* host order (little-endian): byte offset 4 of the word is bits 63:32 */
        shift = (unsigned)(off & 7) * 8;
        mask = 0xffffffffull;
        v &= mask;
        cmp &= mask;
    }
    /* compare-swap loop on the aligned 8-byte word; the first guess is 0 */
    guess = 0;
    for (;;) {
        uint64_t cur = (guess >> shift) & mask;
        uint64_t nw = (guess & ~(mask << shift)) | ((goshmemi_ibgdab_amo_apply(op, cur, v, cmp) & mask) << shift);
        got = goshmemi_ibgdab_atomic8(s, qi, GOSHMEMI_MLX5_OPCODE_ATOMIC_CS, raddr, rkey, nw, guess, 1);
        if (got == guess)
            break;
        guess = got;
    }
    return want_result ? (got >> shift) & mask : 0;
}

GOSHMEMI_FN void goshmemi_ibgda_put_signal(int ctx, int pe, uint64_t dst_off, const void *src, size_t n,
                                           uint64_t sig_off, uint64_t sig_val, int sig_op, int nbi)
{
    goshmemi_ibgda_state_t *s = goshmemi_ibgda_state();
    uint32_t qi = goshmemi_ibgdab_qpi(s, ctx, pe);
    goshmemi_ibgda_qp_t *qp = &s->qps[qi];
    goshmemi_ibgda_op_t ops[2];
    uint64_t sig_raddr = s->remote_base[pe] + sig_off;
    int by_ptr = 0, k = 0;
    if (GOSHMEMI_UNLIKELY(!GOSHMEMI_SIGNAL_OP_VALID(sig_op)))
        goshmemi_ibgdab_fail_arg(pe, (uint64_t)(uint32_t)sig_op,
                                 "IBGDA put_signal: signal operator is not GOSHMEM_SIGNAL_SET or _ADD (info: pe, op)");
    if (GOSHMEMI_UNLIKELY(sig_off & 7))
        goshmemi_ibgdab_fail_arg(pe, sig_off, "IBGDA put_signal: signal word offset not 8-byte aligned");
    if (n) {
        by_ptr = goshmemi_ibgdab_put_ops(s, qi, pe, dst_off, src, n, &ops[0]);
        k = 1;
    }
    ops[k] = goshmemi_ibgda_op_signal(qp, sig_raddr, s->rkey[pe], &sig_val, sig_op, 0);
    ops[k].fm = GOSHMEMI_MLX5_WQE_CTRL_FENCE; /* after the payload */
    goshmemi_ibgdab_post(s, qi, ops, k + 1);
    if (by_ptr && !nbi)
        goshmemi_ibgdab_qp_quiet(s, qi);
}

GOSHMEMI_FN void goshmemi_ibgda_fence(int ctx)
{
    goshmemi_ibgda_state_t *s = goshmemi_ibgda_state();
    uint32_t i;
    if (ctx < 0) {
        for (i = 0; i < s->n_qps; i++)
            *(volatile uint32_t *)&s->fence_pending[i] = 1;
    } else {
        uint32_t c = (uint32_t)ctx % s->n_ctx;
        int pe;
        for (pe = 0; pe < s->n_pes; pe++) {
            uint32_t qi = s->qp_index[c * (uint32_t)s->n_pes + (uint32_t)pe];
            if (qi < s->n_qps)
                *(volatile uint32_t *)&s->fence_pending[qi] = 1;
        }
    }
#if GOSHMEMI_CUDA
    __threadfence();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* goshmemi_ibgda_qp_quiet_all's overlap (start every QP, then wait for
 * each) with the backend's traps, which name the failing QP. */
GOSHMEMI_FN void goshmemi_ibgdab_quiet_qps(goshmemi_ibgda_state_t *s, goshmemi_ibgda_qp_t *const *qps, int m)
{
    uint64_t target[GOSHMEMI_IBGDA_QUIET_CHUNK];
    int i;
    for (i = 0; i < m; i++)
        target[i] = goshmemi_ibgda_quiet_begin(qps[i]);
    for (i = 0; i < m; i++)
        goshmemi_ibgdab_wait_qp(s, qps[i], target[i]);
}

GOSHMEMI_FN void goshmemi_ibgda_quiet(int ctx)
{
    goshmemi_ibgda_state_t *s = goshmemi_ibgda_state();
    goshmemi_ibgda_qp_t *qps[GOSHMEMI_IBGDA_QUIET_CHUNK];
    int m = 0, pe;
    uint32_t i;
    if (ctx < 0) {
        for (i = 0; i < s->n_qps; i++) {
            qps[m++] = &s->qps[i];
            if (m == GOSHMEMI_IBGDA_QUIET_CHUNK || i + 1 == s->n_qps) {
                goshmemi_ibgdab_quiet_qps(s, qps, m);
                m = 0;
            }
        }
    } else {
        uint32_t c = (uint32_t)ctx % s->n_ctx;
        for (pe = 0; pe < s->n_pes; pe++) {
            uint32_t qi = s->qp_index[c * (uint32_t)s->n_pes + (uint32_t)pe];
            if (qi < s->n_qps)
                qps[m++] = &s->qps[qi];
            if (m && (m == GOSHMEMI_IBGDA_QUIET_CHUNK || pe + 1 == s->n_pes)) {
                goshmemi_ibgdab_quiet_qps(s, qps, m);
                m = 0;
            }
        }
    }
    goshmemi_cqe_owner_to_read_barrier();
}

#endif /* GOSHMEM_IBGDA_BACKEND_H */
