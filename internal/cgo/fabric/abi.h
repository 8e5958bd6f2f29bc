/*
 * abi.h: the part of libfabric's ABI that this package uses, declared here
 * so that building goshmem needs no libfabric headers. libfabric is loaded
 * at run time (loader.c); only what shim.c and trigger.c touch is declared.
 *
 * libfabric exports a handful of functions (fi_getinfo, fi_freeinfo,
 * fi_dupinfo, fi_fabric, fi_strerror, fi_version); everything else is a
 * static inline call through an object's ops tables, re-implemented in
 * ops.h against the tables declared here.
 *
 * Layouts are those of ABI FABRIC_1.3, the default symbol version of
 * fi_getinfo, fi_freeinfo and fi_dupinfo from libfabric 1.9 through 1.17
 * (Debian 12). Newer libraries append fields and add FABRIC_1.7 and later
 * versions of these calls, but keep the FABRIC_1.3 ones; the loader binds
 * those by version (dlvsym), so the fi_info read here always has this
 * layout. fi_fabric is bound at FABRIC_1.1, fi_strerror and fi_version at
 * FABRIC_1.0: the versions these layouts and calls come from.
 *
 * Ops tables are declared up to the last member goshmem calls; earlier
 * members it never calls are untyped slots (void *) of the same size.
 * Structs goshmem allocates (attributes, messages, deferred work) are
 * declared whole.
 *
 * Ref: libfabric 1.17.0 include/rdma/fabric.h, fi_domain.h, fi_endpoint.h,
 *      fi_rma.h, fi_atomic.h, fi_cm.h, fi_eq.h, fi_trigger.h, fi_errno.h;
 *      src/abi_1_0.c and libfabric.map.in (the FABRIC_1.x symbol versions);
 *      prov/cxi/include/fi_cxi_ext.h (the CXI counter ops).
 * abi_test.go checks every size, offset and value against the real headers.
 */
#ifndef GOSHMEMI_FABRIC_ABI_H
#define GOSHMEMI_FABRIC_ABI_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The API version goshmem asks fi_getinfo and fi_fabric for, and the
 * oldest library it loads. Ref: fabric.h FI_VERSION. */
#define GOSHMEMI_FI_VERSION(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
#define GOSHMEMI_FI_API_VERSION GOSHMEMI_FI_VERSION(1, 14)
/* The symbol versions the layouts below belong to (loader.c). */
#define GOSHMEMI_FI_SYMVER_INFO "FABRIC_1.3"   /* fi_getinfo, fi_freeinfo, fi_dupinfo */
#define GOSHMEMI_FI_SYMVER_FABRIC "FABRIC_1.1" /* fi_fabric */
#define GOSHMEMI_FI_SYMVER_BASE "FABRIC_1.0"   /* fi_strerror, fi_version */

typedef uint64_t goshmemi_fi_addr_t;

/* Capability, operation and completion flags. Ref: fabric.h. */
#define GOSHMEMI_FI_RMA (1ULL << 2)
#define GOSHMEMI_FI_ATOMIC (1ULL << 4)
#define GOSHMEMI_FI_READ (1ULL << 8)
#define GOSHMEMI_FI_WRITE (1ULL << 9)
#define GOSHMEMI_FI_RECV (1ULL << 10)
#define GOSHMEMI_FI_SEND (1ULL << 11)
#define GOSHMEMI_FI_TRANSMIT GOSHMEMI_FI_SEND
#define GOSHMEMI_FI_REMOTE_READ (1ULL << 12)
#define GOSHMEMI_FI_REMOTE_WRITE (1ULL << 13)
#define GOSHMEMI_FI_TRIGGER (1ULL << 20)
#define GOSHMEMI_FI_FENCE (1ULL << 21)
#define GOSHMEMI_FI_COMPLETION (1ULL << 24)
#define GOSHMEMI_FI_INJECT (1ULL << 25)
#define GOSHMEMI_FI_DELIVERY_COMPLETE (1ULL << 28)
/* fi_query_atomic flags. Ref: fi_atomic.h. */
#define GOSHMEMI_FI_FETCH_ATOMIC (1ULL << 58)
#define GOSHMEMI_FI_COMPARE_ATOMIC (1ULL << 59)

