/* goshmem IBGDA: mlx5 send-queue and completion-queue layouts and encoders.
 *
 * Hardware layouts spelled as the mlx5 PRM, as rdma-core exposes them in
 * <infiniband/mlx5dv.h> (rdma-core 44): field names kept, reserved bytes named
 * by their byte offset, every multi-byte field big-endian on the wire. This
 * file does not include mlx5dv.h (kernels must not depend on rdma-core); the
 * names carry a GOSHMEMI_MLX5_ / goshmemi_mlx5_ prefix so a test can include
 * both and compare bytes (tests/ibgda/wqe_vs_rdma_core.c).
 *
 * A send WQE is a run of 16-byte segments (DS = "data segment" count, in
 * 16-byte units, in ctrl.qpn_ds) occupying ceil(DS/4) 64-byte basic blocks
 * (WQEBBs) of the SQ ring. The WQE index in ctrl.opmod_idx_opcode is the
 * 16-bit count of WQEBBs posted before it; a WQE that runs past the end of
 * the ring continues at its start (segment addresses are computed modulo the
 * ring size, goshmemi_mlx5_sq_seg()).
 *
 * Ref: mlx5dv.h struct mlx5_wqe_ctrl_seg, mlx5_wqe_raddr_seg,
 *      mlx5_wqe_data_seg, mlx5_wqe_inl_data_seg, mlx5_wqe_atomic_seg,
 *      mlx5_cqe64, mlx5_err_cqe, mlx5dv_set_ctrl_seg, mlx5dv_set_data_seg;
 *      mlx5 PRM "Send WQE Construction", "Completion Queue Entry Format".
 *
 * Include <goshmem/ibgda/ibgda.h>, not this file.
 */
#ifndef GOSHMEM_IBGDA_MLX5_H
#define GOSHMEM_IBGDA_MLX5_H

#include "../defs.h"

#if !GOSHMEMI_CUDA
#include <string.h>
#endif

/* Segment words are composed in registers as native 32-bit words and stored
 * whole; the byte placement below (e.g. ctrl dword 2) assumes a little-endian
 * submitter, which every CUDA GPU and every host goshmem supports is. */
#if !GOSHMEMI_CUDA && defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "goshmem IBGDA encoders assume a little-endian submitter"
#endif

#if defined(__cplusplus)
#define GOSHMEMI_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define GOSHMEMI_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ---- constants (values as mlx5dv.h; Ref: mlx5 PRM tables "Send WQE opcodes",
 * "CQE opcodes", "Work Completion Syndromes") ------------------------------ */
#define GOSHMEMI_MLX5_RCV_DBR 0 /* dbrec[] index of the receive counter */
#define GOSHMEMI_MLX5_SND_DBR 1 /* dbrec[] index of the send counter */

#define GOSHMEMI_MLX5_OPCODE_NOP 0x00
#define GOSHMEMI_MLX5_OPCODE_RDMA_WRITE 0x08
#define GOSHMEMI_MLX5_OPCODE_RDMA_WRITE_IMM 0x09
#define GOSHMEMI_MLX5_OPCODE_SEND 0x0a
#define GOSHMEMI_MLX5_OPCODE_RDMA_READ 0x10
#define GOSHMEMI_MLX5_OPCODE_ATOMIC_CS 0x11
#define GOSHMEMI_MLX5_OPCODE_ATOMIC_FA 0x12

/* ctrl.fm_ce_se: bits 3:2 are CE (completion event). CE=2 (CQ_UPDATE): a
 * CQE for this WQE; CE=0: a CQE only if it fails ("selective completion").
 * FENCE and INITIATOR_SMALL_FENCE are the FM (fence mode) field, bits 7:5;
 * SOLICITED is SE, bit 1. */
#define GOSHMEMI_MLX5_WQE_CTRL_CQ_UPDATE (2u << 2)
#define GOSHMEMI_MLX5_WQE_CTRL_SOLICITED (1u << 1)
#define GOSHMEMI_MLX5_WQE_CTRL_FENCE (4u << 5)
#define GOSHMEMI_MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE (1u << 5)

#define GOSHMEMI_MLX5_SEND_WQE_BB 64
#define GOSHMEMI_MLX5_SEND_WQE_SHIFT 6
#define GOSHMEMI_MLX5_SEG_SIZE 16
#define GOSHMEMI_MLX5_INLINE_SEG 0x80000000u

