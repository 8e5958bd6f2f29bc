package cuda

// #include "shim.h"
import "C"

// The driver's constants, taken from driver.h (whose values are the
// driver's, with their cuda.h names). consts_test.go checks each value
// against the number the driver API reference gives.

// CUresult codes, as Error.Code.
// Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum cudaError_enum
const (
	CodeSuccess                   = C.CUDA_SUCCESS                            // CUDA_SUCCESS
	CodeInvalidValue              = C.CUDA_ERROR_INVALID_VALUE                // CUDA_ERROR_INVALID_VALUE
	CodeOutOfMemory               = C.CUDA_ERROR_OUT_OF_MEMORY                // CUDA_ERROR_OUT_OF_MEMORY
	CodeNotInitialized            = C.CUDA_ERROR_NOT_INITIALIZED              // CUDA_ERROR_NOT_INITIALIZED
	CodeDeinitialized             = C.CUDA_ERROR_DEINITIALIZED                // CUDA_ERROR_DEINITIALIZED
	CodeStubLibrary               = C.CUDA_ERROR_STUB_LIBRARY                 // CUDA_ERROR_STUB_LIBRARY
	CodeNoDevice                  = C.CUDA_ERROR_NO_DEVICE                    // CUDA_ERROR_NO_DEVICE
	CodeInvalidDevice             = C.CUDA_ERROR_INVALID_DEVICE               // CUDA_ERROR_INVALID_DEVICE
	CodeInvalidImage              = C.CUDA_ERROR_INVALID_IMAGE                // CUDA_ERROR_INVALID_IMAGE
	CodeInvalidContext            = C.CUDA_ERROR_INVALID_CONTEXT              // CUDA_ERROR_INVALID_CONTEXT
	CodeNoBinaryForGPU            = C.CUDA_ERROR_NO_BINARY_FOR_GPU            // CUDA_ERROR_NO_BINARY_FOR_GPU
	CodeInvalidPTX                = C.CUDA_ERROR_INVALID_PTX                  // CUDA_ERROR_INVALID_PTX
	CodeFileNotFound              = C.CUDA_ERROR_FILE_NOT_FOUND               // CUDA_ERROR_FILE_NOT_FOUND
	CodeInvalidHandle             = C.CUDA_ERROR_INVALID_HANDLE               // CUDA_ERROR_INVALID_HANDLE
	CodeNotFound                  = C.CUDA_ERROR_NOT_FOUND                    // CUDA_ERROR_NOT_FOUND
	CodeNotReady                  = C.CUDA_ERROR_NOT_READY                    // CUDA_ERROR_NOT_READY
	CodeIllegalAddress            = C.CUDA_ERROR_ILLEGAL_ADDRESS              // CUDA_ERROR_ILLEGAL_ADDRESS
	CodeLaunchOutOfResources      = C.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES      // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
	CodeLaunchTimeout             = C.CUDA_ERROR_LAUNCH_TIMEOUT               // CUDA_ERROR_LAUNCH_TIMEOUT
	CodePeerAccessAlreadyEnabled  = C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED  // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
	CodePeerAccessNotEnabled      = C.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED      // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
	CodeAssert                    = C.CUDA_ERROR_ASSERT                       // CUDA_ERROR_ASSERT
	CodeHardwareStackError        = C.CUDA_ERROR_HARDWARE_STACK_ERROR         // CUDA_ERROR_HARDWARE_STACK_ERROR
	CodeIllegalInstruction        = C.CUDA_ERROR_ILLEGAL_INSTRUCTION          // CUDA_ERROR_ILLEGAL_INSTRUCTION
	CodeMisalignedAddress         = C.CUDA_ERROR_MISALIGNED_ADDRESS           // CUDA_ERROR_MISALIGNED_ADDRESS
	CodeInvalidAddressSpace       = C.CUDA_ERROR_INVALID_ADDRESS_SPACE        // CUDA_ERROR_INVALID_ADDRESS_SPACE
	CodeInvalidPC                 = C.CUDA_ERROR_INVALID_PC                   // CUDA_ERROR_INVALID_PC
	CodeLaunchFailed              = C.CUDA_ERROR_LAUNCH_FAILED                // CUDA_ERROR_LAUNCH_FAILED
	CodeCooperativeLaunchTooLarge = C.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
	CodeNotPermitted              = C.CUDA_ERROR_NOT_PERMITTED                // CUDA_ERROR_NOT_PERMITTED
	CodeNotSupported              = C.CUDA_ERROR_NOT_SUPPORTED                // CUDA_ERROR_NOT_SUPPORTED
	CodeSystemDriverMismatch      = C.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH       // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
	CodeUnknown                   = C.CUDA_ERROR_UNKNOWN                      // CUDA_ERROR_UNKNOWN
)

