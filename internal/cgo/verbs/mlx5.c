#include <errno.h>
#include <endian.h>
#include <string.h>
#include "mlx5.h"

/* The access of the heap MR and the QPs: remote writes, reads and atomics
 * (the device API's put, get and AMOs). */
#define GV_ACCESS (GV_IBV_ACCESS_LOCAL_WRITE | GV_IBV_ACCESS_REMOTE_WRITE | GV_IBV_ACCESS_REMOTE_READ | \
		   GV_IBV_ACCESS_REMOTE_ATOMIC)
/* verbs.h's ibv_reg_mr macro calls the exported ibv_reg_mr for constant
 * flags without optional bits, as gv_reg_mr does. */
_Static_assert((GV_ACCESS & GV_IBV_ACCESS_OPTIONAL_RANGE) == 0, "GV_ACCESS needs ibv_reg_mr_iova2");

static int gv_errno(int fallback) { return errno ? errno : fallback; }

int gv_open(const char *want, int port, int gid_index, int devx, gv_ctx_t *c, const char **call)
{
	struct gv_ibv_device **list;
	struct gv_ibv_device_attr attr;
	struct gv_ibv_port_attr pa;
	union gv_ibv_gid gid;
	int i, n = 0, rc;

	memset(c, 0, sizeof *c);
	c->port = port;
	c->gid_index = gid_index;
	errno = 0;
	list = gv_lib.ibv_get_device_list(&n);
	if (!list) {
		*call = "ibv_get_device_list";
		return gv_errno(ENODEV);
	}
	for (i = 0; i < n; i++) {
		if (!gv_lib.mlx5dv_is_supported(list[i]))
			continue;
		if (want && want[0] && strcmp(want, gv_lib.ibv_get_device_name(list[i])) != 0)
			continue;
		strncpy(c->name, gv_lib.ibv_get_device_name(list[i]), sizeof c->name - 1);
		if (devx) {
			/* devx objects need a context with a devx uid
			 * (Ref: mlx5dv_open_device(3), MLX5DV_CONTEXT_FLAGS_DEVX) */
			struct gv_mlx5dv_context_attr da;
			memset(&da, 0, sizeof da);
			da.flags = GV_MLX5DV_CONTEXT_FLAGS_DEVX;
			errno = 0;
			c->ctx = gv_lib.mlx5dv_open_device(list[i], &da);
			c->devx = c->ctx != NULL;
			if (!c->ctx)
				c->devx_errno = gv_errno(EOPNOTSUPP);
			else
				break;
		}
		errno = 0;
		c->ctx = gv_lib.ibv_open_device(list[i]);
		if (!c->ctx) {
			gv_lib.ibv_free_device_list(list);
			*call = "ibv_open_device";
			return gv_errno(EIO);
		}
		break;
	}
	gv_lib.ibv_free_device_list(list);
	if (!c->ctx) {
		*call = "mlx5dv_is_supported";
		return ENODEV;
	}
	if ((rc = gv_lib.ibv_query_device(c->ctx, &attr)) != 0) {
		*call = "ibv_query_device";
		goto fail;
	}
	c->max_qp_rd_atom = attr.max_qp_rd_atom;
	c->max_qp_init_rd_atom = attr.max_qp_init_rd_atom;
	c->max_qp_wr = attr.max_qp_wr;
	c->max_cqe = attr.max_cqe;
	if (port < 1 || port > attr.phys_port_cnt) {
		*call = "ibv_query_device (port number)";
		rc = EINVAL;
		goto fail;
	}
	if ((rc = gv_ibv_query_port(c->ctx, (uint8_t)port, &pa)) != 0) {
		*call = "ibv_query_port";
		goto fail;
	}
	if (pa.state != GV_IBV_PORT_ACTIVE) {
		*call = "ibv_query_port (port not ACTIVE)";
		rc = ENETDOWN;
		goto fail;
	}
	c->eth = pa.link_layer == GV_IBV_LINK_LAYER_ETHERNET;
	c->lid = pa.lid;
	c->active_mtu = (uint8_t)pa.active_mtu;
	if (c->eth || gid_index > 0) {
		if ((rc = gv_lib.ibv_query_gid(c->ctx, (uint8_t)port, gid_index, &gid)) != 0) {
			*call = "ibv_query_gid";
			goto fail;
		}
		memcpy(c->gid, gid.raw, 16);
	}
	errno = 0;
	c->pd = gv_lib.ibv_alloc_pd(c->ctx);
	if (!c->pd) {
		*call = "ibv_alloc_pd";
		rc = gv_errno(ENOMEM);
		goto fail;
	}
	/* The devx UAR (for QPs whose doorbells the GPU rings through a UAR
	 * goshmem owns): non-cached first, as NVSHMEM does, BlueFlame
	 * (write-combining) where NC is not offered. Not fatal: QPs created
	 * by ibv_create_qp_ex use the UAR page rdma-core gave them. */
	errno = 0;
	c->uar = gv_lib.mlx5dv_devx_alloc_uar(c->ctx, GV_MLX5DV_UAR_ALLOC_TYPE_NC);
	c->uar_nc = c->uar != NULL;
	if (!c->uar) {
		errno = 0;
		c->uar = gv_lib.mlx5dv_devx_alloc_uar(c->ctx, GV_MLX5DV_UAR_ALLOC_TYPE_BF);
	}
	if (!c->uar)
		c->uar_errno = gv_errno(EOPNOTSUPP);
	else
		c->uar_page_id = c->uar->page_id;
	if (c->devx) {
		struct gv_mlx5dv_obj obj;
		struct gv_mlx5dv_pd dpd;
		memset(&obj, 0, sizeof obj);
		memset(&dpd, 0, sizeof dpd);
		obj.pd.in = c->pd;
		obj.pd.out = &dpd;
		if ((rc = gv_lib.mlx5dv_init_obj(&obj, GV_MLX5DV_OBJ_PD)) != 0) {
			*call = "mlx5dv_init_obj(PD)";
			goto fail;
		}
		c->pdn = dpd.pdn;
		c->eqn_errno = gv_lib.mlx5dv_devx_query_eqn(c->ctx, 0, &c->eqn);
	}
	return 0;
fail:
	gv_close(c);
	return rc ? rc : EIO;
}

