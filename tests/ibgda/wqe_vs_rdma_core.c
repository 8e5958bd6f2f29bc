/* tests/ibgda/wqe_vs_rdma_core.c: goshmem's mlx5 WQE/CQE encoders against
 * rdma-core's own definitions, byte for byte.
 *
 * For a table of cases (opcodes, payload sizes, WQE indices around the
 * 16-bit wrap, fm_ce_se values, ring sizes small enough that WQEs wrap),
 * the WQE is built twice into zeroed SQ rings:
 *   - goshmem: goshmemi_ibgda_build_wqe (include/goshmem/ibgda/qp.h);
 *   - reference: rdma-core 44's mlx5dv_set_ctrl_seg / mlx5dv_set_data_seg and
 *     the mlx5dv.h structs mlx5_wqe_raddr_seg, mlx5_wqe_atomic_seg,
 *     mlx5_wqe_inl_data_seg, filled field by field,
 * and the rings are compared with memcmp. Struct offsets, CQE fields and
 * the doorbell (record + 8-byte UAR store) are checked the same way.
 * No device is needed: the mlx5dv helpers are inline; -libverbs -lmlx5 only
 * proves the program links against rdma-core.
 *
 * Build: gcc -std=c11 -Wall -Wextra -Werror -O2 -Iinclude tests/ibgda/wqe_vs_rdma_core.c -libverbs -lmlx5
 */
#define _DEFAULT_SOURCE
#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <goshmem/ibgda/ibgda.h>

static int failures;
#define CHECK(c, ...)                                                                                                 \
    do {                                                                                                              \
        if (!(c)) {                                                                                                   \
            failures++;                                                                                               \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                      \
            fprintf(stderr, __VA_ARGS__);                                                                             \
            fprintf(stderr, "\n");                                                                                    \
        }                                                                                                             \
    } while (0)

