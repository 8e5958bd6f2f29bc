// goshmem's libfabric shim, part 2: counters and deferred work.
// Ref: fi_cntr(3) (fi_cntr_open/add/set/read/readerr),
//      fi_trigger(3) (struct fi_deferred_work, fi_control(FI_QUEUE_WORK),
//      FI_FLUSH_WORK, FI_CANCEL_WORK, FI_OP_WRITE, FI_OP_CNTR_ADD).
// A deferred-work record lives in C memory (goshmemi_dwork, calloc'd) until
// the caller retires it: the provider may keep pointers into it (the
// sockets provider requires the operation's context to be &work.context).
#ifndef GOSHMEMI_FABRIC_TRIGGER_H
#define GOSHMEMI_FABRIC_TRIGGER_H

#include "shim.h"

typedef struct goshmemi_dwork {
	struct goshmemi_fi_deferred_work work;
	union {
		struct goshmemi_fi_op_rma rma;
		struct goshmemi_fi_op_cntr cntr;
	} op;
	struct iovec iov;
	struct goshmemi_fi_rma_iov rma_iov;
	void *desc;
} goshmemi_dwork;

int goshmemi_fab_cntr_open(goshmemi_fab *f, struct goshmemi_fid_cntr **out);
int goshmemi_fab_cntr_close(struct goshmemi_fid_cntr *c);
uint64_t goshmemi_fab_cntr_read(struct goshmemi_fid_cntr *c);
uint64_t goshmemi_fab_cntr_readerr(struct goshmemi_fid_cntr *c);
int goshmemi_fab_cntr_add(struct goshmemi_fid_cntr *c, uint64_t v);
int goshmemi_fab_cntr_set(struct goshmemi_fid_cntr *c, uint64_t v);

// Deferred RMA write of len bytes at buf to dest's raddr, released when
// trig reaches threshold; comp (may be NULL) counts its completion.
int goshmemi_fab_queue_write(goshmemi_fab *f, goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold,
	struct goshmemi_fid_cntr *comp, const void *buf, size_t len, void *desc, goshmemi_fi_addr_t dest, uint64_t raddr,
	uint64_t key, uint64_t flags);
// Deferred counter add: when trig reaches threshold, add value to target.
int goshmemi_fab_queue_cntr_add(goshmemi_fab *f, goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold,
	struct goshmemi_fid_cntr *comp, struct goshmemi_fid_cntr *target, uint64_t value);
int goshmemi_fab_flush_work(goshmemi_fab *f);

// A record set: n deferred writes sharing one trigger and one completion
// counter, built once and re-armed as a whole (one instance of a monitor
// slot). Record i runs when trig reaches base + rel[i]; its completion adds
// one to comp, or to trig when it is a chain record (it releases the next
// record). The records stay owned by the provider from an arm until they
// ran: the caller re-arms only after comp showed every record completed.
typedef struct goshmemi_dwork_set {
	goshmemi_fab *f;
	struct goshmemi_fid_cntr *trig, *comp;
	int n;
	uint64_t *rel; // relative thresholds (n)
	goshmemi_dwork *w; // n records
	int failed;  // set_arm: the record that failed, -1: a counter reset
	uint64_t ns; // set_arm with timed: ns spent
} goshmemi_dwork_set;

goshmemi_dwork_set *goshmemi_fab_set_new(goshmemi_fab *f, struct goshmemi_fid_cntr *trig, struct goshmemi_fid_cntr *comp, int n);
void goshmemi_fab_set_free(goshmemi_dwork_set *s);
// Builds record i (not queued): a write of len bytes at buf to dest's raddr.
void goshmemi_fab_set_write(goshmemi_dwork_set *s, int i, uint64_t rel, int chain, const void *buf, size_t len,
	void *desc, goshmemi_fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t flags);
// Arms every record at thresholds base + rel[i] with FI_QUEUE_WORK, after
// resetting both counters to 0 when reset != 0 (then base must be 0). On
// failure s->failed is the record that failed (earlier ones are queued).
// With timed, s->ns is the time spent (CLOCK_MONOTONIC). Everything is
// passed in C memory: the call allocates nothing on the Go side.
int goshmemi_fab_set_arm(goshmemi_dwork_set *s, uint64_t base, int reset, int timed);

// Raw provider cost of re-arming the set (nothing else timed): iters
// epochs of { arm (timed: fi_cntr_set x2 when reset, else only raised
// thresholds; then n x fi_control(FI_QUEUE_WORK)), release with
// fi_cntr_add(trig, span) and wait for comp (untimed) }. Without reset the
// thresholds rise by span per epoch and the counters are reset (timed)
// only when base + span would pass cmax. out (6 words): [0] ns in
// fi_cntr_set, [1] ns in fi_control, [2] slowest epoch's arm ns, [3]
// epochs, [4] resets, [5] median epoch arm ns (log histogram, ~9%).
// Returns 0, a provider error, or -FI_ETIMEDOUT when a release did not
// complete within 5 s.
int goshmemi_fab_set_bench(goshmemi_dwork_set *s, uint64_t span, uint64_t cmax, int reset, int iters, uint64_t *out);
int goshmemi_fab_cancel_work(goshmemi_fab *f, goshmemi_dwork *w);

// CXI counter MMIO extension (fi_cxi_ext.h, FI_CXI_COUNTER_OPS): the MMIO
// address a GPU writes to add to counter c. -FI_ENOSYS where the provider
// lacks it.
int goshmemi_fab_cxi_cntr_mmio(struct goshmemi_fid_cntr *c, void **addr, size_t *len);
int goshmemi_fab_cxi_ext_compiled(void);

#endif