void gv_close(gv_ctx_t *c)
{
	if (c->uar)
		gv_lib.mlx5dv_devx_free_uar(c->uar);
	if (c->pd)
		gv_lib.ibv_dealloc_pd(c->pd);
	if (c->ctx)
		gv_lib.ibv_close_device(c->ctx);
	c->uar = NULL;
	c->pd = NULL;
	c->ctx = NULL;
}

int gv_create_qp(gv_ctx_t *c, uint32_t sq_wqebbs, uint32_t cqes, uint32_t max_inline, gv_qp_t *q,
		 const char **call)
{
	struct gv_ibv_qp_init_attr_ex ia;
	struct gv_mlx5dv_obj obj;
	struct gv_mlx5dv_qp dqp;
	struct gv_mlx5dv_cq dcq;
	int rc;

	memset(q, 0, sizeof *q);
	errno = 0;
	q->cq = gv_lib.ibv_create_cq(c->ctx, (int)cqes, NULL, NULL, 0);
	if (!q->cq) {
		*call = "ibv_create_cq";
		return gv_errno(ENOMEM);
	}
	memset(&ia, 0, sizeof ia);
	ia.qp_type = GV_IBV_QPT_RC;
	ia.send_cq = q->cq;
	ia.recv_cq = q->cq;
	ia.sq_sig_all = 0; /* selective completion: fm_ce_se decides */
	ia.cap.max_send_wr = sq_wqebbs;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = max_inline;
	ia.comp_mask = GV_IBV_QP_INIT_ATTR_PD;
	ia.pd = c->pd;
	errno = 0;
	q->qp = gv_ibv_create_qp_ex(c->ctx, &ia);
	if (!q->qp) {
		*call = "ibv_create_qp_ex";
		rc = gv_errno(ENOMEM);
		goto fail;
	}
	q->qpn = q->qp->qp_num;
	memset(&obj, 0, sizeof obj);
	memset(&dqp, 0, sizeof dqp);
	memset(&dcq, 0, sizeof dcq);
	obj.qp.in = q->qp;
	obj.qp.out = &dqp;
	obj.cq.in = q->cq;
	obj.cq.out = &dcq;
	if ((rc = gv_lib.mlx5dv_init_obj(&obj, GV_MLX5DV_OBJ_QP | GV_MLX5DV_OBJ_CQ)) != 0) {
		*call = "mlx5dv_init_obj";
		goto fail;
	}
	q->sq_buf = dqp.sq.buf;
	q->sq_wqe_cnt = dqp.sq.wqe_cnt;
	q->sq_stride = dqp.sq.stride;
	q->dbrec = dqp.dbrec;
	q->bf_reg = dqp.bf.reg;
	q->bf_size = dqp.bf.size;
	q->cq_buf = dcq.buf;
	q->cqe_cnt = dcq.cqe_cnt;
	q->cqe_size = dcq.cqe_size;
	q->cq_dbrec = dcq.dbrec;
	q->cqn = dcq.cqn;
	return 0;
fail:
	gv_destroy_qp(q);
	return rc ? rc : EIO;
}

