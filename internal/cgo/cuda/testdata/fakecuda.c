/*
 * fakecuda.c: a fake libcuda for the tests of package cuda on machines
 * without a GPU. The tests build it with
 *     gcc -shared -fPIC -I.. -o $TMP/libfakecuda.so fakecuda.c
 * and point GOSHMEM_LIBCUDA at it. "Device memory" is host memory, kernels
 * are three built-in C functions, and it keeps a thread-local current
 * context like the real driver, failing memory and launch calls with
 * CUDA_ERROR_INVALID_CONTEXT when none is current, so the tests catch a
 * call made without setting the context on the calling thread.
 *
 * A PTX module (text starting with ".version") loads when every .entry in
 * it is one of goshmem's own host-side kernels (the host atomics of
 * internal/transport/cuda/amo_ptx.go and the soft NIC's copy kernel of
 * region.go): the fake runs each as the C function its PTX describes. It
 * does not compile PTX; any other entry fails the load with
 * CUDA_ERROR_NOT_SUPPORTED.
 *
 * A fatbin image (magic 0xBA55ED50: goshmem's kernel library,
 * gpulib/lib.fatbin, or the tests' stand-in) loads the host-mode build of
 * the library's source (gpulib/lib.cu compiled by g++ into libfakecuda_kernels.so next
 * to this library, or the file FAKECUDA_KERNELS names): cuModuleGetFunction
 * finds a kernel by its name there, and cuLaunchKernel calls it on the
 * launching thread with the module's goshmemi_device_state installed as
 * that thread's state. One host call stands for a whole block (the
 * header's _block forms are thread forms in host mode); a grid of several
 * blocks (the library's grid kernels, whose blocks never wait for each
 * other) runs as one call per block, in order. Every stream is synchronous: work runs inside the call
 * that queues it, so stream order holds trivially and a kernel that waits
 * for a peer blocks its caller until the peer (another process) delivers.
 *
 * Device memory is a shared memory file per allocation (memfd), so that a
 * CUDA IPC handle opens in another process as on a GPU: the opener maps the
 * owner's file through /proc/<pid>/fd (at another address). In the owner's
 * own process the handle opens at the allocation's own address (the real
 * driver refuses that; goshmem's in-process tests rely on it).
 *
 * Environment: FAKECUDA_DEVICES (default 2), FAKECUDA_INIT (cuInit's
 * result, default 0), FAKECUDA_LEAKS (a path prefix: the fake keeps
 * <prefix>.<pid> holding its live objects, one "name count" line each,
 * rewritten at every change, so a test can check that everything was
 * released; a Go program exits without running C destructors, hence no
 * report at exit), FAKECUDA_CTXSYNC_DELAY_MS (below), FAKECUDA_BUSY_LOAD=fail (a module load while a kernel
 * of this process runs on the same device, on any thread, fails with
 * CUDA_ERROR_NOT_PERMITTED and a line on stderr: a GPU's module load may
 * wait until no kernel runs, under MPS no kernel of any process, so a
 * load while a kernel waits for the loading PE never returns there; the
 * in-process tests' PEs on one device stand for MPS clients). Not
 * thread-safe beyond what the tests need.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 8

struct CUctx_st {
	int dev;
	int refs;
	int pending; /* fault to report at the next sync (cleared then: unlike the real driver) */
	unsigned peers;
};
/* The kernel library's one by-value argument (internal/gpulib/lib.h). */
struct lib_args {
	uint64_t v[8];
};
typedef void (*lib_kernel)(struct lib_args);
struct CUmod_st {
	int magic;
	unsigned long long ptx; /* PTX module: bit i = ptxfuncs[i] is in it */
	int plain; /* "FAKEMODULE-PLAIN": the fake kernels without goshmem's device state */
	/* kernel library module (fatbin image): */
	int lib;
	uint64_t state_ptr;  /* its goshmemi_device_state */
	void *state_c;       /* its goshmemi_device_state_c */
	struct CUfunc_st **fns;
	int nfn;
};
struct CUfunc_st {
	const char *name;
	lib_kernel host; /* kernel library: the host build's function */
	struct CUmod_st *mod;
	int regs; /* registers per thread cuFuncGetAttribute reports (0: 32) */
};
struct CUstream_st {
	int magic;
};
struct CUevent_st {
	int magic;
};

static int ndev = -1;
static struct CUctx_st ctxs[MAXDEV];
static __thread CUcontext cur;
/* Kernels running on each device now, every thread's (FAKECUDA_BUSY_LOAD). */
static int running[MAXDEV];
static unsigned long long device_state; /* __constant__ goshmemi_device_state stand-in */
/* fake_heavy is empty at 96 registers per thread: blocks above 672 threads
 * do not launch, as on a GPU with 64K registers per SM. */
static struct CUfunc_st funcs[] = {{"fake_pack"}, {"fake_fault"}, {"empty"}, {"fake_heavy", NULL, NULL, 96}};

/* The largest block f launches with: whole warps of its registers in 64K. */
static int fn_max_threads(CUfunction f)
{
	int regs = f->regs ? f->regs : 32, t = 65536 / (regs * 32) * 32;
	return t < 1024 ? t : 1024;
}

/* goshmem's PTX kernels the fake runs (see ptx_run): the soft NIC's copy,
 * then goshmemi_host_amo_<op>_<width> in transport.AMO order, 32 then 64. */
static const char *amo_ops[] = {"fetch", "set", "swap", "compare_swap", "fetch_add", "fetch_and", "fetch_or", "fetch_xor"};
#define NAMO (sizeof amo_ops / sizeof amo_ops[0])
#define NPTX (1 + 2 * NAMO)
static struct CUfunc_st ptxfuncs[NPTX];
static char ptxnames[NPTX][48];
static pthread_once_t ptx_once = PTHREAD_ONCE_INIT;

static void ptx_names(void)
{
	size_t i;
	snprintf(ptxnames[0], sizeof ptxnames[0], "goshmemi_host_copy");
	for (i = 0; i < 2 * NAMO; i++)
		snprintf(ptxnames[1 + i], sizeof ptxnames[0], "goshmemi_host_amo_%s_%d", amo_ops[i % NAMO], i < NAMO ? 32 : 64);
	for (i = 0; i < NPTX; i++)
		ptxfuncs[i].name = ptxnames[i];
}

