// shim.c: see shim.h. The only file of goshmem that calls into libcuda.

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

/* GOSHMEMI_CU_SYMBOLS lists every entry point: X(field, first choice,
 * fallback). The first choice is the versioned symbol that cuda.h's
 * #define maps the plain name to (cuMemAlloc -> cuMemAlloc_v2 ...): the
 * unversioned export of those is the legacy ABI and must not be used.
 * The fallback (same signature) is only for entry points whose _v2 is a
 * behaviour fix, tried on drivers older than the _v2. NULL = no fallback.
 * Ref: cuda.h "#define cuMemAlloc cuMemAlloc_v2" block (__CUDA_API_VERSION_INTERNAL). */
#define GOSHMEMI_CU_SYMBOLS(X) \
	X(cuInit, "cuInit", NULL) \
	X(cuDriverGetVersion, "cuDriverGetVersion", NULL) \
	X(cuGetErrorName, "cuGetErrorName", NULL) \
	X(cuGetErrorString, "cuGetErrorString", NULL) \
	X(cuDeviceGetCount, "cuDeviceGetCount", NULL) \
	X(cuDeviceGet, "cuDeviceGet", NULL) \
	X(cuDeviceGetName, "cuDeviceGetName", NULL) \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL) \
	X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", NULL) \
	X(cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2", NULL) \
	X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL) \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL) \
	X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", NULL) \
	X(cuCtxGetCurrent, "cuCtxGetCurrent", NULL) \
	X(cuCtxGetDevice, "cuCtxGetDevice", NULL) \
	X(cuCtxSynchronize, "cuCtxSynchronize", NULL) \
	X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL) \
	X(cuMemAlloc_v2, "cuMemAlloc_v2", NULL) \
	X(cuMemFree_v2, "cuMemFree_v2", NULL) \
	X(cuMemsetD8_v2, "cuMemsetD8_v2", NULL) \
	X(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", NULL) \
	X(cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", NULL) \
	X(cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2", NULL) \
	X(cuMemcpyPeer, "cuMemcpyPeer", NULL) \
	X(cuMemGetInfo_v2, "cuMemGetInfo_v2", NULL) \
	X(cuMemHostAlloc, "cuMemHostAlloc", NULL) \
	X(cuMemFreeHost, "cuMemFreeHost", NULL) \
	X(cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer_v2", NULL) \
	X(cuMemHostRegister_v2, "cuMemHostRegister_v2", NULL) \
	X(cuMemHostUnregister, "cuMemHostUnregister", NULL) \
	X(cuPointerGetAttribute, "cuPointerGetAttribute", NULL) \
	X(cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", NULL) \
	X(cuIpcGetMemHandle, "cuIpcGetMemHandle", NULL) \
	X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle") \
	X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", NULL) \
	X(cuModuleLoadData, "cuModuleLoadData", NULL) \
	X(cuModuleLoad, "cuModuleLoad", NULL) \
	X(cuModuleUnload, "cuModuleUnload", NULL) \
	X(cuModuleGetFunction, "cuModuleGetFunction", NULL) \
	X(cuModuleGetGlobal_v2, "cuModuleGetGlobal_v2", NULL) \
	X(cuLaunchKernel, "cuLaunchKernel", NULL) \
	X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", NULL) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL) \
	X(cuFuncGetAttribute, "cuFuncGetAttribute", NULL) \
	X(cuStreamCreate, "cuStreamCreate", NULL) \
	X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", NULL) \
	X(cuStreamSynchronize, "cuStreamSynchronize", NULL) \
	X(cuStreamIsCapturing, "cuStreamIsCapturing", NULL) \
	X(cuStreamDestroy_v2, "cuStreamDestroy_v2", NULL) \
	X(cuEventCreate, "cuEventCreate", NULL) \
	X(cuEventRecord, "cuEventRecord", NULL) \
	X(cuEventSynchronize, "cuEventSynchronize", NULL) \
	X(cuEventElapsedTime, "cuEventElapsedTime", NULL) \
	X(cuEventDestroy_v2, "cuEventDestroy_v2", NULL) \
	X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", NULL) \
	X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2", NULL) \
	X(cuMemsetD8Async, "cuMemsetD8Async", NULL) \
	X(cuStreamWriteValue64_v2, "cuStreamWriteValue64_v2", "cuStreamWriteValue64") \
	X(cuStreamBatchMemOp_v2, "cuStreamBatchMemOp_v2", "cuStreamBatchMemOp")

