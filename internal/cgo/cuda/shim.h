/*
 * shim.h: goshmem's dlopen loader for libcuda and the thin C wrappers that
 * Go calls through cgo (cgo cannot call a C function pointer directly).
 *
 * Wrappers that take a CUcontext first make it current on the calling
 * thread (cuCtxSetCurrent) and then make the driver call, inside one cgo
 * call: a cgo call runs start to finish on one OS thread, so no goroutine
 * migration can come between the two. When another context was current
 * (another library's, on a thread that library uses too) they make it
 * current again on return, so goshmem never replaces it; a thread with
 * none keeps goshmem's, which makes the next call's cuCtxSetCurrent a
 * no-op. If cuCtxSetCurrent fails the wrapper returns its CUresult with
 * GOSHMEMI_SETCTX_FAILED or-ed in, so Go can name the right call. A NULL
 * context skips both.
 */
#ifndef GOSHMEMI_CUDA_SHIM_H
#define GOSHMEMI_CUDA_SHIM_H

#include "driver.h"

/* Or-ed into a wrapper's result when cuCtxSetCurrent, not the call, failed. */
#define GOSHMEMI_SETCTX_FAILED 0x40000000
/* A wrapper called before goshmemi_cu_load succeeded (never a CUresult). */
#define GOSHMEMI_NOT_LOADED 0x20000000

/* Kernel parameter limits of goshmemi_launch. 32764 bytes is the driver's
 * limit for Volta and newer since CUDA 12.1 (4096 before).
 * Ref: CUDA C++ Programming Guide, "Function Parameters". */
#define GOSHMEMI_MAX_PARAM_BYTES 32768
#define GOSHMEMI_MAX_PARAMS 1024

/* goshmemi_cu_load dlopens lib and resolves every entry point. Returns 0, or
 * 1 when dlopen failed, 2 when a symbol is missing; err receives the text. */
int goshmemi_cu_load(const char *lib, char *err, size_t errlen);
/* goshmemi_cu_unload forgets every entry point and dlcloses the library. */
void goshmemi_cu_unload(void);
/* goshmemi_cu_nsyms / goshmemi_cu_sym_name: the symbols resolved (for
 * diagnostics: which versioned name was found). */
int goshmemi_cu_nsyms(void);
const char *goshmemi_cu_sym_name(int i);

int goshmemi_cuInit(unsigned int flags);
int goshmemi_cuDriverGetVersion(int *v);
int goshmemi_cuGetErrorName(int code, const char **s);
int goshmemi_cuGetErrorString(int code, const char **s);

int goshmemi_cuDeviceGetCount(int *n);
int goshmemi_cuDeviceGet(CUdevice *d, int ordinal);
int goshmemi_cuDeviceGetName(char *name, int len, CUdevice d);
int goshmemi_cuDeviceGetAttribute(int *v, int attr, CUdevice d);
int goshmemi_cuDeviceGetPCIBusId(char *id, int len, CUdevice d);
int goshmemi_cuDeviceTotalMem(size_t *bytes, CUdevice d);
int goshmemi_cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer);

int goshmemi_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d);
int goshmemi_cuDevicePrimaryCtxRelease(CUdevice d);
int goshmemi_cuCtxSetCurrent(CUcontext ctx);
int goshmemi_cuCtxGetCurrent(CUcontext *ctx);
int goshmemi_cuCtxGetDevice(CUcontext ctx, CUdevice *d);
int goshmemi_cuCtxSynchronize(CUcontext ctx);
int goshmemi_cuCtxEnablePeerAccess(CUcontext ctx, CUcontext peer, unsigned int flags);

