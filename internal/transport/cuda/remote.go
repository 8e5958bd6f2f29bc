package cudatr

import (
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
)

// What the proxy's CUDA backend (internal/transport/proxy) needs from the
// GPU heap: peer addresses, the host-atomics kernels on its own stream, and
// the device state's remote-transport fields.

// PeerAddr is the device address of pe's heap in this context (0 when pe's
// heap is not mapped here, e.g. on another node).
func (t *Transport) PeerAddr(pe int) cuda.DevicePtr { return t.peers[pe] }

// AtomicAsync queues the one-thread atomic kernel for op on the width-byte
// word at addr on stream s; the old value goes to out (a device or mapped
// host address; required).
func (t *Transport) AtomicAsync(s cuda.Stream, op transport.AMO, width int, addr cuda.DevicePtr, v, cmp uint64, out cuda.DevicePtr) error {
	if width != 4 && width != 8 {
		return errs.New(errs.ErrNotSupported, t.me, "proxy atomic", "%d-byte atomic on a GPU array; 4 or 8 bytes", width)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureAMO(); err != nil {
		return err
	}
	w := 0
	if width == 8 {
		w = 1
	}
	var args cuda.Args
	args.Ptr(addr).U64(v).U64(cmp).Ptr(out)
	one := [3]uint32{1, 1, 1}
	return t.amoFn[w][op].Launch(one, one, 0, s, &args)
}

// ConfigureRemote routes the PEs with remote[pe] through the remote
// transport kind (RemoteProxy, RemoteIBGDA) whose device state is at
// stateAddr: their heap_base becomes 0 in the device state (this PE's own
// stays), and device ordering uses system scope (a host agent reads and
// writes the heap). Call before modules are loaded (their constant copies
// are filled from this image).
func (t *Transport) ConfigureRemote(remote []bool, kind uint32, stateAddr uint64) error {
	for pe, r := range remote {
		if r && pe != t.me {
			t.img.HeapBase[pe] = 0
		}
	}
	t.img.RemoteTransport = kind
	switch kind {
	case RemoteProxy:
		t.img.ProxyState = stateAddr
	case RemoteIBGDA:
		t.img.IBGDAState = stateAddr
	}
	t.img.AllPeersSameDevice = false
	return t.syncState()
}

// RemotePEs lists the PEs the device reaches through the remote transport.
func (t *Transport) RemotePEs() []int {
	var out []int
	for pe, b := range t.img.HeapBase[:t.npes] {
		if b == 0 {
			out = append(out, pe)
		}
	}
	return out
}