static struct {
#define GOSHMEMI_FIELD(f, a, b) PFN_##f f;
	GOSHMEMI_CU_SYMBOLS(GOSHMEMI_FIELD)
#undef GOSHMEMI_FIELD
} cu;

static void *cu_lib;

/* Optional: cuLaunchKernelEx (CUDA 11.8+), NULL when the driver lacks it. */
static PFN_cuLaunchKernelEx cu_launch_ex;

/* Optional: the virtual memory management calls (a driver without them,
 * or a fake, still loads; the GPU heap then uses legacy IPC). */
#define GOSHMEMI_VMM_SYMBOLS(X) \
	X(cuMemAddressReserve) \
	X(cuMemAddressFree) \
	X(cuMemCreate) \
	X(cuMemRelease) \
	X(cuMemMap) \
	X(cuMemUnmap) \
	X(cuMemSetAccess) \
	X(cuMemGetAllocationGranularity) \
	X(cuMemExportToShareableHandle) \
	X(cuMemImportFromShareableHandle)
static struct {
#define GOSHMEMI_VFIELD(f) PFN_##f f;
	GOSHMEMI_VMM_SYMBOLS(GOSHMEMI_VFIELD)
#undef GOSHMEMI_VFIELD
	int all;
} vmm;

enum {
#define GOSHMEMI_IDX(f, a, b) GOSHMEMI_IDX_##f,
	GOSHMEMI_CU_SYMBOLS(GOSHMEMI_IDX)
#undef GOSHMEMI_IDX
	GOSHMEMI_NSYMS
};
static const int cu_nsyms = GOSHMEMI_NSYMS;
static const char *cu_resolved[GOSHMEMI_NSYMS];

int goshmemi_cu_nsyms(void) { return cu_nsyms; }

const char *goshmemi_cu_sym_name(int i)
{
	return (i >= 0 && i < cu_nsyms) ? cu_resolved[i] : NULL;
}

void goshmemi_cu_unload(void)
{
	memset(&cu, 0, sizeof cu);
	memset(cu_resolved, 0, sizeof cu_resolved);
	cu_launch_ex = NULL;
	memset(&vmm, 0, sizeof vmm);
	if (cu_lib) {
		dlclose(cu_lib);
		cu_lib = NULL;
	}
}

int goshmemi_cu_load(const char *lib, char *err, size_t errlen)
{
	int i = 0;
	void *h;

	if (errlen > 0)
		err[0] = '\0';
	if (cu_lib)
		goshmemi_cu_unload();
	dlerror();
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return 1;
	}
	cu_lib = h;
#define GOSHMEMI_RESOLVE(f, a, b)                                                   \
	{                                                                          \
		const char *alt = b;                                               \
		void *p = dlsym(h, a);                                             \
		cu_resolved[i] = a;                                                \
		if (!p && alt) {                                                   \
			p = dlsym(h, alt);                                         \
			cu_resolved[i] = alt;                                      \
		}                                                                  \
		if (!p) {                                                          \
			snprintf(err, errlen, "%s%s%s", a, alt ? " (or " : "", \
				 alt ? "the older symbol without _v2)" : "");      \
			goshmemi_cu_unload();                                      \
			return 2;                                                  \
		}                                                                  \
		*(void **)(&cu.f) = p;                                             \
		i++;                                                               \
	}
	GOSHMEMI_CU_SYMBOLS(GOSHMEMI_RESOLVE)
#undef GOSHMEMI_RESOLVE
	*(void **)(&cu_launch_ex) = dlsym(h, "cuLaunchKernelEx");
	vmm.all = 1;
#define GOSHMEMI_VRESOLVE(f)                        \
	*(void **)(&vmm.f) = dlsym(h, #f);         \
	if (!vmm.f)                                 \
		vmm.all = 0;
	GOSHMEMI_VMM_SYMBOLS(GOSHMEMI_VRESOLVE)
#undef GOSHMEMI_VRESOLVE
	return 0;
}