/* Message order bits (tx_attr msg_order). Ref: fabric.h. */
#define GOSHMEMI_FI_ORDER_RAW (1ULL << 1)
#define GOSHMEMI_FI_ORDER_WAW (1ULL << 4)
#define GOSHMEMI_FI_ORDER_RMA_WAW (1ULL << 35)
#define GOSHMEMI_FI_ORDER_ATOMIC_WAW (1ULL << 39)

/* Memory registration mode bits (domain_attr mr_mode). Ref: fabric.h. */
#define GOSHMEMI_FI_MR_LOCAL (1 << 2)
#define GOSHMEMI_FI_MR_VIRT_ADDR (1 << 4)
#define GOSHMEMI_FI_MR_ALLOCATED (1 << 5)
#define GOSHMEMI_FI_MR_PROV_KEY (1 << 6)
#define GOSHMEMI_FI_MR_ENDPOINT (1 << 9)

#define GOSHMEMI_FI_KEY_NOTAVAIL ((uint64_t)-1)

/* Enumerations; the structs hold them as int (4 bytes, as the enums are). */
enum {
	GOSHMEMI_FI_SOCKADDR = 1, /* addr_format: struct sockaddr */
	GOSHMEMI_FI_SOCKADDR_IN = 2,
	GOSHMEMI_FI_SOCKADDR_IN6 = 3,
};
enum { GOSHMEMI_FI_AV_TABLE = 2 };                                    /* enum fi_av_type */
enum { GOSHMEMI_FI_PROGRESS_MANUAL = 2 };                             /* enum fi_progress */
enum { GOSHMEMI_FI_THREAD_SAFE = 1 };                                 /* enum fi_threading */
enum { GOSHMEMI_FI_EP_RDM = 3 };                                      /* enum fi_ep_type */
enum { GOSHMEMI_FI_WAIT_NONE = 0, GOSHMEMI_FI_WAIT_UNSPEC = 1 };      /* enum fi_wait_obj */
enum { GOSHMEMI_FI_CQ_FORMAT_CONTEXT = 1 };                           /* enum fi_cq_format */
enum { GOSHMEMI_FI_CNTR_EVENTS_COMP = 0 };                            /* enum fi_cntr_events */
enum { GOSHMEMI_FI_OP_WRITE = 5, GOSHMEMI_FI_OP_CNTR_ADD = 10 };       /* enum fi_op_type */
/* fi_control commands. Ref: fabric.h. */
enum {
	GOSHMEMI_FI_ENABLE = 6,
	GOSHMEMI_FI_QUEUE_WORK = 11,
	GOSHMEMI_FI_CANCEL_WORK = 12,
	GOSHMEMI_FI_FLUSH_WORK = 13,
};
/* enum fi_datatype. Ref: fi_domain.h. */
enum {
	GOSHMEMI_FI_UINT8 = 1,
	GOSHMEMI_FI_UINT16 = 3,
	GOSHMEMI_FI_UINT32 = 5,
	GOSHMEMI_FI_UINT64 = 7,
};
/* enum fi_op. Ref: fi_domain.h. */
enum {
	GOSHMEMI_FI_SUM = 2,
	GOSHMEMI_FI_BOR = 6,
	GOSHMEMI_FI_BAND = 7,
	GOSHMEMI_FI_BXOR = 9,
	GOSHMEMI_FI_ATOMIC_READ = 10,
	GOSHMEMI_FI_ATOMIC_WRITE = 11,
	GOSHMEMI_FI_CSWAP = 12,
};

/* Error numbers: system errnos, and libfabric's own from 256 up.
 * Ref: fi_errno.h. */
#define GOSHMEMI_FI_EIO EIO
#define GOSHMEMI_FI_EAGAIN EAGAIN
#define GOSHMEMI_FI_ENOMEM ENOMEM
#define GOSHMEMI_FI_EINVAL EINVAL
#define GOSHMEMI_FI_ENOSYS ENOSYS
#define GOSHMEMI_FI_ENODATA ENODATA
#define GOSHMEMI_FI_EOPNOTSUPP EOPNOTSUPP
#define GOSHMEMI_FI_EADDRNOTAVAIL EADDRNOTAVAIL
#define GOSHMEMI_FI_ETIMEDOUT ETIMEDOUT
enum {
	GOSHMEMI_FI_EOTHER = 256,
	GOSHMEMI_FI_EAVAIL = 259,
	GOSHMEMI_FI_ENOKEY = 266,
};

