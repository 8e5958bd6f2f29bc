/* goshmem's real-mlx5 IBGDA setup (rdma-core libibverbs + libmlx5): the
 * device, PD and devx UAR; RC QPs with their CQ in host memory, exposed
 * through mlx5dv_init_obj; memory registration (dma-buf or plain); the QP
 * state machine; the 8-byte doorbell store of the CPU-assisted mode; and,
 * for queues in GPU memory, devx: a context opened with
 * MLX5DV_CONTEXT_FLAGS_DEVX, umems registered from a dma-buf, CQ/QP objects
 * created and modified with PRM mailboxes built by the Go side
 * (internal/mlx5prm), the RoCE next-hop MAC read from an AH.
 *
 * Every function returns 0 or an errno and, on failure, sets *call to the
 * name of the rdma-core call that failed (static storage). rdma-core is
 * reached through gv_lib (shim.h), which gv_load must have filled.
 *
 * Ref: rdma-core 44 <infiniband/verbs.h>, <infiniband/mlx5dv.h> (declared
 * in abi.h). */
#ifndef GOSHMEMI_VERBS_MLX5_H
#define GOSHMEMI_VERBS_MLX5_H

#include <stdint.h>

#include "shim.h"

typedef struct gv_ctx {
	struct gv_ibv_context *ctx;
	struct gv_ibv_pd *pd;
	struct gv_mlx5dv_devx_uar *uar; /* NULL when devx UAR allocation failed (uar_errno) */
	int uar_nc;                  /* the devx UAR is non-cached (else BlueFlame) */
	int uar_errno;
	int port, gid_index;
	int eth;                     /* link layer Ethernet (RoCE) */
	uint16_t lid;
	uint8_t active_mtu;
	uint8_t gid[16];
	int max_qp_rd_atom, max_qp_init_rd_atom, max_qp_wr, max_cqe;
	char name[64];
	/* devx (gv_open with devx set): opened by mlx5dv_open_device(DEVX);
	 * devx_errno says why not (then ibv_open_device opened it) */
	int devx, devx_errno;
	uint32_t pdn;        /* mlx5dv_init_obj(PD) */
	uint32_t eqn;        /* mlx5dv_devx_query_eqn(vector 0) */
	int eqn_errno;
	uint32_t uar_page_id;
} gv_ctx_t;

typedef struct gv_qp {
	struct gv_ibv_cq *cq;
	struct gv_ibv_qp *qp;
	uint32_t qpn;
	/* mlx5dv_init_obj: the send queue, its doorbell record and BlueFlame
	 * register; the CQ ring and its doorbell record */
	void *sq_buf;
	uint32_t sq_wqe_cnt, sq_stride;
	void *dbrec;
	void *bf_reg;
	uint32_t bf_size;
	void *cq_buf;
	uint32_t cqe_cnt, cqe_size;
	void *cq_dbrec;
	uint32_t cqn;
	/* devx QP/CQ (queues in a umem): no ibv_qp/ibv_cq */
	struct gv_mlx5dv_devx_obj *dqp, *dcq;
} gv_qp_t;

typedef struct gv_remote {
	uint32_t qpn;
	uint16_t lid;
	uint8_t gid[16];
	uint8_t mtu;
	int eth;
} gv_remote_t;

int gv_open(const char *want, int port, int gid_index, int devx, gv_ctx_t *c, const char **call);
void gv_close(gv_ctx_t *c);
int gv_create_qp(gv_ctx_t *c, uint32_t sq_wqebbs, uint32_t cqes, uint32_t max_inline, gv_qp_t *q,
		 const char **call);
void gv_destroy_qp(gv_qp_t *q);
int gv_connect(gv_ctx_t *c, gv_qp_t *q, const gv_remote_t *r, const char **call);
int gv_reg_dmabuf(gv_ctx_t *c, int fd, uint64_t offset, uint64_t len, uint64_t iova, struct gv_ibv_mr **mr,
		  const char **call);
int gv_reg_mr(gv_ctx_t *c, uintptr_t addr, uint64_t len, struct gv_ibv_mr **mr, const char **call);
int gv_dereg_mr(struct gv_ibv_mr *mr);
void gv_ring(uintptr_t reg, uint64_t v);

int gv_umem_reg_dmabuf(gv_ctx_t *c, int fd, uint64_t offset, uint64_t len, struct gv_mlx5dv_devx_umem **umem,
		       const char **call);
int gv_umem_dereg(struct gv_mlx5dv_devx_umem *umem);
int gv_devx_create(gv_ctx_t *c, const void *in, size_t inlen, void *out, size_t outlen,
		   struct gv_mlx5dv_devx_obj **obj, const char **call);
int gv_devx_modify(struct gv_mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen);
int gv_devx_destroy(struct gv_mlx5dv_devx_obj *obj);
int gv_roce_next_hop(gv_ctx_t *c, const uint8_t *dgid, uint8_t hop_limit, uint8_t *rmac, uint16_t *udp_sport,
		     const char **call);

#endif