/* CALL(f, args): fail cleanly when the table is empty (Go checks first;
 * this is the second line of defence against a NULL call). */
#define CALL(f, ...) (cu.f ? (int)cu.f(__VA_ARGS__) : GOSHMEMI_NOT_LOADED)

/* Another context current on the calling thread before a wrapper made its
 * own current; put back when the wrapper returns (SETCTX). */
struct goshmemi_prevctx {
	CUcontext ctx;
	int restore;
};

static void goshmemi_putback(struct goshmemi_prevctx *p)
{
	if (p->restore)
		cu.cuCtxSetCurrent(p->ctx);
}

/* SETCTX(ctx): make ctx current on this thread for the rest of the wrapper,
 * and another context that was current before it current again when the
 * wrapper returns (see shim.h). A statement at the top of a wrapper's body:
 * it declares the variable whose cleanup restores. */
#define SETCTX(ctx)                                                               \
	struct goshmemi_prevctx prev_ __attribute__((cleanup(goshmemi_putback))) = {0}; \
	do {                                                                      \
		if (!cu.cuCtxSetCurrent)                                          \
			return GOSHMEMI_NOT_LOADED;                               \
		if (ctx) {                                                        \
			CUcontext cur_ = NULL;                                    \
			int got_ = cu.cuCtxGetCurrent &&                          \
				   cu.cuCtxGetCurrent(&cur_) == CUDA_SUCCESS;     \
			if (!got_ || cur_ != (ctx)) {                             \
				int r_ = (int)cu.cuCtxSetCurrent(ctx);            \
				if (r_ != CUDA_SUCCESS)                           \
					return r_ | GOSHMEMI_SETCTX_FAILED;       \
				prev_.ctx = cur_;                                 \
				prev_.restore = got_ && cur_;                     \
			}                                                         \
		}                                                                 \
	} while (0)

int goshmemi_cuInit(unsigned int flags) { return CALL(cuInit, flags); }
int goshmemi_cuDriverGetVersion(int *v) { return CALL(cuDriverGetVersion, v); }
int goshmemi_cuGetErrorName(int code, const char **s) { return CALL(cuGetErrorName, (CUresult)code, s); }
int goshmemi_cuGetErrorString(int code, const char **s) { return CALL(cuGetErrorString, (CUresult)code, s); }

int goshmemi_cuDeviceGetCount(int *n) { return CALL(cuDeviceGetCount, n); }
int goshmemi_cuDeviceGet(CUdevice *d, int ordinal) { return CALL(cuDeviceGet, d, ordinal); }
int goshmemi_cuDeviceGetName(char *name, int len, CUdevice d) { return CALL(cuDeviceGetName, name, len, d); }
int goshmemi_cuDeviceGetAttribute(int *v, int attr, CUdevice d) { return CALL(cuDeviceGetAttribute, v, (CUdevice_attribute)attr, d); }
int goshmemi_cuDeviceGetPCIBusId(char *id, int len, CUdevice d) { return CALL(cuDeviceGetPCIBusId, id, len, d); }
int goshmemi_cuDeviceTotalMem(size_t *bytes, CUdevice d) { return CALL(cuDeviceTotalMem_v2, bytes, d); }
int goshmemi_cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) { return CALL(cuDeviceCanAccessPeer, can, d, peer); }

int goshmemi_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) { return CALL(cuDevicePrimaryCtxRetain, ctx, d); }
int goshmemi_cuDevicePrimaryCtxRelease(CUdevice d) { return CALL(cuDevicePrimaryCtxRelease_v2, d); }
int goshmemi_cuCtxSetCurrent(CUcontext ctx) { return CALL(cuCtxSetCurrent, ctx); }
int goshmemi_cuCtxGetCurrent(CUcontext *ctx) { return CALL(cuCtxGetCurrent, ctx); }

int goshmemi_cuCtxGetDevice(CUcontext ctx, CUdevice *d)
{
	SETCTX(ctx);
	return cu.cuCtxGetDevice(d);
}