void gv_destroy_qp(gv_qp_t *q)
{
	if (q->dqp)
		gv_lib.mlx5dv_devx_obj_destroy(q->dqp);
	if (q->dcq)
		gv_lib.mlx5dv_devx_obj_destroy(q->dcq);
	q->dqp = NULL;
	q->dcq = NULL;
	if (q->qp)
		gv_lib.ibv_destroy_qp(q->qp);
	if (q->cq)
		gv_lib.ibv_destroy_cq(q->cq);
	q->qp = NULL;
	q->cq = NULL;
}

/* RESET -> INIT -> RTR -> RTS. RoCE addresses the peer by GID (a global
 * route from our GID index), InfiniBand by LID. PSNs start at 0 on both
 * sides; the path MTU is the smaller of both ports' active MTUs.
 * Ref: ibv_modify_qp(3), the RC attribute masks of each transition. */
int gv_connect(gv_ctx_t *c, gv_qp_t *q, const gv_remote_t *r, const char **call)
{
	struct gv_ibv_qp_attr a;
	int rc, rd = c->max_qp_rd_atom < 16 ? c->max_qp_rd_atom : 16;
	int init_rd = c->max_qp_init_rd_atom < 16 ? c->max_qp_init_rd_atom : 16;

	memset(&a, 0, sizeof a);
	a.qp_state = GV_IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)c->port;
	a.qp_access_flags = GV_ACCESS;
	if ((rc = gv_lib.ibv_modify_qp(q->qp, &a, GV_IBV_QP_STATE | GV_IBV_QP_PKEY_INDEX | GV_IBV_QP_PORT | GV_IBV_QP_ACCESS_FLAGS))) {
		*call = "ibv_modify_qp(RESET->INIT)";
		return rc;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = GV_IBV_QPS_RTR;
	a.path_mtu = (int)(r->mtu && r->mtu < c->active_mtu ? r->mtu : c->active_mtu);
	a.dest_qp_num = r->qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = (uint8_t)(rd > 0 ? rd : 1);
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = (uint8_t)c->port;
	a.ah_attr.sl = 0;
	if (c->eth) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
		a.ah_attr.grh.hop_limit = 64; /* RoCE v2 may cross IP routers */
	} else {
		a.ah_attr.dlid = r->lid;
	}
	if ((rc = gv_lib.ibv_modify_qp(q->qp, &a,
				GV_IBV_QP_STATE | GV_IBV_QP_AV | GV_IBV_QP_PATH_MTU | GV_IBV_QP_DEST_QPN | GV_IBV_QP_RQ_PSN |
					GV_IBV_QP_MAX_DEST_RD_ATOMIC | GV_IBV_QP_MIN_RNR_TIMER))) {
		*call = "ibv_modify_qp(INIT->RTR)";
		return rc;
	}
	memset(&a, 0, sizeof a);
	a.qp_state = GV_IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = (uint8_t)(init_rd > 0 ? init_rd : 1);
	if ((rc = gv_lib.ibv_modify_qp(q->qp, &a,
				GV_IBV_QP_STATE | GV_IBV_QP_TIMEOUT | GV_IBV_QP_RETRY_CNT | GV_IBV_QP_RNR_RETRY | GV_IBV_QP_SQ_PSN |
					GV_IBV_QP_MAX_QP_RD_ATOMIC))) {
		*call = "ibv_modify_qp(RTR->RTS)";
		return rc;
	}
	return 0;
}

int gv_reg_dmabuf(gv_ctx_t *c, int fd, uint64_t offset, uint64_t len, uint64_t iova, struct gv_ibv_mr **mr,
		  const char **call)
{
	errno = 0;
	*mr = gv_lib.ibv_reg_dmabuf_mr(c->pd, offset, len, iova, fd, GV_ACCESS);
	if (!*mr) {
		*call = "ibv_reg_dmabuf_mr";
		return gv_errno(EOPNOTSUPP);
	}
	return 0;
}

int gv_reg_mr(gv_ctx_t *c, uintptr_t addr, uint64_t len, struct gv_ibv_mr **mr, const char **call)
{
	errno = 0;
	*mr = gv_lib.ibv_reg_mr(c->pd, (void *)addr, len, GV_ACCESS);
	if (!*mr) {
		*call = "ibv_reg_mr";
		return gv_errno(EFAULT);
	}
	return 0;
}

int gv_dereg_mr(struct gv_ibv_mr *mr) { return gv_lib.ibv_dereg_mr(mr); }

/* The CPU-assisted doorbell: the WQEs and the doorbell record are already
 * visible (the ringer loaded the record with acquire semantics after the
 * posters' system-scope release); order that load and every earlier access
 * before the MMIO store, store the 8 bytes in one access, and flush it out
 * of the write-combining buffer (a BlueFlame page is mapped WC).
 * Ref: rdma-core util/mmio.h + udma_barrier.h: udma_to_device_barrier(),
 * mmio_write64_be(), mmio_flush_writes() around mlx5_post_send's doorbell. */