/* CQE op_own: opcode in bits 7:4, format in 3:2, SE in 1, owner in 0. */
#define GOSHMEMI_MLX5_CQE_OWNER_MASK 1
#define GOSHMEMI_MLX5_CQE_REQ 0
#define GOSHMEMI_MLX5_CQE_RESP_WR_IMM 1
#define GOSHMEMI_MLX5_CQE_RESP_SEND 2
#define GOSHMEMI_MLX5_CQE_REQ_ERR 13
#define GOSHMEMI_MLX5_CQE_RESP_ERR 14
#define GOSHMEMI_MLX5_CQE_INVALID 15

#define GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR 0x01
#define GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR 0x02
#define GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_PROT_ERR 0x04
#define GOSHMEMI_MLX5_CQE_SYNDROME_WR_FLUSH_ERR 0x05
#define GOSHMEMI_MLX5_CQE_SYNDROME_MW_BIND_ERR 0x06
#define GOSHMEMI_MLX5_CQE_SYNDROME_BAD_RESP_ERR 0x10
#define GOSHMEMI_MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR 0x11
#define GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR 0x12
#define GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR 0x13
#define GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_OP_ERR 0x14
#define GOSHMEMI_MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR 0x15
#define GOSHMEMI_MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR 0x16
#define GOSHMEMI_MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR 0x22

/* ---- layouts ---------------------------------------------------------------
 * Byte offsets in the comments; __be fields hold big-endian values. */

/* Ref: mlx5dv.h struct mlx5_wqe_ctrl_seg (16 B, first segment of every WQE). */
typedef struct goshmemi_mlx5_wqe_ctrl_seg {
    uint32_t opmod_idx_opcode;      /* 0x00 __be32: opmod[31:24] wqe_index[23:8] opcode[7:0] */
    uint32_t qpn_ds;                /* 0x04 __be32: qpn[31:8] ds[7:0] */
    uint8_t signature;              /* 0x08 */
    uint8_t dci_stream_channel_id[2]; /* 0x09 __be16 (unaligned; 0 for RC) */
    uint8_t fm_ce_se;               /* 0x0b */
    uint32_t imm;                   /* 0x0c __be32 (stored as given, as mlx5dv_set_ctrl_seg) */
} goshmemi_mlx5_wqe_ctrl_seg_t;

/* Ref: mlx5dv.h struct mlx5_wqe_raddr_seg. */
typedef struct goshmemi_mlx5_wqe_raddr_seg {
    uint64_t raddr;        /* 0x00 __be64 */
    uint32_t rkey;         /* 0x08 __be32 */
    uint8_t rsvd_0x0c[4];  /* 0x0c */
} goshmemi_mlx5_wqe_raddr_seg_t;

/* Ref: mlx5dv.h struct mlx5_wqe_data_seg (one gather/scatter pointer). */
typedef struct goshmemi_mlx5_wqe_data_seg {
    uint32_t byte_count; /* 0x00 __be32 */
    uint32_t lkey;       /* 0x04 __be32 */
    uint64_t addr;       /* 0x08 __be64 */
} goshmemi_mlx5_wqe_data_seg_t;

/* Ref: mlx5dv.h struct mlx5_wqe_inl_data_seg: __be32 byte_count with
 * MLX5_INLINE_SEG set, then the payload, padded to a 16-byte boundary. */
typedef struct goshmemi_mlx5_wqe_inl_data_seg {
    uint32_t byte_count; /* 0x00 __be32: len | GOSHMEMI_MLX5_INLINE_SEG */
    /* 0x04: payload */
} goshmemi_mlx5_wqe_inl_data_seg_t;

/* Ref: mlx5dv.h struct mlx5_wqe_atomic_seg (8-byte CS / FA operands). */
typedef struct goshmemi_mlx5_wqe_atomic_seg {
    uint64_t swap_add; /* 0x00 __be64: swap value (CS) or addend (FA) */
    uint64_t compare;  /* 0x08 __be64: compare value (CS), 0 for FA */
} goshmemi_mlx5_wqe_atomic_seg_t;