int goshmemi_cuCtxSynchronize(CUcontext ctx)
{
	SETCTX(ctx);
	return cu.cuCtxSynchronize();
}

int goshmemi_cuCtxEnablePeerAccess(CUcontext ctx, CUcontext peer, unsigned int flags)
{
	SETCTX(ctx);
	return cu.cuCtxEnablePeerAccess(peer, flags);
}

int goshmemi_cuMemAlloc(CUcontext ctx, CUdeviceptr *p, size_t n)
{
	SETCTX(ctx);
	return cu.cuMemAlloc_v2(p, n);
}

int goshmemi_cuMemFree(CUcontext ctx, CUdeviceptr p)
{
	SETCTX(ctx);
	return cu.cuMemFree_v2(p);
}

int goshmemi_cuMemsetD8(CUcontext ctx, CUdeviceptr p, unsigned char v, size_t n)
{
	SETCTX(ctx);
	/* cuMemsetD8 on device memory may return before the memset is done
	 * (it runs on the legacy stream); wait for it, so memory handed out as
	 * zeroed is zero before any kernel on a non-blocking stream runs. */
	int r = cu.cuMemsetD8_v2(p, v, n);
	if (r != 0) return r;
	return cu.cuStreamSynchronize(NULL);
}

int goshmemi_cuMemcpyHtoD(CUcontext ctx, CUdeviceptr dst, const void *src, size_t n)
{
	SETCTX(ctx);
	return cu.cuMemcpyHtoD_v2(dst, src, n);
}

int goshmemi_cuMemcpyDtoH(CUcontext ctx, void *dst, CUdeviceptr src, size_t n)
{
	SETCTX(ctx);
	return cu.cuMemcpyDtoH_v2(dst, src, n);
}

int goshmemi_cuMemcpyDtoD(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	SETCTX(ctx);
	return cu.cuMemcpyDtoD_v2(dst, src, n);
}

int goshmemi_cuMemcpyPeer(CUcontext ctx, CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n)
{
	SETCTX(ctx);
	return cu.cuMemcpyPeer(dst, dstCtx, src, srcCtx, n);
}

int goshmemi_cuMemGetInfo(CUcontext ctx, size_t *free, size_t *total)
{
	SETCTX(ctx);
	return cu.cuMemGetInfo_v2(free, total);
}

int goshmemi_cuMemHostAlloc(CUcontext ctx, void **p, size_t n, unsigned int flags)
{
	SETCTX(ctx);
	return cu.cuMemHostAlloc(p, n, flags);
}

int goshmemi_cuMemFreeHost(CUcontext ctx, void *p)
{
	SETCTX(ctx);
	return cu.cuMemFreeHost(p);
}

int goshmemi_cuMemHostGetDevicePointer(CUcontext ctx, CUdeviceptr *d, void *p)
{
	SETCTX(ctx);
	/* Ref: cuMemHostGetDevicePointer: "Flags provided for future releases.
	 * For now, it must be set to 0." */
	return cu.cuMemHostGetDevicePointer_v2(d, p, 0);
}

int goshmemi_cuMemHostRegister(CUcontext ctx, void *p, size_t n, unsigned int flags)
{
	SETCTX(ctx);
	return cu.cuMemHostRegister_v2(p, n, flags);
}

int goshmemi_cuMemHostUnregister(CUcontext ctx, void *p)
{
	SETCTX(ctx);
	return cu.cuMemHostUnregister(p);
}

