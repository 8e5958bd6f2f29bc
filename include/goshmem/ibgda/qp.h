/* goshmem IBGDA: one RC queue pair as the GPU sees it (SQ ring, doorbell
 * record, UAR doorbell, CQ ring), WQE building, posting and CQ polling.
 *
 * Posting protocol (every mode):
 *   1. reserve: one atomic add on sq_resv_idx reserves WQEBBs [start, end);
 *   2. space:   wait until end - sq_done_idx <= sq_wqebb_cnt (the slots of
 *               the previous lap are retired), polling the CQ meanwhile;
 *   3. build:   write the segments (goshmemi_ibgda_build_wqe);
 *   4. publish: in reservation order (wait for sq_ready_idx == start):
 *               doorbell record = end & 0xffff (a release store:
 *               goshmemi_ibgda_release_dbr), one fence, then sq_ready_idx =
 *               end and the 8-byte doorbell = the first 8 B of the last
 *               WQE's ctrl segment (goshmemi_ibgda_publish_c; the exclusive
 *               owner's ring, goshmemi_ibgda_ring_c, needs no sq_ready_idx
 *               order and at GPU scope orders once). The record never
 *               moves backwards; a successor may ring before us, so a
 *               doorbell can arrive after a later one (harmless: the NIC
 *               fetches up to the record).
 * Modes: goshmemi_ibgda_post (one thread, one WQE, one doorbell),
 * goshmemi_ibgda_post_batch (one thread, N WQEs, one doorbell),
 * goshmemi_ibgda_post_warp (a warp: one lane reserves for all lanes, lanes
 * build in lockstep, one lane publishes and rings; in host mode a loop over
 * the lanes' ops).
 *
 * Selective completion: a WQE asks for a CQE (CE = CQ_UPDATE) when the caller
 * sets op.signaled, and always when its WQEBBs reach a half-ring boundary
 * (start/half != end/half): a poster waiting for SQ space then always has a
 * CQE on its way. Quiet posts a signaled NOP when the last published WQE was
 * unsignaled. A CQE with wqe_counter c retires every WQE up to and including
 * the one at c (the SQ executes in order), so sq_done_idx = c's index + its
 * WQEBB count (read back from its ctrl.qpn_ds, which is not overwritten
 * before sq_done_idx passes it). The NIC may complete a WQE before its
 * publisher has moved sq_ready_idx (the doorbell record goes first): the
 * poller leaves such a CQE in the CQ until sq_ready_idx covers its WQE,
 * never consumes it with done clamped short of it (which lost the
 * completion for good: a quiet waiting for it hung with every CQE
 * consumed). A CQE naming a WQE at or before sq_done_idx retires nothing.
 *
 * Completion guarantee of goshmemi_ibgda_qp_quiet(qp): every WQE published on
 * this QP before the call has completed at the NIC (its CQE, or a later one,
 * was consumed): RDMA writes are placed at the target, reads and atomic
 * fetches are in local memory. goshmemi_ibgda_qp_quiet_all(qps, n) gives the
 * same for each of the n QPs (PE-wide quiet); quiet(qp) alone is the ctx
 * (per-QP) scope.
 *
 * Bounded waits: with qp->timeout_ns != 0 (GOSHMEM_TIMEOUT) every wait of
 * this file (ring space, publication order, quiet) gives up after that long
 * and returns GOSHMEMI_IBGDA_ERR_TIMEOUT, so a NIC that never sees the
 * doorbell (or never completes) ends the wait with an error instead of a
 * silent hang. A post that timed out published nothing and leaves the QP
 * unusable (its reservation is never published): the caller traps.
 *
 * Errors: an error CQE (MLX5_CQE_REQ_ERR / RESP_ERR) is recorded in qp->err
 * and, when qp->err_word is set, in *err_word (first error wins), as
 * GOSHMEMI_IBGDA_ERR_WORD(qpn, cqe opcode, syndrome, vendor_err_synd,
 * wqe_counter); polling and quiet then return GOSHMEMI_IBGDA_ERR_CQE, and
 * keep returning it for that QP (the QP is in the error state: the NIC
 * flushes every later WQE with WR_FLUSH_ERR).
 *
 * Include <goshmem/ibgda/ibgda.h>, not this file.
 */
#ifndef GOSHMEM_IBGDA_QP_H
#define GOSHMEM_IBGDA_QP_H

#include "mlx5.h"
#include "ordering.h"

/* ---- error reporting ----------------------------------------------------- */
#define GOSHMEMI_IBGDA_OK 0
#define GOSHMEMI_IBGDA_ERR_CQE (-1)   /* an error CQE on this QP: see qp->err */
#define GOSHMEMI_IBGDA_ERR_ARG (-2)   /* op not encodable (len, opcode) */
#define GOSHMEMI_IBGDA_ERR_TIMEOUT (-3) /* a wait exceeded qp->timeout_ns (GOSHMEM_TIMEOUT) */

/* Error word: [63] valid | [59:56] CQE opcode (REQ_ERR/RESP_ERR) | [55:32] qpn
 *             | [31:24] syndrome | [23:16] vendor_err_synd | [15:0] wqe_counter. */
#define GOSHMEMI_IBGDA_ERR_WORD(qpn, cqe_op, synd, vendor, wqe_counter)                                               \
    ((1ull << 63) | ((uint64_t)((cqe_op) & 0xfu) << 56) | ((uint64_t)((qpn) & 0xffffffu) << 32) |                    \
     ((uint64_t)((synd) & 0xffu) << 24) | ((uint64_t)((vendor) & 0xffu) << 16) | (uint64_t)((wqe_counter) & 0xffffu))
#define GOSHMEMI_IBGDA_ERR_CQE_OPCODE(w) ((uint32_t)(((w) >> 56) & 0xfu))
#define GOSHMEMI_IBGDA_ERR_QPN(w) ((uint32_t)(((w) >> 32) & 0xffffffu))
#define GOSHMEMI_IBGDA_ERR_SYNDROME(w) ((uint32_t)(((w) >> 24) & 0xffu))
#define GOSHMEMI_IBGDA_ERR_VENDOR(w) ((uint32_t)(((w) >> 16) & 0xffu))
#define GOSHMEMI_IBGDA_ERR_WQE_COUNTER(w) ((uint32_t)((w) & 0xffffu))

/* ---- the queue pair -------------------------------------------------------
 * Shared host<->device layout: versioned and size-asserted. The host (real
 * NIC: mlx5dv devx; tests: the soft NIC) fills the descriptor fields and
 * zeroes the state fields; only device threads write the state fields. */
#define GOSHMEMI_IBGDA_QP_SIZE 168
#define GOSHMEMI_IBGDA_QP_VERSION ((1u << 16) + GOSHMEMI_IBGDA_QP_SIZE)