/* Objects: every one starts with struct goshmemi_fid. */
struct goshmemi_fid;
struct goshmemi_fid_nic;   /* never dereferenced */
struct goshmemi_fi_ops_ep; /* never dereferenced */

/* Ref: fabric.h struct fi_ops. */
struct goshmemi_fi_ops {
	size_t size;
	int (*close)(struct goshmemi_fid *fid);
	int (*bind)(struct goshmemi_fid *fid, struct goshmemi_fid *bfid, uint64_t flags);
	int (*control)(struct goshmemi_fid *fid, int command, void *arg);
	int (*ops_open)(struct goshmemi_fid *fid, const char *name, uint64_t flags, void **ops, void *context);
};

/* Ref: fabric.h struct fid. */
struct goshmemi_fid {
	size_t fclass;
	void *context;
	struct goshmemi_fi_ops *ops;
};

/* Ref: fabric.h struct fi_context2. */
struct goshmemi_fi_context2 {
	void *internal[8];
};

/* Attributes: allocated by libfabric (fi_dupinfo), read and set here.
 * Ref: fabric.h struct fi_tx_attr, fi_rx_attr, fi_ep_attr, fi_domain_attr,
 * fi_fabric_attr, fi_info (ABI FABRIC_1.3). */
struct goshmemi_fi_tx_attr {
	uint64_t caps;
	uint64_t mode;
	uint64_t op_flags;
	uint64_t msg_order;
	uint64_t comp_order;
	size_t inject_size;
	size_t size;
	size_t iov_limit;
	size_t rma_iov_limit;
	uint32_t tclass;
};

struct goshmemi_fi_rx_attr {
	uint64_t caps;
	uint64_t mode;
	uint64_t op_flags;
	uint64_t msg_order;
	uint64_t comp_order;
	size_t total_buffered_recv;
	size_t size;
	size_t iov_limit;
};

struct goshmemi_fi_ep_attr {
	int type; /* enum fi_ep_type */
	uint32_t protocol;
	uint32_t protocol_version;
	size_t max_msg_size;
	size_t msg_prefix_size;
	size_t max_order_raw_size;
	size_t max_order_war_size;
	size_t max_order_waw_size;
	uint64_t mem_tag_format;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
	size_t auth_key_size;
	uint8_t *auth_key;
};

struct goshmemi_fi_domain_attr {
	struct goshmemi_fid_domain *domain;
	char *name;
	int threading;        /* enum fi_threading */
	int control_progress; /* enum fi_progress */
	int data_progress;    /* enum fi_progress */
	int resource_mgmt;    /* enum fi_resource_mgmt */
	int av_type;          /* enum fi_av_type */
	int mr_mode;
	size_t mr_key_size;
	size_t cq_data_size;
	size_t cq_cnt;
	size_t ep_cnt;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
	size_t max_ep_tx_ctx;
	size_t max_ep_rx_ctx;
	size_t max_ep_stx_ctx;
	size_t max_ep_srx_ctx;
	size_t cntr_cnt;
	size_t mr_iov_limit;
	uint64_t caps;
	uint64_t mode;
	uint8_t *auth_key;
	size_t auth_key_size;
	size_t max_err_data;
	size_t mr_cnt;
	uint32_t tclass;
};

struct goshmemi_fi_fabric_attr {
	struct goshmemi_fid_fabric *fabric;
	char *name;
	char *prov_name;
	uint32_t prov_version;
	uint32_t api_version;
};

