/*
 * driver.h: the slice of the CUDA driver API (cuda.h) that goshmem uses,
 * declared here so that Go builds need no CUDA SDK. The driver itself is
 * loaded at run time with dlopen("libcuda.so.1") by shim.c.
 *
 * Every type, enum value and signature below is copied by hand from the CUDA
 * driver API reference; values MUST stay exactly the driver's (they cross the
 * ABI). Each name is the cuda.h spelling. Append only.
 *
 * Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html
 * Ref: https://docs.nvidia.com/cuda/cuda-driver-api/modules.html (function groups)
 */
#ifndef GOSHMEMI_CUDA_DRIVER_H
#define GOSHMEMI_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/* ---- handles ---------------------------------------------------------- */
/* Ref: cuda.h typedefs CUdevice (int), CUdeviceptr_v2 (unsigned long long on
 * LP64), and the opaque pointer handles CUcontext, CUmodule, CUfunction,
 * CUstream, CUevent. */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

/* Ref: cuda.h CU_IPC_HANDLE_SIZE, struct CUipcMemHandle_st (passed by value). */
#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
	char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;

/* ---- CUresult (subset) -------------------------------------------------- */
/* Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum cudaError_enum */
typedef enum cudaError_enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_DEINITIALIZED = 4,
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
	CUDA_ERROR_INVALID_PTX = 218,
	CUDA_ERROR_FILE_NOT_FOUND = 301,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_ILLEGAL_ADDRESS = 700,
	CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
	CUDA_ERROR_LAUNCH_TIMEOUT = 702,
	CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
	CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
	CUDA_ERROR_ASSERT = 710,
	CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
	CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
	CUDA_ERROR_MISALIGNED_ADDRESS = 716,
	CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
	CUDA_ERROR_INVALID_PC = 718,
	CUDA_ERROR_LAUNCH_FAILED = 719,
	CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
	CUDA_ERROR_NOT_PERMITTED = 800,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
	CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* ---- CUdevice_attribute (subset) ---------------------------------------- */
/* Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum CUdevice_attribute_enum */
typedef enum CUdevice_attribute_enum {
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
	CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
	CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
	CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
	CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
	CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
	CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
	CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
	CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
	CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
	CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 99,
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
	CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
	CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116,
	CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124
} CUdevice_attribute;

/* ---- CUfunction_attribute (subset) -------------------------------------- */
/* Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum CUfunction_attribute_enum */
typedef enum CUfunction_attribute_enum {
	CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
	CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
	CU_FUNC_ATTRIBUTE_NUM_REGS = 4
} CUfunction_attribute;

/* ---- CUpointer_attribute (subset) --------------------------------------- */
/* Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum CUpointer_attribute_enum */
typedef enum CUpointer_attribute_enum {
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
	CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
	CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
	CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10,
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
	CU_POINTER_ATTRIBUTE_MAPPED = 13,
	CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE = 15
} CUpointer_attribute;

/* Ref: cuda.h enum CUmemorytype_enum (value of CU_POINTER_ATTRIBUTE_MEMORY_TYPE). */
typedef enum CUmemorytype_enum {
	CU_MEMORYTYPE_HOST = 1,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_MEMORYTYPE_ARRAY = 3,
	CU_MEMORYTYPE_UNIFIED = 4
} CUmemorytype;

/* Ref: cuMemGetHandleForAddressRange: enum CUmemRangeHandleType_enum */
typedef enum CUmemRangeHandleType_enum {
	CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1
} CUmemRangeHandleType;

/* ---- flags -------------------------------------------------------------- */
/* Ref: cuMemHostAlloc: CU_MEMHOSTALLOC_* (cuda.h #defines) */
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
/* Ref: cuMemHostRegister: CU_MEMHOSTREGISTER_* (cuda.h #defines) */
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08
/* Ref: cuIpcOpenMemHandle: enum CUipcMem_flags_enum */
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
/* Ref: cuStreamCreate: enum CUstream_flags_enum */
#define CU_STREAM_DEFAULT 0x0
#define CU_STREAM_NON_BLOCKING 0x1
/* Ref: cuEventCreate: enum CUevent_flags_enum */
#define CU_EVENT_DEFAULT 0x0
#define CU_EVENT_BLOCKING_SYNC 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_EVENT_INTERPROCESS 0x4

/* Ref: cuda.h CUstreamBatchMemOpType, union CUstreamBatchMemOpParams_union (48 bytes:
 * pad[6]), struct CUstreamMemOpWriteValueParams_st, cuStreamBatchMemOp_v2 (CUDA 11.7+). */