/* ---- layouts: offsets and sizes equal to mlx5dv.h ---- */
#define SAME_OFF(ours, theirs, f1, f2) CHECK(offsetof(ours, f1) == offsetof(theirs, f2), #ours "." #f1)
static void check_layouts(void)
{
    CHECK(sizeof(goshmemi_mlx5_wqe_ctrl_seg_t) == sizeof(struct mlx5_wqe_ctrl_seg), "ctrl size");
    SAME_OFF(goshmemi_mlx5_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, opmod_idx_opcode, opmod_idx_opcode);
    SAME_OFF(goshmemi_mlx5_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, qpn_ds, qpn_ds);
    SAME_OFF(goshmemi_mlx5_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, signature, signature);
    SAME_OFF(goshmemi_mlx5_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, dci_stream_channel_id, dci_stream_channel_id);
    SAME_OFF(goshmemi_mlx5_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, fm_ce_se, fm_ce_se);
    SAME_OFF(goshmemi_mlx5_wqe_ctrl_seg_t, struct mlx5_wqe_ctrl_seg, imm, imm);
    CHECK(sizeof(goshmemi_mlx5_wqe_raddr_seg_t) == sizeof(struct mlx5_wqe_raddr_seg), "raddr size");
    SAME_OFF(goshmemi_mlx5_wqe_raddr_seg_t, struct mlx5_wqe_raddr_seg, raddr, raddr);
    SAME_OFF(goshmemi_mlx5_wqe_raddr_seg_t, struct mlx5_wqe_raddr_seg, rkey, rkey);
    SAME_OFF(goshmemi_mlx5_wqe_raddr_seg_t, struct mlx5_wqe_raddr_seg, rsvd_0x0c, reserved);
    CHECK(sizeof(goshmemi_mlx5_wqe_data_seg_t) == sizeof(struct mlx5_wqe_data_seg), "data size");
    SAME_OFF(goshmemi_mlx5_wqe_data_seg_t, struct mlx5_wqe_data_seg, byte_count, byte_count);
    SAME_OFF(goshmemi_mlx5_wqe_data_seg_t, struct mlx5_wqe_data_seg, lkey, lkey);
    SAME_OFF(goshmemi_mlx5_wqe_data_seg_t, struct mlx5_wqe_data_seg, addr, addr);
    CHECK(sizeof(goshmemi_mlx5_wqe_inl_data_seg_t) == sizeof(struct mlx5_wqe_inl_data_seg), "inl size");
    CHECK(sizeof(goshmemi_mlx5_wqe_atomic_seg_t) == sizeof(struct mlx5_wqe_atomic_seg), "atomic size");
    SAME_OFF(goshmemi_mlx5_wqe_atomic_seg_t, struct mlx5_wqe_atomic_seg, swap_add, swap_add);
    SAME_OFF(goshmemi_mlx5_wqe_atomic_seg_t, struct mlx5_wqe_atomic_seg, compare, compare);
    CHECK(sizeof(goshmemi_mlx5_cqe64_t) == sizeof(struct mlx5_cqe64), "cqe64 size");
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, srqn_uidx, srqn_uidx);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, imm_inval_pkey, imm_inval_pkey);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, app, app);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, app_op, app_op);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, app_info, app_info);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, byte_cnt, byte_cnt);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, timestamp, timestamp);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, sop_drop_qpn, sop_drop_qpn);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, wqe_counter, wqe_counter);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, signature, signature);
    SAME_OFF(goshmemi_mlx5_cqe64_t, struct mlx5_cqe64, op_own, op_own);
    CHECK(sizeof(goshmemi_mlx5_err_cqe_t) == sizeof(struct mlx5_err_cqe), "err cqe size");
    SAME_OFF(goshmemi_mlx5_err_cqe_t, struct mlx5_err_cqe, srqn, srqn);
    SAME_OFF(goshmemi_mlx5_err_cqe_t, struct mlx5_err_cqe, vendor_err_synd, vendor_err_synd);
    SAME_OFF(goshmemi_mlx5_err_cqe_t, struct mlx5_err_cqe, syndrome, syndrome);
    SAME_OFF(goshmemi_mlx5_err_cqe_t, struct mlx5_err_cqe, s_wqe_opcode_qpn, s_wqe_opcode_qpn);
    SAME_OFF(goshmemi_mlx5_err_cqe_t, struct mlx5_err_cqe, wqe_counter, wqe_counter);
    SAME_OFF(goshmemi_mlx5_err_cqe_t, struct mlx5_err_cqe, op_own, op_own);
}