typedef struct goshmemi_ibgda_qp {
    /* descriptor (host-written) */
    uint32_t version;            /* 0x00 GOSHMEMI_IBGDA_QP_VERSION */
    uint32_t qpn;                /* 0x04 24-bit QP number */
    void *sq_buf;                /* 0x08 sq_wqebb_cnt * 64 B, 64 B aligned */
    uint32_t sq_wqebb_cnt;       /* 0x10 power of 2, <= 32768 */
    uint32_t cq_cqe_cnt;         /* 0x14 power of 2 */
    volatile uint32_t *dbrec;    /* 0x18 [GOSHMEMI_MLX5_RCV_DBR], [GOSHMEMI_MLX5_SND_DBR], big-endian */
    volatile uint64_t *db;       /* 0x20 UAR doorbell (BlueFlame) register, 8-byte stores */
    void *cq_buf;                /* 0x28 cq_cqe_cnt * 64 B */
    volatile uint32_t *cq_dbrec; /* 0x30 [0] = consumer index (BE32, 24 bits) */
    uint64_t *err_word;          /* 0x38 PE-wide first error, or NULL */
    const uint32_t *lkey_tab;    /* 0x40 local memory-region keys */
    const uint32_t *rkey_tab;    /* 0x48 remote keys, indexed by PE */
    uint32_t n_lkeys;            /* 0x50 */
    uint32_t n_rkeys;            /* 0x54 */
    uint64_t scratch_laddr;      /* 0x58 8 B sink for atomic results nobody reads (SIGNAL_ADD) */
    uint32_t scratch_lkey;       /* 0x60 */
    uint32_t cq_lock;            /* 0x64 one poller at a time */
    /* state (device-written) */
    uint64_t sq_resv_idx;        /* 0x68 WQEBBs reserved */
    uint64_t sq_ready_idx;       /* 0x70 WQEBBs published; dbrec[SND] == sq_ready_idx & 0xffff */
    uint64_t sq_signaled_idx;    /* 0x78 end of the last published CE WQE */
    uint64_t sq_done_idx;        /* 0x80 WQEBBs retired by CQEs */
    uint64_t cq_cons_idx;        /* 0x88 CQEs consumed */
    uint64_t err;                /* 0x90 this QP's first error word (0: none) */
    /* descriptor (host-written), optional */
    uint8_t *sq_nbb;             /* 0x98 sq_wqebb_cnt bytes in GPU memory: WQEBBs of the WQE starting at
                                  * each index, written at build, read at CQ poll (so polling never
                                  * reads the SQ back, a PCIe read when the SQ is in host memory);
                                  * NULL: read ctrl.qpn_ds's DS from the SQ */
    uint64_t timeout_ns;         /* 0xa0 a wait on this QP longer than this fails with
                                  * GOSHMEMI_IBGDA_ERR_TIMEOUT (GOSHMEM_TIMEOUT); 0: waits never end */
} goshmemi_ibgda_qp_t;

GOSHMEMI_STATIC_ASSERT(sizeof(void *) == 8, "IBGDA QP layout assumes 64-bit pointers");
GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_ibgda_qp_t) == GOSHMEMI_IBGDA_QP_SIZE, "goshmemi_ibgda_qp_t size");

/* ---- one operation -------------------------------------------------------- */
typedef struct goshmemi_ibgda_op {
    uint8_t opcode;   /* GOSHMEMI_MLX5_OPCODE_{NOP,RDMA_WRITE,RDMA_READ,ATOMIC_CS,ATOMIC_FA} */
    uint8_t inl;      /* RDMA_WRITE: copy the payload (laddr, len) into the WQE */
    uint8_t signaled; /* ask for a CQE */
    uint8_t fm;       /* fence mode bits (GOSHMEMI_MLX5_WQE_CTRL_*FENCE) or 0 */
    uint32_t len;     /* bytes; atomics: 8 */
    uint32_t lkey;    /* local key of laddr (not for inline) */
    uint32_t rkey;    /* remote key of raddr */
    uint64_t laddr;   /* write: source; read: destination; atomics: fetched value (BE) */
    uint64_t raddr;   /* remote address */
    uint64_t swap_add; /* ATOMIC_FA addend / ATOMIC_CS swap value */
    uint64_t compare; /* ATOMIC_CS compare value */
} goshmemi_ibgda_op_t;

/* Largest inline payload goshmem encodes (ctrl + raddr + inline <= 5 WQEBBs). */
#define GOSHMEMI_IBGDA_MAX_INLINE 256u
/* Largest gather length of one data segment (byte_count 0 means 2 GiB to mlx5). */
#define GOSHMEMI_IBGDA_MAX_SGE_LEN 0x80000000u

/* An RDMA write whose payload (at most 12 bytes) goes inline: the WQE is
 * ctrl + raddr + one inline segment, 3 DS in one WQEBB (the p/put of a
 * word, a signal, the message-rate rows). */
GOSHMEMI_FN int goshmemi_ibgda_op_small_inl(const goshmemi_ibgda_op_t *op)
{
    return op->opcode == GOSHMEMI_MLX5_OPCODE_RDMA_WRITE && (op->inl || op->len == 0) && op->len <= 12;
}

/* DS count of the WQE for `op`, or 0 if it cannot be encoded. */
GOSHMEMI_FN uint32_t goshmemi_ibgda_op_ds(const goshmemi_ibgda_op_t *op)
{
    if (GOSHMEMI_LIKELY(goshmemi_ibgda_op_small_inl(op)))
        return 3; /* ctrl, raddr, one inline segment (the common case first: no switch) */
    switch (op->opcode) {
    case GOSHMEMI_MLX5_OPCODE_NOP:
        return 1;
    case GOSHMEMI_MLX5_OPCODE_RDMA_WRITE:
        if (op->inl || op->len == 0)
            return op->len <= GOSHMEMI_IBGDA_MAX_INLINE ? 2 + goshmemi_mlx5_inl_ds(op->len) : 0;
        return op->len <= GOSHMEMI_IBGDA_MAX_SGE_LEN ? 3 : 0; /* ctrl, raddr, data */
    case GOSHMEMI_MLX5_OPCODE_RDMA_READ:
        return op->len != 0 && op->len <= GOSHMEMI_IBGDA_MAX_SGE_LEN ? 3 : 0;
    case GOSHMEMI_MLX5_OPCODE_ATOMIC_CS:
    case GOSHMEMI_MLX5_OPCODE_ATOMIC_FA:
        return op->len == 8 ? 4 : 0; /* ctrl, raddr, atomic, data */
    default:
        return 0;
    }
}

/* ---- the descriptor words a post needs, in registers ------------------------
 * A post reads the QP's descriptor (SQ base and size, QP number, doorbell
 * record and doorbell addresses, the sq_nbb table): words the host wrote
 * before any kernel ran, which never change. Read once, at the top of a
 * post, into registers: read again after the post's first store to the QP
 * struct or its first fence, each would be an L2 round trip (a global store
 * drops the L1 line it hits, an acquire invalidates the L1), paid serially
 * by a single posting thread (docs/ibgda.md). */
typedef struct goshmemi_ibgda_qpc {
    void *sq_buf;
    volatile uint32_t *dbrec;
    volatile uint64_t *db;
    uint8_t *sq_nbb;
    uint32_t qpn;
    uint32_t sq_wqebb_cnt;
} goshmemi_ibgda_qpc_t;

GOSHMEMI_FN goshmemi_ibgda_qpc_t goshmemi_ibgda_qpc(const goshmemi_ibgda_qp_t *qp)
{
    goshmemi_ibgda_qpc_t c;
    c.sq_buf = qp->sq_buf;
    c.dbrec = qp->dbrec;
    c.db = qp->db;
    c.sq_nbb = qp->sq_nbb;
    c.qpn = qp->qpn;
    c.sq_wqebb_cnt = qp->sq_wqebb_cnt;
    return c;
}

/* goshmemi_ibgda_build_wqe_c for an op goshmemi_ibgda_op_small_inl accepts
 * (ds 3), without the general path's per-opcode branches: a single posting
 * thread has no other warp to hide a taken branch behind, and word puts,
 * signals and the rate rows are all such writes. Re-run bench/ibgda/ab.sh
 * before changing it (docs/ibgda.md has the numbers). */
GOSHMEMI_FN void goshmemi_ibgda_build_small_inl_c(const goshmemi_ibgda_qpc_t *qp, uint64_t wqe_idx,
                                                  const goshmemi_ibgda_op_t *op, int ce)
{
    void *sq = qp->sq_buf;
    uint32_t n = qp->sq_wqebb_cnt, idx = (uint32_t)wqe_idx, p0, p1, p2;
    /* The payload is loaded before the WQE's first store: the compiler
     * must assume a store to the ring may alias it, so loaded in its place
     * it would wait for the stores above it (one more memory latency in
     * every WQE) */
    goshmemi_mlx5_inl_small_load((const void *)(uintptr_t)op->laddr, op->len, &p0, &p1, &p2);
    if (qp->sq_nbb && ce)
        qp->sq_nbb[idx & (n - 1)] = 1;
    goshmemi_mlx5_set_ctrl_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 0), (uint16_t)idx, GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, 0,
                               qp->qpn, (uint8_t)(op->fm | (ce ? GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE : 0)), 3, 0, 0);
    goshmemi_mlx5_set_raddr_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 1), op->raddr, op->rkey);
    goshmemi_mlx5_store_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 2), goshmemi_htobe32(op->len | GOSHMEMI_MLX5_INLINE_SEG),
                            p0, p1, p2);
}

