/*
 * ops.h: libfabric's calls as goshmem makes them, over the declarations of
 * abi.h. The exported functions go through the table loader.c fills with
 * dlvsym; every other call is libfabric's static inline wrapper written
 * again here: one indirect call through the object's ops table, as the
 * real header compiles to. Nothing here locks or looks a symbol up.
 * Call goshmemi_fab_load (loader.c) before any of them.
 * Ref: libfabric 1.17.0 include/rdma/fabric.h, fi_domain.h, fi_endpoint.h,
 * fi_rma.h, fi_atomic.h, fi_cm.h, fi_eq.h (the static inline functions of
 * the same names without goshmemi_).
 */
#ifndef GOSHMEMI_FABRIC_OPS_H
#define GOSHMEMI_FABRIC_OPS_H

#include "abi.h"

/* The exported functions of the loaded library (loader.c). */
struct goshmemi_fi_lib {
	goshmemi_fi_getinfo_fn getinfo;
	goshmemi_fi_freeinfo_fn freeinfo;
	goshmemi_fi_dupinfo_fn dupinfo;
	goshmemi_fi_fabric_fn fabric;
	goshmemi_fi_version_fn version;
	goshmemi_fi_strerror_fn strerror;
};
extern struct goshmemi_fi_lib goshmemi_fi_lib;

/* goshmemi_fab_load opens name with dlopen and binds the functions above
 * at the symbol versions abi.h's layouts come from. It returns 0, or fills
 * err and returns GOSHMEMI_FAB_LOAD_DLOPEN (dlerror's text),
 * GOSHMEMI_FAB_LOAD_SYMBOL (the missing name@version) or
 * GOSHMEMI_FAB_LOAD_VERSION (the library's version, older than
 * GOSHMEMI_FI_API_VERSION). On failure the table is left as it was. */
#define GOSHMEMI_FAB_LOAD_DLOPEN 1
#define GOSHMEMI_FAB_LOAD_SYMBOL 2
#define GOSHMEMI_FAB_LOAD_VERSION 3
int goshmemi_fab_load(const char *name, char *err, size_t errlen);
/* goshmemi_fab_loaded_version is fi_version() of the loaded library, 0 if none. */
uint32_t goshmemi_fab_loaded_version(void);
/* goshmemi_fab_strerror is fi_strerror, or the system's text for a system
 * errno when no library is loaded. */
const char *goshmemi_fab_strerror(int errnum);

static inline int goshmemi_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
				      const struct goshmemi_fi_info *hints, struct goshmemi_fi_info **info)
{
	return goshmemi_fi_lib.getinfo(version, node, service, flags, hints, info);
}

static inline void goshmemi_fi_freeinfo(struct goshmemi_fi_info *info) { goshmemi_fi_lib.freeinfo(info); }

static inline struct goshmemi_fi_info *goshmemi_fi_dupinfo(const struct goshmemi_fi_info *info)
{
	return goshmemi_fi_lib.dupinfo(info);
}

static inline struct goshmemi_fi_info *goshmemi_fi_allocinfo(void) { return goshmemi_fi_lib.dupinfo(NULL); }

static inline int goshmemi_fi_fabric(struct goshmemi_fi_fabric_attr *attr, struct goshmemi_fid_fabric **fabric,
				     void *context)
{
	return goshmemi_fi_lib.fabric(attr, fabric, context);
}

/* Ref: fabric.h fi_close, fi_control, fi_open_ops. */
static inline int goshmemi_fi_close(struct goshmemi_fid *fid) { return fid->ops->close(fid); }

static inline int goshmemi_fi_control(struct goshmemi_fid *fid, int command, void *arg)
{
	return fid->ops->control(fid, command, arg);
}

static inline int goshmemi_fi_open_ops(struct goshmemi_fid *fid, const char *name, uint64_t flags, void **ops,
				       void *context)
{
	return fid->ops->ops_open(fid, name, flags, ops, context);
}

/* Ref: fi_domain.h fi_domain, fi_av_open, fi_cq_open, fi_cntr_open,
 * fi_mr_reg, fi_mr_bind, fi_mr_enable, fi_mr_desc, fi_mr_key,
 * fi_av_insert, fi_av_straddr; fi_atomic.h fi_query_atomic. */