int goshmemi_cuMemGetDmabufFD(CUcontext ctx, int *fd, CUdeviceptr p, size_t n)
{
	SETCTX(ctx);
	return cu.cuMemGetHandleForAddressRange(fd, p, n, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
}

int goshmemi_cuPointerGetAttribute(CUcontext ctx, unsigned long long *v, int attr, CUdeviceptr p)
{
	/* Every attribute this binding accepts is at most 8 bytes; a zeroed
	 * 16-byte buffer leaves narrower values readable as little-endian u64. */
	unsigned long long buf[2] = {0, 0};
	int r;
	SETCTX(ctx);
	r = cu.cuPointerGetAttribute(buf, (CUpointer_attribute)attr, p);
	*v = buf[0];
	return r;
}

int goshmemi_cuIpcGetMemHandle(CUcontext ctx, void *handle64, CUdeviceptr p)
{
	CUipcMemHandle h;
	int r;
	SETCTX(ctx);
	r = cu.cuIpcGetMemHandle(&h, p);
	if (r == CUDA_SUCCESS)
		memcpy(handle64, h.reserved, CU_IPC_HANDLE_SIZE);
	return r;
}

int goshmemi_cuIpcOpenMemHandle(CUcontext ctx, CUdeviceptr *p, const void *handle64, unsigned int flags)
{
	CUipcMemHandle h;
	SETCTX(ctx);
	memcpy(h.reserved, handle64, CU_IPC_HANDLE_SIZE);
	return cu.cuIpcOpenMemHandle_v2(p, h, flags);
}

int goshmemi_cuIpcCloseMemHandle(CUcontext ctx, CUdeviceptr p)
{
	SETCTX(ctx);
	return cu.cuIpcCloseMemHandle(p);
}

int goshmemi_cuModuleLoadData(CUcontext ctx, CUmodule *m, const void *image)
{
	SETCTX(ctx);
	return cu.cuModuleLoadData(m, image);
}

int goshmemi_cuModuleLoad(CUcontext ctx, CUmodule *m, const char *path)
{
	SETCTX(ctx);
	return cu.cuModuleLoad(m, path);
}

int goshmemi_cuModuleUnload(CUcontext ctx, CUmodule m)
{
	SETCTX(ctx);
	return cu.cuModuleUnload(m);
}

int goshmemi_cuModuleGetFunction(CUcontext ctx, CUfunction *f, CUmodule m, const char *name)
{
	SETCTX(ctx);
	return cu.cuModuleGetFunction(f, m, name);
}

int goshmemi_cuModuleGetGlobal(CUcontext ctx, CUdeviceptr *p, size_t *n, CUmodule m, const char *name)
{
	SETCTX(ctx);
	return cu.cuModuleGetGlobal_v2(p, n, m, name);
}

int goshmemi_launch(CUcontext ctx, CUfunction f,
		    unsigned int gx, unsigned int gy, unsigned int gz,
		    unsigned int bx, unsigned int by, unsigned int bz,
		    unsigned int smem, CUstream s,
		    const unsigned char *buf, size_t nbytes,
		    const unsigned int *offs, int nargs, int mode)
{
	_Alignas(16) unsigned char params[GOSHMEMI_MAX_PARAM_BYTES];
	void *ptrs[GOSHMEMI_MAX_PARAMS];
	void **kp = NULL;
	int i;

	if (nbytes > sizeof params || nargs < 0 || nargs > GOSHMEMI_MAX_PARAMS)
		return CUDA_ERROR_INVALID_VALUE;
	if (nargs > 0) {
		memcpy(params, buf, nbytes);
		for (i = 0; i < nargs; i++) {
			if (offs[i] >= nbytes)
				return CUDA_ERROR_INVALID_VALUE;
			ptrs[i] = params + offs[i];
		}
		kp = ptrs;
	}
	SETCTX(ctx);
	if (mode == GOSHMEMI_LAUNCH_COOPERATIVE)
		return cu.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, smem, s, kp);
	if (mode == GOSHMEMI_LAUNCH_OVERLAP) {
		CUlaunchAttribute attr;
		CUlaunchConfig cfg;
		if (!cu_launch_ex)
			return CUDA_ERROR_NOT_SUPPORTED;
		memset(&attr, 0, sizeof attr);
		attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attr.value.programmaticStreamSerializationAllowed = 1;
		memset(&cfg, 0, sizeof cfg);
		cfg.gridDimX = gx, cfg.gridDimY = gy, cfg.gridDimZ = gz;
		cfg.blockDimX = bx, cfg.blockDimY = by, cfg.blockDimZ = bz;
		cfg.sharedMemBytes = smem;
		cfg.hStream = s;
		cfg.attrs = &attr;
		cfg.numAttrs = 1;
		return cu_launch_ex(&cfg, f, kp, NULL);
	}
	return cu.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, kp, NULL);
}