/* Build the WQE for `op` at WQEBB index `wqe_idx` (segments wrap in the ring).
 * `ds` is goshmemi_ibgda_op_ds(op) (non-zero). */
GOSHMEMI_FN void goshmemi_ibgda_build_wqe_c(const goshmemi_ibgda_qpc_t *qp, uint64_t wqe_idx,
                                            const goshmemi_ibgda_op_t *op, uint32_t ds, int ce)
{
    if (GOSHMEMI_LIKELY(goshmemi_ibgda_op_small_inl(op))) {
        goshmemi_ibgda_build_small_inl_c(qp, wqe_idx, op, ce); /* no per-opcode branches */
        return;
    }
    void *sq = qp->sq_buf;
    uint32_t n = qp->sq_wqebb_cnt, idx = (uint32_t)wqe_idx;
    uint8_t fm_ce_se = (uint8_t)(op->fm | (ce ? GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE : 0));
    if (qp->sq_nbb && ce) /* only CE WQEs produce CQEs (an error CQE on another is clamped by ready) */
        qp->sq_nbb[idx & (n - 1)] = (uint8_t)goshmemi_mlx5_ds_to_wqebb(ds);
    goshmemi_mlx5_set_ctrl_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 0), (uint16_t)idx, op->opcode, 0, qp->qpn, fm_ce_se,
                               (uint8_t)ds, 0, 0);
    if (op->opcode == GOSHMEMI_MLX5_OPCODE_NOP)
        return;
    goshmemi_mlx5_set_raddr_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 1), op->raddr, op->rkey);
    switch (op->opcode) {
    case GOSHMEMI_MLX5_OPCODE_RDMA_WRITE:
        if (op->inl || op->len == 0)
            goshmemi_mlx5_set_inl_data_seg(sq, n, idx, 2, (const void *)(uintptr_t)op->laddr, op->len);
        else
            goshmemi_mlx5_set_data_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 2), op->len, op->lkey, op->laddr);
        break;
    case GOSHMEMI_MLX5_OPCODE_RDMA_READ:
        goshmemi_mlx5_set_data_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 2), op->len, op->lkey, op->laddr);
        break;
    default: /* atomics */
        goshmemi_mlx5_set_atomic_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 2), op->swap_add,
                                     op->opcode == GOSHMEMI_MLX5_OPCODE_ATOMIC_CS ? op->compare : 0);
        goshmemi_mlx5_set_data_seg(goshmemi_mlx5_sq_seg(sq, n, idx, 3), 8, op->lkey, op->laddr);
        break;
    }
}

GOSHMEMI_FN void goshmemi_ibgda_build_wqe(goshmemi_ibgda_qp_t *qp, uint64_t wqe_idx, const goshmemi_ibgda_op_t *op,
                                          uint32_t ds, int ce)
{
    goshmemi_ibgda_qpc_t c = goshmemi_ibgda_qpc(qp);
    goshmemi_ibgda_build_wqe_c(&c, wqe_idx, op, ds, ce);
}

/* CE forced when WQEBBs [start, end) of a ring of sq_wqebb_cnt reach a
 * half-ring boundary. */
GOSHMEMI_FN int goshmemi_ibgda_crosses_half_n(uint32_t sq_wqebb_cnt, uint64_t start, uint64_t end)
{
    /* start / half != end / half, for half a power of two (sq_wqebb_cnt is
     * one): a 64-bit division by a run-time value is a subroutine call on
     * the GPU, in every post's build loop */
    uint64_t half = sq_wqebb_cnt / 2 ? sq_wqebb_cnt / 2 : 1;
    return ((start ^ end) & ~(half - 1)) != 0;
}

GOSHMEMI_FN int goshmemi_ibgda_crosses_half(const goshmemi_ibgda_qp_t *qp, uint64_t start, uint64_t end)
{
    return goshmemi_ibgda_crosses_half_n(qp->sq_wqebb_cnt, start, end);
}

/* ---- host setup helpers (also callable on the device) ------------------- */

/* Mark every CQE invalid (opcode INVALID, owner 0) as the mlx5 driver does
 * at CQ creation, so the first lap never reads a zeroed entry as new. */
GOSHMEMI_FN void goshmemi_ibgda_cq_init(void *cq_buf, uint32_t cqe_cnt)
{
    uint32_t i;
    for (i = 0; i < cqe_cnt; i++)
        ((goshmemi_mlx5_cqe64_t *)cq_buf)[i].op_own = (uint8_t)(GOSHMEMI_MLX5_CQE_INVALID << 4);
}

/* ---- bounded waits ------------------------------------------------------------ */

/* One wait's bookkeeping: the first timed poll starts the clock. */
typedef struct goshmemi_ibgda_waiter {
    uint32_t polls;
    uint64_t t0;
} goshmemi_ibgda_waiter_t;

#define GOSHMEMI_IBGDA_WAITER_INIT {0u, 0ull}

/* One poll of a wait on qp: pause, and every 64 polls check qp->timeout_ns.
 * Returns 1 when the wait has lasted longer than that (0: go on). */
GOSHMEMI_FN int goshmemi_ibgda_waited(const goshmemi_ibgda_qp_t *qp, goshmemi_ibgda_waiter_t *w)
{
    uint64_t limit, now;
    goshmemi_ibgda_pause();
    if ((++w->polls & 63u) != 0)
        return 0;
    limit = *(const volatile uint64_t *)&qp->timeout_ns;
    if (limit == 0)
        return 0;
    now = goshmemi_now_ns();
    if (w->t0 == 0) {
        w->t0 = now;
        return 0;
    }
    return now - w->t0 > limit;
}

/* ---- CQ polling ------------------------------------------------------------ */

