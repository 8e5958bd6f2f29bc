// goshmem's libfabric shim: the handles of one endpoint in one C struct and
// one C call per data-path operation, so Go crosses cgo once per put/get/AMO.
// Ref: fi_getinfo(3), fi_endpoint(3), fi_rma(3), fi_atomic(3), fi_cq(3), fi_mr(3).
// libfabric's types and calls are goshmem's own declarations (abi.h, ops.h):
// the library is loaded at run time (goshmemi_fab_load) before any call here.
// C never keeps a Go pointer: buffers passed here are either C/mmap memory
// (the staging arena, the symmetric heap) or are copied before the call
// returns (FI_INJECT).
#ifndef GOSHMEMI_FABRIC_SHIM_H
#define GOSHMEMI_FABRIC_SHIM_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "ops.h"

// One completion as the progress thread or a poll found it.
typedef struct goshmemi_comp {
	uint64_t ctx;
	int err;        // 0, or the positive fi_errno of an error entry
	int prov_errno;
	char msg[48];   // fi_cq_strerror's text for an error entry
} goshmemi_comp;

#define GOSHMEMI_RING 8192 // > the transport's operations in flight
// GOSHMEMI_LINGER_NS: a claim (goshmemi_fab_poll with claim set) keeps the
// progress thread off the endpoint until it is released, or for at most
// this long after the last claiming poll (the claiming thread may have
// been preempted).
#define GOSHMEMI_LINGER_NS 1000000

typedef struct goshmemi_fab {
	struct goshmemi_fi_info *info;
	struct goshmemi_fid_fabric *fabric;
	struct goshmemi_fid_domain *domain;
	struct goshmemi_fid_av *av;
	struct goshmemi_fid_cq *cq;
	struct goshmemi_fid_ep *ep;
	int cq_wait;       // the CQ has a wait object (fi_cq_sread works)
	char where[64];    // the call that failed, for the error message
	// The progress thread (a C pthread, so it never waits for a Go P):
	// it drives the provider and parks the completions it reaps here for
	// the next goshmemi_fab_poll.
	pthread_t thread;
	int running;
	volatile int stop;
	// Hand-off between a waiting application thread and the progress
	// thread (see progress_main): app_poll is the CLOCK_MONOTONIC time (ns)
	// of the last claiming goshmemi_fab_poll, 0 once released; while it is
	// set and less than linger_ns old the progress thread stays off the
	// endpoint, sleeping on the futex word defer_seq (deferring set), which
	// goshmemi_fab_release bumps and wakes. defers, rounds and kicks count
	// the progress thread's rounds spent staying off, its rounds driving the
	// provider, and the claims that took it out of fi_cq_sread.
	uint64_t app_poll;
	uint64_t linger_ns;
	uint64_t defers, rounds, kicks;
	uint32_t defer_seq;
	int deferring;
	// in_sread: the progress thread is blocked in fi_cq_sread; kicked: a
	// claiming poll has signaled the CQ (fi_cq_signal) to get it out.
	int in_sread, kicked;
	pthread_mutex_t lock;
	uint64_t head, tail;
	goshmemi_comp ring[GOSHMEMI_RING];
	// Context endpoints (goshmemi_fab_ctx_open): a child shares its
	// parent's info, fabric, domain and address vector and owns its
	// endpoint and completion queue; the parent's progress thread polls the
	// children's queues too (children, guarded by ctx_lock).
	struct goshmemi_fab *parent;
	struct goshmemi_fab *children;
	struct goshmemi_fab *next;
	pthread_mutex_t ctx_lock;
} goshmemi_fab;

// Facts about the chosen provider, copied out of fi_info for Go.
typedef struct goshmemi_fab_attr {
	char prov[64];
	char fabric[64];
	char domain[64];
	uint64_t caps;
	uint64_t msg_order;
	uint64_t max_msg_size;
	uint64_t inject_size;
	uint64_t mr_mode;
	uint64_t mr_key_size;
	int data_progress;
	int threading;
	int has_atomic;
	uint64_t max_order_waw_size; // ep_attr: data ordering of write after write holds up to this size
} goshmemi_fab_attr;

