/* goshmem IBGDA (InfiniBand GPU Direct Async) device path, mlx5 flavour:
 * GPU threads build mlx5 send WQEs in a GPU-resident SQ, ring the NIC's
 * doorbell themselves and poll a GPU-resident CQ.
 *
 *   #include <goshmem/ibgda/ibgda.h>
 *
 * Files:
 *   goshmem/ibgda/mlx5.h      PRM layouts (ctrl/raddr/data/inline/atomic segments,
 *                             cqe64, err_cqe), constants, segment encoders, CQE ownership
 *   goshmem/ibgda/ordering.h  goshmemi_ibgda_release_dbr, goshmemi_ibgda_release_db,
 *                             goshmemi_cqe_owner_to_read_barrier; GOSHMEM_IBGDA_ORDER_GPU
 *                             (default) / _SYS / _NONE
 *   goshmem/ibgda/qp.h        goshmemi_ibgda_qp_t, WQE build, post (one thread, batch,
 *                             warp), CQ poll, per-QP and PE-wide quiet, put/get/amo/signal
 *
 * Compiles under nvcc (device functions) and as host C11/C++17, where the
 * soft NIC (Go package github.com/goshmem/goshmem/ibgda, an emulation)
 * consumes the same bytes: tests/ibgda/.
 */
#ifndef GOSHMEM_IBGDA_H
#define GOSHMEM_IBGDA_H

#include "mlx5.h"
#include "ordering.h"
#include "qp.h"

#endif /* GOSHMEM_IBGDA_H */