GOSHMEMI_COLD void goshmemi_ibgda_record_err(goshmemi_ibgda_qp_t *qp, uint64_t w)
{
#if GOSHMEMI_CUDA
    atomicCAS((unsigned long long *)&qp->err, 0ull, (unsigned long long)w);
    if (qp->err_word)
        atomicCAS((unsigned long long *)qp->err_word, 0ull, (unsigned long long)w);
#else
    uint64_t z = 0;
    __atomic_compare_exchange_n(&qp->err, &z, w, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    z = 0;
    if (qp->err_word)
        __atomic_compare_exchange_n(qp->err_word, &z, w, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
#endif
}

/* Test hook: runs in goshmemi_ibgda_poll_cq between loading sq_ready_idx
 * and reading the CQ (host-mode tests define it to widen that window, as a
 * GPU poller's PCIe reads of a host-memory CQ do); empty by default. */
#ifndef GOSHMEMI_IBGDA_POLL_HOOK
#define GOSHMEMI_IBGDA_POLL_HOOK() ((void)0)
#endif

/* Consume every new CQE of qp's CQ (if no other thread is polling it):
 * advance sq_done_idx ("completed up to") and the CQ doorbell record.
 * Returns the number of CQEs consumed, or GOSHMEMI_IBGDA_ERR_CQE if one of
 * them was an error CQE. */
GOSHMEMI_FN int goshmemi_ibgda_poll_cq(goshmemi_ibgda_qp_t *qp)
{
    int n = 0, rc = 0;
    uint64_t ci, done, ready;
    if (!goshmemi_ibgda_trylock(&qp->cq_lock))
        return 0;
    ci = qp->cq_cons_idx;
    done = qp->sq_done_idx;
    ready = goshmemi_ibgda_load_acquire_u64(&qp->sq_ready_idx);
    GOSHMEMI_IBGDA_POLL_HOOK();
    for (;;) {
        goshmemi_mlx5_cqe64_t *cqe = (goshmemi_mlx5_cqe64_t *)qp->cq_buf + (ci & (qp->cq_cqe_cnt - 1));
        uint8_t op_own = goshmemi_ibgda_load_op_own(&cqe->op_own);
        uint16_t wc;
        uint32_t dist, nbb;
        uint64_t full;
        if (!goshmemi_mlx5_cqe_is_sw_owned(op_own, ci, qp->cq_cqe_cnt))
            break;
        goshmemi_cqe_owner_to_read_barrier();
        wc = goshmemi_be16toh(*(volatile uint16_t *)&cqe->wqe_counter);
        /* wc names the WQEBB index of the completed WQE. The NIC fetches up
         * to the doorbell record, which a publisher stores BEFORE
         * sq_ready_idx (goshmemi_ibgda_publish), so that WQE lies in
         * [done, doorbell record), less than sq_wqebb_cnt past done: not
         * necessarily below our `ready`. Another thread may have published
         * it (and the NIC completed it) after we loaded `ready`, or be
         * between its doorbell-record store and its sq_ready_idx store.
         * Clamping such a CQE to `ready` and consuming it would lose the
         * completion: done would stop short of its WQE for good (nothing
         * else names it), and a quiet waiting for it would hang with every
         * CQE consumed. So: load sq_ready_idx again, and if the WQE is
         * still not below it, leave the CQE for the next poll (the
         * publisher's next store is sq_ready_idx). */
        dist = (uint16_t)(wc - (uint16_t)done);
        full = done + dist;
        if (GOSHMEMI_UNLIKELY(dist >= qp->sq_wqebb_cnt)) {
            /* Not a WQE that can be outstanding: at or before `done`
             * (wc - done wrapped: a CQE for WQEBBs already retired) or too
             * far ahead. It retires nothing (clamping a wrapped distance of
             * ~2^16 to ready would count WQEs the NIC has not completed as
             * done). */
            dist = 0xffffffffu;
        } else if (full >= ready) {
            ready = goshmemi_ibgda_load_acquire_u64(&qp->sq_ready_idx);
            if (full >= ready)
                break; /* published to the NIC, not yet in sq_ready_idx: next poll */
        }
        if (goshmemi_mlx5_cqe_opcode(op_own) != GOSHMEMI_MLX5_CQE_REQ) {
            const volatile goshmemi_mlx5_err_cqe_t *e = (const volatile goshmemi_mlx5_err_cqe_t *)cqe;
            goshmemi_ibgda_record_err(qp, GOSHMEMI_IBGDA_ERR_WORD(qp->qpn, goshmemi_mlx5_cqe_opcode(op_own),
                                                                  e->syndrome, e->vendor_err_synd, wc));
            rc = GOSHMEMI_IBGDA_ERR_CQE;
        }
        if (dist != 0xffffffffu) {
            if (qp->sq_nbb) {
                nbb = ((const volatile uint8_t *)qp->sq_nbb)[wc & (qp->sq_wqebb_cnt - 1)];
            } else {
                uint32_t ds =
                    ((const volatile uint8_t *)goshmemi_mlx5_sq_seg(qp->sq_buf, qp->sq_wqebb_cnt, wc, 0))[7];
                nbb = goshmemi_mlx5_ds_to_wqebb(ds);
            }
            full += nbb ? nbb : 1;
            /* A WQE that starts below sq_ready_idx ends at or below it
             * (ready moves by whole publications): only a corrupt ds gets
             * past it, and cannot retire unpublished WQEBBs. */
            if (full > ready)
                full = ready;
            done = full;
        }
        ci++;
        n++;
    }
    if (n) {
        qp->cq_cons_idx = ci;
        /* Our reads of the consumed entries precede the NIC's reuse of them. */
        goshmemi_ibgda_release_fence();
        goshmemi_ibgda_store_dbr(&qp->cq_dbrec[0], goshmemi_htobe32((uint32_t)ci & 0xffffffu));
        goshmemi_ibgda_store_release_u64(&qp->sq_done_idx, done);
    }
    goshmemi_ibgda_unlock(&qp->cq_lock);
    return rc ? rc : n;
}

/* Wait until WQEBBs up to `end` may be written (the previous lap retired).
 * Returns 0, GOSHMEMI_IBGDA_ERR_CQE (an error CQE was seen meanwhile; the
 * space is there) or GOSHMEMI_IBGDA_ERR_TIMEOUT (no space: do not build). */
GOSHMEMI_FN int goshmemi_ibgda_wait_sq_space(goshmemi_ibgda_qp_t *qp, uint64_t end)
{
    int rc = 0;
    uint32_t cnt = qp->sq_wqebb_cnt; /* read before the acquires below invalidate the L1 */
    goshmemi_ibgda_waiter_t w = GOSHMEMI_IBGDA_WAITER_INIT;
    while (end - goshmemi_ibgda_load_acquire_u64(&qp->sq_done_idx) > cnt) {
        if (goshmemi_ibgda_poll_cq(qp) < 0)
            rc = GOSHMEMI_IBGDA_ERR_CQE; /* keep waiting: the NIC flushes the rest */
        if (GOSHMEMI_UNLIKELY(goshmemi_ibgda_waited(qp, &w)))
            return GOSHMEMI_IBGDA_ERR_TIMEOUT;
    }
    return rc;
}

/* ---- publication ------------------------------------------------------------ */

/* The doorbell value: the first 8 B of the ctrl segment of the last WQE
 * posted (opmod_idx_opcode, qpn_ds, big-endian, as stored in the SQ),
 * composed in registers, so the publisher never reads the SQ back (a PCIe
 * round trip when the SQ is in host memory).
 * Ref: rdma-core mlx5_post_send: the doorbell carries ctrl's first 8 B. */
GOSHMEMI_FN uint64_t goshmemi_mlx5_db_val(uint32_t wqe_idx, uint8_t opcode, uint32_t qpn, uint32_t ds)
{
    uint32_t w0 = goshmemi_htobe32((((uint32_t)(uint16_t)wqe_idx) << 8) | opcode);
    uint32_t w1 = goshmemi_htobe32((qpn << 8) | (ds & 0xffu));
    return ((uint64_t)w1 << 32) | w0;
}

/* The doorbell sequence without the reservation-order wait (exclusive
 * owner): WQE stores -> doorbell record = end -> doorbell = `db`. */
/* With GPU-scope ordering (the build default, for queues a ConnectX reads
 * from GPU memory) the exclusive owner's ring has one ordering point: the
 * WQE and doorbell-record stores, then one release, then the doorbell. The
 * NIC acts on the doorbell, which carries the WQE index, and fetches the
 * WQEs after it, so both stores are visible by then (rdma-core's mlx5
 * post_send also fences before the record, for its doorbell-record
 * recovery, which no doorbell-driven post depends on). The system-scope build keeps both
 * ordering points: it serves the soft NIC, which is driven by the doorbell
 * record (a record ahead of its WQEs would hand it stale bytes). */
GOSHMEMI_FN void goshmemi_ibgda_ring_c(const goshmemi_ibgda_qpc_t *qp, uint64_t end, uint64_t db)
{
#if GOSHMEMI_IBGDA_ORDER == 1
    goshmemi_ibgda_store_dbr(&qp->dbrec[GOSHMEMI_MLX5_SND_DBR], goshmemi_htobe32((uint32_t)end & 0xffffu));
#else
    goshmemi_ibgda_release_dbr(&qp->dbrec[GOSHMEMI_MLX5_SND_DBR], goshmemi_htobe32((uint32_t)end & 0xffffu));
#endif
    goshmemi_ibgda_release_db(qp->db, db);
}

GOSHMEMI_FN void goshmemi_ibgda_ring(goshmemi_ibgda_qp_t *qp, uint64_t end, uint64_t db)
{
    goshmemi_ibgda_qpc_t c = goshmemi_ibgda_qpc(qp);
    goshmemi_ibgda_ring_c(&c, end, db);
}

/* Publish WQEBBs [start, end) in reservation order and ring once. `db` is
 * goshmemi_mlx5_db_val of the last WQE in the range; `sig_end` is the end
 * of its last CE WQE, or 0. Returns 0, or GOSHMEMI_IBGDA_ERR_TIMEOUT when
 * an earlier reservation was not published in time (nothing published). */
GOSHMEMI_FN int goshmemi_ibgda_publish_c(goshmemi_ibgda_qp_t *qp, const goshmemi_ibgda_qpc_t *c, uint64_t start,
                                         uint64_t end, uint64_t db, uint64_t sig_end, uint64_t ready_seen)
{
    /* ready_seen: sq_ready_idx as read (relaxed) at the reservation. If it
     * was our start then, every predecessor had published (it never moves
     * past our start before we publish): the fence below (acq_rel) makes that
     * read an acquire of their records and releases our WQE stores, so the
     * wait and its round trip are skipped. Unordered builds always wait
     * (their fences are empty). */
    int seen = GOSHMEMI_IBGDA_ORDER != 0 && ready_seen == start;
    if (!seen) {
        goshmemi_ibgda_waiter_t w = GOSHMEMI_IBGDA_WAITER_INIT;
        while (goshmemi_ibgda_load_acquire_u64(&qp->sq_ready_idx) != start)
            if (GOSHMEMI_UNLIKELY(goshmemi_ibgda_waited(qp, &w)))
                return GOSHMEMI_IBGDA_ERR_TIMEOUT;
    }
    if (sig_end)
        goshmemi_ibgda_max_u64(&qp->sq_signaled_idx, sig_end);
    if (seen) {
        goshmemi_ibgda_release_fence(); /* acq_rel: see its comment */
        goshmemi_ibgda_store_dbr(&c->dbrec[GOSHMEMI_MLX5_SND_DBR], goshmemi_htobe32((uint32_t)end & 0xffffu));
    } else {
        goshmemi_ibgda_release_dbr(&c->dbrec[GOSHMEMI_MLX5_SND_DBR], goshmemi_htobe32((uint32_t)end & 0xffffu));
    }
#if GOSHMEMI_IBGDA_ORDER == 0
    /* successors may publish from here: the record is ordered before */
    goshmemi_ibgda_store_release_u64(&qp->sq_ready_idx, end);
    goshmemi_ibgda_store_db(c->db, db);
#else
    /* One fence orders the record before both sq_ready_idx (successors may
     * publish from there: the record never moves backwards) and the
     * doorbell: what two release stores would order, one fence fewer. */
    goshmemi_ibgda_release_fence();
    *(volatile uint64_t *)&qp->sq_ready_idx = end;
    goshmemi_ibgda_store_db(c->db, db);
#endif
    return 0;
}

GOSHMEMI_FN int goshmemi_ibgda_publish(goshmemi_ibgda_qp_t *qp, uint64_t start, uint64_t end, uint64_t db,
                                       uint64_t sig_end)
{
    goshmemi_ibgda_qpc_t c = goshmemi_ibgda_qpc(qp);
    return goshmemi_ibgda_publish_c(qp, &c, start, end, db, sig_end, ~0ull);
}

/* ---- reservation ------------------------------------------------------------ */

/* A shared-QP post's reservation: the atomic add on sq_resv_idx, with the
 * words the post needs next loaded (relaxed) in the same round trip instead
 * of one acquire round trip each after it: sq_done_idx (enough ring
 * space?), sq_ready_idx (all predecessors published? see publish_c) and the
 * error word. done only grows, so a value read before the atomic that shows
 * space for [start, start + total) is still true; the WQE stores into that
 * space depend on the comparison (a GPU issues no store before the branch
 * it depends on resolves), so they cannot overtake the read. One round
 * trip instead of four serial ones is most of a warp's post rate
 * (docs/ibgda.md). */
typedef struct goshmemi_ibgda_resv {
    uint64_t start, done, ready, err;
} goshmemi_ibgda_resv_t;

GOSHMEMI_FN goshmemi_ibgda_resv_t goshmemi_ibgda_reserve(goshmemi_ibgda_qp_t *qp, uint64_t total)
{
    goshmemi_ibgda_resv_t r;
    r.done = goshmemi_ibgda_load_relaxed_u64(&qp->sq_done_idx);
    r.ready = goshmemi_ibgda_load_relaxed_u64(&qp->sq_ready_idx);
    r.err = goshmemi_ibgda_load_relaxed_u64(&qp->err);
    r.start = goshmemi_ibgda_fetch_add_u64(&qp->sq_resv_idx, total);
    return r;
}

/* Ring space for the reservation [r->start, r->start + total): from its
 * early read of sq_done_idx, else by waiting (goshmemi_ibgda_wait_sq_space). */
GOSHMEMI_FN int goshmemi_ibgda_resv_space(goshmemi_ibgda_qp_t *qp, const goshmemi_ibgda_resv_t *r, uint64_t total,
                                          uint32_t sq_wqebb_cnt)
{
    if (GOSHMEMI_LIKELY(r->start + total - r->done <= sq_wqebb_cnt))
        return 0;
    return goshmemi_ibgda_wait_sq_space(qp, r->start + total);
}

/* ---- posting modes -------------------------------------------------------- */

/* One thread, `n` WQEs, one doorbell (n == 1: the plain single post).
 * Returns 0, GOSHMEMI_IBGDA_ERR_ARG (nothing posted),
 * GOSHMEMI_IBGDA_ERR_CQE (posted into a QP in error) or
 * GOSHMEMI_IBGDA_ERR_TIMEOUT (nothing posted; the QP is unusable). */
GOSHMEMI_FN int goshmemi_ibgda_post_batch(goshmemi_ibgda_qp_t *qp, const goshmemi_ibgda_op_t *ops, int n)
{
    uint64_t total = 0, start, idx, sig_end = 0, db = 0;
    int i, rc;
    goshmemi_ibgda_resv_t r;
    goshmemi_ibgda_qpc_t c = goshmemi_ibgda_qpc(qp);
    for (i = 0; i < n; i++) {
        uint32_t ds = goshmemi_ibgda_op_ds(&ops[i]);
        if (ds == 0)
            return GOSHMEMI_IBGDA_ERR_ARG;
        total += goshmemi_mlx5_ds_to_wqebb(ds);
    }
    if (n <= 0 || total > c.sq_wqebb_cnt / 2)
        return GOSHMEMI_IBGDA_ERR_ARG;
    r = goshmemi_ibgda_reserve(qp, total);
    start = r.start;
    rc = goshmemi_ibgda_resv_space(qp, &r, total, c.sq_wqebb_cnt);
    if (GOSHMEMI_UNLIKELY(rc == GOSHMEMI_IBGDA_ERR_TIMEOUT))
        return rc;
    for (i = 0, idx = start; i < n; i++) {
        const goshmemi_ibgda_op_t o = ops[i]; /* whole, in registers */
        uint32_t ds;
        uint64_t end;
        int ce;
        /* The same steps as goshmemi_ibgda_excl_post_batch's loop, written
         * out in both on purpose: a shared helper returning the end index,
         * the CE flag and the doorbell through pointers is slower in both
         * (docs/ibgda.md; re-run bench/ibgda/ab.sh before merging them). */
        if (GOSHMEMI_LIKELY(goshmemi_ibgda_op_small_inl(&o))) {
            ds = 3;
            end = idx + 1;
            ce = o.signaled || goshmemi_ibgda_crosses_half_n(c.sq_wqebb_cnt, idx, end);
            goshmemi_ibgda_build_small_inl_c(&c, idx, &o, ce);
        } else {
            ds = goshmemi_ibgda_op_ds(&o);
            end = idx + goshmemi_mlx5_ds_to_wqebb(ds);
            ce = o.signaled || goshmemi_ibgda_crosses_half_n(c.sq_wqebb_cnt, idx, end);
            goshmemi_ibgda_build_wqe_c(&c, idx, &o, ds, ce);
        }
        if (ce)
            sig_end = end;
        db = goshmemi_mlx5_db_val((uint32_t)idx, o.opcode, c.qpn, ds);
        idx = end;
    }
    if (GOSHMEMI_UNLIKELY(goshmemi_ibgda_publish_c(qp, &c, start, start + total, db, sig_end, r.ready) != 0))
        return GOSHMEMI_IBGDA_ERR_TIMEOUT;
    if (rc == 0 && r.err)
        rc = GOSHMEMI_IBGDA_ERR_CQE;
    return rc;
}

/* One thread, one WQE, one doorbell. */
GOSHMEMI_FN int goshmemi_ibgda_post(goshmemi_ibgda_qp_t *qp, const goshmemi_ibgda_op_t *op)
{
    return goshmemi_ibgda_post_batch(qp, op, 1);
}

#if GOSHMEMI_CUDA
/* Warp-cooperative post: every active lane of a converged warp calls it
 * with its own op; the lowest active lane reserves WQEBBs for all of them,
 * lanes build their WQEs at once, __syncwarp orders every lane's WQE stores
 * before the leader's release of the doorbell record (release is cumulative),
 * and the leader publishes and rings once. Returns the same value on every
 * lane. */
GOSHMEMI_FN int goshmemi_ibgda_post_warp(goshmemi_ibgda_qp_t *qp, const goshmemi_ibgda_op_t *op)
{
    unsigned mask = __activemask();
    unsigned lane, leader = __ffs(mask) - 1, lastl = 31 - __clz(mask);
    uint32_t ds = goshmemi_ibgda_op_ds(op), nbb = goshmemi_mlx5_ds_to_wqebb(ds), off, total, k;
    int rc = 0;
    unsigned long long start = 0;
    goshmemi_ibgda_resv_t r;
    goshmemi_ibgda_qpc_t c = goshmemi_ibgda_qpc(qp);
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    if (__any_sync(mask, ds == 0))
        return GOSHMEMI_IBGDA_ERR_ARG;
    /* exclusive prefix sum of nbb over the active lanes */
    if (mask == ((0xffffffffu >> (31 - lastl)) & (0xffffffffu << leader))) { /* contiguous lanes: scan */
        off = nbb;
        for (k = 1; k < 32; k <<= 1) {
            uint32_t v = __shfl_up_sync(mask, off, k);
            if (lane >= leader + k)
                off += v;
        }
        total = __shfl_sync(mask, off, lastl);
        off -= nbb;
    } else { /* lanes with gaps: one shuffle per active lane */
        off = total = 0;
        for (k = 0; k < 32; k++)
            if (mask & (1u << k)) {
                uint32_t v = __shfl_sync(mask, nbb, k);
                off += k < lane ? v : 0;
                total += v;
            }
    }
    if (total > c.sq_wqebb_cnt / 2)
        return GOSHMEMI_IBGDA_ERR_ARG;
    r.start = r.done = r.ready = r.err = 0;
    if (lane == leader) {
        r = goshmemi_ibgda_reserve(qp, total);
        start = r.start;
        rc = goshmemi_ibgda_resv_space(qp, &r, total, c.sq_wqebb_cnt);
    }
    start = __shfl_sync(mask, start, leader);
    rc = __shfl_sync(mask, rc, leader);
    if (GOSHMEMI_UNLIKELY(rc == GOSHMEMI_IBGDA_ERR_TIMEOUT))
        return rc;
    {
        uint64_t idx = start + off, end = idx + nbb;
        int ce = op->signaled || goshmemi_ibgda_crosses_half_n(c.sq_wqebb_cnt, idx, end);
        uint32_t max_sig = __reduce_max_sync(mask, ce ? off + nbb : 0u);
        uint32_t last_off = __shfl_sync(mask, off, lastl);
        uint32_t last_ds = __shfl_sync(mask, ds, lastl);
        uint32_t last_opc = __shfl_sync(mask, (uint32_t)op->opcode, lastl);
        goshmemi_ibgda_build_wqe_c(&c, idx, op, ds, ce);
        __syncwarp(mask);
        if (lane == leader &&
            goshmemi_ibgda_publish_c(qp, &c, start, start + total,
                                     goshmemi_mlx5_db_val((uint32_t)(start + last_off), (uint8_t)last_opc, c.qpn,
                                                          last_ds),
                                     max_sig ? start + max_sig : 0, r.ready) != 0)
            rc = GOSHMEMI_IBGDA_ERR_TIMEOUT;
    }
    if (rc == 0 && lane == leader && r.err)
        rc = GOSHMEMI_IBGDA_ERR_CQE;
    return __shfl_sync(mask, rc, leader);
}
#else
/* Host mode: the warp algorithm with its `nlanes` lanes as a loop (lane i
 * posts ops[i]): lane 0 reserves for all, each lane builds at its prefix
 * offset, lane 0 publishes and rings once. */
GOSHMEMI_FN int goshmemi_ibgda_post_warp(goshmemi_ibgda_qp_t *qp, const goshmemi_ibgda_op_t *ops, int nlanes)
{
    uint32_t off[32];
    uint64_t total = 0, start, max_sig = 0;
    int l, rc;
    if (nlanes <= 0 || nlanes > 32)
        return GOSHMEMI_IBGDA_ERR_ARG;
    for (l = 0; l < nlanes; l++) { /* the shuffle prefix sum */
        uint32_t ds = goshmemi_ibgda_op_ds(&ops[l]);
        if (ds == 0)
            return GOSHMEMI_IBGDA_ERR_ARG;
        off[l] = (uint32_t)total;
        total += goshmemi_mlx5_ds_to_wqebb(ds);
    }
    if (total > qp->sq_wqebb_cnt / 2)
        return GOSHMEMI_IBGDA_ERR_ARG;
    start = goshmemi_ibgda_fetch_add_u64(&qp->sq_resv_idx, total); /* leader */
    rc = goshmemi_ibgda_wait_sq_space(qp, start + total);
    if (rc == GOSHMEMI_IBGDA_ERR_TIMEOUT)
        return rc;
    for (l = 0; l < nlanes; l++) { /* lanes in lockstep */
        uint32_t ds = goshmemi_ibgda_op_ds(&ops[l]);
        uint64_t idx = start + off[l], end = idx + goshmemi_mlx5_ds_to_wqebb(ds);
        int ce = ops[l].signaled || goshmemi_ibgda_crosses_half(qp, idx, end);
        goshmemi_ibgda_build_wqe(qp, idx, &ops[l], ds, ce);
        if (ce && end > max_sig)
            max_sig = end;
    }
    if (goshmemi_ibgda_publish(qp, start, start + total, /* leader */
                               goshmemi_mlx5_db_val((uint32_t)(start + off[nlanes - 1]), ops[nlanes - 1].opcode,
                                                    qp->qpn, goshmemi_ibgda_op_ds(&ops[nlanes - 1])),
                               max_sig) != 0)
        return GOSHMEMI_IBGDA_ERR_TIMEOUT;
    if (rc == 0 && qp->err)
        rc = GOSHMEMI_IBGDA_ERR_CQE;
    return rc;
}
#endif

/* ---- exclusive owner ----------------------------------------------------------
 * When the QP mapping gives a QP one posting thread (mapping by thread, or
 * a CTA/warp whose posts go through one lane) for a stretch of posts, the
 * owner keeps the producer indices in registers: no atomic reservation and
 * no wait for reservation order, only the WQE stores, the two ordering
 * points and the doorbell stores. The QP's state words are still updated
 * (plain stores, no round trip; sq_resv_idx at goshmemi_ibgda_excl_end),
 * so CQ polling, quiet and other pollers work unchanged. Nobody else may
 * post on the QP between goshmemi_ibgda_excl_begin and
 * goshmemi_ibgda_excl_end. */
typedef struct goshmemi_ibgda_excl {
    goshmemi_ibgda_qp_t *qp;
    goshmemi_ibgda_qpc_t c; /* the descriptor words, read once at begin */
    uint64_t resv; /* WQEBBs posted (== sq_resv_idx == sq_ready_idx) */
    uint64_t done; /* cached sq_done_idx (refreshed when the ring looks full) */
    uint64_t sig;  /* sq_signaled_idx */
} goshmemi_ibgda_excl_t;

GOSHMEMI_FN goshmemi_ibgda_excl_t goshmemi_ibgda_excl_begin(goshmemi_ibgda_qp_t *qp)
{
    goshmemi_ibgda_excl_t h;
    h.qp = qp;
    h.c = goshmemi_ibgda_qpc(qp);
    h.resv = goshmemi_ibgda_load_acquire_u64(&qp->sq_ready_idx);
    h.done = goshmemi_ibgda_load_acquire_u64(&qp->sq_done_idx);
    h.sig = goshmemi_ibgda_load_acquire_u64(&qp->sq_signaled_idx);
    return h;
}

/* WQEBBs the largest WQE goshmem encodes takes (an inline write of
 * GOSHMEMI_IBGDA_MAX_INLINE bytes: 2 + inl_ds(256) = 19 DS): the bound the
 * exclusive owner's one-pass batch checks ring space with. */
#define GOSHMEMI_IBGDA_MAX_OP_WQEBB 5u

/* One owner, `n` WQEs, one doorbell. Returns 0 or GOSHMEMI_IBGDA_ERR_ARG
 * (nothing posted); GOSHMEMI_IBGDA_ERR_CQE only when it had to wait for
 * ring space and saw an error CQE meanwhile (else errors surface at quiet);
 * GOSHMEMI_IBGDA_ERR_TIMEOUT when that wait timed out (nothing posted).
 * When the ring has room for n of the largest WQEs (the common case) the
 * batch is one pass: each op is loaded once, whole, and built from
 * registers (a first pass summing the DS counts would re-read every op's
 * fields from memory, one dependent load after another, which dominates a
 * WQE's cost in the batch rate rows). An invalid op found in
 * that pass returns ERR_ARG before anything is announced: the WQEs built
 * before it lie beyond the doorbell's index, where neither the NIC nor a
 * poller reads, and the next post overwrites them. */
GOSHMEMI_FN int goshmemi_ibgda_excl_post_batch(goshmemi_ibgda_excl_t *h, const goshmemi_ibgda_op_t *ops, int n)
{
    goshmemi_ibgda_qp_t *qp = h->qp;
    const uint32_t cnt = h->c.sq_wqebb_cnt;
    uint64_t idx, db = 0, start = h->resv, sig = h->sig;
    int i, rc = 0;
    if (n <= 0)
        return GOSHMEMI_IBGDA_ERR_ARG;
    if (GOSHMEMI_UNLIKELY((uint64_t)n * GOSHMEMI_IBGDA_MAX_OP_WQEBB > cnt / 2 ||
                          start + (uint64_t)n * GOSHMEMI_IBGDA_MAX_OP_WQEBB - h->done > cnt)) {
        /* near full, or a batch too long for the bound: the exact sum */
        uint64_t total = 0;
        for (i = 0; i < n; i++) {
            uint32_t ds = goshmemi_ibgda_op_ds(&ops[i]);
            if (ds == 0)
                return GOSHMEMI_IBGDA_ERR_ARG;
            total += goshmemi_mlx5_ds_to_wqebb(ds);
        }
        if (total > cnt / 2)
            return GOSHMEMI_IBGDA_ERR_ARG;
        if (start + total - h->done > cnt) {
            rc = goshmemi_ibgda_wait_sq_space(qp, start + total);
            if (rc == GOSHMEMI_IBGDA_ERR_TIMEOUT)
                return rc;
            h->done = goshmemi_ibgda_load_acquire_u64(&qp->sq_done_idx);
        }
    }
    goshmemi_ibgda_op_t next = ops[0];
    for (i = 0, idx = start; i < n; i++) {
        const goshmemi_ibgda_op_t o = next; /* whole, in registers */
        if (i + 1 < n)
            next = ops[i + 1]; /* loaded before this WQE's stores, which might alias it for all the compiler knows */
        uint32_t ds;
        uint64_t end;
        int ce;
        if (GOSHMEMI_LIKELY(goshmemi_ibgda_op_small_inl(&o))) {
            ds = 3;
            end = idx + 1;
            ce = o.signaled || goshmemi_ibgda_crosses_half_n(cnt, idx, end);
            goshmemi_ibgda_build_small_inl_c(&h->c, idx, &o, ce);
        } else {
            ds = goshmemi_ibgda_op_ds(&o);
            if (GOSHMEMI_UNLIKELY(ds == 0))
                return GOSHMEMI_IBGDA_ERR_ARG; /* nothing announced (above) */
            end = idx + goshmemi_mlx5_ds_to_wqebb(ds);
            ce = o.signaled || goshmemi_ibgda_crosses_half_n(cnt, idx, end);
            goshmemi_ibgda_build_wqe_c(&h->c, idx, &o, ds, ce);
        }
        if (ce)
            sig = end;
        db = goshmemi_mlx5_db_val((uint32_t)idx, o.opcode, h->c.qpn, ds);
        idx = end;
    }
    h->resv = idx;
    /* State words for pollers and quiet: relaxed stores BEFORE the ring, so
     * the ring's WQE -> doorbell-record barrier orders them before the NIC
     * can see the WQEs (a poller that sees a CQE for them sees these). No
     * release store and no error-word load on this path (each would be a
     * round trip): a CQE error surfaces at the next quiet or poll. */
    if (sig != h->sig) {
        h->sig = sig;
        *(volatile uint64_t *)&qp->sq_signaled_idx = sig;
    }
    *(volatile uint64_t *)&qp->sq_ready_idx = idx;
    goshmemi_ibgda_ring_c(&h->c, idx, db);
    return rc;
}

/* End of the owner's stretch: the reservation counter catches up, so
 * shared-path posters may follow. */
GOSHMEMI_FN void goshmemi_ibgda_excl_end(goshmemi_ibgda_excl_t *h)
{
    goshmemi_ibgda_store_release_u64(&h->qp->sq_resv_idx, h->resv);
}

GOSHMEMI_FN int goshmemi_ibgda_excl_post(goshmemi_ibgda_excl_t *h, const goshmemi_ibgda_op_t *op)
{
    return goshmemi_ibgda_excl_post_batch(h, op, 1);
}

/* ---- quiet ------------------------------------------------------------------ */

/* Start completing everything published so far; returns the WQEBB index
 * quiet must see retired (posting a signaled NOP if the last published WQE
 * asked for no CQE; not on a QP in error). If the NOP could not be posted
 * in time, the target stays the unsignaled end, which only a timeout ends. */
GOSHMEMI_FN uint64_t goshmemi_ibgda_quiet_begin(goshmemi_ibgda_qp_t *qp)
{
    uint64_t target = goshmemi_ibgda_load_acquire_u64(&qp->sq_ready_idx);
    if (goshmemi_ibgda_load_acquire_u64(&qp->sq_signaled_idx) < target && !*(volatile uint64_t *)&qp->err) {
        goshmemi_ibgda_op_t nop;
        nop.opcode = GOSHMEMI_MLX5_OPCODE_NOP;
        nop.inl = 0;
        nop.signaled = 1;
        nop.fm = 0;
        nop.len = 0;
        nop.lkey = nop.rkey = 0;
        nop.laddr = nop.raddr = nop.swap_add = nop.compare = 0;
        if (goshmemi_ibgda_post(qp, &nop) != GOSHMEMI_IBGDA_ERR_TIMEOUT)
            target = goshmemi_ibgda_load_acquire_u64(&qp->sq_signaled_idx);
    }
    return target;
}

/* Poll until sq_done_idx reaches `target` (or an error CQE, or
 * qp->timeout_ns). */
GOSHMEMI_FN int goshmemi_ibgda_quiet_wait(goshmemi_ibgda_qp_t *qp, uint64_t target)
{
    goshmemi_ibgda_waiter_t w = GOSHMEMI_IBGDA_WAITER_INIT;
    while (goshmemi_ibgda_load_acquire_u64(&qp->sq_done_idx) < target) {
        /* A QP in error completes nothing more successfully: fail fast
         * (another poller may have consumed the error CQE). */
        if (goshmemi_ibgda_poll_cq(qp) < 0 || *(volatile uint64_t *)&qp->err)
            return GOSHMEMI_IBGDA_ERR_CQE;
        if (GOSHMEMI_UNLIKELY(goshmemi_ibgda_waited(qp, &w)))
            return GOSHMEMI_IBGDA_ERR_TIMEOUT;
    }
    return qp->err ? GOSHMEMI_IBGDA_ERR_CQE : GOSHMEMI_IBGDA_OK;
}

/* Per-QP (ctx) quiet: polls only this QP's CQ. */
GOSHMEMI_FN int goshmemi_ibgda_qp_quiet(goshmemi_ibgda_qp_t *qp)
{
    return goshmemi_ibgda_quiet_wait(qp, goshmemi_ibgda_quiet_begin(qp));
}

/* PE-wide quiet over `n` QPs: start all of them, then wait for each (the
 * waits overlap). Returns the first error (CQE or timeout). */
#define GOSHMEMI_IBGDA_QUIET_CHUNK 32
GOSHMEMI_FN int goshmemi_ibgda_qp_quiet_all(goshmemi_ibgda_qp_t *const *qps, int n)
{
    uint64_t target[GOSHMEMI_IBGDA_QUIET_CHUNK];
    int base, i, rc = 0;
    for (base = 0; base < n; base += GOSHMEMI_IBGDA_QUIET_CHUNK) {
        int m = n - base < GOSHMEMI_IBGDA_QUIET_CHUNK ? n - base : GOSHMEMI_IBGDA_QUIET_CHUNK;
        for (i = 0; i < m; i++)
            target[i] = goshmemi_ibgda_quiet_begin(qps[base + i]);
        for (i = 0; i < m; i++) {
            int r = goshmemi_ibgda_quiet_wait(qps[base + i], target[i]);
            if (r && !rc)
                rc = r;
        }
    }
    return rc;
}

/* ---- operations -------------------------------------------------------------- */

GOSHMEMI_FN goshmemi_ibgda_op_t goshmemi_ibgda_op_make(uint8_t opcode, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                                      uint32_t rkey, uint32_t len, int inl, int signaled)
{
    goshmemi_ibgda_op_t op;
    op.opcode = opcode;
    op.inl = (uint8_t)(inl != 0);
    op.signaled = (uint8_t)(signaled != 0);
    op.fm = 0;
    op.len = len;
    op.lkey = lkey;
    op.rkey = rkey;
    op.laddr = laddr;
    op.raddr = raddr;
    op.swap_add = 0;
    op.compare = 0;
    return op;
}

/* RDMA write of `len` bytes from `src`, copied into the WQE. */
GOSHMEMI_FN int goshmemi_ibgda_qp_put_inline(goshmemi_ibgda_qp_t *qp, uint64_t raddr, uint32_t rkey, const void *src,
                                          uint32_t len, int signaled)
{
    goshmemi_ibgda_op_t op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)src, 0,
                                                   raddr, rkey, len, 1, signaled);
    return goshmemi_ibgda_post(qp, &op);
}