/* Live objects, for FAKECUDA_LEAKS. */
enum { L_DEVMEM, L_HOSTMEM, L_HOSTREG, L_STREAM, L_EVENT, L_MODULE, L_IPC, L_CTXREF, L_VMMRES, L_VMMHANDLE, L_VMMMAP, NLIVE };
static const char *live_names[NLIVE] = {"device_allocs", "host_allocs", "host_registrations", "streams",
					"events", "modules", "ipc_mappings", "primary_ctx_refs",
					"vmm_reservations", "vmm_handles", "vmm_mappings"};
static long live[NLIVE];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;

static void live_add(int kind, long d)
{
	const char *prefix = getenv("FAKECUDA_LEAKS");
	char path[4096], tmp[4200];
	FILE *f;
	int i;
	pthread_mutex_lock(&live_mu);
	live[kind] += d;
	if (prefix && *prefix) {
		snprintf(path, sizeof path, "%s.%d", prefix, (int)getpid());
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		f = fopen(tmp, "w");
		if (f) {
			for (i = 0; i < NLIVE; i++)
				fprintf(f, "%s %ld\n", live_names[i], live[i]);
			if (fclose(f) == 0)
				rename(tmp, path);
		}
	}
	pthread_mutex_unlock(&live_mu);
}

#define NEED_CTX()                                  \
	do {                                        \
		if (ndev < 0)                       \
			return CUDA_ERROR_NOT_INITIALIZED; \
		if (!cur)                           \
			return CUDA_ERROR_INVALID_CONTEXT; \
	} while (0)

EXPORT CUresult cuInit(unsigned int flags)
{
	const char *d = getenv("FAKECUDA_DEVICES"), *r = getenv("FAKECUDA_INIT");
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (r && atoi(r) != 0)
		return (CUresult)atoi(r);
	ndev = d && *d ? atoi(d) : 2; /* set but empty: the default */
	if (ndev > MAXDEV)
		ndev = MAXDEV;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	*v = 12040;
	return CUDA_SUCCESS;
}