void gv_ring(uintptr_t reg, uint64_t v)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*(volatile uint64_t *)(void *)reg = v;
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dsb st" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- devx: queues in a umem (GPU memory registered by dma-buf) ---------- */

/* Register len bytes at offset of the dma-buf fd as a devx umem the NIC
 * reads WQEs from and writes CQEs and doorbell records to, with 4 KiB
 * pages (the CQ/QP's log_page_size 0). The umem holds its own reference
 * to the dma-buf: the caller may close fd afterwards.
 * libmlx5 before rdma-core v43 refuses the mask with EOPNOTSUPP.
 * Ref: mlx5dv_devx_umem_reg(3): with MLX5DV_UMEM_MASK_DMABUF, addr is the
 * offset in the dma-buf. */
int gv_umem_reg_dmabuf(gv_ctx_t *c, int fd, uint64_t offset, uint64_t len, struct gv_mlx5dv_devx_umem **umem,
		       const char **call)
{
	struct gv_mlx5dv_devx_umem_in in;
	memset(&in, 0, sizeof in);
	in.addr = (void *)(uintptr_t)offset;
	in.size = len;
	in.access = GV_IBV_ACCESS_LOCAL_WRITE;
	in.pgsz_bitmap = 4096;
	in.comp_mask = GV_MLX5DV_UMEM_MASK_DMABUF;
	in.dmabuf_fd = fd;
	errno = 0;
	*umem = gv_lib.mlx5dv_devx_umem_reg_ex(c->ctx, &in);
	if (!*umem) {
		*call = "mlx5dv_devx_umem_reg_ex(dma-buf)";
		return gv_errno(EOPNOTSUPP);
	}
	return 0;
}

int gv_umem_dereg(struct gv_mlx5dv_devx_umem *umem) { return gv_lib.mlx5dv_devx_umem_dereg(umem); }

/* A devx object from a PRM create mailbox; out holds the firmware's status
 * and syndrome when it fails. The kernel derives the destroy command. */
int gv_devx_create(gv_ctx_t *c, const void *in, size_t inlen, void *out, size_t outlen,
		   struct gv_mlx5dv_devx_obj **obj, const char **call)
{
	errno = 0;
	*obj = gv_lib.mlx5dv_devx_obj_create(c->ctx, in, inlen, out, outlen);
	if (!*obj) {
		*call = "mlx5dv_devx_obj_create";
		return gv_errno(EIO);
	}
	return 0;
}

int gv_devx_modify(struct gv_mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
{
	return gv_lib.mlx5dv_devx_obj_modify(obj, in, inlen, out, outlen);
}

int gv_devx_destroy(struct gv_mlx5dv_devx_obj *obj) { return gv_lib.mlx5dv_devx_obj_destroy(obj); }

/* RoCE: the next hop's MAC and the UDP source port for dgid, as rdma-core
 * resolves them for an address handle (the kernel resolves them for
 * ibv_modify_qp; a devx INIT2RTR must carry them). The AH is created from
 * our GID index and destroyed at once.
 * Ref: mlx5dv.h struct mlx5_wqe_av (rmac; rlid holds the UDP source port
 * on RoCE), mlx5dv_init_obj(3) MLX5DV_OBJ_AH. */
int gv_roce_next_hop(gv_ctx_t *c, const uint8_t *dgid, uint8_t hop_limit, uint8_t *rmac, uint16_t *udp_sport,
		     const char **call)
{
	struct gv_ibv_ah_attr aa;
	struct gv_ibv_ah *ah;
	struct gv_mlx5dv_obj obj;
	struct gv_mlx5dv_ah dah;
	int rc;

	memset(&aa, 0, sizeof aa);
	aa.is_global = 1;
	aa.port_num = (uint8_t)c->port;
	memcpy(aa.grh.dgid.raw, dgid, 16);
	aa.grh.sgid_index = (uint8_t)c->gid_index;
	aa.grh.hop_limit = hop_limit;
	errno = 0;
	ah = gv_lib.ibv_create_ah(c->pd, &aa);
	if (!ah) {
		*call = "ibv_create_ah (RoCE next hop)";
		return gv_errno(EHOSTUNREACH);
	}
	memset(&obj, 0, sizeof obj);
	memset(&dah, 0, sizeof dah);
	obj.ah.in = ah;
	obj.ah.out = &dah;
	if ((rc = gv_lib.mlx5dv_init_obj(&obj, GV_MLX5DV_OBJ_AH)) != 0 || !dah.av) {
		gv_lib.ibv_destroy_ah(ah);
		*call = "mlx5dv_init_obj(AH)";
		return rc ? rc : EIO;
	}
	memcpy(rmac, dah.av->rmac, 6);
	*udp_sport = be16toh(dah.av->rlid);
	gv_lib.ibv_destroy_ah(ah);
	return 0;
}