// codeNames gives the cuda.h name of every code above, for errors made when
// cuGetErrorName cannot answer (driver not loaded, or an unknown code).
var codeNames = map[int]string{
	CodeSuccess:                   "CUDA_SUCCESS",
	CodeInvalidValue:              "CUDA_ERROR_INVALID_VALUE",
	CodeOutOfMemory:               "CUDA_ERROR_OUT_OF_MEMORY",
	CodeNotInitialized:            "CUDA_ERROR_NOT_INITIALIZED",
	CodeDeinitialized:             "CUDA_ERROR_DEINITIALIZED",
	CodeStubLibrary:               "CUDA_ERROR_STUB_LIBRARY",
	CodeNoDevice:                  "CUDA_ERROR_NO_DEVICE",
	CodeInvalidDevice:             "CUDA_ERROR_INVALID_DEVICE",
	CodeInvalidImage:              "CUDA_ERROR_INVALID_IMAGE",
	CodeInvalidContext:            "CUDA_ERROR_INVALID_CONTEXT",
	CodeNoBinaryForGPU:            "CUDA_ERROR_NO_BINARY_FOR_GPU",
	CodeInvalidPTX:                "CUDA_ERROR_INVALID_PTX",
	CodeFileNotFound:              "CUDA_ERROR_FILE_NOT_FOUND",
	CodeInvalidHandle:             "CUDA_ERROR_INVALID_HANDLE",
	CodeNotFound:                  "CUDA_ERROR_NOT_FOUND",
	CodeNotReady:                  "CUDA_ERROR_NOT_READY",
	CodeIllegalAddress:            "CUDA_ERROR_ILLEGAL_ADDRESS",
	CodeLaunchOutOfResources:      "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	CodeLaunchTimeout:             "CUDA_ERROR_LAUNCH_TIMEOUT",
	CodePeerAccessAlreadyEnabled:  "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	CodePeerAccessNotEnabled:      "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	CodeAssert:                    "CUDA_ERROR_ASSERT",
	CodeHardwareStackError:        "CUDA_ERROR_HARDWARE_STACK_ERROR",
	CodeIllegalInstruction:        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	CodeMisalignedAddress:         "CUDA_ERROR_MISALIGNED_ADDRESS",
	CodeInvalidAddressSpace:       "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	CodeInvalidPC:                 "CUDA_ERROR_INVALID_PC",
	CodeLaunchFailed:              "CUDA_ERROR_LAUNCH_FAILED",
	CodeCooperativeLaunchTooLarge: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	CodeNotPermitted:              "CUDA_ERROR_NOT_PERMITTED",
	CodeNotSupported:              "CUDA_ERROR_NOT_SUPPORTED",
	CodeSystemDriverMismatch:      "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	CodeUnknown:                   "CUDA_ERROR_UNKNOWN",
}

// DeviceAttribute is a CUdevice_attribute, for Device.Attribute.
type DeviceAttribute int