struct goshmemi_fi_info {
	struct goshmemi_fi_info *next;
	uint64_t caps;
	uint64_t mode;
	uint32_t addr_format;
	size_t src_addrlen;
	size_t dest_addrlen;
	void *src_addr;
	void *dest_addr;
	struct goshmemi_fid *handle;
	struct goshmemi_fi_tx_attr *tx_attr;
	struct goshmemi_fi_rx_attr *rx_attr;
	struct goshmemi_fi_ep_attr *ep_attr;
	struct goshmemi_fi_domain_attr *domain_attr;
	struct goshmemi_fi_fabric_attr *fabric_attr;
	struct goshmemi_fid_nic *nic;
};

/* Fabric. Ref: fabric.h struct fi_ops_fabric, fid_fabric. */
struct goshmemi_fi_ops_fabric {
	size_t size;
	int (*domain)(struct goshmemi_fid_fabric *fabric, struct goshmemi_fi_info *info,
		      struct goshmemi_fid_domain **dom, void *context);
};

struct goshmemi_fid_fabric {
	struct goshmemi_fid fid;
	struct goshmemi_fi_ops_fabric *ops;
	uint32_t api_version;
};

/* Domain-level attributes goshmem fills in. Ref: fi_domain.h struct
 * fi_av_attr, fi_atomic.h struct fi_atomic_attr, fi_eq.h struct
 * fi_cq_attr, fi_cntr_attr. */
struct goshmemi_fi_av_attr {
	int type; /* enum fi_av_type */
	int rx_ctx_bits;
	size_t count;
	size_t ep_per_node;
	const char *name;
	void *map_addr;
	uint64_t flags;
};

struct goshmemi_fi_atomic_attr {
	size_t count;
	size_t size;
};

struct goshmemi_fi_cq_attr {
	size_t size;
	uint64_t flags;
	int format;    /* enum fi_cq_format */
	int wait_obj;  /* enum fi_wait_obj */
	int signaling_vector;
	int wait_cond; /* enum fi_cq_wait_cond */
	void *wait_set;
};

struct goshmemi_fi_cntr_attr {
	int events;   /* enum fi_cntr_events */
	int wait_obj; /* enum fi_wait_obj */
	void *wait_set;
	uint64_t flags;
};

struct goshmemi_fid_av;
struct goshmemi_fid_cq;
struct goshmemi_fid_cntr;
struct goshmemi_fid_ep;
struct goshmemi_fid_mr;

/* Ref: fi_domain.h struct fi_ops_domain, fi_ops_mr, fid_domain. */
struct goshmemi_fi_ops_domain {
	size_t size;
	int (*av_open)(struct goshmemi_fid_domain *domain, struct goshmemi_fi_av_attr *attr,
		       struct goshmemi_fid_av **av, void *context);
	int (*cq_open)(struct goshmemi_fid_domain *domain, struct goshmemi_fi_cq_attr *attr,
		       struct goshmemi_fid_cq **cq, void *context);
	int (*endpoint)(struct goshmemi_fid_domain *domain, struct goshmemi_fi_info *info,
			struct goshmemi_fid_ep **ep, void *context);
	void *scalable_ep;
	int (*cntr_open)(struct goshmemi_fid_domain *domain, struct goshmemi_fi_cntr_attr *attr,
			 struct goshmemi_fid_cntr **cntr, void *context);
	void *poll_open;
	void *stx_ctx;
	void *srx_ctx;
	int (*query_atomic)(struct goshmemi_fid_domain *domain, int datatype, int op,
			    struct goshmemi_fi_atomic_attr *attr, uint64_t flags);
};

struct goshmemi_fi_ops_mr {
	size_t size;
	int (*reg)(struct goshmemi_fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		   uint64_t requested_key, uint64_t flags, struct goshmemi_fid_mr **mr, void *context);
};

struct goshmemi_fid_domain {
	struct goshmemi_fid fid;
	struct goshmemi_fi_ops_domain *ops;
	struct goshmemi_fi_ops_mr *mr;
};

/* Ref: fi_domain.h struct fid_mr. */
struct goshmemi_fid_mr {
	struct goshmemi_fid fid;
	void *mem_desc;
	uint64_t key;
};

/* Ref: fi_domain.h struct fi_ops_av, fid_av. */
struct goshmemi_fi_ops_av {
	size_t size;
	int (*insert)(struct goshmemi_fid_av *av, const void *addr, size_t count, goshmemi_fi_addr_t *fi_addr,
		      uint64_t flags, void *context);
	void *insertsvc;
	void *insertsym;
	void *remove;
	void *lookup;
	const char *(*straddr)(struct goshmemi_fid_av *av, const void *addr, char *buf, size_t *len);
};