static void check_constants(void)
{
#define SAME(a, b) CHECK((long)(a) == (long)(b), #a " != " #b)
    SAME(GOSHMEMI_MLX5_RCV_DBR, MLX5_RCV_DBR);
    SAME(GOSHMEMI_MLX5_SND_DBR, MLX5_SND_DBR);
    SAME(GOSHMEMI_MLX5_OPCODE_NOP, MLX5_OPCODE_NOP);
    SAME(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE);
    SAME(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE_IMM, MLX5_OPCODE_RDMA_WRITE_IMM);
    SAME(GOSHMEMI_MLX5_OPCODE_SEND, MLX5_OPCODE_SEND);
    SAME(GOSHMEMI_MLX5_OPCODE_RDMA_READ, MLX5_OPCODE_RDMA_READ);
    SAME(GOSHMEMI_MLX5_OPCODE_ATOMIC_CS, MLX5_OPCODE_ATOMIC_CS);
    SAME(GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_ATOMIC_FA);
    SAME(GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_CQ_UPDATE);
    SAME(GOSHMEMI_MLX5_WQE_CTRL_SOLICITED, MLX5_WQE_CTRL_SOLICITED);
    SAME(GOSHMEMI_MLX5_WQE_CTRL_FENCE, MLX5_WQE_CTRL_FENCE);
    SAME(GOSHMEMI_MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
    SAME(GOSHMEMI_MLX5_SEND_WQE_BB, MLX5_SEND_WQE_BB);
    SAME(GOSHMEMI_MLX5_SEND_WQE_SHIFT, MLX5_SEND_WQE_SHIFT);
    SAME(GOSHMEMI_MLX5_INLINE_SEG, MLX5_INLINE_SEG);
    SAME(GOSHMEMI_MLX5_CQE_OWNER_MASK, MLX5_CQE_OWNER_MASK);
    SAME(GOSHMEMI_MLX5_CQE_REQ, MLX5_CQE_REQ);
    SAME(GOSHMEMI_MLX5_CQE_REQ_ERR, MLX5_CQE_REQ_ERR);
    SAME(GOSHMEMI_MLX5_CQE_RESP_ERR, MLX5_CQE_RESP_ERR);
    SAME(GOSHMEMI_MLX5_CQE_INVALID, MLX5_CQE_INVALID);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_WR_FLUSH_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_OP_ERR, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
    SAME(GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
#undef SAME
}

/* ---- reference WQE built with rdma-core's helpers and structs ---- */
static void *ref_seg(void *ring, uint32_t nbb, uint32_t idx, uint32_t seg)
{
    return (char *)ring + (((size_t)idx * MLX5_SEND_WQE_BB + seg * 16) & ((size_t)nbb * MLX5_SEND_WQE_BB - 1));
}

static void ref_build(void *ring, uint32_t nbb, uint32_t idx, const goshmemi_ibgda_op_t *op, uint32_t qpn,
                      uint8_t fm_ce_se)
{
    char *qend = (char *)ring + (size_t)nbb * MLX5_SEND_WQE_BB;
    uint8_t ds;
    if (op->opcode == MLX5_OPCODE_NOP)
        ds = 1;
    else if (op->opcode == MLX5_OPCODE_RDMA_WRITE && (op->inl || op->len == 0))
        ds = (uint8_t)(2 + (sizeof(struct mlx5_wqe_inl_data_seg) + op->len + 15) / 16);
    else if (op->opcode == MLX5_OPCODE_ATOMIC_CS || op->opcode == MLX5_OPCODE_ATOMIC_FA)
        ds = 4;
    else
        ds = 3;
    mlx5dv_set_ctrl_seg(ref_seg(ring, nbb, idx, 0), (uint16_t)idx, op->opcode, 0, qpn, fm_ce_se, ds, 0, 0);
    if (op->opcode == MLX5_OPCODE_NOP)
        return;
    struct mlx5_wqe_raddr_seg *r = ref_seg(ring, nbb, idx, 1);
    r->raddr = htobe64(op->raddr);
    r->rkey = htobe32(op->rkey);
    r->reserved = 0;
    if (op->opcode == MLX5_OPCODE_RDMA_WRITE && (op->inl || op->len == 0)) {
        struct mlx5_wqe_inl_data_seg *inl = ref_seg(ring, nbb, idx, 2);
        inl->byte_count = htobe32(op->len | MLX5_INLINE_SEG);
        /* rdma-core's set_data_inl_seg: copy up to the ring's end, then wrap */
        char *dst = (char *)(inl + 1);
        const char *src = (const char *)(uintptr_t)op->laddr;
        size_t left = op->len;
        if (dst == qend)
            dst = ring;
        if (dst + left > qend) {
            size_t first = (size_t)(qend - dst);
            memcpy(dst, src, first);
            src += first;
            left -= first;
            dst = ring;
        }
        memcpy(dst, src, left);
    } else if (op->opcode == MLX5_OPCODE_ATOMIC_CS || op->opcode == MLX5_OPCODE_ATOMIC_FA) {
        struct mlx5_wqe_atomic_seg *a = ref_seg(ring, nbb, idx, 2);
        a->swap_add = htobe64(op->swap_add);
        a->compare = htobe64(op->opcode == MLX5_OPCODE_ATOMIC_CS ? op->compare : 0);
        mlx5dv_set_data_seg(ref_seg(ring, nbb, idx, 3), 8, op->lkey, (uintptr_t)op->laddr);
    } else {
        mlx5dv_set_data_seg(ref_seg(ring, nbb, idx, 2), op->len, op->lkey, (uintptr_t)op->laddr);
    }
}

static void hexdump_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            fprintf(stderr, "  byte 0x%03zx: goshmem %02x rdma-core %02x\n", i, a[i], b[i]);
}

static int n_cases;

static void check_wqe(const goshmemi_ibgda_op_t *op, uint32_t nbb, uint32_t idx, uint32_t qpn, uint8_t fm_ce_se)
{
    size_t bytes = (size_t)nbb * 64;
    unsigned char *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
    goshmemi_ibgda_qp_t qp;
    goshmemi_ibgda_op_t o = *op;
    uint32_t ds = goshmemi_ibgda_op_ds(op);
    memset(a, 0, bytes);
    memset(b, 0, bytes);
    memset(&qp, 0, sizeof qp);
    qp.sq_buf = a;
    qp.sq_wqebb_cnt = nbb;
    qp.qpn = qpn;
    /* goshmem's fm_ce_se = op.fm | (ce ? CQ_UPDATE : 0); SOLICITED goes through fm */
    o.fm = fm_ce_se & (uint8_t)~GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE;
    CHECK(ds != 0, "op not encodable");
    goshmemi_ibgda_build_wqe(&qp, idx, &o, ds, (fm_ce_se & GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE) != 0);
    ref_build(b, nbb, idx, op, qpn, fm_ce_se);
    n_cases++;
    if (memcmp(a, b, bytes) != 0) {
        CHECK(0, "WQE bytes differ: opcode 0x%02x inl %d len %u idx 0x%x ring %u qpn 0x%x fm_ce_se 0x%02x", op->opcode,
              op->inl, op->len, idx, nbb, qpn, fm_ce_se);
        hexdump_diff(a, b, bytes);
    }
    if (goshmemi_ibgda_op_small_inl(&o)) {
        /* the exclusive owner's fast path for small inline writes: same bytes */
        unsigned char *c = aligned_alloc(64, bytes);
        goshmemi_ibgda_qpc_t qc = goshmemi_ibgda_qpc(&qp);
        memset(c, 0, bytes);
        qc.sq_buf = c;
        CHECK(ds == 3, "small inline op with ds %u", ds);
        goshmemi_ibgda_build_small_inl_c(&qc, idx, &o, (fm_ce_se & GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE) != 0);
        n_cases++;
        if (memcmp(c, b, bytes) != 0) {
            CHECK(0, "small-inline WQE bytes differ: len %u idx 0x%x ring %u qpn 0x%x fm_ce_se 0x%02x", op->len, idx,
                  nbb, qpn, fm_ce_se);
            hexdump_diff(c, b, bytes);
        }
        free(c);
    }
    {
        /* the doorbell value composed in registers == the ctrl segment's first 8 B as rdma-core stored them */
        unsigned char *ctrl = b + (((size_t)idx * 64) & (bytes - 1));
        uint64_t want, got = goshmemi_mlx5_db_val(idx, op->opcode, qpn, ds);
        memcpy(&want, ctrl, 8);
        CHECK(got == want, "doorbell value 0x%016llx, ctrl's first 8 B 0x%016llx (opcode 0x%02x idx 0x%x)",
              (unsigned long long)got, (unsigned long long)want, op->opcode, idx);
    }
    free(a);
    free(b);
}

static void check_wqe_table(void)
{
    static unsigned char payload[512];
    const uint32_t idxs[] = {0, 1, 2, 3, 0x7fff, 0x8000, 0xfffc, 0xfffe, 0xffff, 0x10000, 0x10001, 0x1fffd};
    const uint32_t rings[] = {2, 4, 8, 64};
    const uint8_t fms[] = {0,
                           MLX5_WQE_CTRL_CQ_UPDATE,
                           MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED,
                           MLX5_WQE_CTRL_FENCE | MLX5_WQE_CTRL_CQ_UPDATE,
                           MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE};
    const uint32_t qpns[] = {0x1, 0xabcdef};
    const uint32_t inl_lens[] = {0, 1, 4, 8, 12, 13, 28, 29, 44, 45, 60, 61, 100, 187, 188, 256};
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (unsigned char)(i * 7 + 3);

    goshmemi_ibgda_op_t ops[64];
    int nops = 0;
    ops[nops++] = goshmemi_ibgda_op_make(MLX5_OPCODE_NOP, 0, 0, 0, 0, 0, 0, 0);
    for (size_t i = 0; i < sizeof inl_lens / sizeof inl_lens[0]; i++)
        ops[nops++] = goshmemi_ibgda_op_make(MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)payload, 0,
                                             0x00007f1234567890ull + i, 0x11223344, inl_lens[i], 1, 0);
    /* unaligned small payloads (the byte-wise load) */
    ops[nops++] = goshmemi_ibgda_op_make(MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)(payload + 3), 0,
                                         0x00007f1234567000ull, 0x11223344, 8, 1, 0);
    ops[nops++] = goshmemi_ibgda_op_make(MLX5_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)(payload + 1), 0,
                                         0x00007f1234567008ull, 0x11223344, 4, 1, 0);
    const uint32_t ptr_lens[] = {1, 8, 4096, 0x7fffffff, 0x80000000u};
    for (size_t i = 0; i < sizeof ptr_lens / sizeof ptr_lens[0]; i++) {
        ops[nops++] = goshmemi_ibgda_op_make(MLX5_OPCODE_RDMA_WRITE, 0x00007fabcdef0000ull + 64 * i, 0xdeadbeef,
                                             0xfedcba9876543210ull, 0x0badf00d, ptr_lens[i], 0, 0);
        ops[nops++] = goshmemi_ibgda_op_make(MLX5_OPCODE_RDMA_READ, 0x00007fabcdef0000ull + 64 * i, 0x01020304,
                                             0x0000000100000008ull, 0xa1b2c3d4, ptr_lens[i], 0, 0);
    }
    ops[nops++] = goshmemi_ibgda_op_amo(MLX5_OPCODE_ATOMIC_FA, 0x7f0000001000ull, 0x55, 0x7f0000002000ull, 0x66, 1, 0,
                                        0);
    ops[nops++] = goshmemi_ibgda_op_amo(MLX5_OPCODE_ATOMIC_FA, 0x7f0000001008ull, 0x55, 0x7f0000002008ull, 0x66,
                                        0xfffffffffffffffeull, 0x1234 /* ignored for FA */, 0);
    ops[nops++] = goshmemi_ibgda_op_amo(MLX5_OPCODE_ATOMIC_CS, 0x7f0000001010ull, 0x77, 0x7f0000002010ull, 0x88,
                                        0x0123456789abcdefull, 0xfedcba9876543210ull, 0);

    for (int o = 0; o < nops; o++)
        for (size_t r = 0; r < sizeof rings / sizeof rings[0]; r++) {
            uint32_t nbb = goshmemi_mlx5_ds_to_wqebb(goshmemi_ibgda_op_ds(&ops[o]));
            if (nbb > rings[r])
                continue; /* a WQE never exceeds its ring */
            for (size_t i = 0; i < sizeof idxs / sizeof idxs[0]; i++)
                for (size_t f = 0; f < sizeof fms; f++)
                    for (size_t q = 0; q < 2; q++)
                        check_wqe(&ops[o], rings[r], idxs[i], qpns[q], fms[f]);
        }
}