// Device attributes (a subset).
// Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum CUdevice_attribute_enum
const (
	AttrMaxThreadsPerBlock               DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK                       // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrMaxBlockDimX                     DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X                             // CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
	AttrMaxGridDimX                      DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X                              // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
	AttrMaxSharedMemoryPerBlock          DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK                 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
	AttrWarpSize                         DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_WARP_SIZE                                   // CU_DEVICE_ATTRIBUTE_WARP_SIZE
	AttrClockRate                        DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_CLOCK_RATE                                  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)
	AttrMultiprocessorCount              DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT                        // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrCanMapHostMemory                 DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY                         // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
	AttrComputeMode                      DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE                                // CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
	AttrConcurrentKernels                DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS                          // CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS
	AttrECCEnabled                       DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_ECC_ENABLED                                 // CU_DEVICE_ATTRIBUTE_ECC_ENABLED
	AttrPCIBusID                         DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID                                  // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
	AttrPCIDeviceID                      DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID                               // CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
	AttrMaxThreadsPerMultiprocessor      DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR              // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
	AttrUnifiedAddressing                DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING                          // CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
	AttrPCIDomainID                      DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID                               // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
	AttrComputeCapabilityMajor           DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR                    // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor           DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR                    // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrMaxSharedMemoryPerMultiprocessor DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR        // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
	AttrManagedMemory                    DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY                              // CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
	AttrCooperativeLaunch                DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH                          // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
	AttrMaxSharedMemoryPerBlockOptin     DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN           // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	AttrHostRegisterSupported            DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED                     // CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED
	AttrVirtualMemoryManagementSupported DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED         // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
	AttrHandleTypePOSIXFDSupported       DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
	AttrGPUDirectRDMASupported           DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED                   // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
	AttrDMABufSupported                  DeviceAttribute = C.CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED                           // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
)

// FuncAttribute is a CUfunction_attribute, for Function.Attribute.
// Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum CUfunction_attribute_enum
type FuncAttribute int

// Function attributes (a subset).
const (
	FuncMaxThreadsPerBlock FuncAttribute = C.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the largest block this kernel launches with (registers, launch bounds)
	FuncLocalSizeBytes     FuncAttribute = C.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES      // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: local memory per thread (spills, stack arrays)
	FuncNumRegs            FuncAttribute = C.CU_FUNC_ATTRIBUTE_NUM_REGS              // CU_FUNC_ATTRIBUTE_NUM_REGS: registers per thread
)

// PointerAttribute is a CUpointer_attribute, for Context.PointerGetAttribute.
// Only these are accepted (each fits in 8 bytes).
type PointerAttribute int

// Pointer attributes (a subset).
// Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html enum CUpointer_attribute_enum
const (
	PointerAttrContext                PointerAttribute = C.CU_POINTER_ATTRIBUTE_CONTEXT                    // CU_POINTER_ATTRIBUTE_CONTEXT
	PointerAttrMemoryType             PointerAttribute = C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE                // CU_POINTER_ATTRIBUTE_MEMORY_TYPE (a MemoryType)
	PointerAttrDevicePointer          PointerAttribute = C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER             // CU_POINTER_ATTRIBUTE_DEVICE_POINTER
	PointerAttrHostPointer            PointerAttribute = C.CU_POINTER_ATTRIBUTE_HOST_POINTER               // CU_POINTER_ATTRIBUTE_HOST_POINTER
	PointerAttrSyncMemops             PointerAttribute = C.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS                // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
	PointerAttrBufferID               PointerAttribute = C.CU_POINTER_ATTRIBUTE_BUFFER_ID                  // CU_POINTER_ATTRIBUTE_BUFFER_ID
	PointerAttrIsManaged              PointerAttribute = C.CU_POINTER_ATTRIBUTE_IS_MANAGED                 // CU_POINTER_ATTRIBUTE_IS_MANAGED
	PointerAttrDeviceOrdinal          PointerAttribute = C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL             // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
	PointerAttrIsLegacyCUDAIPCCapable PointerAttribute = C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE // CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE
	PointerAttrRangeStartAddr         PointerAttribute = C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR           // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
	PointerAttrRangeSize              PointerAttribute = C.CU_POINTER_ATTRIBUTE_RANGE_SIZE                 // CU_POINTER_ATTRIBUTE_RANGE_SIZE
	PointerAttrMapped                 PointerAttribute = C.CU_POINTER_ATTRIBUTE_MAPPED                     // CU_POINTER_ATTRIBUTE_MAPPED
	PointerAttrIsGPUDirectRDMACapable PointerAttribute = C.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE // CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE
)

