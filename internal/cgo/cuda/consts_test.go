package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestConstants checks every constant against the value the CUDA driver API
// reference (cuda.h) gives, typed in independently of driver.h.
func TestConstants(t *testing.T) {
	tests := []struct {
		cudaName string
		got      int
		want     int
	}{
		{"CUDA_SUCCESS", CodeSuccess, 0},
		{"CUDA_ERROR_INVALID_VALUE", CodeInvalidValue, 1},
		{"CUDA_ERROR_OUT_OF_MEMORY", CodeOutOfMemory, 2},
		{"CUDA_ERROR_NOT_INITIALIZED", CodeNotInitialized, 3},
		{"CUDA_ERROR_DEINITIALIZED", CodeDeinitialized, 4},
		{"CUDA_ERROR_STUB_LIBRARY", CodeStubLibrary, 34},
		{"CUDA_ERROR_NO_DEVICE", CodeNoDevice, 100},
		{"CUDA_ERROR_INVALID_DEVICE", CodeInvalidDevice, 101},
		{"CUDA_ERROR_INVALID_IMAGE", CodeInvalidImage, 200},
		{"CUDA_ERROR_INVALID_CONTEXT", CodeInvalidContext, 201},
		{"CUDA_ERROR_NO_BINARY_FOR_GPU", CodeNoBinaryForGPU, 209},
		{"CUDA_ERROR_INVALID_PTX", CodeInvalidPTX, 218},
		{"CUDA_ERROR_FILE_NOT_FOUND", CodeFileNotFound, 301},
		{"CUDA_ERROR_INVALID_HANDLE", CodeInvalidHandle, 400},
		{"CUDA_ERROR_NOT_FOUND", CodeNotFound, 500},
		{"CUDA_ERROR_NOT_READY", CodeNotReady, 600},
		{"CUDA_ERROR_ILLEGAL_ADDRESS", CodeIllegalAddress, 700},
		{"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", CodeLaunchOutOfResources, 701},
		{"CUDA_ERROR_LAUNCH_TIMEOUT", CodeLaunchTimeout, 702},
		{"CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", CodePeerAccessAlreadyEnabled, 704},
		{"CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", CodePeerAccessNotEnabled, 705},
		{"CUDA_ERROR_ASSERT", CodeAssert, 710},
		{"CUDA_ERROR_HARDWARE_STACK_ERROR", CodeHardwareStackError, 714},
		{"CUDA_ERROR_ILLEGAL_INSTRUCTION", CodeIllegalInstruction, 715},
		{"CUDA_ERROR_MISALIGNED_ADDRESS", CodeMisalignedAddress, 716},
		{"CUDA_ERROR_INVALID_ADDRESS_SPACE", CodeInvalidAddressSpace, 717},
		{"CUDA_ERROR_INVALID_PC", CodeInvalidPC, 718},
		{"CUDA_ERROR_LAUNCH_FAILED", CodeLaunchFailed, 719},
		{"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", CodeCooperativeLaunchTooLarge, 720},
		{"CUDA_ERROR_NOT_PERMITTED", CodeNotPermitted, 800},
		{"CUDA_ERROR_NOT_SUPPORTED", CodeNotSupported, 801},
		{"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", CodeSystemDriverMismatch, 803},
		{"CUDA_ERROR_UNKNOWN", CodeUnknown, 999},

		{"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", int(AttrMaxThreadsPerBlock), 1},
		{"CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X", int(AttrMaxBlockDimX), 2},
		{"CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X", int(AttrMaxGridDimX), 5},
		{"CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK", int(AttrMaxSharedMemoryPerBlock), 8},
		{"CU_DEVICE_ATTRIBUTE_WARP_SIZE", int(AttrWarpSize), 10},
		{"CU_DEVICE_ATTRIBUTE_CLOCK_RATE", int(AttrClockRate), 13},
		{"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", int(AttrMultiprocessorCount), 16},
		{"CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY", int(AttrCanMapHostMemory), 19},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_MODE", int(AttrComputeMode), 20},
		{"CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS", int(AttrConcurrentKernels), 31},
		{"CU_DEVICE_ATTRIBUTE_ECC_ENABLED", int(AttrECCEnabled), 32},
		{"CU_DEVICE_ATTRIBUTE_PCI_BUS_ID", int(AttrPCIBusID), 33},
		{"CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID", int(AttrPCIDeviceID), 34},
		{"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR", int(AttrMaxThreadsPerMultiprocessor), 39},
		{"CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING", int(AttrUnifiedAddressing), 41},
		{"CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID", int(AttrPCIDomainID), 50},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", int(AttrComputeCapabilityMajor), 75},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", int(AttrComputeCapabilityMinor), 76},
		{"CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", int(AttrMaxSharedMemoryPerMultiprocessor), 81},
		{"CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY", int(AttrManagedMemory), 83},
		{"CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH", int(AttrCooperativeLaunch), 95},
		{"CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", int(AttrMaxSharedMemoryPerBlockOptin), 97},
		{"CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED", int(AttrHostRegisterSupported), 99},
		{"CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", int(AttrVirtualMemoryManagementSupported), 102},
		{"CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", int(AttrHandleTypePOSIXFDSupported), 103},
		{"CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED", int(AttrGPUDirectRDMASupported), 116},
		{"CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED", int(AttrDMABufSupported), 124},

		{"CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK", int(FuncMaxThreadsPerBlock), 0},
		{"CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", int(FuncLocalSizeBytes), 3},
		{"CU_FUNC_ATTRIBUTE_NUM_REGS", int(FuncNumRegs), 4},

		{"CU_POINTER_ATTRIBUTE_CONTEXT", int(PointerAttrContext), 1},
		{"CU_POINTER_ATTRIBUTE_MEMORY_TYPE", int(PointerAttrMemoryType), 2},
		{"CU_POINTER_ATTRIBUTE_DEVICE_POINTER", int(PointerAttrDevicePointer), 3},
		{"CU_POINTER_ATTRIBUTE_HOST_POINTER", int(PointerAttrHostPointer), 4},
		{"CU_POINTER_ATTRIBUTE_SYNC_MEMOPS", int(PointerAttrSyncMemops), 6},
		{"CU_POINTER_ATTRIBUTE_BUFFER_ID", int(PointerAttrBufferID), 7},
		{"CU_POINTER_ATTRIBUTE_IS_MANAGED", int(PointerAttrIsManaged), 8},
		{"CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL", int(PointerAttrDeviceOrdinal), 9},
		{"CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE", int(PointerAttrIsLegacyCUDAIPCCapable), 10},
		{"CU_POINTER_ATTRIBUTE_RANGE_START_ADDR", int(PointerAttrRangeStartAddr), 11},
		{"CU_POINTER_ATTRIBUTE_RANGE_SIZE", int(PointerAttrRangeSize), 12},
		{"CU_POINTER_ATTRIBUTE_MAPPED", int(PointerAttrMapped), 13},
		{"CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE", int(PointerAttrIsGPUDirectRDMACapable), 15},

		{"CU_MEMORYTYPE_HOST", int(MemoryTypeHost), 1},
		{"CU_MEMORYTYPE_DEVICE", int(MemoryTypeDevice), 2},
		{"CU_MEMORYTYPE_ARRAY", int(MemoryTypeArray), 3},
		{"CU_MEMORYTYPE_UNIFIED", int(MemoryTypeUnified), 4},

		{"CU_MEMHOSTALLOC_PORTABLE", HostAllocPortable, 1},
		{"CU_MEMHOSTALLOC_DEVICEMAP", HostAllocDeviceMap, 2},
		{"CU_MEMHOSTALLOC_WRITECOMBINED", HostAllocWriteCombined, 4},
		{"CU_MEMHOSTREGISTER_PORTABLE", HostRegisterPortable, 1},
		{"CU_MEMHOSTREGISTER_DEVICEMAP", HostRegisterDeviceMap, 2},
		{"CU_MEMHOSTREGISTER_IOMEMORY", HostRegisterIOMemory, 4},
		{"CU_MEMHOSTREGISTER_READ_ONLY", HostRegisterReadOnly, 8},
		{"CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS", IpcMemLazyEnablePeerAccess, 1},
		{"CU_IPC_HANDLE_SIZE", IpcHandleSize, 64},
		{"CU_STREAM_DEFAULT", StreamDefault, 0},
		{"CU_STREAM_NON_BLOCKING", StreamNonBlocking, 1},
		{"CU_EVENT_DEFAULT", EventDefault, 0},
		{"CU_EVENT_BLOCKING_SYNC", EventBlockingSync, 1},
		{"CU_EVENT_DISABLE_TIMING", EventDisableTiming, 2},
		{"CU_EVENT_INTERPROCESS", EventInterprocess, 4},
		{"CU_STREAM_MEM_OP_WAIT_VALUE_64", MemOpWait64, 4},
		{"CU_STREAM_MEM_OP_WRITE_VALUE_64", MemOpWrite64, 5},
		{"CU_STREAM_WAIT_VALUE_GEQ", WaitGEQ, 0},
		{"CU_STREAM_WAIT_VALUE_EQ", WaitEQ, 1},
		{"CU_STREAM_WAIT_VALUE_AND", WaitAND, 2},
		{"CU_STREAM_WAIT_VALUE_NOR", WaitNOR, 3},
		{"CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER", WriteValueNoMemoryBarrier, 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, tt.cudaName)
	}
}

// TestCodeNames: every Code* constant has its cuda.h name for errors made
// without the driver.
func TestCodeNames(t *testing.T) {
	assert.Len(t, codeNames, 33)
	assert.Equal(t, "CUDA_ERROR_ILLEGAL_ADDRESS", codeNames[700])
	assert.Equal(t, "CUDA_ERROR_NO_DEVICE", codeNames[100])
	e := newError(CodeLaunchFailed, "cuCtxSynchronize")
	assert.Equal(t, "CUDA_ERROR_LAUNCH_FAILED", e.Name)
	assert.Equal(t, "cuCtxSynchronize", e.Call)
	assert.Equal(t, "CUresult(12345)", newError(12345, "cuX").Name)
}

func TestStickyCodes(t *testing.T) {
	for code := range codeNames {
		want := false
		switch code {
		case 700, 702, 710, 714, 715, 716, 717, 718, 719:
			want = true
		}
		err := error(newError(code, "cuStreamSynchronize"))
		assert.Equal(t, want, IsStickyFault(err), codeNames[code])
	}
	assert.False(t, IsStickyFault(nil))
	assert.False(t, IsStickyFault(ErrNoDriver))
}
