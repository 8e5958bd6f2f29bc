// goshmem's libfabric shim, part 2: counters and deferred work; see trigger.h.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "trigger.h"

int goshmemi_fab_cntr_open(goshmemi_fab *f, struct goshmemi_fid_cntr **out) {
	struct goshmemi_fi_cntr_attr a = { .events = GOSHMEMI_FI_CNTR_EVENTS_COMP, .wait_obj = GOSHMEMI_FI_WAIT_UNSPEC };
	if (goshmemi_fi_cntr_open(f->domain, &a, out, NULL) == 0) return 0;
	a.wait_obj = GOSHMEMI_FI_WAIT_NONE;
	return goshmemi_fi_cntr_open(f->domain, &a, out, NULL);
}

int goshmemi_fab_cntr_close(struct goshmemi_fid_cntr *c) { return goshmemi_fi_close(&c->fid); }
uint64_t goshmemi_fab_cntr_read(struct goshmemi_fid_cntr *c) { return goshmemi_fi_cntr_read(c); }
uint64_t goshmemi_fab_cntr_readerr(struct goshmemi_fid_cntr *c) { return goshmemi_fi_cntr_readerr(c); }
int goshmemi_fab_cntr_add(struct goshmemi_fid_cntr *c, uint64_t v) { return goshmemi_fi_cntr_add(c, v); }
int goshmemi_fab_cntr_set(struct goshmemi_fid_cntr *c, uint64_t v) { return goshmemi_fi_cntr_set(c, v); }

static void dwork_head(goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold, struct goshmemi_fid_cntr *comp) {
	memset(w, 0, sizeof *w);
	w->work.threshold = threshold;
	w->work.triggering_cntr = trig;
	w->work.completion_cntr = comp;
}

static void build_write(goshmemi_fab *f, goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold,
	struct goshmemi_fid_cntr *comp, const void *buf, size_t len, void *desc, goshmemi_fi_addr_t dest, uint64_t raddr,
	uint64_t key, uint64_t flags);

int goshmemi_fab_queue_write(goshmemi_fab *f, goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold,
	struct goshmemi_fid_cntr *comp, const void *buf, size_t len, void *desc, goshmemi_fi_addr_t dest, uint64_t raddr,
	uint64_t key, uint64_t flags) {
	build_write(f, w, trig, threshold, comp, buf, len, desc, dest, raddr, key, flags);
	return goshmemi_fi_control(&f->domain->fid, GOSHMEMI_FI_QUEUE_WORK, &w->work);
}

int goshmemi_fab_queue_cntr_add(goshmemi_fab *f, goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold,
	struct goshmemi_fid_cntr *comp, struct goshmemi_fid_cntr *target, uint64_t value) {
	dwork_head(w, trig, threshold, comp);
	w->op.cntr.cntr = target;
	w->op.cntr.value = value;
	w->work.op_type = GOSHMEMI_FI_OP_CNTR_ADD;
	w->work.op.cntr = &w->op.cntr;
	return goshmemi_fi_control(&f->domain->fid, GOSHMEMI_FI_QUEUE_WORK, &w->work);
}

goshmemi_dwork_set *goshmemi_fab_set_new(goshmemi_fab *f, struct goshmemi_fid_cntr *trig, struct goshmemi_fid_cntr *comp, int n) {
	goshmemi_dwork_set *s = calloc(1, sizeof *s);
	if (!s) return NULL;
	s->rel = calloc((size_t)(n > 0 ? n : 1), sizeof *s->rel);
	s->w = calloc((size_t)(n > 0 ? n : 1), sizeof *s->w);
	if (!s->rel || !s->w) {
		goshmemi_fab_set_free(s);
		return NULL;
	}
	s->f = f;
	s->trig = trig;
	s->comp = comp;
	s->n = n;
	return s;
}

void goshmemi_fab_set_free(goshmemi_dwork_set *s) {
	if (!s) return;
	free(s->rel);
	free(s->w);
	free(s);
}

static void build_write(goshmemi_fab *f, goshmemi_dwork *w, struct goshmemi_fid_cntr *trig, uint64_t threshold,
	struct goshmemi_fid_cntr *comp, const void *buf, size_t len, void *desc, goshmemi_fi_addr_t dest, uint64_t raddr,
	uint64_t key, uint64_t flags) {
	dwork_head(w, trig, threshold, comp);
	w->iov.iov_base = (void *)buf;
	w->iov.iov_len = len;
	w->rma_iov.addr = raddr;
	w->rma_iov.len = len;
	w->rma_iov.key = key;
	w->desc = desc;
	w->op.rma.ep = f->ep;
	w->op.rma.msg.msg_iov = &w->iov;
	w->op.rma.msg.desc = &w->desc;
	w->op.rma.msg.iov_count = 1;
	w->op.rma.msg.addr = dest;
	w->op.rma.msg.rma_iov = &w->rma_iov;
	w->op.rma.msg.rma_iov_count = 1;
	// The sockets provider reads the trigger from the operation's context:
	// it must be the work's own context (else -FI_EINVAL, as tested with
	// libfabric 1.17).
	w->op.rma.msg.context = &w->work.context;
	w->op.rma.flags = flags;
	w->work.op_type = GOSHMEMI_FI_OP_WRITE;
	w->work.op.rma = &w->op.rma;
}