/* Ref: mlx5dv.h struct mlx5_cqe64 (the requester fields goshmem reads). */
typedef struct goshmemi_mlx5_cqe64 {
    uint8_t rsvd_0x00[32];   /* 0x00 (responder/TM fields) */
    uint32_t srqn_uidx;      /* 0x20 __be32 */
    uint32_t imm_inval_pkey; /* 0x24 __be32 */
    uint8_t app;             /* 0x28 */
    uint8_t app_op;          /* 0x29 */
    uint16_t app_info;       /* 0x2a __be16 */
    uint32_t byte_cnt;       /* 0x2c __be32 */
    uint64_t timestamp;      /* 0x30 __be64 */
    uint32_t sop_drop_qpn;   /* 0x38 __be32: WQE opcode[31:24] qpn[23:0] (requester) */
    uint16_t wqe_counter;    /* 0x3c __be16: WQE index of the completed WQE */
    uint8_t signature;       /* 0x3e */
    uint8_t op_own;          /* 0x3f opcode[7:4] format[3:2] se[1] owner[0] */
} goshmemi_mlx5_cqe64_t;

/* Ref: mlx5dv.h struct mlx5_err_cqe (same 64 B, read when opcode is
 * MLX5_CQE_REQ_ERR or MLX5_CQE_RESP_ERR). */
typedef struct goshmemi_mlx5_err_cqe {
    uint8_t rsvd_0x00[32];    /* 0x00 */
    uint32_t srqn;            /* 0x20 __be32 */
    uint8_t rsvd_0x24[18];    /* 0x24 */
    uint8_t vendor_err_synd;  /* 0x36 */
    uint8_t syndrome;         /* 0x37 GOSHMEMI_MLX5_CQE_SYNDROME_* */
    uint32_t s_wqe_opcode_qpn; /* 0x38 __be32: WQE opcode[31:24] qpn[23:0] */
    uint16_t wqe_counter;     /* 0x3c __be16 */
    uint8_t signature;        /* 0x3e */
    uint8_t op_own;           /* 0x3f */
} goshmemi_mlx5_err_cqe_t;

GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_mlx5_wqe_ctrl_seg_t) == 16, "mlx5 ctrl seg is 16 B");
GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_mlx5_wqe_raddr_seg_t) == 16, "mlx5 raddr seg is 16 B");
GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_mlx5_wqe_data_seg_t) == 16, "mlx5 data seg is 16 B");
GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_mlx5_wqe_atomic_seg_t) == 16, "mlx5 atomic seg is 16 B");
GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_mlx5_cqe64_t) == 64, "mlx5 cqe64 is 64 B");
GOSHMEMI_STATIC_ASSERT(sizeof(goshmemi_mlx5_err_cqe_t) == 64, "mlx5 err cqe is 64 B");

/* ---- byte order --------------------------------------------------------------
 * Host: the shift form (gcc emits bswap). CUDA: one byte permute (PRMT);
 * nvcc left the shift form as six to eight shift/mask instructions. */
GOSHMEMI_FN uint16_t goshmemi_htobe16(uint16_t v) { return (uint16_t)((v >> 8) | (v << 8)); }
GOSHMEMI_FN uint32_t goshmemi_htobe32(uint32_t v)
{
#if GOSHMEMI_CUDA
    return __byte_perm(v, 0u, 0x0123u);
#else
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
#endif
}
GOSHMEMI_FN uint64_t goshmemi_htobe64(uint64_t v)
{
    return ((uint64_t)goshmemi_htobe32((uint32_t)v) << 32) | goshmemi_htobe32((uint32_t)(v >> 32));
}
#define goshmemi_be16toh goshmemi_htobe16
#define goshmemi_be32toh goshmemi_htobe32
#define goshmemi_be64toh goshmemi_htobe64

/* ---- ring addressing ----------------------------------------------------- */

/* Segment `seg` (16-byte units from the ctrl segment) of the WQE that starts
 * at WQEBB index `wqe_idx`, in an SQ ring of `sq_wqebb_cnt` (a power of 2)
 * basic blocks: a WQE that runs past the ring's end continues at its start.
 * Ref: mlx5 PRM "Send Queue": the SQ is a cyclic buffer of WQEBBs. */
GOSHMEMI_FN void *goshmemi_mlx5_sq_seg(void *sq_buf, uint32_t sq_wqebb_cnt, uint32_t wqe_idx, uint32_t seg)
{
    uint32_t mask = sq_wqebb_cnt * GOSHMEMI_MLX5_SEND_WQE_BB - 1;
    return (char *)sq_buf + (((wqe_idx << GOSHMEMI_MLX5_SEND_WQE_SHIFT) + seg * GOSHMEMI_MLX5_SEG_SIZE) & mask);
}

