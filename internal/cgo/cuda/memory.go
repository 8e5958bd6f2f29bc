package cuda

// #include "shim.h"
import "C"

import (
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// DevicePtr is a device address (CUdeviceptr). It is a number, not a Go
// pointer: the garbage collector never looks at it.
type DevicePtr uint64

// IpcMemHandle is a CUipcMemHandle: 64 opaque bytes another process on the
// same node passes to IpcOpenMemHandle.
type IpcMemHandle [IpcHandleSize]byte

func badSize(call, arg string, n int) error {
	return errors.Wrapf(errs.ErrInvalidArgument, "cuda: %s: %s=%d, want > 0", call, arg, n)
}

// MemAlloc allocates bytes of device memory in c (cuMemAlloc_v2); the
// address is aligned to at least 256 bytes.
func (c *Context) MemAlloc(bytes int) (DevicePtr, error) {
	h, err := c.live("cuMemAlloc")
	if err != nil {
		return 0, err
	}
	if bytes <= 0 {
		return 0, badSize("cuMemAlloc", "bytes", bytes)
	}
	var p C.CUdeviceptr
	if err := check(C.goshmemi_cuMemAlloc(h, &p, C.size_t(bytes)), "cuMemAlloc_v2"); err != nil {
		return 0, errors.Wrapf(err, "%d bytes on device %d", bytes, int(c.dev))
	}
	return DevicePtr(p), nil
}

// MemFree frees memory from MemAlloc (cuMemFree_v2).
func (c *Context) MemFree(p DevicePtr) error {
	h, err := c.live("cuMemFree")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemFree(h, C.CUdeviceptr(p)), "cuMemFree_v2")
}

// MemsetD8 sets n bytes at p to v (cuMemsetD8_v2) and waits for the legacy
// stream it ran on (cuStreamSynchronize(NULL)): on device memory the memset
// alone may return before it is done, and kernels on non-blocking streams
// would not wait for it.
func (c *Context) MemsetD8(p DevicePtr, v byte, n int) error {
	h, err := c.live("cuMemsetD8")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemsetD8", "n", n)
	}
	return check(C.goshmemi_cuMemsetD8(h, C.CUdeviceptr(p), C.uchar(v), C.size_t(n)), "cuMemsetD8_v2")
}

// MemcpyHtoD copies n bytes from host memory src to dst (cuMemcpyHtoD_v2;
// returns when src may be reused). src may be Go memory that holds no Go
// pointers (cgo rules), or C / pinned memory.
func (c *Context) MemcpyHtoD(dst DevicePtr, src unsafe.Pointer, n int) error {
	h, err := c.live("cuMemcpyHtoD")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemcpyHtoD", "n", n)
	}
	return check(C.goshmemi_cuMemcpyHtoD(h, C.CUdeviceptr(dst), src, C.size_t(n)), "cuMemcpyHtoD_v2")
}

// MemcpyDtoH copies n bytes from src to host memory dst (cuMemcpyDtoH_v2;
// synchronous). dst may be Go memory that holds no Go pointers.
func (c *Context) MemcpyDtoH(dst unsafe.Pointer, src DevicePtr, n int) error {
	h, err := c.live("cuMemcpyDtoH")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemcpyDtoH", "n", n)
	}
	return check(C.goshmemi_cuMemcpyDtoH(h, dst, C.CUdeviceptr(src), C.size_t(n)), "cuMemcpyDtoH_v2")
}

// MemcpyDtoD copies n bytes between device addresses (cuMemcpyDtoD_v2;
// asynchronous with respect to the host: use Synchronize before reading).
func (c *Context) MemcpyDtoD(dst, src DevicePtr, n int) error {
	h, err := c.live("cuMemcpyDtoD")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemcpyDtoD", "n", n)
	}
	return check(C.goshmemi_cuMemcpyDtoD(h, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n)), "cuMemcpyDtoD_v2")
}

// MemcpyPeer copies n bytes from src in srcCtx to dst in dstCtx
// (cuMemcpyPeer), issued from c; works without peer access enabled.
func (c *Context) MemcpyPeer(dst DevicePtr, dstCtx *Context, src DevicePtr, srcCtx *Context, n int) error {
	h, err := c.live("cuMemcpyPeer")
	if err != nil {
		return err
	}
	dh, err := dstCtx.live("cuMemcpyPeer")
	if err != nil {
		return err
	}
	sh, err := srcCtx.live("cuMemcpyPeer")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemcpyPeer", "n", n)
	}
	return check(C.goshmemi_cuMemcpyPeer(h, C.CUdeviceptr(dst), dh, C.CUdeviceptr(src), sh, C.size_t(n)), "cuMemcpyPeer")
}