// want: GOSHMEMI_WANT_ATOMIC | GOSHMEMI_WANT_FENCE, capabilities asked for
// beyond RMA (the call fails with -FI_ENODATA when the provider lacks one).
#define GOSHMEMI_WANT_ATOMIC 1
#define GOSHMEMI_WANT_FENCE 2
int goshmemi_fab_open(const char *prov, int want_atomic, goshmemi_fab **out, goshmemi_fab_attr *attr, char *where, size_t wherelen);
int goshmemi_fab_open_caps(const char *prov, int want_atomic, uint64_t extra_caps, goshmemi_fab **out, goshmemi_fab_attr *attr, char *where, size_t wherelen);
// goshmemi_fab_getinfo lists what fi_getinfo offers for goshmem's hints
// (free with fi_freeinfo): for tcp and sockets one entry per address of
// each interface. goshmemi_fab_open_info opens an endpoint on one entry of
// such a list (the caller picks which source address it binds).
int goshmemi_fab_getinfo(const char *prov, int want_atomic, uint64_t extra_caps, struct goshmemi_fi_info **list);
int goshmemi_fab_open_info(const struct goshmemi_fi_info *chosen, goshmemi_fab **out, goshmemi_fab_attr *attr, char *where, size_t wherelen);
int goshmemi_fab_providers(char *buf, size_t len);
void goshmemi_fab_close(goshmemi_fab *f);
int goshmemi_fab_getname(goshmemi_fab *f, void *buf, size_t *len);
int goshmemi_fab_av_insert(goshmemi_fab *f, const void *addrs, size_t count, goshmemi_fi_addr_t *out);
int goshmemi_fab_mr_reg(goshmemi_fab *f, void *buf, size_t len, uint64_t access, uint64_t key, struct goshmemi_fid_mr **mr, void **desc, uint64_t *rkey);
int goshmemi_fab_mr_close(struct goshmemi_fid_mr *mr);

ssize_t goshmemi_fab_write(goshmemi_fab *f, const void *buf, size_t len, void *desc, goshmemi_fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t ctx, uint64_t flags);
ssize_t goshmemi_fab_read(goshmemi_fab *f, void *buf, size_t len, void *desc, goshmemi_fi_addr_t src, uint64_t raddr, uint64_t key, uint64_t ctx);
ssize_t goshmemi_fab_atomic(goshmemi_fab *f, int kind, const void *operand, const void *compare, void *result, void *desc,
	int dt, int op, goshmemi_fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t ctx, uint64_t flags);
int goshmemi_fab_query_atomic(goshmemi_fab *f, int kind, int dt, int op);

// goshmemi_fab_cq_read returns the number of completions (their contexts in
// ctxs), 0 when none, or a negative fi_errno (-FI_EAVAIL: an error entry
// waits, read it with goshmemi_fab_cq_readerr).
ssize_t goshmemi_fab_cq_read(goshmemi_fab *f, uint64_t *ctxs, size_t n);
ssize_t goshmemi_fab_cq_sread(goshmemi_fab *f, uint64_t *ctxs, size_t n, int timeout_ms);
int goshmemi_fab_cq_readerr(goshmemi_fab *f, uint64_t *ctx, int *err, int *prov_errno, char *msg, size_t msglen);

// goshmemi_fab_poll returns up to n completions: first those the progress
// thread parked, then fresh ones from the CQ (driving progress). With claim
// set the calling thread also claims the endpoint: it polls in a loop
// waiting for data from the peers, so the progress thread stays off until
// goshmemi_fab_release (or linger_ns after the last claiming poll).
int goshmemi_fab_poll(goshmemi_fab *f, goshmemi_comp *out, int n, int claim);
// goshmemi_fab_release ends a claim and wakes the progress thread if it
// stays off the endpoint.
void goshmemi_fab_release(goshmemi_fab *f);
// goshmemi_fab_set_linger sets the longest a claim lasts after its last
// poll (0: claims are ignored).
void goshmemi_fab_set_linger(goshmemi_fab *f, uint64_t ns);
// goshmemi_fab_claimed reports whether a claim is held (not released).
int goshmemi_fab_claimed(goshmemi_fab *f);
// goshmemi_fab_progress_stats reads the progress thread's counters.
void goshmemi_fab_progress_stats(goshmemi_fab *f, uint64_t *defers, uint64_t *rounds, uint64_t *kicks);
int goshmemi_fab_start_progress(goshmemi_fab *f);
void goshmemi_fab_stop_progress(goshmemi_fab *f);

// goshmemi_fab_ctx_open opens a context endpoint: a new endpoint with its
// own completion queue (no wait object: it is polled) in parent's domain,
// bound to parent's address vector, so it reaches every peer's primary
// endpoint without an address exchange. goshmemi_fab_close on it (or
// goshmemi_fab_ctx_close) releases only what it owns. Close children
// before their parent.
int goshmemi_fab_ctx_open(goshmemi_fab *parent, goshmemi_fab **out, char *where, size_t wherelen);
void goshmemi_fab_ctx_close(goshmemi_fab *f);
// goshmemi_fab_straddr prints an endpoint address (fi_av_straddr).
void goshmemi_fab_straddr(goshmemi_fab *f, const void *addr, char *buf, size_t len);

#endif
