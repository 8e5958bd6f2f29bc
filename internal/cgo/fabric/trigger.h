// goshmem's libfabric shim, part 2: counters and deferred work.
// Ref: fi_cntr(3) (fi_cntr_open/add/set/read/readerr),
//      fi_trigger(3) (struct fi_deferred_work, fi_control(FI_QUEUE_WORK),
//      FI_FLUSH_WORK, FI_CANCEL_WORK, FI_OP_WRITE, FI_OP_CNTR_ADD).
// A deferred-work record lives in C memory (goshmemi_dwork, calloc'd) until
// the caller retires it: the provider may keep pointers into it (the
// sockets provider requires the operation's context to be &work.context).
#ifndef GOSHMEMI_FABRIC_TRIGGER_H
#define GOSHMEMI_FABRIC_TRIGGER_H

#include <rdma/fi_trigger.h>
#include "shim.h"

typedef struct goshmemi_dwork {
	struct fi_deferred_work work;
	union {
		struct fi_op_rma rma;
		struct fi_op_cntr cntr;
	} op;
	struct iovec iov;
	struct fi_rma_iov rma_iov;
	void *desc;
} goshmemi_dwork;

int goshmemi_fab_cntr_open(goshmemi_fab *f, struct fid_cntr **out);
int goshmemi_fab_cntr_close(struct fid_cntr *c);
uint64_t goshmemi_fab_cntr_read(struct fid_cntr *c);
uint64_t goshmemi_fab_cntr_readerr(struct fid_cntr *c);
int goshmemi_fab_cntr_add(struct fid_cntr *c, uint64_t v);
int goshmemi_fab_cntr_set(struct fid_cntr *c, uint64_t v);

// Deferred RMA write of len bytes at buf to dest's raddr, released when
// trig reaches threshold; comp (may be NULL) counts its completion.
int goshmemi_fab_queue_write(goshmemi_fab *f, goshmemi_dwork *w, struct fid_cntr *trig, uint64_t threshold,
	struct fid_cntr *comp, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t raddr,
	uint64_t key, uint64_t flags);
// Deferred counter add: when trig reaches threshold, add value to target.
int goshmemi_fab_queue_cntr_add(goshmemi_fab *f, goshmemi_dwork *w, struct fid_cntr *trig, uint64_t threshold,
	struct fid_cntr *comp, struct fid_cntr *target, uint64_t value);
int goshmemi_fab_flush_work(goshmemi_fab *f);
int goshmemi_fab_cancel_work(goshmemi_fab *f, goshmemi_dwork *w);

// CXI counter MMIO extension (fi_cxi_ext.h, FI_CXI_COUNTER_OPS): the MMIO
// address a GPU writes to add to counter c. -FI_ENOSYS where the provider
// (or this build's headers) lack it.
int goshmemi_fab_cxi_cntr_mmio(struct fid_cntr *c, void **addr, size_t *len);
int goshmemi_fab_cxi_ext_compiled(void);

#endif
