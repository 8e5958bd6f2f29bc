// goshmem's libfabric shim; see shim.h.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "shim.h"

static struct goshmemi_fi_info *goshmemi_fab_hints(const char *prov, int want_atomic, uint64_t extra_caps) {
	struct goshmemi_fi_info *h = goshmemi_fi_allocinfo();
	if (!h) return NULL;
	h->caps = GOSHMEMI_FI_RMA | GOSHMEMI_FI_READ | GOSHMEMI_FI_WRITE | GOSHMEMI_FI_REMOTE_READ | GOSHMEMI_FI_REMOTE_WRITE | extra_caps;
	if (want_atomic & GOSHMEMI_WANT_ATOMIC) h->caps |= GOSHMEMI_FI_ATOMIC;
	if (want_atomic & GOSHMEMI_WANT_FENCE) h->caps |= GOSHMEMI_FI_FENCE; // Ref: fi_getinfo(3) FI_FENCE
	h->mode = 0; // contexts are plain integers: no FI_CONTEXT
	h->ep_attr->type = GOSHMEMI_FI_EP_RDM;
	h->domain_attr->threading = GOSHMEMI_FI_THREAD_SAFE;
	h->domain_attr->mr_mode = GOSHMEMI_FI_MR_LOCAL | GOSHMEMI_FI_MR_VIRT_ADDR | GOSHMEMI_FI_MR_ALLOCATED | GOSHMEMI_FI_MR_PROV_KEY | GOSHMEMI_FI_MR_ENDPOINT;
	if (prov && prov[0]) h->fabric_attr->prov_name = strdup(prov);
	return h;
}

int goshmemi_fab_providers(char *buf, size_t len) {
	struct goshmemi_fi_info *h = goshmemi_fab_hints("", 0, 0), *list = NULL, *i;
	if (!h) return -GOSHMEMI_FI_ENOMEM;
	int rc = goshmemi_fi_getinfo(GOSHMEMI_FI_API_VERSION, NULL, NULL, 0, h, &list);
	goshmemi_fi_freeinfo(h);
	buf[0] = 0;
	if (rc) return rc;
	size_t used = 0;
	for (i = list; i; i = i->next) {
		const char *p = i->fabric_attr->prov_name;
		// skip duplicates (one entry per fabric/domain)
		struct goshmemi_fi_info *j;
		int dup = 0;
		for (j = list; j != i; j = j->next)
			if (!strcmp(j->fabric_attr->prov_name, p)) { dup = 1; break; }
		if (dup) continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", p);
		if (n < 0 || (size_t)n >= len - used) break;
		used += n;
	}
	goshmemi_fi_freeinfo(list);
	return 0;
}

#define FAIL(call) do { snprintf(f->where, sizeof f->where, "%s", call); goto fail; } while (0)

int goshmemi_fab_open(const char *prov, int want_atomic, goshmemi_fab **out, goshmemi_fab_attr *attr, char *where, size_t wherelen) {
	return goshmemi_fab_open_caps(prov, want_atomic, 0, out, attr, where, wherelen);
}

// goshmemi_fab_open_caps is goshmemi_fab_open asking for extra_caps too
// (FI_TRIGGER for deferred work, see trigger.h); it takes the first entry.
int goshmemi_fab_open_caps(const char *prov, int want_atomic, uint64_t extra_caps, goshmemi_fab **out, goshmemi_fab_attr *attr, char *where, size_t wherelen) {
	struct goshmemi_fi_info *list = NULL;
	int rc = goshmemi_fab_getinfo(prov, want_atomic, extra_caps, &list);
	if (rc) {
		snprintf(where, wherelen, "fi_getinfo");
		return rc;
	}
	rc = goshmemi_fab_open_info(list, out, attr, where, wherelen);
	goshmemi_fi_freeinfo(list);
	return rc;
}