#define CU_STREAM_MEM_OP_WAIT_VALUE_64 4
#define CU_STREAM_MEM_OP_WRITE_VALUE_64 5
/* Ref: cuda.h enum CUstreamWaitValue_flags_enum: the wait's condition */
#define CU_STREAM_WAIT_VALUE_GEQ 0x0 /* (int64_t)(*addr - value) >= 0: a cyclic >= */
#define CU_STREAM_WAIT_VALUE_EQ 0x1
#define CU_STREAM_WAIT_VALUE_AND 0x2 /* (*addr & value) != 0 */
#define CU_STREAM_WAIT_VALUE_NOR 0x3 /* ~(*addr | value) != 0 */
typedef union CUstreamBatchMemOpParams_union {
	unsigned int operation;
	struct CUstreamMemOpWriteValueParams_st {
		unsigned int operation;
		CUdeviceptr address;
		union {
			uint32_t value;
			uint64_t value64;
		};
		unsigned int flags;
		CUdeviceptr alias;
	} writeValue;
	/* cuda.h's struct CUstreamMemOpWaitValueParams_st has writeValue's layout field for field */
	struct CUstreamMemOpWriteValueParams_st waitValue;
	uint64_t pad[6];
} CUstreamBatchMemOpParams;
_Static_assert(sizeof(CUstreamBatchMemOpParams) == 48, "CUstreamBatchMemOpParams is 48 bytes (pad[6])");
_Static_assert(offsetof(struct CUstreamMemOpWriteValueParams_st, address) == 8, "writeValue.address");
_Static_assert(offsetof(struct CUstreamMemOpWriteValueParams_st, value64) == 16, "writeValue.value64");
_Static_assert(offsetof(struct CUstreamMemOpWriteValueParams_st, flags) == 24, "writeValue.flags");
_Static_assert(offsetof(struct CUstreamMemOpWriteValueParams_st, alias) == 32, "writeValue.alias");
_Static_assert(offsetof(CUstreamBatchMemOpParams, waitValue) == 0, "waitValue");

/* Ref: cuda.h (CUDA 11.8+) CUlaunchAttributeID, CUlaunchAttributeValue,
 * CUlaunchAttribute, CUlaunchConfig and cuLaunchKernelEx: a launch with
 * attributes. Only the IDs goshmem sets are named; the value union is 64
 * bytes whatever member is used. */
typedef enum CUlaunchAttributeID_enum {
	CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
	CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
} CUlaunchAttributeID;

