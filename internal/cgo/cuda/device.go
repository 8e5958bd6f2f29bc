package cuda

// #include "shim.h"
import "C"

import (
	"strings"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Device is a device ordinal, 0 .. DeviceCount()-1 (as CUDA_VISIBLE_DEVICES
// numbers them).
type Device int

// DeviceCount returns the number of devices the driver sees (cuDeviceGetCount).
func DeviceCount() (int, error) {
	if err := ready("cuDeviceGetCount"); err != nil {
		return 0, err
	}
	var n C.int
	if err := check(C.goshmemi_cuDeviceGetCount(&n), "cuDeviceGetCount"); err != nil {
		return 0, err
	}
	return int(n), nil
}

// handle returns the driver's CUdevice for d (cuDeviceGet), checking the
// ordinal first.
func (d Device) handle(call string) (C.CUdevice, error) {
	n, err := DeviceCount()
	if err != nil {
		return 0, err
	}
	if int(d) < 0 || int(d) >= n {
		return 0, errors.WithHint(errors.Wrapf(errs.ErrInvalidArgument,
			"cuda: %s: device %d out of range [0, %d)", call, int(d), n),
			"device ordinals count the GPUs the driver sees (see nvidia-smi and CUDA_VISIBLE_DEVICES)")
	}
	var h C.CUdevice
	if err := check(C.goshmemi_cuDeviceGet(&h, C.int(d)), "cuDeviceGet"); err != nil {
		return 0, err
	}
	return h, nil
}

// Name returns the device's marketing name (cuDeviceGetName).
func (d Device) Name() (string, error) {
	h, err := d.handle("cuDeviceGetName")
	if err != nil {
		return "", err
	}
	var buf [256]C.char
	if err := check(C.goshmemi_cuDeviceGetName(&buf[0], C.int(len(buf)), h), "cuDeviceGetName"); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// Attribute returns one device attribute (cuDeviceGetAttribute).
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	h, err := d.handle("cuDeviceGetAttribute")
	if err != nil {
		return 0, err
	}
	var v C.int
	if err := check(C.goshmemi_cuDeviceGetAttribute(&v, C.int(a), h), "cuDeviceGetAttribute"); err != nil {
		return 0, errors.Wrapf(err, "device %d attribute %d", int(d), int(a))
	}
	return int(v), nil
}

// ComputeCapability returns the device's compute capability (9, 0 for H200).
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = d.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// PCIBusID returns the device's PCI address, "0000:18:00.0" style, in lower
// case (cuDeviceGetPCIBusId; sysfs and NVML spell it in lower case too).
func (d Device) PCIBusID() (string, error) {
	h, err := d.handle("cuDeviceGetPCIBusId")
	if err != nil {
		return "", err
	}
	var buf [64]C.char // Ref: cuDeviceGetPCIBusId: 13 characters are enough
	if err := check(C.goshmemi_cuDeviceGetPCIBusId(&buf[0], C.int(len(buf)), h), "cuDeviceGetPCIBusId"); err != nil {
		return "", err
	}
	return strings.ToLower(C.GoString(&buf[0])), nil
}

// TotalMem returns the device's memory in bytes (cuDeviceTotalMem_v2).
func (d Device) TotalMem() (uint64, error) {
	h, err := d.handle("cuDeviceTotalMem")
	if err != nil {
		return 0, err
	}
	var n C.size_t
	if err := check(C.goshmemi_cuDeviceTotalMem(&n, h), "cuDeviceTotalMem_v2"); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// CanAccessPeer reports whether d can map other's memory (NVLink or PCIe
// peer-to-peer; cuDeviceCanAccessPeer). A device is not its own peer.
func (d Device) CanAccessPeer(other Device) (bool, error) {
	h, err := d.handle("cuDeviceCanAccessPeer")
	if err != nil {
		return false, err
	}
	o, err := other.handle("cuDeviceCanAccessPeer")
	if err != nil {
		return false, err
	}
	var v C.int
	if err := check(C.goshmemi_cuDeviceCanAccessPeer(&v, h, o), "cuDeviceCanAccessPeer"); err != nil {
		return false, err
	}
	return v != 0, nil
}
