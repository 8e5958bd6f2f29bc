package shmem

import (
	"math"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/symmetric"
	"github.com/goshmem/goshmem/internal/transport"
)

// GPU describes the GPU this PE uses, or reports why there is none.
type GPU struct {
	Device   int    // CUDA device ordinal
	Name     string // e.g. "NVIDIA H200"
	PCIBusID string
	// HeapBytes is the device symmetric heap per PE that AllocDevice
	// draws from and that is mapped now (a heap that grows maps more, in
	// whole chunks): the GPU heap less the control area of the team slots
	// (GOSHMEM_MAX_TEAMS) in front of it.
	HeapBytes uint64
	// SameDevice is true when every reachable PE shares this GPU, so device
	// ordering uses GPU scope instead of system scope.
	SameDevice bool
}

// DeviceInfo returns this PE's GPU, or ErrNotSupported saying why none is
// in use.
func DeviceInfo() (GPU, error) {
	r, err := enter("DeviceInfo")
	if err != nil {
		return GPU{}, err
	}
	defer r.leave()
	g := r.c.GPU
	if g == nil {
		return GPU{}, r.apiErr(r.c.GPUErr, "DeviceInfo")
	}
	return GPU{Device: int(g.Dev), Name: g.DevName, PCIBusID: g.BusID,
		HeapBytes: g.Size() - g.ControlBytes(), SameDevice: g.AllPeersSameDevice()}, nil
}

// AllocDevice allocates a symmetric array of n elements of T in GPU memory
// on every PE (collective, like Alloc; zeroed; ends with a barrier).
// AllocDevice(0) returns the zero Array and nil without communicating, as
// Alloc(0) does, with or without a GPU. Kernels
// address it through DevicePtr and the device API (include/goshmem.h); the
// host API's Put/Get/P/G and atomics work on it too (as synchronous copies
// and one-thread atomic kernels), but Local does not. Without a GPU on
// every PE it returns ErrNotSupported with the reason.
func AllocDevice[T Elem](n int) (Array[T], error) {
	r, err := enter("AllocDevice")
	if err != nil {
		return Array[T]{}, err
	}
	defer r.leave()
	if n == 0 {
		return Array[T]{}, nil
	}
	if r.c.GPU == nil {
		return Array[T]{}, errs.Wrap(r.c.GPUErr, r.me, "AllocDevice", "n = %d elements of %s: no GPU symmetric heap", n, elem.Name[T]())
	}
	sz := uint64(elem.Size[T]())
	var bytes uint64
	if n > 0 && uint64(n) <= math.MaxInt64/sz {
		bytes = uint64(n) * sz
	}
	r.world.Lock()
	defer r.world.Unlock()
	heapLen := r.galloc.Total()
	var out Array[T]
	err = r.heapCollective(opAllocDevice, bytes, uint64(int64(n)), func() (uint64, error) {
		if n < 0 {
			return 0, errs.New(errs.ErrInvalidArgument, r.me, "AllocDevice", "n = %d elements of %s; must be in [0, %d]",
				n, elem.Name[T](), heapLen/sz)
		}
		if bytes == 0 || bytes > heapLen {
			return 0, errs.Hint(errs.ErrHeapExhausted, "raise "+r.c.GPU.LimitSetting(), r.me, "AllocDevice",
				"n = %d elements of %s is more than the whole GPU heap (%d bytes, at most %d elements)",
				n, elem.Name[T](), heapLen, heapLen/sz)
		}
		off, err := r.galloc.Alloc(bytes, gpuAlign)
		if err != nil {
			if errors.Is(err, symmetric.ErrHeapExhausted) {
				return 0, errors.WithHint(errs.Wrap(errs.Mark(err, errs.ErrHeapExhausted), r.me, "AllocDevice", "n = %d elements of %s (%d bytes)", n, elem.Name[T](), bytes),
					"raise "+r.c.GPU.LimitSetting())
			}
			return 0, errs.Wrap(errs.Mark(err, errs.ErrInvalidArgument), r.me, "AllocDevice", "allocator")
		}
		doff := r.c.GPUControlBytes() + off
		// A heap that grows maps what the block needs first, on every PE
		// at once (each PE's allocator made the same choice).
		if err := r.c.GPU.Grow(doff+bytes, bytes, func(rec []byte) ([][]byte, error) {
			return r.world.ExchangeAs(r, collectives.KindAllocDevice, rec)
		}); err != nil {
			_, _ = r.galloc.Free(off)
			return 0, err
		}
		if err := r.c.GPU.ZeroBlock(doff, int(bytes)); err != nil {
			_, _ = r.galloc.Free(off)
			return 0, errs.Wrap(err, r.me, "AllocDevice", "clearing %d bytes", bytes)
		}
		out = Array[T]{b: &block{off: doff, n: n, bytes: bytes, gen: r.gen, dev: true}}
		return doff, nil
	}, func() { _ = r.free(out.b, 0, elem.Name[T]()); out = Array[T]{} })
	return out, err
}

// DevicePtr is the device address of this PE's part of a GPU array, for
// kernel arguments (a registered array's: the ptr it was registered
// with); 0 for host arrays, freed arrays and the zero Array.
func (a Array[T]) DevicePtr() uintptr {
	r := current.Load()
	if r == nil || r.c.GPU == nil || a.b == nil || !a.b.dev || a.b.freed.Load() || a.b.gen != r.gen {
		return 0
	}
	if a.b.reg != 0 {
		return uintptr(a.b.reg)
	}
	return uintptr(r.c.GPU.Base()) + uintptr(a.b.off)
}

// OnDevice reports whether a lives in GPU memory (AllocDevice or
// RegisterDevice).
func (a Array[T]) OnDevice() bool { return a.b != nil && a.b.dev }

// trFor picks the transport for an access to b on pe: the GPU heap's for
// device arrays, the host heap's per-peer transport otherwise.
func (r *runtime) trFor(b *block, pe int) transport.Transport {
	if b != nil && b.dev {
		return r.c.GPU
	}
	return r.tr[pe]
}

// loadDevice reads one element of a device array on this PE (for the
// host's waits and tests on GPU memory).
func loadDevice[T Elem](r *runtime, off uint64) (T, error) {
	var v T
	err := r.c.GPU.Get(nil, unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)), r.me, off)
	return v, err
}
