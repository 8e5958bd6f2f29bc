/*
 * abi.h: the part of rdma-core's ABI (libibverbs.so.1, libmlx5.so.1) that
 * this package uses, declared here so that building goshmem needs neither
 * rdma-core's headers nor its libraries. The libraries are opened with
 * dlopen at run time (shim.c) when the IBGDA mlx5 path is asked for.
 *
 * Every name is the real one with a gv_ (types, functions) or GV_
 * (constants) prefix, so that abi_test.go can compile this file beside the
 * real headers and compare each struct's size, each field's offset and
 * size, and each constant. Fields of an enum type are declared int or
 * uint32_t (4 bytes, as GCC lays such an enum out). Padding that stands for
 * fields goshmem does not use is named gv_pad_<offset>.
 *
 * Ref: rdma-core v44 (Debian 12 libibverbs-dev 44.0-2)
 *   include/infiniband/verbs.h (libibverbs/verbs.h in the source tree),
 *   include/infiniband/mlx5dv.h (providers/mlx5/mlx5dv.h),
 *   include/infiniband/mlx5_user_ioctl_verbs.h (the UAR allocation types).
 */
#ifndef GOSHMEMI_VERBS_ABI_H
#define GOSHMEMI_VERBS_ABI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- libibverbs: objects goshmem only holds pointers to ---------------- */

struct gv_ibv_device;
struct gv_ibv_pd;
struct gv_ibv_cq;
struct gv_ibv_ah;
struct gv_ibv_comp_channel;

/* ---- libibverbs: layouts goshmem reads or fills ------------------------ */

/* Ref: verbs.h union ibv_gid (the two halves are big-endian). */
union gv_ibv_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};

/* Ref: verbs.h struct ibv_device_attr (filled by ibv_query_device). */
struct gv_ibv_device_attr {
	char fw_ver[64];
	uint64_t node_guid;      /* big-endian */
	uint64_t sys_image_guid; /* big-endian */
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	int atomic_cap; /* enum ibv_atomic_cap */
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};

/* Ref: verbs.h enum ibv_mtu. */
#define GV_IBV_MTU_256 1
#define GV_IBV_MTU_512 2
#define GV_IBV_MTU_1024 3
#define GV_IBV_MTU_2048 4
#define GV_IBV_MTU_4096 5

/* Ref: verbs.h enum ibv_port_state (the one goshmem needs). */
#define GV_IBV_PORT_ACTIVE 4

/* Ref: verbs.h, the anonymous enum of IBV_LINK_LAYER_*. */
#define GV_IBV_LINK_LAYER_INFINIBAND 1
#define GV_IBV_LINK_LAYER_ETHERNET 2

/* Ref: verbs.h struct ibv_port_attr (filled by ibv_query_port). The fields
 * from flags on are new since struct _compat_ibv_port_attr: the exported
 * ibv_query_port@IBVERBS_1.1 fills only the older prefix (shim.c). */
struct gv_ibv_port_attr {
	int state;      /* enum ibv_port_state */
	int max_mtu;    /* enum ibv_mtu */
	int active_mtu; /* enum ibv_mtu */
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
	uint16_t port_cap_flags2;
};

/* Ref: verbs.h enum ibv_access_flags (those goshmem sets); verbs_api.h
 * IBV_ACCESS_OPTIONAL_RANGE (rdma/ib_user_ioctl_verbs.h: bits 20..29):
 * flags in it make the header's ibv_reg_mr macro call ibv_reg_mr_iova2
 * instead of ibv_reg_mr (shim.h). */
#define GV_IBV_ACCESS_LOCAL_WRITE 1
#define GV_IBV_ACCESS_REMOTE_WRITE (1 << 1)
#define GV_IBV_ACCESS_REMOTE_READ (1 << 2)
#define GV_IBV_ACCESS_REMOTE_ATOMIC (1 << 3)
#define GV_IBV_ACCESS_OPTIONAL_RANGE 0x3ff00000