void goshmemi_fab_set_write(goshmemi_dwork_set *s, int i, uint64_t rel, int chain, const void *buf, size_t len,
	void *desc, goshmemi_fi_addr_t dest, uint64_t raddr, uint64_t key, uint64_t flags) {
	s->rel[i] = rel;
	build_write(s->f, &s->w[i], s->trig, rel, chain ? s->trig : s->comp, buf, len, desc, dest, raddr, key, flags);
}

static uint64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int set_arm(goshmemi_dwork_set *s, uint64_t base, int reset, int *failed) {
	int rc;
	*failed = -1;
	if (reset) {
		if ((rc = goshmemi_fi_cntr_set(s->trig, 0))) return rc;
		if ((rc = goshmemi_fi_cntr_set(s->comp, 0))) return rc;
	}
	for (int i = 0; i < s->n; i++) {
		s->w[i].work.threshold = base + s->rel[i];
		rc = (int)goshmemi_fi_control(&s->f->domain->fid, GOSHMEMI_FI_QUEUE_WORK, &s->w[i].work);
		if (rc) {
			*failed = i;
			return rc;
		}
	}
	return 0;
}

int goshmemi_fab_set_arm(goshmemi_dwork_set *s, uint64_t base, int reset, int timed) {
	if (!timed) return set_arm(s, base, reset, &s->failed);
	uint64_t t0 = mono_ns();
	int rc = set_arm(s, base, reset, &s->failed);
	s->ns = mono_ns() - t0;
	return rc;
}

// Log histogram with 8 buckets per power of two (~9% wide): the median of
// the epochs' arm times, robust to the preemptions of a loaded machine.
#define HIST_BUCKETS 512
static int hist_bucket(uint64_t ns) {
	if (ns < 8) return (int)ns;
	int l = 63 - __builtin_clzll(ns);
	int b = (l - 2) * 8 + (int)((ns >> (l - 3)) & 7);
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}
static uint64_t hist_median(const uint32_t *h, uint64_t total) {
	uint64_t seen = 0;
	for (int b = 0; b < HIST_BUCKETS; b++) {
		seen += h[b];
		if (2 * seen >= total && h[b]) {
			if (b < 8) return (uint64_t)b;
			int l = b / 8 + 2, m = b % 8;
			uint64_t lo = (uint64_t)(8 + m) << (l - 3), w = 1ull << (l - 3);
			return lo + w / 2;
		}
	}
	return 0;
}

int goshmemi_fab_set_bench(goshmemi_dwork_set *s, uint64_t span, uint64_t cmax, int reset, int iters, uint64_t *out) {
	uint64_t base = 0, cbase = 0, expect = 0;
	int rc, failed;
	static _Thread_local uint32_t hist[HIST_BUCKETS];
	memset(hist, 0, sizeof hist);
	memset(out, 0, 6 * sizeof *out);
	for (int i = 0; i < s->n; i++)
		if (s->w[i].work.completion_cntr == s->comp) expect++;
	for (int it = 0; it < iters; it++) {
		int rs = reset || it == 0 || base + span > cmax;
		uint64_t t0 = mono_ns();
		if (rs) {
			if ((rc = goshmemi_fi_cntr_set(s->trig, 0))) return rc;
			if ((rc = goshmemi_fi_cntr_set(s->comp, 0))) return rc;
			base = cbase = 0;
			out[4]++;
		}
		uint64_t t1 = mono_ns();
		if ((rc = set_arm(s, base, 0, &failed))) return rc;
		uint64_t t2 = mono_ns();
		out[0] += t1 - t0;
		out[1] += t2 - t1;
		if (t2 - t0 > out[2]) out[2] = t2 - t0;
		hist[hist_bucket(t2 - t0)]++;
		// release (untimed): every record runs, chains included
		if ((rc = goshmemi_fi_cntr_add(s->trig, span - (s->n - expect)))) return rc;
		uint64_t deadline = t2 + 5000000000ull;
		while (goshmemi_fi_cntr_read(s->comp) < cbase + expect) {
			if (goshmemi_fi_cntr_readerr(s->comp) != 0) return -GOSHMEMI_FI_EIO;
			if (mono_ns() > deadline) return -GOSHMEMI_FI_ETIMEDOUT;
		}
		base += span;
		cbase += expect;
		out[3]++;
		out[5] = hist_median(hist, out[3]);
	}
	return 0;
}

int goshmemi_fab_flush_work(goshmemi_fab *f) { return goshmemi_fi_control(&f->domain->fid, GOSHMEMI_FI_FLUSH_WORK, NULL); }

int goshmemi_fab_cancel_work(goshmemi_fab *f, goshmemi_dwork *w) {
	return goshmemi_fi_control(&f->domain->fid, GOSHMEMI_FI_CANCEL_WORK, &w->work);
}

// The CXI extension: fi_open_ops(FI_CXI_COUNTER_OPS) on a counter gives
// get_mmio_addr (abi.h declares the ops table). It fails (-FI_ENOSYS) on
// every provider but cxi, which is the run-time check.
int goshmemi_fab_cxi_ext_compiled(void) { return 1; }

int goshmemi_fab_cxi_cntr_mmio(struct goshmemi_fid_cntr *c, void **addr, size_t *len) {
	struct goshmemi_fi_cxi_cntr_ops *ops = NULL;
	int rc = goshmemi_fi_open_ops(&c->fid, GOSHMEMI_FI_CXI_COUNTER_OPS, 0, (void **)&ops, NULL);
	if (rc) return rc;
	if (!ops || !ops->get_mmio_addr) return -GOSHMEMI_FI_ENOSYS;
	return ops->get_mmio_addr(&c->fid, addr, len);
}