typedef union CUlaunchAttributeValue_union {
	char pad[64];
	int programmaticStreamSerializationAllowed;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
	CUlaunchAttributeID id;
	char pad[8 - sizeof(CUlaunchAttributeID)];
	CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;
_Static_assert(sizeof(CUlaunchAttribute) == 72 && offsetof(CUlaunchAttribute, value) == 8, "CUlaunchAttribute");
_Static_assert(sizeof(CUlaunchConfig) == 56 && offsetof(CUlaunchConfig, hStream) == 32 &&
		       offsetof(CUlaunchConfig, numAttrs) == 48, "CUlaunchConfig");

/* ---- virtual memory management (CUDA 10.2+) ------------------------------ */
/* Ref: cuda.h of CUDA 12.x (layouts checked against 11.8's by hdrcheck_test.go):
 * CUmemGenericAllocationHandle_v1, enum CUmemAllocationHandleType_enum,
 * CUmemAccess_flags_enum, CUmemLocationType_enum, CUmemAllocationType_enum,
 * CUmemAllocationGranularity_flags_enum, struct CUmemLocation_st,
 * CUmemAllocationProp_st, CUmemAccessDesc_st. */
typedef unsigned long long CUmemGenericAllocationHandle;
typedef enum CUmemAllocationHandleType_enum {
	CU_MEM_HANDLE_TYPE_NONE = 0,
	CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
} CUmemAllocationHandleType;
typedef enum CUmemAccess_flags_enum {
	CU_MEM_ACCESS_FLAGS_PROT_NONE = 0,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
} CUmemAccess_flags;
typedef enum CUmemLocationType_enum {
	CU_MEM_LOCATION_TYPE_DEVICE = 1
} CUmemLocationType;
typedef enum CUmemAllocationType_enum {
	CU_MEM_ALLOCATION_TYPE_PINNED = 1
} CUmemAllocationType;
typedef enum CUmemAllocationGranularity_flags_enum {
	CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
	CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1
} CUmemAllocationGranularity_flags;
typedef struct CUmemLocation_st {
	CUmemLocationType type;
	int id;
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
	CUmemAllocationType type;
	CUmemAllocationHandleType requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;
typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	CUmemAccess_flags flags;
} CUmemAccessDesc;
_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation");
_Static_assert(sizeof(CUmemAllocationProp) == 32 && offsetof(CUmemAllocationProp, location) == 8 &&
		       offsetof(CUmemAllocationProp, win32HandleMetaData) == 16 &&
		       offsetof(CUmemAllocationProp, allocFlags) == 24, "CUmemAllocationProp");
_Static_assert(sizeof(CUmemAccessDesc) == 12 && offsetof(CUmemAccessDesc, flags) == 8, "CUmemAccessDesc");

/* Ref: cuda.h (CUDA 10.0+), enum CUstreamCaptureStatus_enum (cuStreamIsCapturing). */
typedef enum CUstreamCaptureStatus_enum {
	CU_STREAM_CAPTURE_STATUS_NONE = 0,
	CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
	CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

/* ---- function pointer typedefs ------------------------------------------ */
/* One per driver entry point, named PFN_<symbol> after the exported symbol
 * that shim.c resolves first. Signatures: the driver API reference page of
 * each function (Ref: group__CUDA__INITIALIZE, __VERSION, __ERROR, __DEVICE,
 * __PRIMARY__CTX, __CTX, __PEER__ACCESS, __MEM, __MODULE, __EXEC, __OCCUPANCY,
 * __STREAM, __EVENT, __UNIFIED). */
typedef CUresult (*PFN_cuInit)(unsigned int Flags);
typedef CUresult (*PFN_cuDriverGetVersion)(int *driverVersion);
typedef CUresult (*PFN_cuGetErrorName)(CUresult error, const char **pStr);
typedef CUresult (*PFN_cuGetErrorString)(CUresult error, const char **pStr);

typedef CUresult (*PFN_cuDeviceGetCount)(int *count);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice *device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetName)(char *name, int len, CUdevice dev);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
typedef CUresult (*PFN_cuDeviceGetPCIBusId)(char *pciBusId, int len, CUdevice dev);
typedef CUresult (*PFN_cuDeviceTotalMem_v2)(size_t *bytes, CUdevice dev);
typedef CUresult (*PFN_cuDeviceCanAccessPeer)(int *canAccessPeer, CUdevice dev, CUdevice peerDev);

typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext *pctx, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease_v2)(CUdevice dev);
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext ctx);
typedef CUresult (*PFN_cuCtxGetCurrent)(CUcontext *pctx);
typedef CUresult (*PFN_cuCtxGetDevice)(CUdevice *device);
typedef CUresult (*PFN_cuCtxSynchronize)(void);
typedef CUresult (*PFN_cuCtxEnablePeerAccess)(CUcontext peerContext, unsigned int Flags);

