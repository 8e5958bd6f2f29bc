package shmem

import (
	"math"

	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// RegisterDevice makes n elements of T at ptr an Array. ptr is GPU memory
// of this PE that another library allocated: a framework's tensor, a
// cuBLAS workspace, anything cudaMalloc'd in this PE's GPU context. The
// Array is the local side of the GPU calls: the source of PutOnStream
// and PutSignalOnStream, the destination of GetOnStream, over load/store,
// the proxy and IBGDA. Kernels address it through DevicePtr, and the
// device API's puts from it and gets into it use it in place on every
// transport: a stream copy over load/store; the GPU proxy's workers copy
// from and to it (RegisterDevice enters it in the proxy's table); IBGDA
// names it in WQEs under its own key (RegisterDevice registers it with
// the NIC: a memory region of the ConnectX, a region of the soft NIC).
//
// A registered array is not symmetric: no peer knows it. Every use as a
// remote side is refused with ErrInvalidArgument naming the call: the
// destination of a put, the source of a get, a signal word, a wait, an
// atomic, a collective's argument, and the array of host Put, Get, P and
// G. Local has no slice for it, as for any GPU array.
//
// RegisterDevice is local to this PE, not collective (Ref: NVSHMEM
// nvshmemx_buffer_register, which C and C++ code linked into the program
// can call: include/goshmem/nvshmem_host.h). Free unregisters the array and leaves the
// memory to its owner, who must not free it before; no call using the
// array may be queued or running then. RegisterDevice(ptr, 0) checks ptr
// and returns the zero Array.
//
// Errors: ptr 0 or not aligned to T, n < 0, a range that is not device
// memory of this PE's GPU context, runs past its allocation, or overlaps
// a symmetric GPU heap mapped here (this PE's, including room it may grow
// into, or a node peer's) or a buffer registered before →
// ErrInvalidArgument; no GPU → ErrNotSupported with the reason; the GPU
// proxy's or IBGDA's table of registered buffers full (255 and 256
// buffers), or a ConnectX that cannot register GPU memory (neither
// dma-buf nor nvidia-peermem) → ErrNotSupported saying which.
func RegisterDevice[T Elem](ptr uintptr, n int) (Array[T], error) {
	return registerDevice[T](ptr, n, "RegisterDevice")
}

// registerDevice is RegisterDevice whose errors name op.
func registerDevice[T Elem](ptr uintptr, n int, op string) (Array[T], error) {
	r, err := enter(op)
	if err != nil {
		return Array[T]{}, err
	}
	defer r.leave()
	if err := r.c.NeedGPU(op); err != nil {
		return Array[T]{}, r.apiErr(err, op)
	}
	sz := uint64(elem.Size[T]())
	switch {
	case ptr == 0:
		return Array[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op, "ptr = 0: a null pointer")
	case uint64(ptr)%sz != 0:
		return Array[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op, "ptr = %#x is not aligned to %s (%d bytes)",
			uint64(ptr), elem.Name[T](), sz)
	case n < 0:
		return Array[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d elements of %s; must be >= 0", n, elem.Name[T]())
	case uint64(n) > math.MaxInt64/sz:
		return Array[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d elements of %s is more bytes than an address space holds",
			n, elem.Name[T]())
	case n == 0:
		return Array[T]{}, nil
	}
	bytes := uint64(n) * sz
	if err := r.c.RegisterDevice(uint64(ptr), bytes, op); err != nil {
		return Array[T]{}, r.apiErr(err, op)
	}
	return Array[T]{b: &block{n: n, bytes: bytes, gen: r.gen, dev: true, reg: uint64(ptr)}}, nil
}

// unregister is Free of a registered array: local, no communication.
func (r *runtime) unregister(b *block, typ string) error {
	if b.gen != r.gen {
		return errs.New(errs.ErrInvalidArgument, r.me, "Free", "array belongs to an earlier Init")
	}
	if !b.freed.CompareAndSwap(false, true) {
		return errs.Hint(errs.ErrInvalidArgument, "free each array once", r.me, "Free",
			"the registered GPU buffer of %d %s at %#x was already freed", b.n, typ, b.reg)
	}
	return r.apiErr(r.c.UnregisterDevice(b.reg, "Free"), "Free")
}

// notSymmetric refuses a registered array (RegisterDevice) where op needs
// a symmetric one; name is the argument.
func notSymmetric(r *runtime, op, name string) error {
	return errs.Hint(errs.ErrInvalidArgument,
		"use an AllocDevice array here; a registered buffer can be the source of PutOnStream and PutSignalOnStream or the destination of GetOnStream",
		r.me, op, "%s is a registered GPU buffer (RegisterDevice): it is local to this PE, not symmetric, so it cannot be the remote side", name)
}
