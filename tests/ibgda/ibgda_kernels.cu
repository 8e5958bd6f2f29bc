// tests/ibgda/ibgda_kernels.cu: nvcc compile check of include/goshmem/ibgda/
// (encoders, one-thread / batch / warp posting, CQ polling, quiet) and of the
// device API's IBGDA backend (ibgda/backend.h). Built to an sm_90 fatbin;
// never launched here (no NIC). Ordering mode from -D.
#include <goshmem/ibgda/ibgda.h>
#include <goshmem/ibgda/backend.h>

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

// The six backend calls the remote dispatch makes (state from the module's
// device state's ibgda_state).
extern "C" __global__ void ibgda_backend(int pe, uint64_t off, char *heap_src, uint64_t *out)
{
    char buf[600];
    for (int i = 0; i < 600; i++)
        buf[i] = (char)i;
    goshmemi_ibgda_put(0, pe, off, buf, 8, 0);
    goshmemi_ibgda_put(0, pe, off, buf, sizeof buf, 1);
    goshmemi_ibgda_put(1, pe, off, heap_src, 4096, 0);
    goshmemi_ibgda_get(0, pe, buf, off, sizeof buf, 0);
    goshmemi_ibgda_get(0, pe, heap_src, off, 4096, 1);
    out[0] = goshmemi_ibgda_amo(0, pe, off, GOSHMEMI_AMO_ADD, 8, 1, 0, 1);
    out[1] = goshmemi_ibgda_amo(0, pe, off, GOSHMEMI_AMO_CSWAP, 8, 2, 1, 1);
    out[2] = goshmemi_ibgda_amo(0, pe, off + 4, GOSHMEMI_AMO_XOR, 4, 3, 0, 1);
    goshmemi_ibgda_put_signal(0, pe, off, heap_src, 4096, off + 8192, 1, GOSHMEM_SIGNAL_ADD, 1);
    goshmemi_ibgda_put_signal(1, pe, off, buf, 16, off + 8192, 5, GOSHMEM_SIGNAL_SET, 0);
    goshmemi_ibgda_fence(0);
    goshmemi_ibgda_fence(-1);
    goshmemi_ibgda_quiet(0);
    goshmemi_ibgda_quiet(-1);
    out[3] = (uint64_t)buf[7];
}