typedef CUresult (*PFN_cuMemAlloc_v2)(CUdeviceptr *dptr, size_t bytesize);
typedef CUresult (*PFN_cuMemFree_v2)(CUdeviceptr dptr);
typedef CUresult (*PFN_cuMemsetD8_v2)(CUdeviceptr dstDevice, unsigned char uc, size_t N);
typedef CUresult (*PFN_cuMemcpyHtoD_v2)(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
typedef CUresult (*PFN_cuMemcpyDtoH_v2)(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
typedef CUresult (*PFN_cuMemcpyDtoD_v2)(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
typedef CUresult (*PFN_cuMemcpyPeer)(CUdeviceptr dstDevice, CUcontext dstContext,
				     CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount);
typedef CUresult (*PFN_cuMemGetInfo_v2)(size_t *free, size_t *total);
typedef CUresult (*PFN_cuMemHostAlloc)(void **pp, size_t bytesize, unsigned int Flags);
typedef CUresult (*PFN_cuMemFreeHost)(void *p);
typedef CUresult (*PFN_cuMemHostGetDevicePointer_v2)(CUdeviceptr *pdptr, void *p, unsigned int Flags);
typedef CUresult (*PFN_cuMemHostRegister_v2)(void *p, size_t bytesize, unsigned int Flags);
typedef CUresult (*PFN_cuMemHostUnregister)(void *p);
typedef CUresult (*PFN_cuPointerGetAttribute)(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
/* Ref: cuda.h cuMemGetHandleForAddressRange (CUDA 11.7+): a dma-buf fd for a device range. */
typedef CUresult (*PFN_cuMemGetHandleForAddressRange)(void *handle, CUdeviceptr dptr, size_t size,
						      CUmemRangeHandleType handleType, unsigned long long flags);

typedef CUresult (*PFN_cuIpcGetMemHandle)(CUipcMemHandle *pHandle, CUdeviceptr dptr);
typedef CUresult (*PFN_cuIpcOpenMemHandle_v2)(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
typedef CUresult (*PFN_cuIpcCloseMemHandle)(CUdeviceptr dptr);

typedef CUresult (*PFN_cuModuleLoadData)(CUmodule *module, const void *image);
typedef CUresult (*PFN_cuModuleLoad)(CUmodule *module, const char *fname);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule hmod);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction *hfunc, CUmodule hmod, const char *name);
typedef CUresult (*PFN_cuModuleGetGlobal_v2)(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);

typedef CUresult (*PFN_cuLaunchKernel)(CUfunction f,
				       unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
				       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
				       unsigned int sharedMemBytes, CUstream hStream,
				       void **kernelParams, void **extra);
typedef CUresult (*PFN_cuLaunchCooperativeKernel)(CUfunction f,
						  unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
						  unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
						  unsigned int sharedMemBytes, CUstream hStream, void **kernelParams);
typedef CUresult (*PFN_cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
typedef CUresult (*PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *numBlocks, CUfunction func,
								    int blockSize, size_t dynamicSMemSize);

typedef CUresult (*PFN_cuStreamCreate)(CUstream *phStream, unsigned int Flags);
typedef CUresult (*PFN_cuStreamCreateWithPriority)(CUstream *phStream, unsigned int flags, int priority);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream hStream);
typedef CUresult (*PFN_cuStreamIsCapturing)(CUstream hStream, CUstreamCaptureStatus *captureStatus);
typedef CUresult (*PFN_cuStreamDestroy_v2)(CUstream hStream);
typedef CUresult (*PFN_cuMemcpyHtoDAsync_v2)(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
typedef CUresult (*PFN_cuMemsetD8Async)(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
typedef CUresult (*PFN_cuMemcpyDtoDAsync_v2)(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
/* Ref: cuda.h cuStreamWriteValue64_v2 (CUDA 11.7+; CU_STREAM_WRITE_VALUE_DEFAULT = 0: the
 * write is ordered after all prior work of the stream, with a memory barrier before it). */
typedef CUresult (*PFN_cuStreamWriteValue64_v2)(CUstream stream, CUdeviceptr addr, uint64_t value, unsigned int flags);
typedef CUresult (*PFN_cuStreamBatchMemOp_v2)(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
					      unsigned int flags);

typedef CUresult (*PFN_cuEventCreate)(CUevent *phEvent, unsigned int Flags);
typedef CUresult (*PFN_cuEventRecord)(CUevent hEvent, CUstream hStream);
typedef CUresult (*PFN_cuEventSynchronize)(CUevent hEvent);
typedef CUresult (*PFN_cuEventElapsedTime)(float *pMilliseconds, CUevent hStart, CUevent hEnd);
typedef CUresult (*PFN_cuEventDestroy_v2)(CUevent hEvent);

/* Virtual memory management. cuMemExportToShareableHandle writes an int (the
 * fd) for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; cuMemImportFromShareableHandle
 * takes the fd itself cast to a pointer. */
typedef CUresult (*PFN_cuMemAddressReserve)(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
					    unsigned long long flags);
typedef CUresult (*PFN_cuMemAddressFree)(CUdeviceptr ptr, size_t size);
typedef CUresult (*PFN_cuMemCreate)(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
				    unsigned long long flags);
typedef CUresult (*PFN_cuMemRelease)(CUmemGenericAllocationHandle handle);
typedef CUresult (*PFN_cuMemMap)(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
				 unsigned long long flags);
typedef CUresult (*PFN_cuMemUnmap)(CUdeviceptr ptr, size_t size);
typedef CUresult (*PFN_cuMemSetAccess)(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
typedef CUresult (*PFN_cuMemGetAllocationGranularity)(size_t *granularity, const CUmemAllocationProp *prop,
						      CUmemAllocationGranularity_flags option);
typedef CUresult (*PFN_cuMemExportToShareableHandle)(void *shareableHandle, CUmemGenericAllocationHandle handle,
						     CUmemAllocationHandleType handleType, unsigned long long flags);
typedef CUresult (*PFN_cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle *handle, void *osHandle,
						       CUmemAllocationHandleType shHandleType);

typedef CUresult (*PFN_cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);

#endif /* GOSHMEMI_CUDA_DRIVER_H */