/* RDMA write gathered by the NIC from (laddr, lkey). */
GOSHMEMI_FN int goshmemi_ibgda_qp_put(goshmemi_ibgda_qp_t *qp, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                   uint32_t rkey, uint32_t len, int signaled)
{
    goshmemi_ibgda_op_t op =
        goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, laddr, lkey, raddr, rkey, len, 0, signaled);
    return goshmemi_ibgda_post(qp, &op);
}

/* RDMA read of `len` bytes into (laddr, lkey). */
GOSHMEMI_FN int goshmemi_ibgda_qp_get(goshmemi_ibgda_qp_t *qp, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                   uint32_t rkey, uint32_t len, int signaled)
{
    goshmemi_ibgda_op_t op =
        goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_READ, laddr, lkey, raddr, rkey, len, 0, signaled);
    return goshmemi_ibgda_post(qp, &op);
}

/* 8-byte fetch-add / compare-swap; the old remote value lands at laddr
 * (big-endian, as the NIC returns it; goshmemi_be64toh to read it). */
GOSHMEMI_FN goshmemi_ibgda_op_t goshmemi_ibgda_op_amo(uint8_t opcode, uint64_t fetch_laddr, uint32_t lkey,
                                                     uint64_t raddr, uint32_t rkey, uint64_t swap_add,
                                                     uint64_t compare, int signaled)
{
    goshmemi_ibgda_op_t op = goshmemi_ibgda_op_make(opcode, fetch_laddr, lkey, raddr, rkey, 8, 0, signaled);
    op.swap_add = swap_add;
    op.compare = compare;
    return op;
}