int goshmemi_fab_getinfo(const char *prov, int want_atomic, uint64_t extra_caps, struct goshmemi_fi_info **list) {
	struct goshmemi_fi_info *h = goshmemi_fab_hints(prov, want_atomic, extra_caps);
	if (!h) return -GOSHMEMI_FI_ENOMEM;
	int rc = goshmemi_fi_getinfo(GOSHMEMI_FI_API_VERSION, NULL, NULL, 0, h, list);
	goshmemi_fi_freeinfo(h);
	return rc;
}

int goshmemi_fab_open_info(const struct goshmemi_fi_info *chosen, goshmemi_fab **out, goshmemi_fab_attr *attr, char *where, size_t wherelen) {
	goshmemi_fab *f = calloc(1, sizeof *f);
	int rc;
	if (!f) return -GOSHMEMI_FI_ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->ctx_lock, NULL);
	f->linger_ns = GOSHMEMI_LINGER_NS;
	// fi_dupinfo copies one entry (its next is NULL): the endpoint binds
	// the chosen entry's source address, not the list's first.
	f->info = goshmemi_fi_dupinfo(chosen);
	if (!f->info) { rc = -GOSHMEMI_FI_ENOMEM; snprintf(f->where, sizeof f->where, "fi_dupinfo"); goto fail; }
	if ((rc = goshmemi_fi_fabric(f->info->fabric_attr, &f->fabric, NULL))) FAIL("fi_fabric");
	if ((rc = goshmemi_fi_domain(f->fabric, f->info, &f->domain, NULL))) FAIL("fi_domain");
	struct goshmemi_fi_av_attr av = { .type = GOSHMEMI_FI_AV_TABLE };
	if ((rc = goshmemi_fi_av_open(f->domain, &av, &f->av, NULL))) FAIL("fi_av_open");
	struct goshmemi_fi_cq_attr cq = { .format = GOSHMEMI_FI_CQ_FORMAT_CONTEXT, .size = 4096, .wait_obj = GOSHMEMI_FI_WAIT_UNSPEC };
	f->cq_wait = 1;
	if (goshmemi_fi_cq_open(f->domain, &cq, &f->cq, NULL)) {
		cq.wait_obj = GOSHMEMI_FI_WAIT_NONE;
		f->cq_wait = 0;
		if ((rc = goshmemi_fi_cq_open(f->domain, &cq, &f->cq, NULL))) FAIL("fi_cq_open");
	}
	if ((rc = goshmemi_fi_endpoint(f->domain, f->info, &f->ep, NULL))) FAIL("fi_endpoint");
	if ((rc = goshmemi_fi_ep_bind(f->ep, &f->av->fid, 0))) FAIL("fi_ep_bind(av)");
	if ((rc = goshmemi_fi_ep_bind(f->ep, &f->cq->fid, GOSHMEMI_FI_TRANSMIT | GOSHMEMI_FI_RECV))) FAIL("fi_ep_bind(cq)");
	if ((rc = goshmemi_fi_enable(f->ep))) FAIL("fi_enable");

	memset(attr, 0, sizeof *attr);
	snprintf(attr->prov, sizeof attr->prov, "%s", f->info->fabric_attr->prov_name);
	snprintf(attr->fabric, sizeof attr->fabric, "%s", f->info->fabric_attr->name);
	snprintf(attr->domain, sizeof attr->domain, "%s", f->info->domain_attr->name);
	attr->caps = f->info->caps;
	attr->msg_order = f->info->tx_attr->msg_order;
	attr->max_msg_size = f->info->ep_attr->max_msg_size;
	attr->inject_size = f->info->tx_attr->inject_size;
	attr->mr_mode = (uint64_t)f->info->domain_attr->mr_mode;
	attr->mr_key_size = f->info->domain_attr->mr_key_size;
	attr->data_progress = f->info->domain_attr->data_progress;
	attr->threading = f->info->domain_attr->threading;
	attr->has_atomic = (f->info->caps & GOSHMEMI_FI_ATOMIC) != 0;
	attr->max_order_waw_size = f->info->ep_attr->max_order_waw_size;
	*out = f;
	return 0;