int goshmemi_cuMemAlloc(CUcontext ctx, CUdeviceptr *p, size_t n);
int goshmemi_cuMemFree(CUcontext ctx, CUdeviceptr p);
int goshmemi_cuMemsetD8(CUcontext ctx, CUdeviceptr p, unsigned char v, size_t n);
int goshmemi_cuMemcpyHtoD(CUcontext ctx, CUdeviceptr dst, const void *src, size_t n);
int goshmemi_cuMemcpyDtoH(CUcontext ctx, void *dst, CUdeviceptr src, size_t n);
int goshmemi_cuMemcpyDtoD(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t n);
int goshmemi_cuMemcpyPeer(CUcontext ctx, CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n);
int goshmemi_cuMemGetInfo(CUcontext ctx, size_t *free, size_t *total);
int goshmemi_cuMemHostAlloc(CUcontext ctx, void **p, size_t n, unsigned int flags);
int goshmemi_cuMemFreeHost(CUcontext ctx, void *p);
int goshmemi_cuMemHostGetDevicePointer(CUcontext ctx, CUdeviceptr *d, void *p);
int goshmemi_cuMemHostRegister(CUcontext ctx, void *p, size_t n, unsigned int flags);
int goshmemi_cuMemHostUnregister(CUcontext ctx, void *p);
int goshmemi_cuMemGetDmabufFD(CUcontext ctx, int *fd, CUdeviceptr p, size_t n);
int goshmemi_cuPointerGetAttribute(CUcontext ctx, unsigned long long *v, int attr, CUdeviceptr p);

int goshmemi_cuIpcGetMemHandle(CUcontext ctx, void *handle64, CUdeviceptr p);
int goshmemi_cuIpcOpenMemHandle(CUcontext ctx, CUdeviceptr *p, const void *handle64, unsigned int flags);
int goshmemi_cuIpcCloseMemHandle(CUcontext ctx, CUdeviceptr p);

int goshmemi_cuModuleLoadData(CUcontext ctx, CUmodule *m, const void *image);
int goshmemi_cuModuleLoad(CUcontext ctx, CUmodule *m, const char *path);
int goshmemi_cuModuleUnload(CUcontext ctx, CUmodule m);
int goshmemi_cuModuleGetFunction(CUcontext ctx, CUfunction *f, CUmodule m, const char *name);
int goshmemi_cuModuleGetGlobal(CUcontext ctx, CUdeviceptr *p, size_t *n, CUmodule m, const char *name);

/* goshmemi_launch copies nargs kernel parameters from buf (nbytes, parameter
 * i at offset offs[i]) to this thread's C stack, builds the void** array
 * there and calls, by mode: cuLaunchKernel (GOSHMEMI_LAUNCH_PLAIN),
 * cuLaunchCooperativeKernel (GOSHMEMI_LAUNCH_COOPERATIVE) or
 * cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
 * (GOSHMEMI_LAUNCH_OVERLAP: the kernel may start while the stream's previous
 * kernel runs, once that one triggers it, and waits for it with
 * griddepcontrol.wait; CUDA_ERROR_NOT_SUPPORTED when the driver has no
 * cuLaunchKernelEx). Nothing is kept after return: the driver copies
 * parameter values at launch.
 * Ref: cuLaunchKernel, "kernelParams ... the parameters are copied";
 * cuLaunchKernelEx. */
#define GOSHMEMI_LAUNCH_PLAIN 0
#define GOSHMEMI_LAUNCH_COOPERATIVE 1
#define GOSHMEMI_LAUNCH_OVERLAP 2
int goshmemi_launch(CUcontext ctx, CUfunction f,
		    unsigned int gx, unsigned int gy, unsigned int gz,
		    unsigned int bx, unsigned int by, unsigned int bz,
		    unsigned int smem, CUstream s,
		    const unsigned char *buf, size_t nbytes,
		    const unsigned int *offs, int nargs, int mode);
int goshmemi_cuOccupancyMaxActiveBlocksPerMultiprocessor(CUcontext ctx, int *n, CUfunction f, int block, size_t smem);
int goshmemi_cuFuncGetAttribute(CUcontext ctx, int *v, int attr, CUfunction f);