static inline int goshmemi_fi_domain(struct goshmemi_fid_fabric *fabric, struct goshmemi_fi_info *info,
				     struct goshmemi_fid_domain **domain, void *context)
{
	return fabric->ops->domain(fabric, info, domain, context);
}

static inline int goshmemi_fi_av_open(struct goshmemi_fid_domain *domain, struct goshmemi_fi_av_attr *attr,
				      struct goshmemi_fid_av **av, void *context)
{
	return domain->ops->av_open(domain, attr, av, context);
}

static inline int goshmemi_fi_cq_open(struct goshmemi_fid_domain *domain, struct goshmemi_fi_cq_attr *attr,
				      struct goshmemi_fid_cq **cq, void *context)
{
	return domain->ops->cq_open(domain, attr, cq, context);
}

static inline int goshmemi_fi_cntr_open(struct goshmemi_fid_domain *domain, struct goshmemi_fi_cntr_attr *attr,
					struct goshmemi_fid_cntr **cntr, void *context)
{
	return domain->ops->cntr_open(domain, attr, cntr, context);
}

static inline int goshmemi_fi_mr_reg(struct goshmemi_fid_domain *domain, const void *buf, size_t len,
				     uint64_t access, uint64_t offset, uint64_t requested_key, uint64_t flags,
				     struct goshmemi_fid_mr **mr, void *context)
{
	return domain->mr->reg(&domain->fid, buf, len, access, offset, requested_key, flags, mr, context);
}

static inline int goshmemi_fi_mr_bind(struct goshmemi_fid_mr *mr, struct goshmemi_fid *bfid, uint64_t flags)
{
	return mr->fid.ops->bind(&mr->fid, bfid, flags);
}

static inline int goshmemi_fi_mr_enable(struct goshmemi_fid_mr *mr)
{
	return mr->fid.ops->control(&mr->fid, GOSHMEMI_FI_ENABLE, NULL);
}

static inline void *goshmemi_fi_mr_desc(struct goshmemi_fid_mr *mr) { return mr->mem_desc; }
static inline uint64_t goshmemi_fi_mr_key(struct goshmemi_fid_mr *mr) { return mr->key; }

static inline int goshmemi_fi_av_insert(struct goshmemi_fid_av *av, const void *addr, size_t count,
					goshmemi_fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return av->ops->insert(av, addr, count, fi_addr, flags, context);
}

static inline const char *goshmemi_fi_av_straddr(struct goshmemi_fid_av *av, const void *addr, char *buf,
						 size_t *len)
{
	return av->ops->straddr(av, addr, buf, len);
}

/* query_atomic is checked against the table's size, as fi_query_atomic
 * does: older providers' tables end before it. */
static inline int goshmemi_fi_query_atomic(struct goshmemi_fid_domain *domain, int datatype, int op,
					   struct goshmemi_fi_atomic_attr *attr, uint64_t flags)
{
	struct goshmemi_fi_ops_domain *ops = domain->ops;
	if (!ops || ops->size <= offsetof(struct goshmemi_fi_ops_domain, query_atomic) || !ops->query_atomic)
		return -GOSHMEMI_FI_ENOSYS;
	return ops->query_atomic(domain, datatype, op, attr, flags);
}

/* Ref: fi_endpoint.h fi_endpoint, fi_ep_bind, fi_enable; fi_cm.h fi_getname. */
static inline int goshmemi_fi_endpoint(struct goshmemi_fid_domain *domain, struct goshmemi_fi_info *info,
				       struct goshmemi_fid_ep **ep, void *context)
{
	return domain->ops->endpoint(domain, info, ep, context);
}

static inline int goshmemi_fi_ep_bind(struct goshmemi_fid_ep *ep, struct goshmemi_fid *bfid, uint64_t flags)
{
	return ep->fid.ops->bind(&ep->fid, bfid, flags);
}

static inline int goshmemi_fi_enable(struct goshmemi_fid_ep *ep)
{
	return ep->fid.ops->control(&ep->fid, GOSHMEMI_FI_ENABLE, NULL);
}

