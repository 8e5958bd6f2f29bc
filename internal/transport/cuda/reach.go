package cudatr

import "github.com/goshmem/goshmem/internal/cgo/cuda"

// DeviceAddr is the address kernels (and stream copies) of this GPU use
// for pe's heap: its heap_base in the device state, 0 when the device
// reaches pe through a remote transport or not at all.
func (t *Transport) DeviceAddr(pe int) cuda.DevicePtr { return cuda.DevicePtr(t.img.HeapBase[pe]) }

// DeviceRemote reports whether a remote transport (proxy, IBGDA) carries
// the device's operations to the PEs it cannot load and store.
func (t *Transport) DeviceRemote() bool { return t.img.RemoteTransport != RemoteNone }
