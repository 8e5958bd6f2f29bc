package proxy

import (
	"sync"
	"sync/atomic"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
)

// HostMemory is Memory in plain host memory (anonymous mappings, never the
// Go heap, so C may hold the addresses): device address = host address.
// It serves the host-mode device API (tests, CPU "GPU threads").
type HostMemory struct {
	mu   sync.Mutex
	maps [][]byte
}

// Pinned implements Memory.
func (m *HostMemory) Pinned(n int) (Ptr, error) { return m.alloc(n) }

// Device implements Memory.
func (m *HostMemory) Device(n int) (Ptr, error) { return m.alloc(n) }

func (m *HostMemory) alloc(n int) (Ptr, error) {
	b, err := unix.Mmap(-1, 0, (n+4095)&^4095, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return Ptr{}, errors.Wrapf(err, "proxy: mmap of %d bytes", n)
	}
	m.mu.Lock()
	m.maps = append(m.maps, b)
	m.mu.Unlock()
	p := unsafe.Pointer(unsafe.SliceData(b))
	return Ptr{Host: p, Dev: uint64(uintptr(p))}, nil
}

// Write implements Memory (dev must be an address this HostMemory returned).
func (m *HostMemory) Write(dev uint64, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mp := range m.maps {
		base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mp))))
		if dev >= base && dev+uint64(len(b)) <= base+uint64(len(mp)) {
			copy(mp[dev-base:], b)
			return nil
		}
	}
	return errors.Newf("proxy: HostMemory.Write: %#x (+%d bytes) is not memory of this HostMemory", dev, len(b))
}

// Close implements Memory.
func (m *HostMemory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errList []error
	for _, b := range m.maps {
		errList = append(errList, unix.Munmap(b))
	}
	m.maps = nil
	return errors.Join(errList...)
}

// HostBackend submits requests through a host transport (shm, ofi) on the
// host heap: the proxy path for heaps in host memory, and how the worker is
// tested without a GPU. Operations complete before they return, so
// WriteWord is a plain release store.
type HostBackend struct {
	Tr    transport.Transport
	Local unsafe.Pointer // this PE's heap base (source of Put, destination of Get)
	Q     *quiet.Queue
}

func (h *HostBackend) local(off uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(h.Local, off)), n)
}

// Name implements Backend.
func (h *HostBackend) Name() string { return h.Tr.Name() }

// Put implements Backend.
func (h *HostBackend) Put(pe int, dst, src uint64, n int) error {
	return h.Tr.Put(h.Q, pe, dst, h.local(src, n))
}

// PutAddr implements Backend: src is a host address.
func (h *HostBackend) PutAddr(pe int, dst, src uint64, n int) error {
	return h.Tr.Put(h.Q, pe, dst, hostBytes(src, n))
}

// GetAddr implements Backend: dst is a host address.
func (h *HostBackend) GetAddr(pe int, src, dst uint64, n int) error {
	return h.Tr.Get(h.Q, hostBytes(dst, n), pe, src)
}

// hostBytes is the n bytes at host address a: a registered buffer in
// host mode, memory outside the Go heap that its owner keeps mapped while
// it is registered.
func hostBytes(a uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(a))), n)
}

// PutInline implements Backend.
func (h *HostBackend) PutInline(pe int, dst uint64, data Ptr, n int) error {
	return h.Tr.Put(h.Q, pe, dst, unsafe.Slice((*byte)(data.Host), n))
}

// Get implements Backend.
func (h *HostBackend) Get(pe int, src, dst uint64, n int) error {
	return h.Tr.Get(h.Q, h.local(dst, n), pe, src)
}

// GetReply implements Backend.
func (h *HostBackend) GetReply(pe int, src uint64, n int, out Ptr) error {
	var b [8]byte
	if err := h.Tr.Get(h.Q, b[:n], pe, src); err != nil {
		return err
	}
	atomic.StoreUint64((*uint64)(out.Host), leU64(b[:]))
	return nil
}

// Atomic implements Backend.
func (h *HostBackend) Atomic(pe int, off uint64, op transport.AMO, width int, v, cmp uint64, out Ptr) error {
	old, err := h.Tr.Atomic(h.Q, op, width, pe, off, v, cmp)
	if err != nil {
		return err
	}
	if out.Host != nil {
		atomic.StoreUint64((*uint64)(out.Host), old)
	}
	return nil
}

// WriteWord implements Backend.
func (h *HostBackend) WriteWord(p Ptr, v uint64) error {
	atomic.StoreUint64((*uint64)(p.Host), v)
	return nil
}

// Flush implements Backend.
func (h *HostBackend) Flush() error { return nil }

// Close implements Backend.
func (h *HostBackend) Close() error { return nil }

func leU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