/* WQEBBs taken by a WQE of `ds` 16-byte segments. */
GOSHMEMI_FN uint32_t goshmemi_mlx5_ds_to_wqebb(uint32_t ds) { return (ds + 3) / 4; }

/* DS units of an inline segment carrying `len` payload bytes. */
GOSHMEMI_FN uint32_t goshmemi_mlx5_inl_ds(uint32_t len) { return (4 + len + 15) / 16; }

/* Store one 16-byte segment composed in registers (one st.v4.b32 on the GPU;
 * the segment is 16-byte aligned in the ring). */
GOSHMEMI_FN void goshmemi_mlx5_store_seg(void *seg, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3)
{
#if GOSHMEMI_CUDA
    *(uint4 *)seg = make_uint4(w0, w1, w2, w3);
#else
    uint32_t w[4] = {w0, w1, w2, w3};
    memcpy(seg, w, sizeof w);
#endif
}

/* ---- segment encoders ---------------------------------------------------- */

/* Control segment. Same contract as rdma-core's mlx5dv_set_ctrl_seg, except
 * that dci_stream_channel_id is written (0) so the whole 16 B is defined:
 * `wqe_index` is the WQEBB index (16-bit, wraps), `ds` counts every 16-byte
 * segment of the WQE including this one, `imm_be` is stored as given. */
GOSHMEMI_FN void goshmemi_mlx5_set_ctrl_seg(void *seg, uint16_t wqe_index, uint8_t opcode, uint8_t opmod,
                                            uint32_t qpn, uint8_t fm_ce_se, uint8_t ds, uint8_t signature,
                                            uint32_t imm_be)
{
    uint32_t opmod_idx_opcode = ((uint32_t)opmod << 24) | ((uint32_t)wqe_index << 8) | opcode;
    uint32_t qpn_ds = (qpn << 8) | ds;
    /* bytes 0x08..0x0b: signature, dci_stream_channel_id (2 B, 0), fm_ce_se */
    uint32_t dw2 = (uint32_t)signature | ((uint32_t)fm_ce_se << 24);
    goshmemi_mlx5_store_seg(seg, goshmemi_htobe32(opmod_idx_opcode), goshmemi_htobe32(qpn_ds), dw2, imm_be);
}

/* Remote address segment. */
GOSHMEMI_FN void goshmemi_mlx5_set_raddr_seg(void *seg, uint64_t raddr, uint32_t rkey)
{
    uint64_t be = goshmemi_htobe64(raddr);
    goshmemi_mlx5_store_seg(seg, (uint32_t)be, (uint32_t)(be >> 32), goshmemi_htobe32(rkey), 0);
}

/* Data (pointer) segment. Same bytes as mlx5dv_set_data_seg. */
GOSHMEMI_FN void goshmemi_mlx5_set_data_seg(void *seg, uint32_t byte_count, uint32_t lkey, uint64_t addr)
{
    uint64_t be = goshmemi_htobe64(addr);
    goshmemi_mlx5_store_seg(seg, goshmemi_htobe32(byte_count), goshmemi_htobe32(lkey), (uint32_t)be,
                            (uint32_t)(be >> 32));
}

/* Atomic segment (8-byte compare-and-swap / fetch-and-add operands). */
GOSHMEMI_FN void goshmemi_mlx5_set_atomic_seg(void *seg, uint64_t swap_add, uint64_t compare)
{
    uint64_t s = goshmemi_htobe64(swap_add), c = goshmemi_htobe64(compare);
    goshmemi_mlx5_store_seg(seg, (uint32_t)s, (uint32_t)(s >> 32), (uint32_t)c, (uint32_t)(c >> 32));
}

/* The payload of a one-segment inline WQE (len <= 12 bytes), loaded into
 * registers: words 1..3 of the segment. On the GPU no memcpy of a run-time
 * length (nvcc sends it through a local array, byte by byte, a large part
 * of a WQE's cost; docs/ibgda.md): an aligned 8 or 4 B payload is one load,
 * other lengths up to 12 independent predicated byte loads packed in
 * registers. */