static const struct {
	int code;
	const char *name, *msg;
} errtab[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
	{800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static CUresult errlookup(CUresult e, const char **p, int msg)
{
	size_t i;
	for (i = 0; i < sizeof errtab / sizeof errtab[0]; i++)
		if (errtab[i].code == (int)e) {
			*p = msg ? errtab[i].msg : errtab[i].name;
			return CUDA_SUCCESS;
		}
	*p = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **p) { return errlookup(e, p, 0); }
EXPORT CUresult cuGetErrorString(CUresult e, const char **p) { return errlookup(e, p, 1); }

EXPORT CUresult cuDeviceGetCount(int *n)
{
	if (ndev < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = ndev;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (ndev < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

#define CHECK_DEV(d)                                   \
	do {                                           \
		if (ndev < 0)                          \
			return CUDA_ERROR_NOT_INITIALIZED; \
		if ((d) < 0 || (d) >= ndev)            \
			return CUDA_ERROR_INVALID_DEVICE;  \
	} while (0)

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	CHECK_DEV(d);
	snprintf(name, (size_t)len, "Fake H200 #%d", d);
	return CUDA_SUCCESS;
}

/* FAKECUDA_CC=major.minor: the compute capability every device reports
 * (default 9.0, an H200's; 8.0 is an A100's). */
static int fake_cc(int minor)
{
	const char *e = getenv("FAKECUDA_CC");
	int ma = 9, mi = 0;
	if (e && *e && sscanf(e, "%d.%d", &ma, &mi) < 1)
		ma = 9;
	return minor ? mi : ma;
}

static int fake_vmm(void);

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	CHECK_DEV(d);
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = fake_cc(0); break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = fake_cc(1); break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0x18 + d; break;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = fake_vmm(); break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d)
{
	CHECK_DEV(d);
	snprintf(id, (size_t)len, "0000:%02X:00.0", 0x18 + d);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d)
{
	CHECK_DEV(d);
	*n = 150754820096ULL;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice p)
{
	CHECK_DEV(d);
	CHECK_DEV(p);
	*can = d != p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	CHECK_DEV(d);
	ctxs[d].dev = d;
	__atomic_add_fetch(&ctxs[d].refs, 1, __ATOMIC_SEQ_CST);
	live_add(L_CTXREF, 1);
	*c = &ctxs[d];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	CHECK_DEV(d);
	if (__atomic_sub_fetch(&ctxs[d].refs, 1, __ATOMIC_SEQ_CST) < 0) {
		__atomic_add_fetch(&ctxs[d].refs, 1, __ATOMIC_SEQ_CST);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	live_add(L_CTXREF, -1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	if (ndev < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (c && c->refs <= 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	cur = c;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	if (ndev < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	*c = cur;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	NEED_CTX();
	if (cur->refs <= 0) /* released to the end while current, as the driver: destroyed */
		return (CUresult)709; /* CUDA_ERROR_CONTEXT_IS_DESTROYED */
	*d = cur->dev;
	return CUDA_SUCCESS;
}

/* Sleeps the milliseconds the environment variable name gives (none:
 * no delay). */
static void env_delay(const char *name)
{
	const char *e = getenv(name);
	long ms = e && *e ? atol(e) : 0;
	if (ms > 0) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
}

static CUresult sync_cur(void)
{
	int p;
	NEED_CTX();
	p = __atomic_exchange_n(&cur->pending, 0, __ATOMIC_SEQ_CST);
	return (CUresult)p;
}

/* FAKECUDA_CTXSYNC_DELAY_MS=ms makes every cuCtxSynchronize take that
 * long (work still queued on the GPU, as streams here never hold any). */
EXPORT CUresult cuCtxSynchronize(void)
{
	env_delay("FAKECUDA_CTXSYNC_DELAY_MS");
	return sync_cur();
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
	NEED_CTX();
	if (flags != 0 || !peer || peer == cur)
		return CUDA_ERROR_INVALID_VALUE;
	if (cur->peers & (1u << peer->dev))
		return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
	cur->peers |= 1u << peer->dev;
	return CUDA_SUCCESS;
}

/* The legacy unversioned symbol: must not be the one goshmem resolves. */
EXPORT CUresult cuMemAlloc(unsigned int *p, unsigned int n)
{
	(void)p;
	(void)n;
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* A device allocation (fd >= 0) or another process's allocation mapped
 * by cuIpcOpenMemHandle (fd < 0). */
struct devmap {
	uintptr_t p;
	size_t n;
	int fd;
	CUcontext ctx; /* current when it was made: cuPointerGetAttribute's CONTEXT */
	struct devmap *next;
};
/* fd of a VMM mapping's entry (vmmmap_add) */
#define VMMMAP_FD (-2)
static struct devmap *devmaps;
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;

static void devmap_add(uintptr_t p, size_t n, int fd)
{
	struct devmap *d = malloc(sizeof *d);
	d->p = p, d->n = n, d->fd = fd, d->ctx = cur;
	pthread_mutex_lock(&dev_mu);
	d->next = devmaps;
	devmaps = d;
	pthread_mutex_unlock(&dev_mu);
}

/* The entry at p of the kind asked for (owned: an allocation), unlinked
 * when take; NULL when there is none. */
static struct devmap *devmap_find(uintptr_t p, int owned, int take, struct devmap *copy)
{
	struct devmap **pp, *d = NULL;
	pthread_mutex_lock(&dev_mu);
	for (pp = &devmaps; *pp; pp = &(*pp)->next)
		if ((*pp)->p == p && (*pp)->fd != VMMMAP_FD && ((*pp)->fd >= 0) == owned) {
			d = *pp;
			*copy = *d;
			if (take)
				*pp = d->next;
			break;
		}
	pthread_mutex_unlock(&dev_mu);
	if (d && take)
		free(d);
	return d ? copy : NULL;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *m;
	int fd;
	NEED_CTX();
	if (n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (n > ((size_t)1 << 40))
		return CUDA_ERROR_OUT_OF_MEMORY;
	n = (n + 4095) & ~(size_t)4095;
	fd = memfd_create("fakecuda", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (ftruncate(fd, (off_t)n) != 0 ||
	    (m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	devmap_add((uintptr_t)m, n, fd);
	*p = (CUdeviceptr)(uintptr_t)m;
	live_add(L_DEVMEM, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	struct devmap d;
	NEED_CTX();
	if (!p)
		return CUDA_SUCCESS;
	if (!devmap_find((uintptr_t)p, 1, 1, &d))
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)d.p, d.n);
	close(d.fd);
	live_add(L_DEVMEM, -1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n)
{
	NEED_CTX();
	memset((void *)(uintptr_t)p, v, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n)
{
	NEED_CTX();
	memcpy((void *)(uintptr_t)d, s, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n)
{
	NEED_CTX();
	memcpy(d, (void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n)
{
	NEED_CTX();
	memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
{
	NEED_CTX();
	if (!dc || !sc)
		return CUDA_ERROR_INVALID_CONTEXT;
	memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t)
{
	NEED_CTX();
	*f = 140000000000ULL;
	*t = 150754820096ULL;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags)
{
	NEED_CTX();
	if (flags & ~0x7u)
		return CUDA_ERROR_INVALID_VALUE;
	*p = calloc(1, n);
	if (!*p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	live_add(L_HOSTMEM, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	NEED_CTX();
	if (p)
		live_add(L_HOSTMEM, -1);
	free(p);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
	NEED_CTX();
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*d = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
	NEED_CTX();
	if (!p || !n || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	live_add(L_HOSTREG, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
	NEED_CTX();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	live_add(L_HOSTREG, -1);
	return CUDA_SUCCESS;
}

/* The fake platform has no dma-buf support (as a driver without it says). */
EXPORT CUresult cuMemGetHandleForAddressRange(void *h, CUdeviceptr p, size_t n, CUmemRangeHandleType t,
					      unsigned long long flags)
{
	NEED_CTX();
	(void)h; (void)p; (void)n; (void)t; (void)flags;
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* A VMM mapping (cuMemMap) is known to cuPointerGetAttribute as the real
 * driver knows it: device memory without a context (the device ordinal is
 * the caller's), its range the mapping. Entries have fd VMMMAP_FD, so
 * devmap_find (allocations, IPC mappings) never takes one. */
static void vmmmap_add(uintptr_t p, size_t n)
{
	struct devmap *d = malloc(sizeof *d);
	d->p = p, d->n = n, d->fd = VMMMAP_FD, d->ctx = NULL;
	pthread_mutex_lock(&dev_mu);
	d->next = devmaps;
	devmaps = d;
	pthread_mutex_unlock(&dev_mu);
}

static void vmmmap_remove(uintptr_t p, size_t n)
{
	struct devmap **pp = &devmaps, *d;
	pthread_mutex_lock(&dev_mu);
	while ((d = *pp) != NULL) {
		if (d->fd == VMMMAP_FD && d->p >= p && d->p - p < n) {
			*pp = d->next;
			free(d);
		} else {
			pp = &d->next;
		}
	}
	pthread_mutex_unlock(&dev_mu);
}

/* The device allocation or IPC mapping that holds p (anywhere inside it). */
static int devmap_holding(uintptr_t p, struct devmap *copy)
{
	struct devmap *d;
	int found = 0;
	pthread_mutex_lock(&dev_mu);
	for (d = devmaps; d; d = d->next)
		if (p >= d->p && p - d->p < d->n) {
			*copy = *d;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&dev_mu);
	return found;
}

/* Answers for device memory only (an allocation or an IPC mapping, p
 * anywhere inside it); other addresses fail with CUDA_ERROR_INVALID_VALUE,
 * as the real driver does for memory it does not know. */
EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
	struct devmap d;
	NEED_CTX();
	if (!devmap_holding((uintptr_t)p, &d))
		return CUDA_ERROR_INVALID_VALUE;
	switch (a) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = CU_MEMORYTYPE_DEVICE; break;
	case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = d.ctx; break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = d.ctx ? d.ctx->dev : cur->dev; break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)d.p; break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = d.n; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* Handle: "FAKEIPC", then the owner's address, pid, descriptor and size. */
EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
	struct devmap d;
	int pid = (int)getpid();
	uint64_t n;
	NEED_CTX();
	if (!devmap_find((uintptr_t)p, 1, 0, &d))
		return CUDA_ERROR_INVALID_VALUE;
	n = d.n;
	memset(h, 0, sizeof *h);
	memcpy(h->reserved, "FAKEIPC", 7);
	memcpy(h->reserved + 8, &p, sizeof p);
	memcpy(h->reserved + 16, &pid, 4);
	memcpy(h->reserved + 20, &d.fd, 4);
	memcpy(h->reserved + 24, &n, 8);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
	int pid, fd;
	uint64_t n;
	char path[64];
	void *m;
	NEED_CTX();
	if (memcmp(h.reserved, "FAKEIPC", 7) != 0 || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&pid, h.reserved + 16, 4);
	memcpy(&fd, h.reserved + 20, 4);
	memcpy(&n, h.reserved + 24, 8);
	if (pid == (int)getpid()) {
		memcpy(p, h.reserved + 8, sizeof *p);
	} else {
		snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return CUDA_ERROR_INVALID_HANDLE;
		m = mmap(NULL, (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			return CUDA_ERROR_OUT_OF_MEMORY;
		devmap_add((uintptr_t)m, (size_t)n, -1);
		*p = (CUdeviceptr)(uintptr_t)m;
	}
	live_add(L_IPC, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
	struct devmap d;
	NEED_CTX();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (devmap_find((uintptr_t)p, 0, 1, &d))
		munmap((void *)d.p, d.n);
	live_add(L_IPC, -1);
	return CUDA_SUCCESS;
}

/* Virtual memory management: a reservation is a PROT_NONE anonymous
 * mapping; cuMemCreate is a memfd of the size asked for (a handle owns its
 * descriptor); cuMemMap maps the memfd MAP_FIXED|MAP_SHARED over the
 * reservation, still PROT_NONE until cuMemSetAccess makes it read-write (a
 * missing cuMemSetAccess faults, as on a GPU); cuMemUnmap puts PROT_NONE
 * anonymous memory back. The shareable handle is a dup of the memfd and
 * import dups the descriptor it is given, so two fake GPUs in two processes
 * that pass the descriptor (pidfd_getfd, SCM_RIGHTS) share the memory.
 * FAKECUDA_VMM=0 makes the device report no VMM support. Granularity:
 * 2 MiB, as on the GPUs goshmem runs on. */
#define FAKE_VMM_GRAN ((size_t)2 << 20)
struct fake_memhandle {
	int magic;
	int fd;
	size_t n;
	int created; /* by cuMemCreate (counts against FAKECUDA_VMM_MEM), not imported */
};
#define FAKE_MEMHANDLE_MAGIC 0x564d4d48

/* The reservations and the mappings in them, as the driver tracks them:
 * cuMemMap refuses a range outside one reservation or over a mapped one,
 * cuMemUnmap a range that is not whole mappings end to end, and
 * cuMemSetAccess a range that is not mapped (as CUDA does; an mmap
 * MAP_FIXED alone would replace a mapping silently). */
struct vmm_range {
	uintptr_t p;
	size_t n;
	int res; /* a reservation, else a mapping */
	struct vmm_range *next;
};
static struct vmm_range *vmm_ranges;
static pthread_mutex_t vmm_ranges_mu = PTHREAD_MUTEX_INITIALIZER;

static void vmm_range_add(uintptr_t p, size_t n, int res)
{
	struct vmm_range *r = malloc(sizeof *r);
	if (!r)
		abort();
	r->p = p, r->n = n, r->res = res;
	pthread_mutex_lock(&vmm_ranges_mu);
	r->next = vmm_ranges, vmm_ranges = r;
	pthread_mutex_unlock(&vmm_ranges_mu);
}

/* Whether [p, p+n) lies in one reservation and overlaps no mapping.
 * Caller holds vmm_ranges_mu. */
static int vmm_can_map(uintptr_t p, size_t n)
{
	struct vmm_range *r;
	int in = 0;
	for (r = vmm_ranges; r; r = r->next) {
		if (r->res && p >= r->p && p + n <= r->p + r->n)
			in = 1;
		if (!r->res && p < r->p + r->n && r->p < p + n)
			return 0;
	}
	return in;
}

/* The bytes of [p, p+n) that mappings cover, and whether each mapping that
 * overlaps it lies inside it. Caller holds vmm_ranges_mu. */
static size_t vmm_mapped(uintptr_t p, size_t n, int *whole)
{
	struct vmm_range *r;
	size_t got = 0;
	*whole = 1;
	for (r = vmm_ranges; r; r = r->next)
		if (!r->res && p < r->p + r->n && r->p < p + n) {
			if (r->p < p || r->p + r->n > p + n)
				*whole = 0;
			else
				got += r->n;
		}
	return got;
}

/* Removes the mappings inside [p, p+n) (reservations: the one at p of n
 * bytes) and returns how many. */
static int vmm_range_remove(uintptr_t p, size_t n, int res)
{
	struct vmm_range **pp = &vmm_ranges, *r;
	int k = 0;
	while ((r = *pp) != NULL) {
		if (r->res == res && (res ? r->p == p && r->n == n : r->p >= p && r->p + r->n <= p + n)) {
			*pp = r->next;
			free(r);
			k++;
		} else {
			pp = &r->next;
		}
	}
	return k;
}

static int fake_vmm(void)
{
	const char *e = getenv("FAKECUDA_VMM");
	return !(e && strcmp(e, "0") == 0);
}

/* FAKECUDA_VMM_MEM=bytes bounds the memory that cuMemCreate's live handles
 * of this process hold (a GPU that is full): past it cuMemCreate fails with
 * CUDA_ERROR_OUT_OF_MEMORY. vmm_mem_take(n) takes n bytes (n < 0 gives
 * them back) and reports whether they fit. */
static pthread_mutex_t vmm_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static long long vmm_mem_used;
static int vmm_mem_take(long long n)
{
	const char *e = getenv("FAKECUDA_VMM_MEM");
	long long cap = e && *e ? atoll(e) : -1;
	int ok = 1;
	pthread_mutex_lock(&vmm_mem_mu);
	if (n > 0 && cap >= 0 && vmm_mem_used + n > cap)
		ok = 0;
	else
		vmm_mem_used += n;
	pthread_mutex_unlock(&vmm_mem_mu);
	return ok;
}

static int vmm_prop_ok(const CUmemAllocationProp *p)
{
	return p && p->type == CU_MEM_ALLOCATION_TYPE_PINNED && p->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	       p->location.id >= 0 && p->location.id < ndev && p->win32HandleMetaData == NULL;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, CUmemAllocationGranularity_flags o)
{
	if (ndev < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!g || !vmm_prop_ok(p) || (o != CU_MEM_ALLOC_GRANULARITY_MINIMUM && o != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	*g = FAKE_VMM_GRAN;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags)
{
	void *m;
	NEED_CTX();
	if (!p || !n || n % FAKE_VMM_GRAN || addr || flags || (align && (align & (align - 1))))
		return CUDA_ERROR_INVALID_VALUE;
	if (align < FAKE_VMM_GRAN)
		align = FAKE_VMM_GRAN;
	/* Over-reserve by align and trim, for the alignment asked for. */
	m = mmap(NULL, n + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	{
		uintptr_t b = (uintptr_t)m, a = (b + align - 1) & ~(uintptr_t)(align - 1);
		if (a > b)
			munmap(m, a - b);
		if (b + align > a)
			munmap((void *)(a + n), b + align - a);
		*p = (CUdeviceptr)a;
	}
	vmm_range_add((uintptr_t)*p, n, 1);
	live_add(L_VMMRES, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t n)
{
	NEED_CTX();
	if (!p || !n || n % FAKE_VMM_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_ranges_mu);
	if (!vmm_range_remove((uintptr_t)p, n, 1)) {
		pthread_mutex_unlock(&vmm_ranges_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&vmm_ranges_mu);
	munmap((void *)(uintptr_t)p, n);
	live_add(L_VMMRES, -1);
	return CUDA_SUCCESS;
}

static CUresult new_memhandle(CUmemGenericAllocationHandle *h, int fd, size_t n)
{
	struct fake_memhandle *m = malloc(sizeof *m);
	if (!m) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = FAKE_MEMHANDLE_MAGIC, m->fd = fd, m->n = n, m->created = 0;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)m;
	live_add(L_VMMHANDLE, 1);
	return CUDA_SUCCESS;
}

static struct fake_memhandle *memhandle(CUmemGenericAllocationHandle h)
{
	struct fake_memhandle *m = (struct fake_memhandle *)(uintptr_t)h;
	return m && m->magic == FAKE_MEMHANDLE_MAGIC ? m : NULL;
}

/* FAKECUDA_VMM_DELAY_MS=ms makes every cuMemCreate take that long (a
 * driver slower than the program's allocations). */
static void vmm_delay(void) { env_delay("FAKECUDA_VMM_DELAY_MS"); }

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *p, unsigned long long flags)
{
	int fd;
	NEED_CTX();
	if (!h || !n || n % FAKE_VMM_GRAN || !vmm_prop_ok(p) || flags ||
	    p->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_INVALID_VALUE;
	vmm_delay();
	if (n > ((size_t)1 << 40))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!vmm_mem_take(n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)n) != 0) {
		if (fd >= 0)
			close(fd);
		vmm_mem_take(-(long long)n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* New physical memory holds whatever was there before: its first and
	 * last bytes are not zero, so a caller that hands it out unzeroed is
	 * caught. */
	{
		unsigned char junk[64];
		memset(junk, 0xa5, sizeof junk);
		if (pwrite(fd, junk, sizeof junk, 0) != (ssize_t)sizeof junk ||
		    pwrite(fd, junk, sizeof junk, (off_t)n - (off_t)sizeof junk) != (ssize_t)sizeof junk) {
			close(fd);
			vmm_mem_take(-(long long)n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	{
		CUresult r = new_memhandle(h, fd, n);
		if (r != CUDA_SUCCESS)
			vmm_mem_take(-(long long)n);
		else
			memhandle(*h)->created = 1;
		return r;
	}
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct fake_memhandle *m;
	NEED_CTX();
	if (!(m = memhandle(h)))
		return CUDA_ERROR_INVALID_VALUE;
	close(m->fd);
	if (m->created)
		vmm_mem_take(-(long long)m->n);
	m->magic = 0;
	free(m);
	live_add(L_VMMHANDLE, -1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags)
{
	struct fake_memhandle *m;
	NEED_CTX();
	if (!(m = memhandle(h)) || !p || p % FAKE_VMM_GRAN || off || flags || n != m->n)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_ranges_mu);
	if (!vmm_can_map((uintptr_t)p, n)) {
		pthread_mutex_unlock(&vmm_ranges_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (mmap((void *)(uintptr_t)p, n, PROT_NONE, MAP_SHARED | MAP_FIXED, m->fd, 0) == MAP_FAILED) {
		pthread_mutex_unlock(&vmm_ranges_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&vmm_ranges_mu);
	vmm_range_add((uintptr_t)p, n, 0);
	vmmmap_add((uintptr_t)p, n);
	live_add(L_VMMMAP, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t n)
{
	NEED_CTX();
	int whole, k;
	if (!p || !n || p % FAKE_VMM_GRAN || n % FAKE_VMM_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_ranges_mu);
	if (vmm_mapped((uintptr_t)p, n, &whole) != n || !whole) {
		pthread_mutex_unlock(&vmm_ranges_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (mmap((void *)(uintptr_t)p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED) {
		pthread_mutex_unlock(&vmm_ranges_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	k = vmm_range_remove((uintptr_t)p, n, 0);
	pthread_mutex_unlock(&vmm_ranges_mu);
	vmmmap_remove((uintptr_t)p, n);
	live_add(L_VMMMAP, -k);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr p, size_t n, const CUmemAccessDesc *d, size_t count)
{
	NEED_CTX();
	if (!p || !n || !d || count != 1 || d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    d->location.id < 0 || d->location.id >= ndev || d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		return CUDA_ERROR_INVALID_VALUE;
	{
		int whole;
		size_t got;
		pthread_mutex_lock(&vmm_ranges_mu);
		got = vmm_mapped((uintptr_t)p, n, &whole);
		pthread_mutex_unlock(&vmm_ranges_mu);
		if (got != n || !whole)
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (mprotect((void *)(uintptr_t)p, n, PROT_READ | PROT_WRITE) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemExportToShareableHandle(void *sh, CUmemGenericAllocationHandle h, CUmemAllocationHandleType t,
					     unsigned long long flags)
{
	struct fake_memhandle *m;
	int fd;
	NEED_CTX();
	if (!sh || !(m = memhandle(h)) || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)sh = fd;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os, CUmemAllocationHandleType t)
{
	int fd = (int)(uintptr_t)os, own;
	off_t n;
	NEED_CTX();
	if (!h || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((n = lseek(fd, 0, SEEK_END)) <= 0 || (size_t)n % FAKE_VMM_GRAN)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((own = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return new_memhandle(h, own, (size_t)n);
}

/* The goshmem kernels a PTX image declares (bit i: ptxfuncs[i]), or
 * CUDA_ERROR_NOT_SUPPORTED for an entry the fake cannot run. */
static CUresult ptx_scan(const char *img, unsigned long long *mask)
{
	const char *p = img;
	size_t i, n;
	pthread_once(&ptx_once, ptx_names);
	*mask = 0;
	while ((p = strstr(p, ".entry ")) != NULL) {
		p += 7;
		n = strcspn(p, "( \t\n");
		for (i = 0; i < NPTX; i++)
			if (strlen(ptxnames[i]) == n && strncmp(p, ptxnames[i], n) == 0)
				break;
		if (i == NPTX)
			return CUDA_ERROR_NOT_SUPPORTED;
		*mask |= 1ULL << i;
	}
	return *mask ? CUDA_SUCCESS : CUDA_ERROR_INVALID_PTX;
}

/* The host build of the kernel library (see the top of the file). */
static void *lib_so;
static void (*lib_set_state)(void *);
static unsigned long lib_state_bytes;
static void (*lib_set_trap)(void (*)(uint64_t, uint64_t, const char *));
static void (*lib_set_grid)(unsigned, unsigned);
/* A trapping library kernel (goshmemi_fail in host mode) jumps back to its
 * launch, which then reports CUDA_ERROR_LAUNCH_FAILED at the next sync. */
static __thread jmp_buf lib_jmp;
static __thread int lib_in_kernel;
static void lib_trap(uint64_t code, uint64_t info, const char *what)
{
	(void)code, (void)info, (void)what;
	if (lib_in_kernel)
		longjmp(lib_jmp, 1);
}
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_open(void)
{
	const char *env = getenv("FAKECUDA_KERNELS");
	char path[4096];
	Dl_info di;
	const unsigned long *bytes;
	if (env && *env) {
		snprintf(path, sizeof path, "%s", env);
	} else {
		char *slash;
		if (!dladdr((void *)lib_open, &di) || !di.dli_fname)
			return;
		snprintf(path, sizeof path, "%s", di.dli_fname);
		slash = strrchr(path, '/');
		snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "%s",
			 "libfakecuda_kernels.so");
	}
	lib_so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib_so) {
		fprintf(stderr, "fakecuda: cannot load the kernel library's host build: %s\n", dlerror());
		return;
	}
	lib_set_state = (void (*)(void *))dlsym(lib_so, "goshmemi_lib_host_set_state");
	bytes = (const unsigned long *)dlsym(lib_so, "goshmemi_lib_state_bytes");
	if (!lib_set_state || !bytes) {
		fprintf(stderr, "fakecuda: %s lacks goshmemi_lib_host_set_state or goshmemi_lib_state_bytes\n", path);
		lib_so = NULL;
		return;
	}
	lib_state_bytes = *bytes;
	lib_set_trap = (void (*)(void (*)(uint64_t, uint64_t, const char *)))dlsym(lib_so, "goshmemi_lib_host_set_trap");
	if (lib_set_trap)
		lib_set_trap(lib_trap);
	lib_set_grid = (void (*)(unsigned, unsigned))dlsym(lib_so, "goshmemi_lib_host_set_grid");
}

static int is_fatbin(const void *image)
{
	uint32_t magic;
	memcpy(&magic, image, 4);
	return magic == 0xBA55ED50u;
}

/* FAKECUDA_BUSY_LOAD=fail: a module load while a kernel runs on the
 * current context's device is refused (see the top of the file). */
static CUresult busy_load(void)
{
	const char *e = getenv("FAKECUDA_BUSY_LOAD");
	int n;
	if (!e || strcmp(e, "fail") != 0)
		return CUDA_SUCCESS;
	if ((n = __atomic_load_n(&running[cur->dev], __ATOMIC_SEQ_CST)) == 0)
		return CUDA_SUCCESS;
	fprintf(stderr, "fakecuda: cuModuleLoadData while %d kernel(s) run on device %d: a GPU may wait for them to end\n", n,
		cur->dev);
	return CUDA_ERROR_NOT_PERMITTED;
}

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
	unsigned long long mask = 0;
	CUresult busy;
	NEED_CTX();
	if ((busy = busy_load()) != CUDA_SUCCESS)
		return busy;
	if (image && is_fatbin(image)) {
		pthread_once(&lib_once, lib_open);
		if (!lib_so)
			return CUDA_ERROR_NOT_SUPPORTED;
		*m = calloc(1, sizeof **m);
		(*m)->magic = 0x6d6f64;
		(*m)->lib = 1;
		(*m)->state_c = calloc(1, lib_state_bytes);
		live_add(L_MODULE, 1);
		return CUDA_SUCCESS;
	}
	if (image && strncmp(image, ".version", 8) == 0) {
		CUresult r = ptx_scan(image, &mask);
		if (r != CUDA_SUCCESS)
			return r;
	} else if (!image || strncmp(image, "FAKEMODULE", 10) != 0) {
		return CUDA_ERROR_INVALID_IMAGE;
	}
	*m = calloc(1, sizeof **m);
	(*m)->magic = 0x6d6f64;
	(*m)->ptx = mask;
	(*m)->plain = image && strncmp(image, "FAKEMODULE-PLAIN", 16) == 0;
	live_add(L_MODULE, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoad(CUmodule *m, const char *path)
{
	FILE *f;
	char buf[16] = {0};
	NEED_CTX();
	f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	return cuModuleLoadData(m, buf);
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
	NEED_CTX();
	int i;
	if (!m || m->magic != 0x6d6f64)
		return CUDA_ERROR_INVALID_HANDLE;
	m->magic = 0;
	for (i = 0; i < m->nfn; i++)
		free(m->fns[i]);
	free(m->fns);
	free(m->state_c);
	free(m);
	live_add(L_MODULE, -1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	size_t i;
	NEED_CTX();
	if (!m || m->magic != 0x6d6f64)
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->lib) {
		int k;
		struct CUfunc_st **grown;
		lib_kernel fn = (lib_kernel)dlsym(lib_so, name);
		if (!fn)
			return CUDA_ERROR_NOT_FOUND;
		for (k = 0; k < m->nfn; k++)
			if (m->fns[k]->host == fn) {
				*f = m->fns[k];
				return CUDA_SUCCESS;
			}
		grown = realloc(m->fns, (size_t)(m->nfn + 1) * sizeof *m->fns);
		if (!grown)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->fns = grown;
		m->fns[m->nfn] = calloc(1, sizeof **m->fns);
		m->fns[m->nfn]->name = NULL;
		m->fns[m->nfn]->host = fn;
		m->fns[m->nfn]->mod = m;
		*f = m->fns[m->nfn++];
		return CUDA_SUCCESS;
	}
	if (m->ptx) {
		for (i = 0; i < NPTX; i++)
			if ((m->ptx >> i & 1) && strcmp(ptxnames[i], name) == 0) {
				*f = &ptxfuncs[i];
				return CUDA_SUCCESS;
			}
		return CUDA_ERROR_NOT_FOUND;
	}
	for (i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
		if (strcmp(funcs[i].name, name) == 0) {
			*f = &funcs[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, CUmodule m, const char *name)
{
	NEED_CTX();
	if (!m || m->magic != 0x6d6f64)
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->lib) {
		if (strcmp(name, "goshmemi_device_state") == 0) {
			if (p)
				*p = (CUdeviceptr)(uintptr_t)&m->state_ptr;
			if (n)
				*n = sizeof m->state_ptr;
			return CUDA_SUCCESS;
		}
		if (strcmp(name, "goshmemi_device_state_c") == 0) {
			if (p)
				*p = (CUdeviceptr)(uintptr_t)m->state_c;
			if (n)
				*n = lib_state_bytes;
			return CUDA_SUCCESS;
		}
		return CUDA_ERROR_NOT_FOUND;
	}
	if (m->ptx || m->plain || strcmp(name, "goshmemi_device_state") != 0)
		return CUDA_ERROR_NOT_FOUND;
	if (p)
		*p = (CUdeviceptr)(uintptr_t)&device_state;
	if (n)
		*n = sizeof device_state;
	return CUDA_SUCCESS;
}

/* goshmemi_host_copy(dst, src, n): copy n bytes, then membar.sys.
 * goshmemi_host_amo_<op>_<w>(a, v, c, out): atom.global.sys.<op> on the
 * w-bit word at a (v and c truncated to w bits), the old value to out. */
static CUresult ptx_run(size_t k, void **kp)
{
	uint64_t a[4];
	int i;
	if (!kp)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < (k == 0 ? 3 : 4); i++)
		memcpy(&a[i], kp[i], 8);
	if (k == 0) {
		memmove((void *)(uintptr_t)a[0], (const void *)(uintptr_t)a[1], (size_t)a[2]);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return CUDA_SUCCESS;
	}
	k--;
#define AMO(T)                                                                          \
	do {                                                                            \
		T *w = (T *)(uintptr_t)a[0], v = (T)a[1], c = (T)a[2], old = 0;        \
		switch (k % NAMO) {                                                     \
		case 0: old = __atomic_fetch_or(w, 0, __ATOMIC_SEQ_CST); break;        \
		case 1:                                                                 \
		case 2: old = __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST); break;      \
		case 3:                                                                 \
			old = c;                                                        \
			__atomic_compare_exchange_n(w, &old, v, 0, __ATOMIC_SEQ_CST,    \
						    __ATOMIC_SEQ_CST);                  \
			break;                                                          \
		case 4: old = __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST); break;       \
		case 5: old = __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST); break;       \
		case 6: old = __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST); break;        \
		case 7: old = __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST); break;       \
		}                                                                       \
		*(T *)(uintptr_t)a[3] = old;                                            \
	} while (0)
	if (k < NAMO)
		AMO(uint32_t);
	else
		AMO(uint64_t);
#undef AMO
	return CUDA_SUCCESS;
}

/* fake_pack(uint64_t *out, uint8_t a, uint16_t b, int32_t c, uint64_t d,
 *           float e, double f, struct { int x, y, z; } g):
 * out[0..5] = a, b, c (sign-extended), d, bits of e, bits of f;
 * out[6..8] = g.x, g.y, g.z; out[9..14] = grid, block; out[15] = smem;
 * out[16] = the number of parameters not at their natural alignment. */
static CUresult run_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			   unsigned bz, unsigned smem, CUstream s, void **kp);

/* A launch: the kernel runs on the launching thread, counted in running[]
 * while it does. */
static CUresult run(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		    unsigned bz, unsigned smem, CUstream s, void **kp)
{
	CUresult r;
	int dev;
	NEED_CTX();
	dev = cur->dev;
	__atomic_add_fetch(&running[dev], 1, __ATOMIC_SEQ_CST);
	r = run_kernel(f, gx, gy, gz, bx, by, bz, smem, s, kp);
	__atomic_sub_fetch(&running[dev], 1, __ATOMIC_SEQ_CST);
	return r;
}

static CUresult run_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			   unsigned bz, unsigned smem, CUstream s, void **kp)
{
	(void)s;
	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned long long)bx * by * bz > (unsigned long long)fn_max_threads(f))
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	if (f >= &ptxfuncs[0] && f < &ptxfuncs[NPTX])
		return ptx_run((size_t)(f - ptxfuncs), kp);
	if (f->host) { /* the kernel library: one host call per block */
		struct lib_args a;
		unsigned b;
		if (gy * gz != 1 || (gx != 1 && !lib_set_grid))
			return CUDA_ERROR_NOT_SUPPORTED;
		if (!kp)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(&a, kp[0], sizeof a);
		lib_set_state((void *)(uintptr_t)f->mod->state_ptr);
		for (b = 0; b < gx; b++) { /* a grid: one call per block, in order */
			if (lib_set_grid)
				lib_set_grid(b, gx);
			if (setjmp(lib_jmp) == 0) {
				lib_in_kernel = 1;
				f->host(a);
			} else {
				cur->pending = CUDA_ERROR_LAUNCH_FAILED; /* a trap, as the GPU reports it */
				break;
			}
		}
		if (lib_set_grid)
			lib_set_grid(0, 1);
		lib_in_kernel = 0;
		lib_set_state(NULL);
		return CUDA_SUCCESS;
	}
	if (f == &funcs[0]) {
		uint64_t *out, bad = 0;
		uint32_t e;
		int32_t c, g[3];
		static const int align[8] = {8, 1, 2, 4, 8, 4, 8, 4};
		int i;
		if (!kp)
			return CUDA_ERROR_INVALID_VALUE;
		for (i = 0; i < 8; i++)
			if ((uintptr_t)kp[i] % align[i])
				bad++;
		memcpy(&out, kp[0], 8);
		out[0] = *(uint8_t *)kp[1];
		{ uint16_t b; memcpy(&b, kp[2], 2); out[1] = b; }
		memcpy(&c, kp[3], 4);
		out[2] = (uint64_t)(int64_t)c;
		memcpy(&out[3], kp[4], 8);
		memcpy(&e, kp[5], 4);
		out[4] = e;
		memcpy(&out[5], kp[6], 8);
		memcpy(g, kp[7], 12);
		out[6] = (uint64_t)(int64_t)g[0];
		out[7] = (uint64_t)(int64_t)g[1];
		out[8] = (uint64_t)(int64_t)g[2];
		out[9] = gx, out[10] = gy, out[11] = gz;
		out[12] = bx, out[13] = by, out[14] = bz;
		out[15] = smem;
		out[16] = bad;
	} else if (f == &funcs[1]) {
		cur->pending = CUDA_ERROR_ILLEGAL_ADDRESS;
	} else if (f != &funcs[2] && f != &funcs[3]) {
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			       unsigned bz, unsigned smem, CUstream s, void **kp, void **extra)
{
	if (extra)
		return CUDA_ERROR_INVALID_VALUE;
	return run(f, gx, gy, gz, bx, by, bz, smem, s, kp);
}

/* Programmatic stream serialization changes nothing here (every stream is
 * synchronous); the attributes are checked as the driver does.
 * FAKECUDA_LAUNCH_EX=unsupported answers CUDA_ERROR_NOT_SUPPORTED, as a
 * driver or setup without programmatic dependent launch might. */
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **kp, void **extra)
{
	const char *e = getenv("FAKECUDA_LAUNCH_EX");
	unsigned i;
	if (!c || extra || (c->numAttrs > 0 && !c->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	if (e && strcmp(e, "unsupported") == 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	for (i = 0; i < c->numAttrs; i++)
		if (c->attrs[i].id != CU_LAUNCH_ATTRIBUTE_IGNORE &&
		    c->attrs[i].id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
			return CUDA_ERROR_INVALID_VALUE;
	return run(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
		   c->sharedMemBytes, c->hStream, kp);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
					  unsigned by, unsigned bz, unsigned smem, CUstream s, void **kp)
{
	if ((unsigned long long)gx * gy * gz > 132 * 2)
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	return run(f, gx, gy, gz, bx, by, bz, smem, s, kp);
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t smem)
{
	NEED_CTX();
	if (!f || block <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (block > fn_max_threads(f)) {
		*n = 0;
		return CUDA_SUCCESS;
	}
	*n = 2048 / block > 32 ? 32 : 2048 / block;
	if (smem > 0 && *n > (int)(228 * 1024 / smem))
		*n = (int)(228 * 1024 / smem);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	NEED_CTX();
	if (!f || !v)
		return CUDA_ERROR_INVALID_HANDLE;
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = fn_max_threads(f); break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = f->regs ? f->regs : 32; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
	NEED_CTX();
	if (flags & ~1u)
		return CUDA_ERROR_INVALID_VALUE;
	*s = calloc(1, sizeof **s);
	live_add(L_STREAM, 1);
	return CUDA_SUCCESS;
}

/* Priorities are accepted and ignored (the driver clamps them to its range). */
EXPORT CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int priority)
{
	(void)priority;
	return cuStreamCreate(s, flags);
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return sync_cur();
}

/* The fake captures nothing: a stream reports an active capture only
 * under FAKECUDA_CAPTURING=1 (to test what callers do then), and work
 * queued on it still runs. */
EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
	const char *e = getenv("FAKECUDA_CAPTURING");
	(void)s;
	NEED_CTX();
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	*status = e && strcmp(e, "1") == 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	NEED_CTX();
	if (s)
		live_add(L_STREAM, -1);
	free(s);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
	NEED_CTX();
	if (flags & ~0xfu)
		return CUDA_ERROR_INVALID_VALUE;
	*e = calloc(1, sizeof **e);
	live_add(L_EVENT, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
	(void)s;
	NEED_CTX();
	e->magic = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(CUevent e)
{
	(void)e;
	return sync_cur();
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	NEED_CTX();
	if (!a->magic || !b->magic)
		return CUDA_ERROR_NOT_READY;
	*ms = 1.5f;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
	NEED_CTX();
	if (e)
		live_add(L_EVENT, -1);
	free(e);
	return CUDA_SUCCESS;
}

/* Stream-ordered copies and word writes: the fake runs them at once (its
 * "device" memory is host memory). */
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
	(void)st;
	NEED_CTX();
	memcpy((void *)(uintptr_t)d, s, n);
	return CUDA_SUCCESS;
}

/* Whole pages of a VMM mapping (MAP_SHARED over a memfd) are zeroed by
 * punching them out of the memfd, so that zeroing a large chunk costs the
 * host no memory; the rest is a memset. */
EXPORT CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream st)
{
	uintptr_t a = (uintptr_t)p, lo = (a + 4095) & ~(uintptr_t)4095, hi = (a + n) & ~(uintptr_t)4095;
	(void)st;
	NEED_CTX();
	if (v == 0 && hi > lo && madvise((void *)lo, hi - lo, MADV_REMOVE) == 0) {
		memset((void *)a, 0, lo - a);
		memset((void *)hi, 0, a + n - hi);
		return CUDA_SUCCESS;
	}
	memset((void *)a, v, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	NEED_CTX();
	memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamWriteValue64_v2(CUstream st, CUdeviceptr addr, uint64_t v, unsigned int flags)
{
	(void)st;
	(void)flags;
	NEED_CTX();
	__atomic_store_n((unsigned long long *)(uintptr_t)addr, v, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

/* Whether a wait-value-64 operation's condition holds for word w. */
static int fake_wait_done(uint64_t w, uint64_t v, unsigned int flags)
{
	switch (flags & 0xf) {
	case CU_STREAM_WAIT_VALUE_GEQ: return (int64_t)(w - v) >= 0;
	case CU_STREAM_WAIT_VALUE_EQ: return w == v;
	case CU_STREAM_WAIT_VALUE_AND: return (w & v) != 0;
	default: return ~(w | v) != 0; /* NOR */
	}
}

/* Write-value-64 and wait-value-64 operations (what goshmem submits), in
 * order. A wait blocks the calling thread until its condition holds (a
 * peer process writes the word through its IPC mapping), as a kernel that
 * waits for a peer does here. */
EXPORT CUresult cuStreamBatchMemOp_v2(CUstream st, unsigned int count, CUstreamBatchMemOpParams *p, unsigned int flags)
{
	unsigned int i;
	(void)st;
	NEED_CTX();
	if (flags != 0 || count == 0 || count > 255)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < count; i++)
		if (p[i].operation != CU_STREAM_MEM_OP_WRITE_VALUE_64 &&
		    !(p[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 && (p[i].waitValue.flags & 0xf) <= CU_STREAM_WAIT_VALUE_NOR))
			return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < count; i++) {
		unsigned long long *w = (unsigned long long *)(uintptr_t)p[i].writeValue.address;
		if (p[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
			__atomic_store_n(w, p[i].writeValue.value64, __ATOMIC_RELEASE);
			continue;
		}
		while (!fake_wait_done(__atomic_load_n(w, __ATOMIC_ACQUIRE), p[i].waitValue.value64, p[i].waitValue.flags))
			sched_yield();
	}
	return CUDA_SUCCESS;
}
