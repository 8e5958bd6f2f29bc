// Package shm is the intra-node host transport: every PE of a node maps
// every other PE's symmetric region (POSIX shared memory), so a put is a
// memmove into the peer's mapping, a get a memmove out of it, and an atomic
// a locked instruction on the shared word.
//
// Completion and ordering (Ref: OpenSHMEM 1.6 §9.8 memory ordering): every
// operation is complete in this PE's view when the call returns (stores are
// in the coherence domain once the store buffer drains), so the queues of
// this transport never hold pending operations. Quiet and Fence still need a
// store-load barrier so that a later load (a flag read, a get) cannot pass
// the earlier stores: storeFence provides it.
package shm

import (
	"sync/atomic"
	"unsafe"

	"github.com/goshmem/goshmem/internal/memord"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
)

// Transport reaches the PEs whose region base is non-zero.
type Transport struct {
	bases []unsafe.Pointer // per PE; nil = not mapped here
	fence atomic.Uint64
}

// New returns a transport over the given per-PE region bases.
func New(bases []unsafe.Pointer) *Transport { return &Transport{bases: bases} }

// Name implements transport.Transport.
func (t *Transport) Name() string { return "shm" }

func (t *Transport) at(pe int, off uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(t.bases[pe], off)), n)
}

// copyChunk bounds each memmove: Go's memmove switches to non-temporal
// stores at 1 MiB, which bypass the caches and halve put bandwidth into a
// peer that reads the data soon after; copies below the threshold stay
// cached (glibc's memcpy, which OpenSHMEM uses, switches much later).
const copyChunk = 512 << 10

// Put implements transport.Transport: a memmove into the peer's mapping.
func (t *Transport) Put(_ *quiet.Queue, pe int, off uint64, src []byte) error {
	dst := t.at(pe, off, len(src))
	for len(src) > copyChunk {
		copy(dst[:copyChunk], src[:copyChunk])
		dst, src = dst[copyChunk:], src[copyChunk:]
	}
	copy(dst, src)
	return nil
}

// PutNBI implements transport.Transport; on shm it completes at once.
func (t *Transport) PutNBI(q *quiet.Queue, pe int, off uint64, src []byte) error {
	return t.Put(q, pe, off, src)
}

// Get implements transport.Transport.
func (t *Transport) Get(_ *quiet.Queue, dst []byte, pe int, off uint64) error {
	src := t.at(pe, off, len(dst))
	for len(src) > copyChunk {
		copy(dst[:copyChunk], src[:copyChunk])
		dst, src = dst[copyChunk:], src[copyChunk:]
	}
	copy(dst, src)
	return nil
}

// GetNBI implements transport.Transport; on shm it completes at once.
func (t *Transport) GetNBI(q *quiet.Queue, dst []byte, pe int, off uint64) error {
	return t.Get(q, dst, pe, off)
}

// Atomic implements transport.Transport with the processor's atomic
// instructions on the shared word. 1- and 2-byte widths are done with a
// compare-and-swap loop on the aligned 4-byte word that contains them, so
// they are never torn and never disturb the neighbouring bytes' values.
func (t *Transport) Atomic(_ *quiet.Queue, op transport.AMO, width int, pe int, off uint64, v, cmp uint64) (uint64, error) {
	p := unsafe.Add(t.bases[pe], off)
	switch width {
	case 8:
		return amo64((*uint64)(p), op, v, cmp), nil
	case 4:
		return uint64(amo32((*uint32)(p), op, uint32(v), uint32(cmp))), nil
	default:
		return amoNarrow(p, width, op, v, cmp), nil
	}
}