/* The signal update of put_signal: SIGNAL_SET = an 8-byte inline RDMA write
 * of `value`; SIGNAL_ADD = an ATOMIC_FA whose fetched value goes to the
 * QP's scratch word; any other sig_op = an op that is not encodable, so the
 * post returns GOSHMEMI_IBGDA_ERR_ARG and nothing reaches the NIC.
 * `value_slot` must stay valid until the op is built (it is copied into the
 * WQE). */
GOSHMEMI_FN goshmemi_ibgda_op_t goshmemi_ibgda_op_signal(const goshmemi_ibgda_qp_t *qp, uint64_t sig_raddr,
                                                        uint32_t rkey, const uint64_t *value_slot, int sig_op,
                                                        int signaled)
{
    if (sig_op == GOSHMEM_SIGNAL_ADD)
        return goshmemi_ibgda_op_amo(GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, qp->scratch_laddr, qp->scratch_lkey, sig_raddr,
                                     rkey, *value_slot, 0, signaled);
    if (sig_op == GOSHMEM_SIGNAL_SET)
        return goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)value_slot, 0, sig_raddr,
                                      rkey, 8, 1, signaled);
    return goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, 0, 0, sig_raddr, rkey, 0, 0, signaled); /* len 0: ds 0 */
}

/* put_signal: the data write and the signal update as two WQEs under one
 * doorbell. An RC QP executes them in order at the responder, so the signal
 * is never visible before the data. */
GOSHMEMI_FN int goshmemi_ibgda_qp_put_signal(goshmemi_ibgda_qp_t *qp, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                          uint32_t rkey, uint32_t len, int inl, uint64_t sig_raddr,
                                          uint32_t sig_rkey, uint64_t sig_value, int sig_op, int signaled)
{
    goshmemi_ibgda_op_t ops[2];
    ops[0] = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, laddr, lkey, raddr, rkey, len, inl, 0);
    ops[1] = goshmemi_ibgda_op_signal(qp, sig_raddr, sig_rkey, &sig_value, sig_op, signaled);
    return goshmemi_ibgda_post_batch(qp, ops, 2);
}

#endif /* GOSHMEM_IBGDA_QP_H */