// MemGetInfo returns the free and total device memory of c's device
// (cuMemGetInfo_v2).
func (c *Context) MemGetInfo() (free, total uint64, err error) {
	h, err := c.live("cuMemGetInfo")
	if err != nil {
		return 0, 0, err
	}
	var f, t C.size_t
	if err := check(C.goshmemi_cuMemGetInfo(h, &f, &t), "cuMemGetInfo_v2"); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// MemHostAlloc allocates bytes of page-locked host memory (cuMemHostAlloc)
// with HostAlloc* flags (HostAllocPortable|HostAllocDeviceMap to map it for
// every context). The memory is C memory: free it with MemFreeHost.
func (c *Context) MemHostAlloc(bytes int, flags uint) (unsafe.Pointer, error) {
	h, err := c.live("cuMemHostAlloc")
	if err != nil {
		return nil, err
	}
	if bytes <= 0 {
		return nil, badSize("cuMemHostAlloc", "bytes", bytes)
	}
	var p unsafe.Pointer
	if err := check(C.goshmemi_cuMemHostAlloc(h, &p, C.size_t(bytes), C.uint(flags)), "cuMemHostAlloc"); err != nil {
		return nil, errors.Wrapf(err, "%d bytes, flags %#x", bytes, flags)
	}
	return p, nil
}

// MemFreeHost frees memory from MemHostAlloc (cuMemFreeHost).
func (c *Context) MemFreeHost(p unsafe.Pointer) error {
	h, err := c.live("cuMemFreeHost")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemFreeHost(h, p), "cuMemFreeHost")
}

// MemHostGetDevicePointer returns the device address of mapped host memory
// (from MemHostAlloc with HostAllocDeviceMap, or MemHostRegister with
// HostRegisterDeviceMap) (cuMemHostGetDevicePointer_v2).
func (c *Context) MemHostGetDevicePointer(p unsafe.Pointer) (DevicePtr, error) {
	h, err := c.live("cuMemHostGetDevicePointer")
	if err != nil {
		return 0, err
	}
	var d C.CUdeviceptr
	if err := check(C.goshmemi_cuMemHostGetDevicePointer(h, &d, p), "cuMemHostGetDevicePointer_v2"); err != nil {
		return 0, err
	}
	return DevicePtr(d), nil
}

// MemHostRegister page-locks bytes of existing host memory at p
// (cuMemHostRegister_v2) with HostRegister* flags. p must not be Go heap
// memory (the collector may move or free it; C never keeps Go pointers):
// use mmap'd or C memory, e.g. the symmetric heap.
func (c *Context) MemHostRegister(p unsafe.Pointer, bytes int, flags uint) error {
	h, err := c.live("cuMemHostRegister")
	if err != nil {
		return err
	}
	if bytes <= 0 {
		return badSize("cuMemHostRegister", "bytes", bytes)
	}
	if err := check(C.goshmemi_cuMemHostRegister(h, p, C.size_t(bytes), C.uint(flags)), "cuMemHostRegister_v2"); err != nil {
		return errors.Wrapf(err, "%d bytes, flags %#x", bytes, flags)
	}
	return nil
}

// MemHostUnregister undoes MemHostRegister (cuMemHostUnregister).
func (c *Context) MemHostUnregister(p unsafe.Pointer) error {
	h, err := c.live("cuMemHostUnregister")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemHostUnregister(h, p), "cuMemHostUnregister")
}

// MemGetDmabufFD exports bytes of device memory at p as a dma-buf file
// descriptor (cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD),
// for a NIC to register (ibv_reg_dmabuf_mr). p and bytes must be aligned
// to the host page size; the platform must support dma-buf
// (AttrDMABufSupported). The caller closes the fd.
func (c *Context) MemGetDmabufFD(p DevicePtr, bytes int) (int, error) {
	h, err := c.live("cuMemGetHandleForAddressRange")
	if err != nil {
		return -1, err
	}
	if bytes <= 0 {
		return -1, badSize("cuMemGetHandleForAddressRange", "bytes", bytes)
	}
	fd := C.int(-1)
	if err := check(C.goshmemi_cuMemGetDmabufFD(h, &fd, C.CUdeviceptr(p), C.size_t(bytes)), "cuMemGetHandleForAddressRange"); err != nil {
		return -1, errors.Wrapf(err, "dma-buf of %d bytes at %#x", bytes, uint64(p))
	}
	return int(fd), nil
}