int goshmemi_cuOccupancyMaxActiveBlocksPerMultiprocessor(CUcontext ctx, int *n, CUfunction f, int block, size_t smem)
{
	SETCTX(ctx);
	return cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, block, smem);
}

int goshmemi_cuFuncGetAttribute(CUcontext ctx, int *v, int attr, CUfunction f)
{
	SETCTX(ctx);
	return cu.cuFuncGetAttribute(v, (CUfunction_attribute)attr, f);
}

int goshmemi_cuStreamCreate(CUcontext ctx, CUstream *s, unsigned int flags)
{
	SETCTX(ctx);
	return cu.cuStreamCreate(s, flags);
}

int goshmemi_cuStreamCreateWithPriority(CUcontext ctx, CUstream *s, unsigned int flags, int priority)
{
	SETCTX(ctx);
	return cu.cuStreamCreateWithPriority(s, flags, priority);
}

int goshmemi_cuStreamIsCapturing(CUcontext ctx, CUstream s, int *status)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	int r;
	SETCTX(ctx);
	r = cu.cuStreamIsCapturing(s, &st);
	*status = (int)st;
	return r;
}

int goshmemi_cuStreamSynchronize(CUcontext ctx, CUstream s)
{
	SETCTX(ctx);
	return cu.cuStreamSynchronize(s);
}

int goshmemi_cuStreamDestroy(CUcontext ctx, CUstream s)
{
	SETCTX(ctx);
	return cu.cuStreamDestroy_v2(s);
}

int goshmemi_cuEventCreate(CUcontext ctx, CUevent *e, unsigned int flags)
{
	SETCTX(ctx);
	return cu.cuEventCreate(e, flags);
}

int goshmemi_cuEventRecord(CUcontext ctx, CUevent e, CUstream s)
{
	SETCTX(ctx);
	return cu.cuEventRecord(e, s);
}

int goshmemi_cuEventSynchronize(CUcontext ctx, CUevent e)
{
	SETCTX(ctx);
	return cu.cuEventSynchronize(e);
}

int goshmemi_cuEventElapsedTime(CUcontext ctx, float *ms, CUevent a, CUevent b)
{
	SETCTX(ctx);
	return cu.cuEventElapsedTime(ms, a, b);
}

int goshmemi_cuEventDestroy(CUcontext ctx, CUevent e)
{
	SETCTX(ctx);
	return cu.cuEventDestroy_v2(e);
}

/* Stream-ordered copies and word writes (the proxy's submission path). */
int goshmemi_cuMemcpyHtoDAsync(CUcontext ctx, CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	SETCTX(ctx);
	return cu.cuMemcpyHtoDAsync_v2(dst, src, n, s);
}

int goshmemi_cuMemcpyDtoDAsync(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	SETCTX(ctx);
	return cu.cuMemcpyDtoDAsync_v2(dst, src, n, s);
}

int goshmemi_cuMemsetD8Async(CUcontext ctx, CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
	SETCTX(ctx);
	return cu.cuMemsetD8Async(p, v, n, s);
}

int goshmemi_cuStreamWriteValue64(CUcontext ctx, CUstream s, CUdeviceptr addr, uint64_t v, unsigned int flags)
{
	SETCTX(ctx);
	return cu.cuStreamWriteValue64_v2(s, addr, v, flags);
}

int goshmemi_cuStreamWriteValues64(CUcontext ctx, CUstream s, unsigned int n, const CUdeviceptr *addr,
				   const uint64_t *v, unsigned int flags)
{
	goshmemi_memop_t ops[GOSHMEMI_MAX_BATCH_WRITES];
	unsigned int i;
	if (n == 0 || n > GOSHMEMI_MAX_BATCH_WRITES)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++) {
		ops[i].op = CU_STREAM_MEM_OP_WRITE_VALUE_64;
		ops[i].flags = flags;
		ops[i].addr = addr[i];
		ops[i].value = v[i];
	}
	return goshmemi_cuStreamMemOps(ctx, s, n, ops);
}

