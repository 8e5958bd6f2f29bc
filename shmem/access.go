package shmem

import "unsafe"

// Ptr returns PE pe's copy of a as a slice this PE may load from and
// store to directly, when pe's symmetric heap is mapped into this process
// (the PEs of this node: every peer on the shm transport, and node peers
// under GOSHMEM_TRANSPORT=ofi too); it returns nil when pe's copy can only
// be reached through Put, Get and the atomics (another node), for GPU
// arrays (device memory: pass DevicePtr to kernels instead), for a freed
// or zero Array, for pe outside [0, NPEs()) and before Init. Ptr(a, MyPE())
// is a.Local(): this PE's own copy is never nil for a live host array
// (Ref: OpenSHMEM 1.6 §9.2 shmem_ptr).
//
// Loads and stores through the slice are plain memory accesses: they are
// not atomic and not ordered with the peer's accesses or with this PE's
// Put, Get and atomics on other paths (Fence, Quiet and the waits order
// those; use the atomics for words that several PEs update). The slice is
// valid until the array is freed or reallocated, and until Finalize.
func Ptr[T Elem](a Array[T], pe int) []T {
	r := current.Load()
	if r == nil || a.b == nil || a.b.dev || a.b.freed.Load() || a.b.gen != r.gen || uint(pe) >= uint(r.npes) {
		return nil
	}
	if pe == r.me {
		return a.Local()
	}
	p := r.tr[pe].Ptr(pe, a.b.off)
	if p == nil {
		return nil
	}
	return unsafe.Slice((*T)(p), a.b.n)
}

// PEAccessible reports whether PE pe can be reached by this PE's puts,
// gets, atomics and collectives: every PE of the job can, once Init has
// returned (Init fails unless every peer has a transport), so it is true
// for pe in [0, NPEs()) and false otherwise and before Init
// (Ref: OpenSHMEM 1.6 §9.2 shmem_pe_accessible). Whether pe's memory can
// also be loaded from and stored to directly is Ptr's question.
func PEAccessible(pe int) bool {
	r := current.Load()
	return r != nil && uint(pe) < uint(r.npes)
}

// AddrAccessible reports whether a is a symmetric array that this PE can
// access on PE pe with puts, gets and atomics (Ref: OpenSHMEM 1.6 §9.2
// shmem_addr_accessible): a live array of this Init, pe in [0, NPEs()),
// and, for a GPU array, pe's GPU heap mapped here (GPU arrays are reached
// from the PEs of one node).
func AddrAccessible[T Elem](a Array[T], pe int) bool {
	r := current.Load()
	if r == nil || a.b == nil || a.b.freed.Load() || a.b.gen != r.gen || uint(pe) >= uint(r.npes) {
		return false
	}
	if a.b.reg != 0 { // RegisterDevice: local to this PE, no peer knows it
		return false
	}
	return !a.b.dev || (r.c.GPU != nil && r.c.GPU.Reachable(pe))
}