/* ---- doorbell record and 8-byte doorbell after a post ---- */
static void check_doorbell(void)
{
    const uint32_t nbb = 8;
    unsigned char *sq = aligned_alloc(64, nbb * 64), *cq = aligned_alloc(64, 64 * 64);
    uint32_t dbrec[2] = {0, 0}, cq_dbrec[2] = {0, 0};
    uint64_t db = 0;
    goshmemi_ibgda_qp_t qp;
    memset(sq, 0, nbb * 64);
    memset(&qp, 0, sizeof qp);
    qp.version = GOSHMEMI_IBGDA_QP_VERSION;
    qp.qpn = 0x1234;
    qp.sq_buf = sq;
    qp.sq_wqebb_cnt = nbb;
    qp.cq_buf = cq;
    qp.cq_cqe_cnt = 64;
    qp.dbrec = dbrec;
    qp.cq_dbrec = cq_dbrec;
    qp.db = &db;
    goshmemi_ibgda_cq_init(cq, 64);
    /* start just below the 16-bit wrap: producer 0xfffe, one 2-WQEBB WQE then one 1-WQEBB WQE */
    qp.sq_resv_idx = qp.sq_ready_idx = qp.sq_done_idx = qp.sq_signaled_idx = 0xfffe;
    unsigned char big[60]; /* ds 2 + 4 = 6: two WQEBBs */
    memset(big, 0x5a, sizeof big);
    CHECK(goshmemi_ibgda_qp_put_inline(&qp, 0x1000, 7, big, sizeof big, 1) == 0, "post");
    CHECK(dbrec[MLX5_SND_DBR] == htobe32(0x10000 & 0xffff), "dbrec after 2-WQEBB WQE: %08x", be32toh(dbrec[1]));
    CHECK(memcmp(&db, ref_seg(sq, nbb, 0xfffe, 0), 8) == 0, "doorbell = first 8 B of ctrl");
    struct mlx5_wqe_ctrl_seg *c = ref_seg(sq, nbb, 0xfffe, 0);
    CHECK((be32toh(c->opmod_idx_opcode) >> 8 & 0xffff) == 0xfffe, "wqe index");
    CHECK((be32toh(c->qpn_ds) & 0xff) == 2 + (4 + 60 + 15) / 16, "ds");
    uint64_t v = 42;
    CHECK(goshmemi_ibgda_qp_put_inline(&qp, 0x2000, 7, &v, 8, 0) == 0, "post");
    CHECK(dbrec[MLX5_SND_DBR] == htobe32(1), "dbrec wraps to 1: %08x", be32toh(dbrec[1]));
    c = ref_seg(sq, nbb, 0x10000, 0);
    CHECK((be32toh(c->opmod_idx_opcode) >> 8 & 0xffff) == 0, "wqe index wrapped to 0");
    CHECK(memcmp(&db, c, 8) == 0, "doorbell = first 8 B of the last ctrl");
    CHECK(qp.sq_ready_idx == 0x10001 && qp.sq_signaled_idx == 0x10000, "ready/signaled %llx/%llx",
          (unsigned long long)qp.sq_ready_idx, (unsigned long long)qp.sq_signaled_idx);

    /* a CQE written with rdma-core's struct retires the first WQE */
    struct mlx5_cqe64 *cqe = (struct mlx5_cqe64 *)cq;
    memset(cqe, 0, 64);
    cqe->wqe_counter = htobe16(0xfffe);
    cqe->sop_drop_qpn = htobe32(((uint32_t)MLX5_OPCODE_RDMA_WRITE << 24) | 0x1234);
    mlx5dv_set_cqe_owner(cqe, 0);
    cqe->op_own = (uint8_t)((MLX5_CQE_REQ << 4) | (cqe->op_own & 1));
    CHECK(goshmemi_ibgda_poll_cq(&qp) == 1, "one CQE");
    CHECK(qp.sq_done_idx == 0x10000, "done after CQE: %llx", (unsigned long long)qp.sq_done_idx);
    CHECK(cq_dbrec[0] == htobe32(1), "cq dbrec consumer index");
    CHECK(goshmemi_ibgda_poll_cq(&qp) == 0, "no new CQE");

    /* an error CQE (rdma-core's mlx5_err_cqe) is recorded with its syndrome and QP */
    struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)(cq + 64);
    memset(e, 0, 64);
    e->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
    e->vendor_err_synd = 0x88;
    e->wqe_counter = htobe16(0);
    e->s_wqe_opcode_qpn = htobe32(((uint32_t)MLX5_OPCODE_RDMA_WRITE << 24) | 0x1234);
    e->op_own = (uint8_t)(MLX5_CQE_REQ_ERR << 4);
    uint64_t pe_err = 0;
    qp.err_word = &pe_err;
    CHECK(goshmemi_ibgda_poll_cq(&qp) == GOSHMEMI_IBGDA_ERR_CQE, "error CQE reported");
    CHECK(GOSHMEMI_IBGDA_ERR_QPN(qp.err) == 0x1234, "err names qpn");
    CHECK(GOSHMEMI_IBGDA_ERR_SYNDROME(qp.err) == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "err syndrome");
    CHECK(GOSHMEMI_IBGDA_ERR_VENDOR(qp.err) == 0x88, "err vendor syndrome");
    CHECK(GOSHMEMI_IBGDA_ERR_CQE_OPCODE(qp.err) == MLX5_CQE_REQ_ERR, "err cqe opcode");
    CHECK(pe_err == qp.err, "PE-wide error word");
    CHECK(qp.sq_done_idx == 0x10001, "error CQE retires its WQE");
    CHECK(goshmemi_ibgda_qp_quiet(&qp) == GOSHMEMI_IBGDA_ERR_CQE, "quiet reports the QP's error");

    /* owner parity: the second lap expects owner 1 (mlx5dv_get_cqe_owner) */
    struct mlx5_cqe64 x;
    memset(&x, 0, sizeof x);
    x.op_own = (uint8_t)(MLX5_CQE_REQ << 4);
    mlx5dv_set_cqe_owner(&x, 1);
    CHECK(goshmemi_mlx5_cqe_owner(x.op_own) == mlx5dv_get_cqe_owner(&x), "owner");
    CHECK(goshmemi_mlx5_cqe_opcode(x.op_own) == mlx5dv_get_cqe_opcode(&x), "opcode");
    CHECK(!goshmemi_mlx5_cqe_is_sw_owned(x.op_own, 5, 64), "lap 0 wants owner 0");
    CHECK(goshmemi_mlx5_cqe_is_sw_owned(x.op_own, 64 + 5, 64), "lap 1 wants owner 1");
    CHECK(!goshmemi_mlx5_cqe_is_sw_owned((uint8_t)(MLX5_CQE_INVALID << 4), 0, 64), "INVALID never sw-owned");

    /* the mask forms of the lap parity and of the half-ring crossing equal
     * the divisions they replaced, for every power-of-two size */
    {
        uint32_t cnt;
        uint64_t a, len, bad = 0;
        for (cnt = 1; cnt <= 32768; cnt *= 2) {
            uint64_t half = cnt / 2 ? cnt / 2 : 1;
            for (a = 0; a < 3ull * cnt + 7; a++) {
                for (len = 1; len <= 5; len++)
                    bad += goshmemi_ibgda_crosses_half_n(cnt, a, a + len) != (a / half != (a + len) / half);
                x.op_own = (uint8_t)(MLX5_CQE_REQ << 4);
                mlx5dv_set_cqe_owner(&x, (uint8_t)((a / cnt) & 1));
                bad += !goshmemi_mlx5_cqe_is_sw_owned(x.op_own, a, cnt);
                mlx5dv_set_cqe_owner(&x, (uint8_t)(((a / cnt) & 1) ^ 1));
                bad += goshmemi_mlx5_cqe_is_sw_owned(x.op_own, a, cnt);
            }
            for (a = 0xfffffffffff0ull; a < 0x1000000000010ull; a++) /* high indices */
                bad += goshmemi_ibgda_crosses_half_n(cnt, a, a + 1) != (a / half != (a + 1) / half);
        }
        CHECK(bad == 0, "crosses_half and the CQE lap parity match their division forms");
    }
    free(sq);
    free(cq);
}

int main(void)
{
    check_layouts();
    check_constants();
    check_wqe_table();
    check_doorbell();
    if (failures) {
        fprintf(stderr, "wqe_vs_rdma_core: %d failure(s) in %d WQE cases\n", failures, n_cases);
        return 1;
    }
    printf("wqe_vs_rdma_core: OK (%d WQE cases byte-identical to rdma-core mlx5dv.h builders)\n", n_cases);
    return 0;
}