func amo64(p *uint64, op transport.AMO, v, cmp uint64) uint64 {
	switch op {
	case transport.AMOFetch:
		return atomic.LoadUint64(p)
	case transport.AMOSet:
		// P, AtomicSet and signal stores: single-copy atomic and ordered
		// after earlier stores (release), without XCHG's full barrier.
		memord.StoreRelease64(p, v)
		return 0
	case transport.AMOSwap:
		return atomic.SwapUint64(p, v)
	case transport.AMOCompareSwap:
		for {
			old := atomic.LoadUint64(p)
			if old != cmp {
				return old
			}
			if atomic.CompareAndSwapUint64(p, cmp, v) {
				return old
			}
		}
	case transport.AMOAdd:
		return atomic.AddUint64(p, v) - v
	case transport.AMOAnd:
		return atomic.AndUint64(p, v)
	case transport.AMOOr:
		return atomic.OrUint64(p, v)
	case transport.AMOXor:
		for {
			old := atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, old, old^v) {
				return old
			}
		}
	}
	panic("shm: unknown AMO")
}

func amo32(p *uint32, op transport.AMO, v, cmp uint32) uint32 {
	switch op {
	case transport.AMOFetch:
		return atomic.LoadUint32(p)
	case transport.AMOSet:
		memord.StoreRelease32(p, v)
		return 0
	case transport.AMOSwap:
		return atomic.SwapUint32(p, v)
	case transport.AMOCompareSwap:
		for {
			old := atomic.LoadUint32(p)
			if old != cmp {
				return old
			}
			if atomic.CompareAndSwapUint32(p, cmp, v) {
				return old
			}
		}
	case transport.AMOAdd:
		return atomic.AddUint32(p, v) - v
	case transport.AMOAnd:
		return atomic.AndUint32(p, v)
	case transport.AMOOr:
		return atomic.OrUint32(p, v)
	case transport.AMOXor:
		for {
			old := atomic.LoadUint32(p)
			if atomic.CompareAndSwapUint32(p, old, old^v) {
				return old
			}
		}
	}
	panic("shm: unknown AMO")
}

// amoNarrow runs op on a 1- or 2-byte field through a CAS loop on the
// containing aligned 32-bit word (x86 and arm64 are little-endian here).
func amoNarrow(p unsafe.Pointer, width int, op transport.AMO, v, cmp uint64) uint64 {
	addr := uintptr(p)
	word := (*uint32)(unsafe.Add(p, -int(addr&3)))
	shift := (addr & 3) * 8
	mask := uint64(1)<<(uint(width)*8) - 1
	v &= mask
	cmp &= mask
	for {
		w := atomic.LoadUint32(word)
		old := (uint64(w) >> shift) & mask
		nv, write := op.Apply(old, v, cmp)
		if !write {
			return old
		}
		neww := (uint64(w) &^ (mask << shift)) | ((nv & mask) << shift)
		if atomic.CompareAndSwapUint32(word, w, uint32(neww)) {
			return old
		}
	}
}

// Fence implements transport.Transport. Puts and signals to a peer are
// stores into its mapping; Fence orders the earlier ones before the later
// ones (a compiler barrier on x86-TSO, DMB ISHST on arm64). Atomics are
// locked instructions and need nothing more.
func (t *Transport) Fence(_ *quiet.Queue) error {
	memord.StoreStoreFence()
	return nil
}

// storeFence is a full memory barrier: a locked read-modify-write on a
// private word drains the store buffer before any later load, so a quiet
// followed by a flag read cannot observe the flag before our puts landed.
func storeFence(w *atomic.Uint64) { w.Add(1) }

// Quiet makes every earlier store of this PE globally visible before any
// later load or store (Ref: OpenSHMEM 1.6 §9.8.2).
func (t *Transport) Quiet() { storeFence(&t.fence) }

// Ptr implements transport.Transport.
func (t *Transport) Ptr(pe int, off uint64) unsafe.Pointer {
	if pe < 0 || pe >= len(t.bases) || t.bases[pe] == nil {
		return nil
	}
	return unsafe.Add(t.bases[pe], off)
}

// Close implements transport.Transport; the regions belong to the heap.
func (t *Transport) Close() error { return nil }