struct goshmemi_fid_av {
	struct goshmemi_fid fid;
	struct goshmemi_fi_ops_av *ops;
};

/* Completion queues. Ref: fi_eq.h struct fi_cq_entry, fi_cq_err_entry,
 * fi_ops_cq, fid_cq. */
struct goshmemi_fi_cq_entry {
	void *op_context;
};

struct goshmemi_fi_cq_err_entry {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	size_t olen;
	int err;
	int prov_errno;
	void *err_data;
	size_t err_data_size;
};

struct goshmemi_fi_ops_cq {
	size_t size;
	ssize_t (*read)(struct goshmemi_fid_cq *cq, void *buf, size_t count);
	void *readfrom;
	ssize_t (*readerr)(struct goshmemi_fid_cq *cq, struct goshmemi_fi_cq_err_entry *buf, uint64_t flags);
	ssize_t (*sread)(struct goshmemi_fid_cq *cq, void *buf, size_t count, const void *cond, int timeout);
	void *sreadfrom;
	int (*signal)(struct goshmemi_fid_cq *cq);
	const char *(*strerror)(struct goshmemi_fid_cq *cq, int prov_errno, const void *err_data, char *buf,
				size_t len);
};

struct goshmemi_fid_cq {
	struct goshmemi_fid fid;
	struct goshmemi_fi_ops_cq *ops;
};

/* Counters. Ref: fi_eq.h struct fi_ops_cntr, fid_cntr. */
struct goshmemi_fi_ops_cntr {
	size_t size;
	uint64_t (*read)(struct goshmemi_fid_cntr *cntr);
	uint64_t (*readerr)(struct goshmemi_fid_cntr *cntr);
	int (*add)(struct goshmemi_fid_cntr *cntr, uint64_t value);
	int (*set)(struct goshmemi_fid_cntr *cntr, uint64_t value);
};

struct goshmemi_fid_cntr {
	struct goshmemi_fid fid;
	struct goshmemi_fi_ops_cntr *ops;
};

/* RMA and atomic messages. Ref: fi_rma.h struct fi_rma_iov, fi_rma_ioc,
 * fi_msg_rma; fabric.h struct fi_ioc; fi_atomic.h struct fi_msg_atomic. */
struct goshmemi_fi_rma_iov {
	uint64_t addr;
	size_t len;
	uint64_t key;
};

struct goshmemi_fi_rma_ioc {
	uint64_t addr;
	size_t count;
	uint64_t key;
};

struct goshmemi_fi_ioc {
	void *addr;
	size_t count;
};

struct goshmemi_fi_msg_rma {
	const struct iovec *msg_iov;
	void **desc;
	size_t iov_count;
	goshmemi_fi_addr_t addr;
	const struct goshmemi_fi_rma_iov *rma_iov;
	size_t rma_iov_count;
	void *context;
	uint64_t data;
};

struct goshmemi_fi_msg_atomic {
	const struct goshmemi_fi_ioc *msg_iov;
	void **desc;
	size_t iov_count;
	goshmemi_fi_addr_t addr;
	const struct goshmemi_fi_rma_ioc *rma_iov;
	size_t rma_iov_count;
	int datatype; /* enum fi_datatype */
	int op;       /* enum fi_op */
	void *context;
	uint64_t data;
};

/* Endpoints. Ref: fi_cm.h struct fi_ops_cm; fi_rma.h struct fi_ops_rma;
 * fi_atomic.h struct fi_ops_atomic; fi_endpoint.h struct fid_ep. */
struct goshmemi_fi_ops_cm {
	size_t size;
	void *setname;
	int (*getname)(struct goshmemi_fid *fid, void *addr, size_t *addrlen);
};

