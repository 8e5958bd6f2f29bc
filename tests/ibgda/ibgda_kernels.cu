// tests/ibgda/ibgda_kernels.cu: nvcc compile check of include/goshmem/ibgda/
// (encoders, one-thread / batch / warp posting, CQ polling, quiet). Built to
// an sm_90 fatbin; never launched here (no NIC). Ordering mode from -D.
#include <goshmem/ibgda/ibgda.h>

extern "C" __global__ void ibgda_put_quiet(goshmemi_ibgda_qp_t *qp, uint64_t raddr, uint32_t rkey, int *rc)
{
    uint64_t v = threadIdx.x;
    int r = goshmemi_ibgda_qp_put_inline(qp, raddr + 8 * threadIdx.x, rkey, &v, 8, 0);
    r |= goshmemi_ibgda_qp_quiet(qp);
    rc[threadIdx.x] = r;
}

extern "C" __global__ void ibgda_warp(goshmemi_ibgda_qp_t *qp, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                      uint32_t rkey, int *rc)
{
    goshmemi_ibgda_op_t op = goshmemi_ibgda_op_make(GOSHMEMI_MLX5_OPCODE_RDMA_WRITE, laddr + 8 * threadIdx.x, lkey,
                                                   raddr + 8 * threadIdx.x, rkey, 8, 0, 0);
    rc[threadIdx.x] = goshmemi_ibgda_post_warp(qp, &op);
}

extern "C" __global__ void ibgda_amo_signal(goshmemi_ibgda_qp_t *qp, goshmemi_ibgda_qp_t **all, int n, uint64_t laddr,
                                            uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t sig, int *rc)
{
    goshmemi_ibgda_op_t ops[2];
    ops[0] = goshmemi_ibgda_op_amo(GOSHMEMI_MLX5_OPCODE_ATOMIC_FA, laddr, lkey, raddr, rkey, 1, 0, 0);
    ops[1] = goshmemi_ibgda_op_amo(GOSHMEMI_MLX5_OPCODE_ATOMIC_CS, laddr + 8, lkey, raddr + 8, rkey, 2, 1, 1);
    int r = goshmemi_ibgda_post_batch(qp, ops, 2);
    r |= goshmemi_ibgda_qp_get(qp, laddr + 16, lkey, raddr + 16, rkey, 64, 0);
    r |= goshmemi_ibgda_qp_put_signal(qp, laddr, lkey, raddr, rkey, 64, 0, sig, rkey, 1, GOSHMEM_SIGNAL_ADD, 0);
    r |= goshmemi_ibgda_qp_put_signal(qp, laddr, lkey, raddr, rkey, 8, 1, sig, rkey, 1, GOSHMEM_SIGNAL_SET, 0);
    r |= goshmemi_ibgda_qp_quiet_all(all, n);
    r |= goshmemi_ibgda_poll_cq(qp) < 0;
    *rc = r;
}