GOSHMEMI_FN void goshmemi_mlx5_inl_small_load(const void *src, uint32_t len, uint32_t *p0, uint32_t *p1, uint32_t *p2)
{
#if GOSHMEMI_CUDA
    const unsigned char *s = (const unsigned char *)src;
    uint32_t a = 0, b = 0, c = 0, i;
    if (len == 8 && ((uintptr_t)s & 7u) == 0) {
        uint64_t v = *(const uint64_t *)s;
        a = (uint32_t)v;
        b = (uint32_t)(v >> 32);
    } else if (len == 4 && ((uintptr_t)s & 3u) == 0) {
        a = *(const uint32_t *)s;
    } else {
#pragma unroll
        for (i = 0; i < 12; i++) {
            uint32_t x = i < len ? (uint32_t)s[i] : 0u;
            if (i < 4)
                a |= x << (8 * i);
            else if (i < 8)
                b |= x << (8 * (i - 4));
            else
                c |= x << (8 * (i - 8));
        }
    }
    *p0 = a;
    *p1 = b;
    *p2 = c;
#else
    uint32_t w[3] = {0, 0, 0};
    memcpy(w, src, len);
    *p0 = w[0];
    *p1 = w[1];
    *p2 = w[2];
#endif
}

/* Inline data segment starting at segment `seg` of the WQE at `wqe_idx`:
 * byte_count|INLINE_SEG, then `len` payload bytes, zero-padded to 16 B. The
 * payload may run past the ring's end (it continues at the start, 16 B at a
 * time). Returns the DS units used (goshmemi_mlx5_inl_ds(len)). */
GOSHMEMI_FN uint32_t goshmemi_mlx5_set_inl_data_seg(void *sq_buf, uint32_t sq_wqebb_cnt, uint32_t wqe_idx,
                                                    uint32_t seg, const void *src, uint32_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    uint32_t units = goshmemi_mlx5_inl_ds(len);
    uint32_t u, pos = 0; /* pos: payload bytes emitted */
    if (len <= 12) { /* one segment, composed in registers (the common 8 B value) */
        uint32_t p0, p1, p2;
        goshmemi_mlx5_inl_small_load(src, len, &p0, &p1, &p2);
        goshmemi_mlx5_store_seg(goshmemi_mlx5_sq_seg(sq_buf, sq_wqebb_cnt, wqe_idx, seg),
                                goshmemi_htobe32(len | GOSHMEMI_MLX5_INLINE_SEG), p0, p1, p2);
        return units;
    }
    for (u = 0; u < units; u++) {
        uint32_t w[4];
        unsigned char *b = (unsigned char *)w;
        uint32_t i = 0;
        if (u == 0) {
            w[0] = goshmemi_htobe32(len | GOSHMEMI_MLX5_INLINE_SEG);
            i = 4;
        }
        for (; i < 16; i++)
            b[i] = pos < len ? s[pos++] : 0;
        goshmemi_mlx5_store_seg(goshmemi_mlx5_sq_seg(sq_buf, sq_wqebb_cnt, wqe_idx, seg + u), w[0], w[1], w[2],
                                w[3]);
    }
    return units;
}

/* ---- CQE readers ----------------------------------------------------------- */
GOSHMEMI_FN uint8_t goshmemi_mlx5_cqe_opcode(uint8_t op_own) { return op_own >> 4; }
GOSHMEMI_FN uint8_t goshmemi_mlx5_cqe_owner(uint8_t op_own) { return op_own & GOSHMEMI_MLX5_CQE_OWNER_MASK; }

/* Software ownership of the CQE at consumer index `ci` in a CQ of `cqe_cnt`
 * (power of 2) entries: hardware flips the owner bit it writes on every lap,
 * starting with 0, so the entry is new when owner == lap parity. Entries are
 * initialised with opcode INVALID (goshmemi_ibgda_cq_init), so the first lap
 * never mistakes a zeroed entry for a completion.
 * Ref: rdma-core providers/mlx5 get_sw_cqe(). */
GOSHMEMI_FN int goshmemi_mlx5_cqe_is_sw_owned(uint8_t op_own, uint64_t ci, uint32_t cqe_cnt)
{
    return goshmemi_mlx5_cqe_opcode(op_own) != GOSHMEMI_MLX5_CQE_INVALID &&
           goshmemi_mlx5_cqe_owner(op_own) == (uint8_t)((ci & cqe_cnt) != 0); /* (ci / cqe_cnt) & 1 */
}

#endif /* GOSHMEM_IBGDA_MLX5_H */
