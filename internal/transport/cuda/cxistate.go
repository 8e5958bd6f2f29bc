package cudatr

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
)

// SetCXIState publishes the device address of this PE's CXI trigger state
// (include/goshmem/cxi.h, goshmemi_cxi_state_t, host-pinned and mapped
// into the GPU) in the device state's cxi_state, in the global struct and
// in every loaded module's constant copy; 0 removes it. Modules loaded
// later get it from the state image. Call it while no kernel runs.
func (t *Transport) SetCXIState(dev uint64) error {
	t.img.CXIState = dev
	v := dev
	if err := t.Ctx.MemcpyHtoD(t.state+offCXIState, unsafe.Pointer(&v), 8); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.consts {
		if err := t.Ctx.MemcpyHtoD(c+cuda.DevicePtr(offCXIState), unsafe.Pointer(&v), 8); err != nil {
			return err
		}
	}
	return nil
}

// MapHost page-locks n bytes of host memory at p (mmap'd or C memory,
// never the Go heap) and maps it into this PE's GPU (cuMemHostRegister
// with PORTABLE|DEVICEMAP), returning its device address. Undo with
// UnmapHost before the memory goes away.
func (t *Transport) MapHost(p unsafe.Pointer, n int) (cuda.DevicePtr, error) {
	if err := t.Ctx.MemHostRegister(p, n, cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap); err != nil {
		return 0, err
	}
	d, err := t.Ctx.MemHostGetDevicePointer(p)
	if err != nil {
		_ = t.Ctx.MemHostUnregister(p)
		return 0, err
	}
	return d, nil
}

// UnmapHost undoes MapHost.
func (t *Transport) UnmapHost(p unsafe.Pointer) error { return t.Ctx.MemHostUnregister(p) }