/* Ref: verbs.h struct ibv_mr (returned by ibv_reg_mr, ibv_reg_dmabuf_mr). */
struct gv_ibv_mr {
	struct gv_ibv_context *context;
	struct gv_ibv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

/* Ref: verbs.h struct ibv_global_route. */
struct gv_ibv_global_route {
	union gv_ibv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

/* Ref: verbs.h struct ibv_ah_attr. */
struct gv_ibv_ah_attr {
	struct gv_ibv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

/* Ref: verbs.h enum ibv_qp_type (the one goshmem creates). */
#define GV_IBV_QPT_RC 2

/* Ref: verbs.h struct ibv_qp_cap. */
struct gv_ibv_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* Ref: verbs.h enum ibv_qp_init_attr_mask (the one goshmem sets). */
#define GV_IBV_QP_INIT_ATTR_PD (1 << 0)

/* Ref: verbs.h struct ibv_rx_hash_conf. */
struct gv_ibv_rx_hash_conf {
	uint8_t rx_hash_function;
	uint8_t rx_hash_key_len;
	uint8_t *rx_hash_key;
	uint64_t rx_hash_fields_mask;
};

/* Ref: verbs.h struct ibv_qp_init_attr_ex. Its prefix up to sq_sig_all is
 * struct ibv_qp_init_attr, which ibv_create_qp takes (shim.h). */
struct gv_ibv_qp_init_attr_ex {
	void *qp_context;
	struct gv_ibv_cq *send_cq;
	struct gv_ibv_cq *recv_cq;
	void *srq; /* struct ibv_srq * */
	struct gv_ibv_qp_cap cap;
	int qp_type; /* enum ibv_qp_type */
	int sq_sig_all;
	uint32_t comp_mask;
	struct gv_ibv_pd *pd;
	void *xrcd; /* struct ibv_xrcd * */
	uint32_t create_flags;
	uint16_t max_tso_header;
	void *rwq_ind_tbl; /* struct ibv_rwq_ind_table * */
	struct gv_ibv_rx_hash_conf rx_hash_conf;
	uint32_t source_qpn;
	uint64_t send_ops_flags;
};

/* Ref: verbs.h enum ibv_qp_attr_mask (those goshmem sets). */
#define GV_IBV_QP_STATE (1 << 0)
#define GV_IBV_QP_ACCESS_FLAGS (1 << 3)
#define GV_IBV_QP_PKEY_INDEX (1 << 4)
#define GV_IBV_QP_PORT (1 << 5)
#define GV_IBV_QP_AV (1 << 7)
#define GV_IBV_QP_PATH_MTU (1 << 8)
#define GV_IBV_QP_TIMEOUT (1 << 9)
#define GV_IBV_QP_RETRY_CNT (1 << 10)
#define GV_IBV_QP_RNR_RETRY (1 << 11)
#define GV_IBV_QP_RQ_PSN (1 << 12)
#define GV_IBV_QP_MAX_QP_RD_ATOMIC (1 << 13)
#define GV_IBV_QP_MIN_RNR_TIMER (1 << 15)
#define GV_IBV_QP_SQ_PSN (1 << 16)
#define GV_IBV_QP_MAX_DEST_RD_ATOMIC (1 << 17)
#define GV_IBV_QP_DEST_QPN (1 << 20)

/* Ref: verbs.h enum ibv_qp_state. */
#define GV_IBV_QPS_RESET 0
#define GV_IBV_QPS_INIT 1
#define GV_IBV_QPS_RTR 2
#define GV_IBV_QPS_RTS 3

/* Ref: verbs.h struct ibv_qp_attr (ibv_modify_qp's argument). */
struct gv_ibv_qp_attr {
	int qp_state;       /* enum ibv_qp_state */
	int cur_qp_state;   /* enum ibv_qp_state */
	int path_mtu;       /* enum ibv_mtu */
	int path_mig_state; /* enum ibv_mig_state */
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct gv_ibv_qp_cap cap;
	struct gv_ibv_ah_attr ah_attr;
	struct gv_ibv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

/* Ref: verbs.h struct ibv_qp (created by libibverbs; goshmem reads qp_num). */
struct gv_ibv_qp {
	struct gv_ibv_context *context;
	void *qp_context;
	struct gv_ibv_pd *pd;
	struct gv_ibv_cq *send_cq;
	struct gv_ibv_cq *recv_cq;
	void *srq; /* struct ibv_srq * */
	uint32_t handle;
	uint32_t qp_num;
	int state;   /* enum ibv_qp_state */
	int qp_type; /* enum ibv_qp_type */
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
};

/* Ref: verbs.h struct ibv_context_ops: the provider's legacy entry points,
 * which goshmem never calls (only their size matters). */
struct gv_ibv_context_ops {
	void *gv_pad_0x0[32];
};

/* Ref: verbs.h struct ibv_context. abi_compat is __VERBS_ABI_IS_EXTENDED
 * when the context is the last field of a struct verbs_context. */
struct gv_ibv_context {
	struct gv_ibv_device *device;
	struct gv_ibv_context_ops ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
	pthread_mutex_t mutex;
	void *abi_compat;
};

/* Ref: verbs.h __VERBS_ABI_IS_EXTENDED (C definition). */
#define GV___VERBS_ABI_IS_EXTENDED ((void *)UINTPTR_MAX)

/* Ref: verbs.h struct verbs_context: the extended entry points the
 * header's static inlines call (ibv_query_port, ibv_create_qp_ex). It
 * "grows up": new entry points are added at the top, so an entry point is
 * present when sz (the provider's sizeof) reaches it, counted from the end
 * (verbs_get_ctx_op, shim.c). */
struct gv_verbs_context {
	int (*query_port)(struct gv_ibv_context *context, uint8_t port_num, struct gv_ibv_port_attr *port_attr,
			  size_t port_attr_len);
	void *gv_pad_0x8[32]; /* advise_mr .. open_qp */
	struct gv_ibv_qp *(*create_qp_ex)(struct gv_ibv_context *context,
					  struct gv_ibv_qp_init_attr_ex *qp_init_attr_ex);
	void *gv_pad_0x110[5]; /* get_srq_num .. _ABI_placeholder3 */
	size_t sz;
	struct gv_ibv_context context;
};

/* ---- libmlx5 (mlx5dv.h) ------------------------------------------------ */

struct gv_mlx5dv_devx_obj;

/* Ref: mlx5dv.h enum mlx5dv_context_attr_flags, struct mlx5dv_context_attr. */
#define GV_MLX5DV_CONTEXT_FLAGS_DEVX (1 << 0)
struct gv_mlx5dv_context_attr {
	uint32_t flags;
	uint64_t comp_mask;
};

/* Ref: mlx5_user_ioctl_verbs.h enum mlx5_ib_uapi_uar_alloc_type, which
 * mlx5_api.h names MLX5DV_UAR_ALLOC_TYPE_BF / _NC. */
#define GV_MLX5DV_UAR_ALLOC_TYPE_BF 0x0
#define GV_MLX5DV_UAR_ALLOC_TYPE_NC 0x1

/* Ref: mlx5dv.h struct mlx5dv_devx_uar. */
struct gv_mlx5dv_devx_uar {
	void *reg_addr;
	void *base_addr;
	uint32_t page_id;
	off_t mmap_off;
	uint64_t comp_mask;
};

/* Ref: mlx5dv.h struct mlx5dv_devx_umem. */
struct gv_mlx5dv_devx_umem {
	uint32_t umem_id;
};

/* Ref: mlx5dv.h enum mlx5dv_devx_umem_in_mask, struct mlx5dv_devx_umem_in
 * (dmabuf_fd and MLX5DV_UMEM_MASK_DMABUF are honoured by libmlx5 from
 * rdma-core v43; an older one refuses the mask with EOPNOTSUPP). */
#define GV_MLX5DV_UMEM_MASK_DMABUF (1 << 0)
struct gv_mlx5dv_devx_umem_in {
	void *addr;
	size_t size;
	uint32_t access;
	uint64_t pgsz_bitmap;
	uint64_t comp_mask;
	int dmabuf_fd;
};

/* Ref: mlx5dv.h struct mlx5dv_qp. */
struct gv_mlx5dv_qp {
	uint32_t *dbrec; /* big-endian words */
	struct {
		void *buf;
		uint32_t wqe_cnt;
		uint32_t stride;
	} sq;
	struct {
		void *buf;
		uint32_t wqe_cnt;
		uint32_t stride;
	} rq;
	struct {
		void *reg;
		uint32_t size;
	} bf;
	uint64_t comp_mask;
	off_t uar_mmap_offset;
	uint32_t tirn;
	uint32_t tisn;
	uint32_t rqn;
	uint32_t sqn;
	uint64_t tir_icm_addr;
};

/* Ref: mlx5dv.h struct mlx5dv_cq. */
struct gv_mlx5dv_cq {
	void *buf;
	uint32_t *dbrec; /* big-endian words */
	uint32_t cqe_cnt;
	uint32_t cqe_size;
	void *cq_uar;
	uint32_t cqn;
	uint64_t comp_mask;
};

/* Ref: mlx5dv.h struct mlx5_wqe_av (an address vector in PRM layout). */
struct gv_mlx5_wqe_av {
	union {
		struct {
			uint32_t qkey;
			uint32_t reserved;
		} qkey;
		uint64_t dc_key;
	} key;
	uint32_t dqp_dct;
	uint8_t stat_rate_sl;
	uint8_t fl_mlid;
	uint16_t rlid; /* big-endian; the UDP source port on RoCE */
	uint8_t reserved0[4];
	uint8_t rmac[6];
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t grh_gid_fl;
	uint8_t rgid[16];
};

/* Ref: mlx5dv.h struct mlx5dv_ah. */
struct gv_mlx5dv_ah {
	struct gv_mlx5_wqe_av *av;
	uint64_t comp_mask;
};

/* Ref: mlx5dv.h struct mlx5dv_pd. */
struct gv_mlx5dv_pd {
	uint32_t pdn;
	uint64_t comp_mask;
};

/* Ref: mlx5dv.h struct mlx5dv_obj (mlx5dv_init_obj's argument). goshmem
 * fills qp, cq, ah and pd; srq, rwq and dm are kept for the layout. */
struct gv_mlx5dv_obj {
	struct {
		struct gv_ibv_qp *in;
		struct gv_mlx5dv_qp *out;
	} qp;
	struct {
		struct gv_ibv_cq *in;
		struct gv_mlx5dv_cq *out;
	} cq;
	struct {
		void *in;
		void *out;
	} srq;
	struct {
		void *in;
		void *out;
	} rwq;
	struct {
		void *in;
		void *out;
	} dm;
	struct {
		struct gv_ibv_ah *in;
		struct gv_mlx5dv_ah *out;
	} ah;
	struct {
		struct gv_ibv_pd *in;
		struct gv_mlx5dv_pd *out;
	} pd;
};

/* Ref: mlx5dv.h enum mlx5dv_obj_type (those goshmem asks for). */
#define GV_MLX5DV_OBJ_QP (1 << 0)
#define GV_MLX5DV_OBJ_CQ (1 << 1)
#define GV_MLX5DV_OBJ_AH (1 << 5)
#define GV_MLX5DV_OBJ_PD (1 << 6)

/* ---- the functions, as the libraries export them ------------------------
 * X(name, version, return type, parameters): the symbol is resolved with
 * dlvsym(name, version), the version being the default (@@) one of
 * rdma-core v44 (nm -D --defined-only). Where the header wraps a call in
 * a macro or a static inline, shim.h says what it does instead.
 *
 * ibv_get_device_list: a plain function (the header's macro over it is for
 *   static linking, RDMA_STATIC_PROVIDERS, only).
 * ibv_query_port: the header's macro calls the static inline
 *   ___ibv_query_port, which uses the provider's verbs_context query_port
 *   and falls back to this exported one (struct _compat_ibv_port_attr).
 * ibv_reg_mr: the header's macro calls this exported one when the access
 *   flags are a constant without IBV_ACCESS_OPTIONAL_RANGE bits (goshmem's
 *   are), else ibv_reg_mr_iova2.
 * ibv_create_qp: what the header's static inline ibv_create_qp_ex calls
 *   when comp_mask is IBV_QP_INIT_ATTR_PD only; otherwise it takes
 *   verbs_context's create_qp_ex.
 */
#define GV_IBVERBS_FUNCS(X)                                                                                    \
	X(ibv_get_device_list, "IBVERBS_1.1", struct gv_ibv_device **, (int *num_devices))                      \
	X(ibv_free_device_list, "IBVERBS_1.1", void, (struct gv_ibv_device **list))                             \
	X(ibv_get_device_name, "IBVERBS_1.1", const char *, (struct gv_ibv_device *device))                     \
	X(ibv_open_device, "IBVERBS_1.1", struct gv_ibv_context *, (struct gv_ibv_device *device))              \
	X(ibv_close_device, "IBVERBS_1.1", int, (struct gv_ibv_context *context))                               \
	X(ibv_query_device, "IBVERBS_1.1", int,                                                                 \
	  (struct gv_ibv_context *context, struct gv_ibv_device_attr *device_attr))                             \
	X(ibv_query_port, "IBVERBS_1.1", int,                                                                   \
	  (struct gv_ibv_context *context, uint8_t port_num, struct gv_ibv_port_attr *compat_port_attr))        \
	X(ibv_query_gid, "IBVERBS_1.1", int,                                                                    \
	  (struct gv_ibv_context *context, uint8_t port_num, int index, union gv_ibv_gid *gid))                 \
	X(ibv_alloc_pd, "IBVERBS_1.1", struct gv_ibv_pd *, (struct gv_ibv_context *context))                    \
	X(ibv_dealloc_pd, "IBVERBS_1.1", int, (struct gv_ibv_pd *pd))                                           \
	X(ibv_reg_mr, "IBVERBS_1.1", struct gv_ibv_mr *, (struct gv_ibv_pd *pd, void *addr, size_t length,      \
							  int access))                                          \
	X(ibv_reg_dmabuf_mr, "IBVERBS_1.12", struct gv_ibv_mr *,                                                \
	  (struct gv_ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access))           \
	X(ibv_dereg_mr, "IBVERBS_1.1", int, (struct gv_ibv_mr *mr))                                             \
	X(ibv_create_cq, "IBVERBS_1.1", struct gv_ibv_cq *,                                                     \
	  (struct gv_ibv_context *context, int cqe, void *cq_context, struct gv_ibv_comp_channel *channel,      \
	   int comp_vector))                                                                                    \
	X(ibv_destroy_cq, "IBVERBS_1.1", int, (struct gv_ibv_cq *cq))                                           \
	X(ibv_create_qp, "IBVERBS_1.1", struct gv_ibv_qp *,                                                     \
	  (struct gv_ibv_pd *pd, struct gv_ibv_qp_init_attr_ex *qp_init_attr))                                  \
	X(ibv_destroy_qp, "IBVERBS_1.1", int, (struct gv_ibv_qp *qp))                                           \
	X(ibv_modify_qp, "IBVERBS_1.1", int, (struct gv_ibv_qp *qp, struct gv_ibv_qp_attr *attr, int attr_mask)) \
	X(ibv_create_ah, "IBVERBS_1.1", struct gv_ibv_ah *, (struct gv_ibv_pd *pd, struct gv_ibv_ah_attr *attr)) \
	X(ibv_destroy_ah, "IBVERBS_1.1", int, (struct gv_ibv_ah *ah))

#define GV_MLX5_FUNCS(X)                                                                                       \
	X(mlx5dv_is_supported, "MLX5_1.8", bool, (struct gv_ibv_device *device))                                \
	X(mlx5dv_open_device, "MLX5_1.7", struct gv_ibv_context *,                                              \
	  (struct gv_ibv_device *device, struct gv_mlx5dv_context_attr *attr))                                  \
	X(mlx5dv_init_obj, "MLX5_1.2", int, (struct gv_mlx5dv_obj *obj, uint64_t obj_type))                     \
	X(mlx5dv_devx_alloc_uar, "MLX5_1.7", struct gv_mlx5dv_devx_uar *,                                       \
	  (struct gv_ibv_context *context, uint32_t flags))                                                     \
	X(mlx5dv_devx_free_uar, "MLX5_1.7", void, (struct gv_mlx5dv_devx_uar *devx_uar))                       \
	X(mlx5dv_devx_query_eqn, "MLX5_1.7", int, (struct gv_ibv_context *context, uint32_t vector,             \
						   uint32_t *eqn))                                              \
	X(mlx5dv_devx_umem_reg_ex, "MLX5_1.19", struct gv_mlx5dv_devx_umem *,                                   \
	  (struct gv_ibv_context *ctx, struct gv_mlx5dv_devx_umem_in *umem_in))                                 \
	X(mlx5dv_devx_umem_dereg, "MLX5_1.7", int, (struct gv_mlx5dv_devx_umem *umem))                          \
	X(mlx5dv_devx_obj_create, "MLX5_1.7", struct gv_mlx5dv_devx_obj *,                                      \
	  (struct gv_ibv_context *context, const void *in, size_t inlen, void *out, size_t outlen))            \
	X(mlx5dv_devx_obj_modify, "MLX5_1.7", int,                                                              \
	  (struct gv_mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen))            \
	X(mlx5dv_devx_obj_destroy, "MLX5_1.7", int, (struct gv_mlx5dv_devx_obj *obj))

#endif
