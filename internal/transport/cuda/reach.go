package cudatr

import "github.com/goshmem/goshmem/internal/cgo/cuda"

// DeviceAddr is the address kernels (and stream copies) of this GPU use
// for pe's heap: its heap_base in the device state, 0 when the device
// reaches pe through a remote transport or not at all.
func (t *Transport) DeviceAddr(pe int) cuda.DevicePtr { return cuda.DevicePtr(t.img.HeapBase[pe]) }

// DeviceRemote reports whether a remote transport (proxy, IBGDA) carries
// the device's operations to the PEs it cannot load and store.
func (t *Transport) DeviceRemote() bool { return t.img.RemoteTransport != RemoteNone }

// HeapView is the address range of pe's heap in this process that the
// heap owns: from its base (PeerAddr) the reservation with CUDA VMM (the
// usable heap, chunks prepared ahead of need and room to grow), else the
// fixed heap's size; n = 0 when pe's heap is not mapped here. Nothing
// else may be placed there (RegisterDevice refuses it). The range is set
// at Init and stays until Close.
func (t *Transport) HeapView(pe int) (base cuda.DevicePtr, n uint64) {
	if pe < 0 || pe >= len(t.peers) || t.peers[pe] == 0 {
		return 0, 0
	}
	if t.vmm.on && t.vmm.reserved[pe] != 0 {
		return t.peers[pe], t.vmm.reserved[pe]
	}
	return t.peers[pe], t.size
}