int goshmemi_cuStreamCreate(CUcontext ctx, CUstream *s, unsigned int flags);
int goshmemi_cuStreamCreateWithPriority(CUcontext ctx, CUstream *s, unsigned int flags, int priority);
int goshmemi_cuStreamSynchronize(CUcontext ctx, CUstream s);
int goshmemi_cuStreamIsCapturing(CUcontext ctx, CUstream s, int *status);
int goshmemi_cuStreamDestroy(CUcontext ctx, CUstream s);
int goshmemi_cuEventCreate(CUcontext ctx, CUevent *e, unsigned int flags);
int goshmemi_cuEventRecord(CUcontext ctx, CUevent e, CUstream s);
int goshmemi_cuEventSynchronize(CUcontext ctx, CUevent e);
int goshmemi_cuEventElapsedTime(CUcontext ctx, float *ms, CUevent a, CUevent b);
int goshmemi_cuEventDestroy(CUcontext ctx, CUevent e);
int goshmemi_cuMemcpyHtoDAsync(CUcontext ctx, CUdeviceptr dst, const void *src, size_t n, CUstream s);
int goshmemi_cuMemsetD8Async(CUcontext ctx, CUdeviceptr p, unsigned char v, size_t n, CUstream s);
int goshmemi_cuMemcpyDtoDAsync(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
int goshmemi_cuStreamWriteValue64(CUcontext ctx, CUstream s, CUdeviceptr addr, uint64_t v, unsigned int flags);
/* n (1..GOSHMEMI_MAX_BATCH_WRITES) 8-byte stream writes in one cuStreamBatchMemOp_v2 call. */
#define GOSHMEMI_MAX_BATCH_WRITES 255 /* cuStreamBatchMemOp: count "must be less than 256" */
int goshmemi_cuStreamWriteValues64(CUcontext ctx, CUstream s, unsigned int n, const CUdeviceptr *addr,
				   const uint64_t *v, unsigned int flags);

/* One stream memory operation of goshmemi_cuStreamMemOps: op is
 * CU_STREAM_MEM_OP_WRITE_VALUE_64 or CU_STREAM_MEM_OP_WAIT_VALUE_64, flags
 * the write's or the wait's flags. The layout is mirrored by MemOp in
 * stream.go. */
typedef struct goshmemi_memop {
	unsigned int op, flags;
	CUdeviceptr addr;
	uint64_t value;
} goshmemi_memop_t;
/* n (1..GOSHMEMI_MAX_BATCH_WRITES) 8-byte stream writes and waits, in order, in one cuStreamBatchMemOp_v2 call. */
int goshmemi_cuStreamMemOps(CUcontext ctx, CUstream s, unsigned int n, const goshmemi_memop_t *ops);

/* Virtual memory management (optional entry points: goshmemi_vmm_loaded is
 * 0 when the driver lacks any of them, and the wrappers then fail with
 * GOSHMEMI_NOT_LOADED). Handles are CUmemGenericAllocationHandle; the
 * shareable handle is a POSIX file descriptor. dev is the device ordinal the
 * memory lives on (create) or the one that accesses it (set access). */
int goshmemi_vmm_loaded(void);
int goshmemi_cuMemGetAllocationGranularity(CUcontext ctx, size_t *g, int dev);
int goshmemi_cuMemAddressReserve(CUcontext ctx, CUdeviceptr *p, size_t size, size_t align);
int goshmemi_cuMemAddressFree(CUcontext ctx, CUdeviceptr p, size_t size);
int goshmemi_cuMemCreate(CUcontext ctx, CUmemGenericAllocationHandle *h, size_t size, int dev);
int goshmemi_cuMemRelease(CUcontext ctx, CUmemGenericAllocationHandle h);
int goshmemi_cuMemMap(CUcontext ctx, CUdeviceptr p, size_t size, CUmemGenericAllocationHandle h);
int goshmemi_cuMemUnmap(CUcontext ctx, CUdeviceptr p, size_t size);
int goshmemi_cuMemSetAccess(CUcontext ctx, CUdeviceptr p, size_t size, int dev);
int goshmemi_cuMemExportFD(CUcontext ctx, int *fd, CUmemGenericAllocationHandle h);
int goshmemi_cuMemImportFD(CUcontext ctx, CUmemGenericAllocationHandle *h, int fd);

#endif /* GOSHMEMI_CUDA_SHIM_H */