/* fid is an endpoint's: its fid is the first member of struct fid_ep. */
static inline int goshmemi_fi_getname(struct goshmemi_fid *fid, void *addr, size_t *addrlen)
{
	struct goshmemi_fid_ep *ep = (struct goshmemi_fid_ep *)fid;
	return ep->cm->getname(fid, addr, addrlen);
}

/* Ref: fi_rma.h fi_read, fi_writemsg; fi_atomic.h fi_atomicmsg,
 * fi_fetch_atomicmsg, fi_compare_atomicmsg. */
static inline ssize_t goshmemi_fi_read(struct goshmemi_fid_ep *ep, void *buf, size_t len, void *desc,
				       goshmemi_fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	return ep->rma->read(ep, buf, len, desc, src_addr, addr, key, context);
}

static inline ssize_t goshmemi_fi_writemsg(struct goshmemi_fid_ep *ep, const struct goshmemi_fi_msg_rma *msg,
					   uint64_t flags)
{
	return ep->rma->writemsg(ep, msg, flags);
}

static inline ssize_t goshmemi_fi_atomicmsg(struct goshmemi_fid_ep *ep, const struct goshmemi_fi_msg_atomic *msg,
					    uint64_t flags)
{
	return ep->atomic->writemsg(ep, msg, flags);
}

static inline ssize_t goshmemi_fi_fetch_atomicmsg(struct goshmemi_fid_ep *ep,
						  const struct goshmemi_fi_msg_atomic *msg,
						  struct goshmemi_fi_ioc *resultv, void **result_desc,
						  size_t result_count, uint64_t flags)
{
	return ep->atomic->readwritemsg(ep, msg, resultv, result_desc, result_count, flags);
}

static inline ssize_t goshmemi_fi_compare_atomicmsg(struct goshmemi_fid_ep *ep,
						    const struct goshmemi_fi_msg_atomic *msg,
						    const struct goshmemi_fi_ioc *comparev, void **compare_desc,
						    size_t compare_count, struct goshmemi_fi_ioc *resultv,
						    void **result_desc, size_t result_count, uint64_t flags)
{
	return ep->atomic->compwritemsg(ep, msg, comparev, compare_desc, compare_count, resultv, result_desc,
					result_count, flags);
}

/* Ref: fi_eq.h fi_cq_read, fi_cq_sread, fi_cq_readerr, fi_cq_signal,
 * fi_cq_strerror, fi_cntr_read, fi_cntr_readerr, fi_cntr_add, fi_cntr_set. */
static inline ssize_t goshmemi_fi_cq_read(struct goshmemi_fid_cq *cq, void *buf, size_t count)
{
	return cq->ops->read(cq, buf, count);
}

static inline ssize_t goshmemi_fi_cq_sread(struct goshmemi_fid_cq *cq, void *buf, size_t count, const void *cond,
					   int timeout)
{
	return cq->ops->sread(cq, buf, count, cond, timeout);
}

static inline ssize_t goshmemi_fi_cq_readerr(struct goshmemi_fid_cq *cq, struct goshmemi_fi_cq_err_entry *buf,
					     uint64_t flags)
{
	return cq->ops->readerr(cq, buf, flags);
}

static inline int goshmemi_fi_cq_signal(struct goshmemi_fid_cq *cq) { return cq->ops->signal(cq); }

static inline const char *goshmemi_fi_cq_strerror(struct goshmemi_fid_cq *cq, int prov_errno, const void *err_data,
						  char *buf, size_t len)
{
	return cq->ops->strerror(cq, prov_errno, err_data, buf, len);
}

static inline uint64_t goshmemi_fi_cntr_read(struct goshmemi_fid_cntr *cntr) { return cntr->ops->read(cntr); }
static inline uint64_t goshmemi_fi_cntr_readerr(struct goshmemi_fid_cntr *cntr) { return cntr->ops->readerr(cntr); }

static inline int goshmemi_fi_cntr_add(struct goshmemi_fid_cntr *cntr, uint64_t value)
{
	return cntr->ops->add(cntr, value);
}

static inline int goshmemi_fi_cntr_set(struct goshmemi_fid_cntr *cntr, uint64_t value)
{
	return cntr->ops->set(cntr, value);
}

#endif