// MemoryType is a CUmemorytype, the value of PointerAttrMemoryType.
type MemoryType int

// Ref: cuda.h enum CUmemorytype_enum
const (
	MemoryTypeHost    MemoryType = C.CU_MEMORYTYPE_HOST    // CU_MEMORYTYPE_HOST
	MemoryTypeDevice  MemoryType = C.CU_MEMORYTYPE_DEVICE  // CU_MEMORYTYPE_DEVICE
	MemoryTypeArray   MemoryType = C.CU_MEMORYTYPE_ARRAY   // CU_MEMORYTYPE_ARRAY
	MemoryTypeUnified MemoryType = C.CU_MEMORYTYPE_UNIFIED // CU_MEMORYTYPE_UNIFIED
)

// Flags of Context.MemHostAlloc. Ref: cuMemHostAlloc, CU_MEMHOSTALLOC_*.
const (
	HostAllocPortable      = C.CU_MEMHOSTALLOC_PORTABLE      // CU_MEMHOSTALLOC_PORTABLE
	HostAllocDeviceMap     = C.CU_MEMHOSTALLOC_DEVICEMAP     // CU_MEMHOSTALLOC_DEVICEMAP
	HostAllocWriteCombined = C.CU_MEMHOSTALLOC_WRITECOMBINED // CU_MEMHOSTALLOC_WRITECOMBINED
)

// Flags of Context.MemHostRegister. Ref: cuMemHostRegister, CU_MEMHOSTREGISTER_*.
const (
	HostRegisterPortable  = C.CU_MEMHOSTREGISTER_PORTABLE  // CU_MEMHOSTREGISTER_PORTABLE
	HostRegisterDeviceMap = C.CU_MEMHOSTREGISTER_DEVICEMAP // CU_MEMHOSTREGISTER_DEVICEMAP
	HostRegisterIOMemory  = C.CU_MEMHOSTREGISTER_IOMEMORY  // CU_MEMHOSTREGISTER_IOMEMORY
	HostRegisterReadOnly  = C.CU_MEMHOSTREGISTER_READ_ONLY // CU_MEMHOSTREGISTER_READ_ONLY
)

// Flag of Context.IpcOpenMemHandle. Ref: cuIpcOpenMemHandle, CUipcMem_flags.
const IpcMemLazyEnablePeerAccess = C.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS

// IpcHandleSize is the size of a CUipcMemHandle. Ref: cuda.h CU_IPC_HANDLE_SIZE.
const IpcHandleSize = C.CU_IPC_HANDLE_SIZE // CU_IPC_HANDLE_SIZE

// Flags of Context.StreamCreate. Ref: cuStreamCreate, CUstream_flags.
const (
	StreamDefault     = C.CU_STREAM_DEFAULT      // CU_STREAM_DEFAULT
	StreamNonBlocking = C.CU_STREAM_NON_BLOCKING // CU_STREAM_NON_BLOCKING
)

// Flags of Context.EventCreate. Ref: cuEventCreate, CUevent_flags.
const (
	EventDefault       = C.CU_EVENT_DEFAULT        // CU_EVENT_DEFAULT
	EventBlockingSync  = C.CU_EVENT_BLOCKING_SYNC  // CU_EVENT_BLOCKING_SYNC
	EventDisableTiming = C.CU_EVENT_DISABLE_TIMING // CU_EVENT_DISABLE_TIMING
	EventInterprocess  = C.CU_EVENT_INTERPROCESS   // CU_EVENT_INTERPROCESS
)

// MaxParamBytes is the most kernel-parameter bytes one launch takes
// (32764 for Volta and newer since CUDA 12.1; older drivers allow 4096 and
// fail the launch with CUDA_ERROR_INVALID_VALUE above that).
// Ref: CUDA C++ Programming Guide, "Function Parameters".
const MaxParamBytes = 32764

// MaxParams is the most kernel parameters one launch takes (shim.c's array).
const MaxParams = C.GOSHMEMI_MAX_PARAMS