fail:
	snprintf(where, wherelen, "%s", f->where);
	goshmemi_fab_close(f);
	return rc;
}

void goshmemi_fab_close(goshmemi_fab *f) {
	if (!f) return;
	if (f->parent) {
		goshmemi_fab_ctx_close(f);
		return;
	}
	goshmemi_fab_stop_progress(f);
	if (f->ep) goshmemi_fi_close(&f->ep->fid);
	if (f->cq) goshmemi_fi_close(&f->cq->fid);
	if (f->av) goshmemi_fi_close(&f->av->fid);
	if (f->domain) goshmemi_fi_close(&f->domain->fid);
	if (f->fabric) goshmemi_fi_close(&f->fabric->fid);
	if (f->info) goshmemi_fi_freeinfo(f->info);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->ctx_lock);
	free(f);
}

int goshmemi_fab_getname(goshmemi_fab *f, void *buf, size_t *len) {
	return goshmemi_fi_getname(&f->ep->fid, buf, len);
}

int goshmemi_fab_av_insert(goshmemi_fab *f, const void *addrs, size_t count, goshmemi_fi_addr_t *out) {
	int n = goshmemi_fi_av_insert(f->av, addrs, count, out, 0, NULL);
	if (n < 0) return n;
	if ((size_t)n != count) return -GOSHMEMI_FI_EADDRNOTAVAIL;
	return 0;
}

int goshmemi_fab_mr_reg(goshmemi_fab *f, void *buf, size_t len, uint64_t access, uint64_t key, struct goshmemi_fid_mr **mr, void **desc, uint64_t *rkey) {
	int rc = goshmemi_fi_mr_reg(f->domain, buf, len, access, 0, key, 0, mr, NULL);
	if (rc) return rc;
	if (f->info->domain_attr->mr_mode & GOSHMEMI_FI_MR_ENDPOINT) {
		if ((rc = goshmemi_fi_mr_bind(*mr, &f->ep->fid, 0)) || (rc = goshmemi_fi_mr_enable(*mr))) {
			goshmemi_fi_close(&(*mr)->fid);
			return rc;
		}
	}
	*desc = goshmemi_fi_mr_desc(*mr);
	*rkey = goshmemi_fi_mr_key(*mr);
	if (*rkey == GOSHMEMI_FI_KEY_NOTAVAIL) {
		goshmemi_fi_close(&(*mr)->fid);
		return -GOSHMEMI_FI_ENOKEY;
	}
	return 0;
}

int goshmemi_fab_mr_close(struct goshmemi_fid_mr *mr) { return goshmemi_fi_close(&mr->fid); }

ssize_t goshmemi_fab_write(goshmemi_fab *f, const void *buf, size_t len, void *desc, goshmemi_fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t ctx, uint64_t flags) {
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct goshmemi_fi_rma_iov rma = { .addr = raddr, .len = len, .key = key };
	struct goshmemi_fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
		.rma_iov = &rma, .rma_iov_count = 1, .context = (void *)(uintptr_t)ctx,
	};
	return goshmemi_fi_writemsg(f->ep, &msg, flags | GOSHMEMI_FI_COMPLETION);
}

ssize_t goshmemi_fab_read(goshmemi_fab *f, void *buf, size_t len, void *desc, goshmemi_fi_addr_t src, uint64_t raddr, uint64_t key, uint64_t ctx) {
	return goshmemi_fi_read(f->ep, buf, len, desc, src, raddr, key, (void *)(uintptr_t)ctx);
}

