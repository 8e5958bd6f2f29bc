// rawfi: the floor under goshmem's ofi transport, measured with libfabric
// alone between two processes (fork; addresses exchanged over a socketpair).
//
//   8 B latency: fi_writemsg of 8 bytes, then wait for the write counter
//                (fi_cntr_read, which drives progress) to count it; median
//                and p99 of -i iterations after 1000 warm-up.
//   bandwidth:   windows of 64 fi_writemsg of 1 MiB from a registered buffer,
//                then wait for the counter; GB/s = 1e9 B/s.
//
// The target drives progress the way goshmem's does (-t thread: a thread
// blocked in fi_cq_sread) or busy-polls its CQ (-t spin). -d adds
// FI_DELIVERY_COMPLETE (goshmem's semantics: complete = at the target).
//
// Build: cc -O2 -o rawfi rawfi.c -lfabric -lpthread   (bench/ofi/run.sh)
// -c waits on the CQ (FI_COMPLETION entries, as goshmem does) instead of the counter.
// -f (with -c) completes each 8 B write by a flush: an 8-byte fi_read from the
//    same target after it, waited for on the CQ (reads are ordered after
//    writes, FI_ORDER_RAW; tcp delivers in order), the other way to know a
//    write reached the target without FI_DELIVERY_COMPLETE.
// -P (implies -c) runs goshmem's initiator shape: a progress thread blocked in
//    fi_cq_sread beside the main thread that polls the CQ.
// -A binds each process to one CPU (parent CPU 0, child CPU 1), as
//    mpirun -np 2 does by default: its threads share that CPU.
// Usage: rawfi [-p 'tcp;ofi_rxm'] [-d] [-c] [-f] [-P] [-A] [-t thread|spin] [-i iters] [-s bytes]
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define CHECK(x) do { int _rc = (int)(x); if (_rc) { fprintf(stderr, "rawfi: %s: %s (%d)\n", #x, fi_strerror(-_rc), _rc); exit(1); } } while (0)

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *cntr;
static struct fid_ep *ep;
static struct fid_mr *mr;
static volatile int *stop; // shared between the two processes
static size_t bwsize = 1 << 20;

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int usecq;
static void open_ep(const char *prov) {
	struct fi_info *h = fi_allocinfo();
	h->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	h->fabric_attr->prov_name = strdup(prov);
	CHECK(fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, h, &info));
	fi_freeinfo(h);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	CHECK(fi_av_open(domain, &aa, &av, NULL));
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT, .size = 4096, .wait_obj = FI_WAIT_UNSPEC };
	CHECK(fi_cq_open(domain, &ca, &cq, NULL));
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	CHECK(fi_cntr_open(domain, &na, &cntr, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | (usecq ? 0 : FI_SELECTIVE_COMPLETION)));
	CHECK(fi_ep_bind(ep, &cntr->fid, FI_WRITE));
	CHECK(fi_enable(ep));
}

// -P: the initiator also runs a progress thread blocked in fi_cq_sread (as
// goshmem's C progress thread does), counting the completions it reaps in
// ptdone; the main thread's wait counts both.
static volatile uint64_t ptdone;
static void *init_progress(void *arg) {
	(void)arg;
	struct fi_cq_entry e[16];
	while (!*stop) {
		ssize_t n = fi_cq_sread(cq, e, 16, NULL, 1);
		if (n > 0) __atomic_add_fetch(&ptdone, (uint64_t)n, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *target_thread(void *arg) {
	(void)arg;
	struct fi_cq_entry e[16];
	while (!*stop) fi_cq_sread(cq, e, 16, NULL, 1);
	return NULL;
}

int main(int argc, char **argv) {
	const char *prov = "tcp;ofi_rxm", *tmode = "thread";
	int iters = 10000, delivery = 0, flush = 0, pthr = 0, pin = 0, opt;
	while ((opt = getopt(argc, argv, "p:dt:i:s:cfPA")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'd': delivery = 1; break;
		case 'c': usecq = 1; break;
		case 'f': flush = 1; usecq = 1; break;
		case 't': tmode = optarg; break;
		case 'i': iters = atoi(optarg); break;
		case 's': bwsize = strtoull(optarg, NULL, 0); break;
		case 'P': pthr = 1; usecq = 1; break;
		case 'A': pin = 1; break;
		default: fprintf(stderr, "usage: rawfi [-p prov] [-d] [-c] [-f] [-P] [-A] [-t thread|spin] [-i iters] [-s bytes]\n"); return 2;
		}
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) { perror("socketpair"); return 1; }
	stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t child = fork();
	int rank = child == 0 ? 1 : 0, sock = sv[rank];
	if (pin) { // as mpirun -np 2 binds: one CPU per process, threads included
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(rank % sysconf(_SC_NPROCESSORS_ONLN), &set);
		if (sched_setaffinity(0, sizeof set, &set)) perror("sched_setaffinity");
	}

	open_ep(prov);
	size_t len = bwsize * 2 + 4096;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, rank, len);
	CHECK(fi_mr_reg(domain, buf, len, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 7, 0, &mr, NULL));
	if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(mr, &ep->fid, 0));
		CHECK(fi_mr_enable(mr));
	}
	struct { char addr[128]; size_t alen; uint64_t key, base; } me = {0}, peer;
	me.alen = sizeof me.addr;
	CHECK(fi_getname(&ep->fid, me.addr, &me.alen));
	me.key = fi_mr_key(mr);
	me.base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)buf : 0;
	if (write(sock, &me, sizeof me) != sizeof me || read(sock, &peer, sizeof peer) != sizeof peer) { perror("exchange"); return 1; }
	fi_addr_t dest;
	if (fi_av_insert(av, peer.addr, 1, &dest, 0, NULL) != 1) { fprintf(stderr, "rawfi: fi_av_insert failed\n"); return 1; }

	if (rank == 1) {
		if (!strcmp(tmode, "spin")) {
			struct fi_cq_entry e[16];
			while (!*stop) fi_cq_read(cq, e, 16);
		} else {
			pthread_t th;
			pthread_create(&th, NULL, target_thread, NULL);
			pthread_join(th, NULL);
		}
		char c = 1;
		if (write(sock, &c, 1) != 1) return 1;
		return 0;
	}

	pthread_t pth;
	if (pthr) pthread_create(&pth, NULL, init_progress, NULL);
	void *desc = fi_mr_desc(mr);
	uint64_t flags = (delivery ? FI_DELIVERY_COMPLETE : 0) | (usecq ? FI_COMPLETION : 0);
	uint64_t done = 0;
	struct fi_cq_entry e[16];
	#define POST(n, off) do { \
		struct iovec iov = { .iov_base = buf, .iov_len = (n) }; \
		struct fi_rma_iov rma = { .addr = peer.base + (off), .len = (n), .key = peer.key }; \
		struct fi_msg_rma m = { .msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest, .rma_iov = &rma, .rma_iov_count = 1 }; \
		ssize_t _r; \
		while ((_r = fi_writemsg(ep, &m, flags)) == -FI_EAGAIN) fi_cq_read(cq, e, 16); \
		if (_r) { fprintf(stderr, "rawfi: fi_writemsg: %s\n", fi_strerror((int)-_r)); exit(1); } \
	} while (0)
	uint64_t cqdone = 0;
	#define WAIT(target_expr) do { \
		uint64_t target = (target_expr); \
		if (usecq) { \
			while (cqdone + __atomic_load_n(&ptdone, __ATOMIC_ACQUIRE) < (target)) { \
				ssize_t _n = fi_cq_read(cq, e, 16); \
				if (_n > 0) cqdone += _n; \
				else if (_n == -FI_EAVAIL) { fprintf(stderr, "rawfi: write failed\n"); exit(1); } \
			} \
		} else while (fi_cntr_read(cntr) < (target)) { \
			if (fi_cntr_readerr(cntr)) { fprintf(stderr, "rawfi: write failed\n"); exit(1); } \
			fi_cq_read(cq, e, 16); \
		} \
	} while (0)

	// FLUSH: the write's own completion, then an 8-byte read behind it.
	#define FLUSH() do { \
		ssize_t _r; \
		while ((_r = fi_read(ep, buf + 64, 8, desc, dest, peer.base + 64, peer.key, NULL)) == -FI_EAGAIN) fi_cq_read(cq, e, 16); \
		if (_r) { fprintf(stderr, "rawfi: fi_read: %s\n", fi_strerror((int)-_r)); exit(1); } \
		done++; \
	} while (0)
	double *lat = malloc(sizeof(double) * iters);
	for (int i = 0; i < 1000; i++) { POST(8, 0); done++; if (flush) FLUSH(); WAIT(done); }
	for (int i = 0; i < iters; i++) {
		double t0 = now_us();
		POST(8, 0);
		done++;
		if (flush) FLUSH();
		WAIT(done);
		lat[i] = now_us() - t0;
	}
	qsort(lat, iters, sizeof(double), cmpd);
	printf("rawfi provider=%s delivery_complete=%d wait=%s%s%s target=%s%s\n", info->fabric_attr->prov_name, delivery, usecq ? "cq" : "counter", flush ? "+read-flush" : "", pthr ? " +initiator progress thread" : "", tmode, pin ? " (one CPU per process)" : "");
	printf("put_lat 8 B + counter wait: median %.3f us, p99 %.3f us (%d iters)\n", lat[iters / 2], lat[iters * 99 / 100], iters);
	fflush(stdout);

	int W = 64, windows = 10;
	for (int w = 0; w < 2; w++) { for (int k = 0; k < W; k++) POST(bwsize, bwsize); WAIT(done += W); }
	double *bw = malloc(sizeof(double) * windows);
	for (int w = 0; w < windows; w++) {
		double t0 = now_us();
		for (int k = 0; k < W; k++) POST(bwsize, bwsize);
		WAIT(done += W);
		bw[w] = (double)W * bwsize / ((now_us() - t0) * 1e3);
	}
	qsort(bw, windows, sizeof(double), cmpd);
	printf("put_bw %zu B, window 64 + counter wait: median %.3f GB/s (%d windows)\n", bwsize, bw[windows / 2], windows);
	*stop = 1;
	if (pthr) pthread_join(pth, NULL);
	char c;
	if (read(sock, &c, 1) != 1) return 1;
	waitpid(child, NULL, 0);
	return 0;
}