int goshmemi_cuStreamMemOps(CUcontext ctx, CUstream s, unsigned int n, const goshmemi_memop_t *ops)
{
	CUstreamBatchMemOpParams p[GOSHMEMI_MAX_BATCH_WRITES];
	unsigned int i;
	if (n == 0 || n > GOSHMEMI_MAX_BATCH_WRITES)
		return CUDA_ERROR_INVALID_VALUE;
	SETCTX(ctx);
	memset(p, 0, n * sizeof p[0]);
	for (i = 0; i < n; i++) {
		/* a wait's parameters have a write's layout (driver.h) */
		if (ops[i].op != CU_STREAM_MEM_OP_WRITE_VALUE_64 && ops[i].op != CU_STREAM_MEM_OP_WAIT_VALUE_64)
			return CUDA_ERROR_INVALID_VALUE;
		p[i].writeValue.operation = ops[i].op;
		p[i].writeValue.address = ops[i].addr;
		p[i].writeValue.value64 = ops[i].value;
		p[i].writeValue.flags = ops[i].flags;
	}
	return cu.cuStreamBatchMemOp_v2(s, n, p, 0);
}

/* ---- virtual memory management ---------------------------------------- */

int goshmemi_vmm_loaded(void) { return vmm.all; }

/* VMM(ctx): SETCTX after checking the VMM calls resolved (a statement at
 * the top of a wrapper's body, as SETCTX). */
#define VMM(ctx)                                 \
	if (!vmm.all)                            \
		return GOSHMEMI_NOT_LOADED;      \
	SETCTX(ctx)

/* The properties of every allocation of the GPU heap: pinned device memory
 * on dev that exports as a POSIX file descriptor. */
static void vmm_prop(CUmemAllocationProp *p, int dev)
{
	memset(p, 0, sizeof *p);
	p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = dev;
}

int goshmemi_cuMemGetAllocationGranularity(CUcontext ctx, size_t *g, int dev)
{
	CUmemAllocationProp p;
	VMM(ctx);
	vmm_prop(&p, dev);
	return vmm.cuMemGetAllocationGranularity(g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

int goshmemi_cuMemAddressReserve(CUcontext ctx, CUdeviceptr *p, size_t size, size_t align)
{
	VMM(ctx);
	return vmm.cuMemAddressReserve(p, size, align, 0, 0);
}

int goshmemi_cuMemAddressFree(CUcontext ctx, CUdeviceptr p, size_t size)
{
	VMM(ctx);
	return vmm.cuMemAddressFree(p, size);
}

int goshmemi_cuMemCreate(CUcontext ctx, CUmemGenericAllocationHandle *h, size_t size, int dev)
{
	CUmemAllocationProp p;
	VMM(ctx);
	vmm_prop(&p, dev);
	return vmm.cuMemCreate(h, size, &p, 0);
}

int goshmemi_cuMemRelease(CUcontext ctx, CUmemGenericAllocationHandle h)
{
	VMM(ctx);
	return vmm.cuMemRelease(h);
}

int goshmemi_cuMemMap(CUcontext ctx, CUdeviceptr p, size_t size, CUmemGenericAllocationHandle h)
{
	VMM(ctx);
	return vmm.cuMemMap(p, size, 0, h, 0);
}

int goshmemi_cuMemUnmap(CUcontext ctx, CUdeviceptr p, size_t size)
{
	VMM(ctx);
	return vmm.cuMemUnmap(p, size);
}

int goshmemi_cuMemSetAccess(CUcontext ctx, CUdeviceptr p, size_t size, int dev)
{
	CUmemAccessDesc d;
	VMM(ctx);
	memset(&d, 0, sizeof d);
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = dev;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return vmm.cuMemSetAccess(p, size, &d, 1);
}

int goshmemi_cuMemExportFD(CUcontext ctx, int *fd, CUmemGenericAllocationHandle h)
{
	VMM(ctx);
	return vmm.cuMemExportToShareableHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

int goshmemi_cuMemImportFD(CUcontext ctx, CUmemGenericAllocationHandle *h, int fd)
{
	VMM(ctx);
	return vmm.cuMemImportFromShareableHandle(h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}