// kind: 0 fi_atomicmsg (no result), 1 fi_fetch_atomicmsg, 2 fi_compare_atomicmsg.
ssize_t goshmemi_fab_atomic(goshmemi_fab *f, int kind, const void *operand, const void *compare, void *result, void *desc,
	int dt, int op, goshmemi_fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t ctx, uint64_t flags) {
	struct goshmemi_fi_ioc ioc = { .addr = (void *)operand, .count = 1 };
	struct goshmemi_fi_ioc cioc = { .addr = (void *)compare, .count = 1 };
	struct goshmemi_fi_ioc rioc = { .addr = result, .count = 1 };
	struct goshmemi_fi_rma_ioc rma = { .addr = raddr, .count = 1, .key = key };
	struct goshmemi_fi_msg_atomic msg = {
		.msg_iov = &ioc, .desc = &desc, .iov_count = 1, .addr = dest,
		.rma_iov = &rma, .rma_iov_count = 1, .datatype = dt,
		.op = op, .context = (void *)(uintptr_t)ctx,
	};
	flags |= GOSHMEMI_FI_COMPLETION;
	switch (kind) {
	case 0:
		return goshmemi_fi_atomicmsg(f->ep, &msg, flags);
	case 1:
		return goshmemi_fi_fetch_atomicmsg(f->ep, &msg, &rioc, &desc, 1, flags);
	default:
		return goshmemi_fi_compare_atomicmsg(f->ep, &msg, &cioc, &desc, 1, &rioc, &desc, 1, flags);
	}
}

int goshmemi_fab_query_atomic(goshmemi_fab *f, int kind, int dt, int op) {
	struct goshmemi_fi_atomic_attr a;
	uint64_t flags = kind == 1 ? GOSHMEMI_FI_FETCH_ATOMIC : kind == 2 ? GOSHMEMI_FI_COMPARE_ATOMIC : 0;
	int rc = goshmemi_fi_query_atomic(f->domain, dt, op, &a, flags);
	if (rc) return rc;
	return a.count >= 1 ? 0 : -GOSHMEMI_FI_EOPNOTSUPP;
}

ssize_t goshmemi_fab_cq_read(goshmemi_fab *f, uint64_t *ctxs, size_t n) {
	struct goshmemi_fi_cq_entry e[64];
	if (n > 64) n = 64;
	ssize_t rc = goshmemi_fi_cq_read(f->cq, e, n);
	if (rc == -GOSHMEMI_FI_EAGAIN) return 0;
	for (ssize_t i = 0; i < rc; i++) ctxs[i] = (uint64_t)(uintptr_t)e[i].op_context;
	return rc;
}

ssize_t goshmemi_fab_cq_sread(goshmemi_fab *f, uint64_t *ctxs, size_t n, int timeout_ms) {
	struct goshmemi_fi_cq_entry e[64];
	if (n > 64) n = 64;
	ssize_t rc = f->cq_wait ? goshmemi_fi_cq_sread(f->cq, e, n, NULL, timeout_ms) : goshmemi_fi_cq_read(f->cq, e, n);
	if (rc == -GOSHMEMI_FI_EAGAIN) return 0;
	for (ssize_t i = 0; i < rc; i++) ctxs[i] = (uint64_t)(uintptr_t)e[i].op_context;
	return rc;
}

int goshmemi_fab_cq_readerr(goshmemi_fab *f, uint64_t *ctx, int *err, int *prov_errno, char *msg, size_t msglen) {
	struct goshmemi_fi_cq_err_entry e;
	memset(&e, 0, sizeof e);
	ssize_t rc = goshmemi_fi_cq_readerr(f->cq, &e, 0);
	if (rc < 0) return (int)rc;
	if (rc == 0) return -GOSHMEMI_FI_EAGAIN;
	*ctx = (uint64_t)(uintptr_t)e.op_context;
	*err = e.err;
	*prov_errno = e.prov_errno;
	const char *s = goshmemi_fi_cq_strerror(f->cq, e.prov_errno, e.err_data, NULL, 0);
	snprintf(msg, msglen, "%s", s ? s : "");
	return 0;
}