struct goshmemi_fi_ops_rma {
	size_t size;
	ssize_t (*read)(struct goshmemi_fid_ep *ep, void *buf, size_t len, void *desc, goshmemi_fi_addr_t src_addr,
			uint64_t addr, uint64_t key, void *context);
	void *readv;
	void *readmsg;
	void *write;
	void *writev;
	ssize_t (*writemsg)(struct goshmemi_fid_ep *ep, const struct goshmemi_fi_msg_rma *msg, uint64_t flags);
};

struct goshmemi_fi_ops_atomic {
	size_t size;
	void *write;
	void *writev;
	ssize_t (*writemsg)(struct goshmemi_fid_ep *ep, const struct goshmemi_fi_msg_atomic *msg, uint64_t flags);
	void *inject;
	void *readwrite;
	void *readwritev;
	ssize_t (*readwritemsg)(struct goshmemi_fid_ep *ep, const struct goshmemi_fi_msg_atomic *msg,
				struct goshmemi_fi_ioc *resultv, void **result_desc, size_t result_count,
				uint64_t flags);
	void *compwrite;
	void *compwritev;
	ssize_t (*compwritemsg)(struct goshmemi_fid_ep *ep, const struct goshmemi_fi_msg_atomic *msg,
				const struct goshmemi_fi_ioc *comparev, void **compare_desc, size_t compare_count,
				struct goshmemi_fi_ioc *resultv, void **result_desc, size_t result_count,
				uint64_t flags);
};

struct goshmemi_fid_ep {
	struct goshmemi_fid fid;
	struct goshmemi_fi_ops_ep *ops;
	struct goshmemi_fi_ops_cm *cm;
	void *msg;
	struct goshmemi_fi_ops_rma *rma;
	void *tagged;
	struct goshmemi_fi_ops_atomic *atomic;
	void *collective;
};

/* Deferred work. Ref: fi_trigger.h struct fi_op_rma, fi_op_cntr,
 * fi_deferred_work. */
struct goshmemi_fi_op_rma {
	struct goshmemi_fid_ep *ep;
	struct goshmemi_fi_msg_rma msg;
	uint64_t flags;
};

struct goshmemi_fi_op_cntr {
	struct goshmemi_fid_cntr *cntr;
	uint64_t value;
};

struct goshmemi_fi_deferred_work {
	struct goshmemi_fi_context2 context;
	uint64_t threshold;
	struct goshmemi_fid_cntr *triggering_cntr;
	struct goshmemi_fid_cntr *completion_cntr;
	int op_type; /* enum fi_op_type */
	union {
		struct goshmemi_fi_op_rma *rma;
		struct goshmemi_fi_op_cntr *cntr;
	} op;
};

/* The CXI provider's counter extension, opened with
 * fi_open_ops(&cntr->fid, GOSHMEMI_FI_CXI_COUNTER_OPS): get_mmio_addr gives
 * the MMIO address a write to which adds to the counter.
 * Ref: libfabric prov/cxi/include/fi_cxi_ext.h (struct fi_cxi_cntr_ops,
 * FI_CXI_COUNTER_OPS). */
#define GOSHMEMI_FI_CXI_COUNTER_OPS "cxi_counter_ops"
struct goshmemi_fi_cxi_cntr_ops {
	int (*set_wb_buffer)(struct goshmemi_fid *fid, void *buf, size_t len);
	int (*get_mmio_addr)(struct goshmemi_fid *fid, void **addr, size_t *len);
};

/* The exported functions, as the symbol versions above define them.
 * Ref: fabric.h fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_version;
 * fi_errno.h fi_strerror. */
typedef int (*goshmemi_fi_getinfo_fn)(uint32_t version, const char *node, const char *service, uint64_t flags,
				      const struct goshmemi_fi_info *hints, struct goshmemi_fi_info **info);
typedef void (*goshmemi_fi_freeinfo_fn)(struct goshmemi_fi_info *info);
typedef struct goshmemi_fi_info *(*goshmemi_fi_dupinfo_fn)(const struct goshmemi_fi_info *info);
typedef int (*goshmemi_fi_fabric_fn)(struct goshmemi_fi_fabric_attr *attr, struct goshmemi_fid_fabric **fabric,
				     void *context);
typedef uint32_t (*goshmemi_fi_version_fn)(void);
typedef const char *(*goshmemi_fi_strerror_fn)(int errnum);

#endif