// PointerGetAttribute returns one attribute of the allocation that holds p
// (cuPointerGetAttribute), widened to uint64: a MemoryType for
// PointerAttrMemoryType, 0/1 for the boolean ones, an address or size for
// the others.
func (c *Context) PointerGetAttribute(attr PointerAttribute, p DevicePtr) (uint64, error) {
	h, err := c.live("cuPointerGetAttribute")
	if err != nil {
		return 0, err
	}
	switch attr {
	case PointerAttrContext, PointerAttrMemoryType, PointerAttrDevicePointer, PointerAttrHostPointer,
		PointerAttrSyncMemops, PointerAttrBufferID, PointerAttrIsManaged, PointerAttrDeviceOrdinal,
		PointerAttrIsLegacyCUDAIPCCapable, PointerAttrRangeStartAddr, PointerAttrRangeSize,
		PointerAttrMapped, PointerAttrIsGPUDirectRDMACapable:
	default:
		return 0, errors.Wrapf(errs.ErrInvalidArgument,
			"cuda: cuPointerGetAttribute: attribute %d is not one of the PointerAttr* constants", int(attr))
	}
	var v C.ulonglong
	if err := check(C.goshmemi_cuPointerGetAttribute(h, &v, C.int(attr), C.CUdeviceptr(p)), "cuPointerGetAttribute"); err != nil {
		return 0, errors.Wrapf(err, "attribute %d of %#x", int(attr), uint64(p))
	}
	return uint64(v), nil
}

// IpcGetMemHandle returns the handle that lets another process on this node
// map the allocation holding p (cuIpcGetMemHandle). p should be the start
// of a MemAlloc allocation.
func (c *Context) IpcGetMemHandle(p DevicePtr) (IpcMemHandle, error) {
	var hd IpcMemHandle
	h, err := c.live("cuIpcGetMemHandle")
	if err != nil {
		return hd, err
	}
	if err := check(C.goshmemi_cuIpcGetMemHandle(h, unsafe.Pointer(&hd[0]), C.CUdeviceptr(p)), "cuIpcGetMemHandle"); err != nil {
		return hd, errors.Wrapf(err, "allocation %#x", uint64(p))
	}
	return hd, nil
}

// IpcOpenMemHandle maps another process's allocation into c
// (cuIpcOpenMemHandle_v2); flags is normally IpcMemLazyEnablePeerAccess.
// A handle cannot be opened in the process that made it.
func (c *Context) IpcOpenMemHandle(hd IpcMemHandle, flags uint) (DevicePtr, error) {
	h, err := c.live("cuIpcOpenMemHandle")
	if err != nil {
		return 0, err
	}
	var p C.CUdeviceptr
	if err := check(C.goshmemi_cuIpcOpenMemHandle(h, &p, unsafe.Pointer(&hd[0]), C.uint(flags)), "cuIpcOpenMemHandle_v2"); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// IpcCloseMemHandle unmaps an address from IpcOpenMemHandle (cuIpcCloseMemHandle).
func (c *Context) IpcCloseMemHandle(p DevicePtr) error {
	h, err := c.live("cuIpcCloseMemHandle")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuIpcCloseMemHandle(h, C.CUdeviceptr(p)), "cuIpcCloseMemHandle")
}

// Allocation describes the allocation that holds a device address, as
// AllocationOf reads it.
type Allocation struct {
	Type  MemoryType // MemoryTypeDevice for memory of a GPU
	Start DevicePtr  // first address of the allocation
	Size  uint64     // its bytes
	Mine  bool       // it belongs to context c (or to c's device, for memory without a context)
}

// AllocationOf describes the allocation that holds p (cuPointerGetAttribute:
// memory type, context, range start and size). Memory that the driver does
// not know (plain host memory) fails with the driver's error. Memory mapped
// with the virtual memory management API reports no context; then Mine
// compares the device ordinal.
func (c *Context) AllocationOf(p DevicePtr) (Allocation, error) {
	var a Allocation
	h, err := c.live("cuPointerGetAttribute")
	if err != nil {
		return a, err
	}
	t, err := c.PointerGetAttribute(PointerAttrMemoryType, p)
	if err != nil {
		return a, err
	}
	a.Type = MemoryType(t)
	ctx, err := c.PointerGetAttribute(PointerAttrContext, p)
	if err != nil {
		return a, err
	}
	if ctx != 0 {
		a.Mine = uintptr(ctx) == uintptr(unsafe.Pointer(h))
	} else {
		ord, err := c.PointerGetAttribute(PointerAttrDeviceOrdinal, p)
		if err != nil {
			return a, err
		}
		a.Mine = int(int32(ord)) == int(c.dev)
	}
	start, err := c.PointerGetAttribute(PointerAttrRangeStartAddr, p)
	if err != nil {
		return a, err
	}
	size, err := c.PointerGetAttribute(PointerAttrRangeSize, p)
	if err != nil {
		return a, err
	}
	a.Start, a.Size = DevicePtr(start), size
	return a, nil
}