// read_cq reads up to n completions (and error entries) from the CQ.
static int read_cq(goshmemi_fab *f, goshmemi_comp *out, int n, int block_ms) {
	struct goshmemi_fi_cq_entry e[64];
	if (n > 64) n = 64;
	if (n <= 0) return 0;
	ssize_t rc = block_ms > 0 && f->cq_wait ? goshmemi_fi_cq_sread(f->cq, e, n, NULL, block_ms) : goshmemi_fi_cq_read(f->cq, e, n);
	if (rc > 0) {
		for (ssize_t i = 0; i < rc; i++) {
			out[i].ctx = (uint64_t)(uintptr_t)e[i].op_context;
			out[i].err = 0;
		}
		return (int)rc;
	}
	if (rc != -GOSHMEMI_FI_EAVAIL) return 0;
	struct goshmemi_fi_cq_err_entry ee;
	memset(&ee, 0, sizeof ee);
	if (goshmemi_fi_cq_readerr(f->cq, &ee, 0) != 1) return 0;
	out[0].ctx = (uint64_t)(uintptr_t)ee.op_context;
	out[0].err = ee.err ? ee.err : GOSHMEMI_FI_EOTHER;
	out[0].prov_errno = ee.prov_errno;
	const char *s = goshmemi_fi_cq_strerror(f->cq, ee.prov_errno, ee.err_data, NULL, 0);
	snprintf(out[0].msg, sizeof out[0].msg, "%s", s ? s : "");
	return 1;
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts) {
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

int goshmemi_fab_poll(goshmemi_fab *f, goshmemi_comp *out, int n, int claim) {
	int got = 0;
	if (claim && f->linger_ns) {
		__atomic_store_n(&f->app_poll, now_ns(), __ATOMIC_SEQ_CST);
		// The progress thread blocked in fi_cq_sread would be woken by
		// the next message this thread is about to read itself: get it
		// out once (it then sees the claim and stays off; progress_main).
		if (__atomic_load_n(&f->in_sread, __ATOMIC_SEQ_CST) &&
		    !__atomic_exchange_n(&f->kicked, 1, __ATOMIC_ACQ_REL)) {
			__atomic_add_fetch(&f->kicks, 1, __ATOMIC_RELAXED);
			goshmemi_fi_cq_signal(f->cq);
		}
	}
	if (__atomic_load_n(&f->tail, __ATOMIC_ACQUIRE) != __atomic_load_n(&f->head, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&f->lock);
		while (got < n && f->head != f->tail) {
			out[got++] = f->ring[f->head % GOSHMEMI_RING];
			__atomic_store_n(&f->head, f->head + 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (got < n) got += read_cq(f, out + got, n - got, 0);
	return got;
}

// park hands n completions the progress thread read from f's CQ to the
// next goshmemi_fab_poll of f.
static void park(goshmemi_fab *f, const goshmemi_comp *c, int n) {
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < n; i++) {
		// The ring holds more than the operations in flight: never full.
		f->ring[f->tail % GOSHMEMI_RING] = c[i];
		__atomic_store_n(&f->tail, f->tail + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&f->lock);
}

// progress_main: block in fi_cq_sread when the CQ has a wait object (the
// provider's sockets wake it), else poll with a short sleep; each round
// also reads the context endpoints' CQs (without blocking), so their
// operations progress while no one waits on them. Ref: fi_domain(3)
// FI_PROGRESS_MANUAL: the target must call in for RMA to land.
//
// Hand-off: while an application thread waits for data from the peers
// and polls the endpoint in a loop (shmem's wait loops while they spin:
// goshmemi_fab_poll with claim stamps app_poll), that thread drives the
// provider itself and sees what lands at once, so the progress thread
// stays off the endpoint, asleep on defer_seq until the claim is released
// (goshmemi_fab_release, when the wait returns or stops spinning) or its
// last poll is linger_ns old; a claim that finds it blocked in fi_cq_sread
// gets it out with fi_cq_signal. Otherwise it would sit in epoll on the
// same sockets, be woken by every arriving message (a cross-CPU wake-up
// paid by the sender and a context switch here, tens of microseconds each
// on a virtual machine) and contend for the provider's lock with the
// polling thread, on the one CPU that mpirun binds the process to.
// poll_children reads the context endpoints' CQs without blocking and
// parks what it finds; it reports whether it found anything.
static int poll_children(goshmemi_fab *f, goshmemi_comp *c, int n) {
	int busy = 0;
	if (!__atomic_load_n(&f->children, __ATOMIC_ACQUIRE)) return 0;
	pthread_mutex_lock(&f->ctx_lock);
	for (goshmemi_fab *ch = f->children; ch; ch = ch->next) {
		int m = read_cq(ch, c, n, 0);
		if (m > 0) {
			park(ch, c, m);
			busy = 1;
		}
	}
	pthread_mutex_unlock(&f->ctx_lock);
	return busy;
}

// claimed reports whether an application thread holds a claim on f (see
// progress_main) and, if so, how long it may still last (ns).
static int64_t claimed(goshmemi_fab *f, uint64_t linger) {
	uint64_t at = __atomic_load_n(&f->app_poll, __ATOMIC_SEQ_CST);
	if (!linger || !at) return 0;
	int64_t since = (int64_t)(now_ns() - at);
	if (since < 0) since = 0;
	return since < (int64_t)linger ? (int64_t)linger - since : 0;
}

static void *progress_main(void *arg) {
	goshmemi_fab *f = arg;
	goshmemi_comp c[16];
	int idle = 0, busy = 0;
	while (!f->stop) {
		uint64_t linger = __atomic_load_n(&f->linger_ns, __ATOMIC_RELAXED);
		if (claimed(f, linger)) {
			// The contexts' endpoints are not the claimed one.
			poll_children(f, c, 16);
			uint32_t seq = __atomic_load_n(&f->defer_seq, __ATOMIC_SEQ_CST);
			__atomic_store_n(&f->deferring, 1, __ATOMIC_SEQ_CST);
			int64_t left = claimed(f, linger); // a release after the store wakes us
			if (left) {
				struct timespec ts = { left / 1000000000, left % 1000000000 };
				__atomic_add_fetch(&f->defers, 1, __ATOMIC_RELAXED);
				futex(&f->defer_seq, FUTEX_WAIT_PRIVATE, seq, &ts);
			}
			__atomic_store_n(&f->deferring, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		int block = !busy && f->cq_wait;
		if (block) {
			__atomic_store_n(&f->in_sread, 1, __ATOMIC_SEQ_CST);
			// Dekker with goshmemi_fab_poll: a claim stamped after the
			// check above either sees in_sread and kicks, or is seen here.
			if (claimed(f, linger)) {
				__atomic_store_n(&f->in_sread, 0, __ATOMIC_SEQ_CST);
				__atomic_store_n(&f->kicked, 0, __ATOMIC_RELEASE);
				continue;
			}
		}
		__atomic_add_fetch(&f->rounds, 1, __ATOMIC_RELAXED);
		int n = read_cq(f, c, 16, block);
		if (block) {
			__atomic_store_n(&f->in_sread, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&f->kicked, 0, __ATOMIC_RELEASE);
		}
		if (n > 0) park(f, c, n);
		busy = poll_children(f, c, 16);
		if (n > 0 || busy) {
			idle = 0;
		} else if (!f->cq_wait) {
			struct timespec ts = { 0, idle < 1000 ? 0 : 50000 };
			if (idle < 1000) idle++;
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

void goshmemi_fab_release(goshmemi_fab *f) {
	if (!__atomic_load_n(&f->app_poll, __ATOMIC_RELAXED)) return;
	__atomic_store_n(&f->app_poll, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&f->defer_seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&f->deferring, __ATOMIC_SEQ_CST))
		futex(&f->defer_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void goshmemi_fab_set_linger(goshmemi_fab *f, uint64_t ns) {
	if (ns > 1000000000u) ns = 1000000000u;
	__atomic_store_n(&f->linger_ns, ns, __ATOMIC_RELAXED);
}

int goshmemi_fab_claimed(goshmemi_fab *f) { return __atomic_load_n(&f->app_poll, __ATOMIC_SEQ_CST) != 0; }

void goshmemi_fab_progress_stats(goshmemi_fab *f, uint64_t *defers, uint64_t *rounds, uint64_t *kicks) {
	*defers = __atomic_load_n(&f->defers, __ATOMIC_RELAXED);
	*rounds = __atomic_load_n(&f->rounds, __ATOMIC_RELAXED);
	*kicks = __atomic_load_n(&f->kicks, __ATOMIC_RELAXED);
}

int goshmemi_fab_start_progress(goshmemi_fab *f) {
	if (f->running) return 0;
	int rc = pthread_create(&f->thread, NULL, progress_main, f);
	if (rc) return -rc;
	f->running = 1;
	return 0;
}

void goshmemi_fab_stop_progress(goshmemi_fab *f) {
	if (!f->running) return;
	f->stop = 1;
	__atomic_add_fetch(&f->defer_seq, 1, __ATOMIC_SEQ_CST); // out of a claim's sleep
	futex(&f->defer_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
	pthread_join(f->thread, NULL);
	f->running = 0;
}

#undef FAIL
#define FAIL(call) do { snprintf(where, wherelen, "%s", call); goto fail; } while (0)

int goshmemi_fab_ctx_open(goshmemi_fab *p, goshmemi_fab **out, char *where, size_t wherelen) {
	goshmemi_fab *f = calloc(1, sizeof *f);
	int rc;
	if (!f) return -GOSHMEMI_FI_ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->ctx_lock, NULL);
	f->parent = p;
	f->info = p->info;
	f->fabric = p->fabric;
	f->domain = p->domain;
	f->av = p->av;
	struct goshmemi_fi_cq_attr cq = { .format = GOSHMEMI_FI_CQ_FORMAT_CONTEXT, .size = 4096, .wait_obj = GOSHMEMI_FI_WAIT_NONE };
	if ((rc = goshmemi_fi_cq_open(f->domain, &cq, &f->cq, NULL))) FAIL("fi_cq_open(context)");
	if ((rc = goshmemi_fi_endpoint(f->domain, f->info, &f->ep, NULL))) FAIL("fi_endpoint(context)");
	if ((rc = goshmemi_fi_ep_bind(f->ep, &f->av->fid, 0))) FAIL("fi_ep_bind(context, av)");
	if ((rc = goshmemi_fi_ep_bind(f->ep, &f->cq->fid, GOSHMEMI_FI_TRANSMIT | GOSHMEMI_FI_RECV))) FAIL("fi_ep_bind(context, cq)");
	if ((rc = goshmemi_fi_enable(f->ep))) FAIL("fi_enable(context)");
	pthread_mutex_lock(&p->ctx_lock);
	f->next = p->children;
	__atomic_store_n(&p->children, f, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->ctx_lock);
	*out = f;
	return 0;
fail:
	f->parent = NULL; // not linked yet: release only what it owns
	if (f->ep) goshmemi_fi_close(&f->ep->fid);
	if (f->cq) goshmemi_fi_close(&f->cq->fid);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->ctx_lock);
	free(f);
	return rc;
}

void goshmemi_fab_ctx_close(goshmemi_fab *f) {
	goshmemi_fab *p = f->parent;
	// Unlink first: once the parent's lock is released the progress thread
	// no longer reads this CQ.
	pthread_mutex_lock(&p->ctx_lock);
	for (goshmemi_fab **pp = &p->children; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	}
	pthread_mutex_unlock(&p->ctx_lock);
	if (f->ep) goshmemi_fi_close(&f->ep->fid);
	if (f->cq) goshmemi_fi_close(&f->cq->fid);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->ctx_lock);
	free(f);
}

void goshmemi_fab_straddr(goshmemi_fab *f, const void *addr, char *buf, size_t len) {
	size_t n = len;
	buf[0] = 0;
	if (!goshmemi_fi_av_straddr(f->av, addr, buf, &n)) buf[0] = 0;
	buf[len - 1] = 0;
}
