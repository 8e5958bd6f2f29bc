package cuda

// #include "shim.h"
import "C"

import (
	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// The virtual memory management calls (cuMemAddressReserve, cuMemCreate,
// cuMemMap ...): address space reserved once, physical memory created and
// mapped into it in chunks, and each chunk shared with other processes as a
// POSIX file descriptor. Every allocation is pinned memory on the context's
// device that exports as a file descriptor
// (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).
// Ref: CUDA driver API, group__CUDA__VA (cuda.h of CUDA 12.x).

// MemHandle is a CUmemGenericAllocationHandle: physical memory from
// MemCreate or MemImportFD.
type MemHandle uint64

// VMMSupported reports whether the driver exports the VMM calls and the
// context's device supports them with POSIX file descriptor handles
// (AttrVirtualMemoryManagementSupported, AttrHandleTypePOSIXFDSupported).
// A device that does not answer an attribute does not support it.
func (c *Context) VMMSupported() bool {
	if !loaded.Load() || C.goshmemi_vmm_loaded() == 0 {
		return false
	}
	for _, a := range []DeviceAttribute{AttrVirtualMemoryManagementSupported, AttrHandleTypePOSIXFDSupported} {
		if v, err := c.dev.Attribute(a); err != nil || v == 0 {
			return false
		}
	}
	return true
}

// MemGranularity is the minimum granularity of MemCreate's sizes and
// MemMap's addresses on the context's device
// (cuMemGetAllocationGranularity, CU_MEM_ALLOC_GRANULARITY_MINIMUM).
func (c *Context) MemGranularity() (uint64, error) {
	h, err := c.live("cuMemGetAllocationGranularity")
	if err != nil {
		return 0, err
	}
	var g C.size_t
	if err := check(C.goshmemi_cuMemGetAllocationGranularity(h, &g, C.int(c.dev)), "cuMemGetAllocationGranularity"); err != nil {
		return 0, err
	}
	return uint64(g), nil
}

// MemAddressReserve reserves size bytes of device address space aligned to
// align (cuMemAddressReserve; size a multiple of the granularity).
func (c *Context) MemAddressReserve(size, align uint64) (DevicePtr, error) {
	h, err := c.live("cuMemAddressReserve")
	if err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, badSize("cuMemAddressReserve", "size", 0)
	}
	var p C.CUdeviceptr
	if err := check(C.goshmemi_cuMemAddressReserve(h, &p, C.size_t(size), C.size_t(align)), "cuMemAddressReserve"); err != nil {
		return 0, errors.Wrapf(err, "%d bytes of address space on device %d", size, int(c.dev))
	}
	return DevicePtr(p), nil
}

// MemAddressFree returns a reservation (cuMemAddressFree); nothing may be
// mapped in it.
func (c *Context) MemAddressFree(p DevicePtr, size uint64) error {
	h, err := c.live("cuMemAddressFree")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemAddressFree(h, C.CUdeviceptr(p), C.size_t(size)), "cuMemAddressFree")
}

// MemCreate creates size bytes of physical memory on the context's device
// that exports as a file descriptor (cuMemCreate; size a multiple of the
// granularity). Its content is undefined.
func (c *Context) MemCreate(size uint64) (MemHandle, error) {
	h, err := c.live("cuMemCreate")
	if err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, badSize("cuMemCreate", "size", 0)
	}
	var m C.CUmemGenericAllocationHandle
	if err := check(C.goshmemi_cuMemCreate(h, &m, C.size_t(size), C.int(c.dev)), "cuMemCreate"); err != nil {
		return 0, errors.Wrapf(err, "%d bytes on device %d", size, int(c.dev))
	}
	return MemHandle(m), nil
}

// MemRelease releases a handle (cuMemRelease); the memory is freed when no
// mapping uses it any more.
func (c *Context) MemRelease(m MemHandle) error {
	h, err := c.live("cuMemRelease")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemRelease(h, C.CUmemGenericAllocationHandle(m)), "cuMemRelease")
}

// MemMap maps all size bytes of m at p, inside a reservation (cuMemMap,
// offset 0). The range is not accessible until MemSetAccess.
func (c *Context) MemMap(p DevicePtr, size uint64, m MemHandle) error {
	h, err := c.live("cuMemMap")
	if err != nil {
		return err
	}
	if err := check(C.goshmemi_cuMemMap(h, C.CUdeviceptr(p), C.size_t(size), C.CUmemGenericAllocationHandle(m)), "cuMemMap"); err != nil {
		return errors.Wrapf(err, "%d bytes at %#x", size, uint64(p))
	}
	return nil
}

// MemUnmap unmaps [p, p+size) (cuMemUnmap); the reservation stays.
func (c *Context) MemUnmap(p DevicePtr, size uint64) error {
	h, err := c.live("cuMemUnmap")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemUnmap(h, C.CUdeviceptr(p), C.size_t(size)), "cuMemUnmap")
}

// MemSetAccess makes the mapped range [p, p+size) readable and writable by
// the context's device (cuMemSetAccess, CU_MEM_ACCESS_FLAGS_PROT_READWRITE).
func (c *Context) MemSetAccess(p DevicePtr, size uint64) error {
	h, err := c.live("cuMemSetAccess")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuMemSetAccess(h, C.CUdeviceptr(p), C.size_t(size), C.int(c.dev)), "cuMemSetAccess")
}

// MemExportFD returns a new file descriptor for m
// (cuMemExportToShareableHandle); the caller closes it. Another process
// that obtains the descriptor (pidfd_getfd(2), SCM_RIGHTS) imports the
// memory with MemImportFD.
func (c *Context) MemExportFD(m MemHandle) (int, error) {
	h, err := c.live("cuMemExportToShareableHandle")
	if err != nil {
		return -1, err
	}
	var fd C.int
	if err := check(C.goshmemi_cuMemExportFD(h, &fd, C.CUmemGenericAllocationHandle(m)), "cuMemExportToShareableHandle"); err != nil {
		return -1, err
	}
	return int(fd), nil
}

// MemImportFD returns a handle for the memory fd refers to
// (cuMemImportFromShareableHandle). fd stays the caller's to close.
func (c *Context) MemImportFD(fd int) (MemHandle, error) {
	h, err := c.live("cuMemImportFromShareableHandle")
	if err != nil {
		return 0, err
	}
	if fd < 0 {
		return 0, errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuMemImportFromShareableHandle: fd=%d, want >= 0", fd)
	}
	var m C.CUmemGenericAllocationHandle
	if err := check(C.goshmemi_cuMemImportFD(h, &m, C.int(fd)), "cuMemImportFromShareableHandle"); err != nil {
		return 0, err
	}
	return MemHandle(m), nil
}
