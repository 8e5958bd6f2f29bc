package shmem

import (
	"math"
	"math/bits"
	"os"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/symmetric"
)

// AllocHint describes how an allocation will be used (OpenSHMEM's
// SHMEM_MALLOC_* hints), for AllocWithHints. Hints are bits; combine them
// with |.
type AllocHint uint64

// The allocation hints (Ref: OpenSHMEM 1.6 §9.3.2 shmem_malloc_with_hints;
// the values are OpenSHMEM's).
const (
	// AllocAtomicsRemote: the memory is mostly the target of atomics from
	// other PEs (SHMEM_MALLOC_ATOMICS_REMOTE).
	AllocAtomicsRemote AllocHint = 1 << 0
	// AllocSignalRemote: the memory holds signal words that other PEs
	// update (SHMEM_MALLOC_SIGNAL_REMOTE).
	AllocSignalRemote AllocHint = 1 << 1
)

// AllocWithHints is Alloc with a description of how the memory will be
// used (Ref: OpenSHMEM 1.6 §9.3.2 shmem_malloc_with_hints). goshmem's host
// heap is one kind of memory on every transport, so no hint changes where
// or how the array is allocated; bits it does not know are ignored. It is
// collective like Alloc (every PE calls it with the same n, in the same
// order), zeroes the memory, ends with a barrier and fails as Alloc does.
// AllocWithHints(0, hints) returns the zero Array and nil without
// communicating, as Alloc(0) does.
func AllocWithHints[T Elem](n int, hints AllocHint) (Array[T], error) {
	r, err := enter("AllocWithHints")
	if err != nil {
		return Array[T]{}, err
	}
	defer r.leave()
	if n == 0 {
		return Array[T]{}, nil
	}
	_ = hints
	return hostAlloc[T](r, opAllocHints, n, heapAlign, allocBytes[T](n), uint64(int64(n)), nil)
}

// AllocAligned is Alloc whose Local slice starts at an address that is a
// multiple of align bytes on every PE (Ref: OpenSHMEM 1.6 §9.3.1
// shmem_align). align must be a power of two, at least the element size
// and at most the alignment every PE's heap mapping guarantees (the page
// size: 4096 bytes on x86-64). It is collective like Alloc: every PE calls
// it with the same n and align, in the same order; the memory is zeroed
// and the call ends with a barrier. Every allocation is already aligned to
// 64 bytes (a cache line). AllocAligned(0, align) returns the zero Array
// and nil without communicating, as Alloc(0) does (a bad align is still
// an error, found on this PE alone).
//
// Errors: a bad align → ErrInvalidArgument naming the valid range, on
// every PE; otherwise those of Alloc (PEs asking a different n or align →
// ErrNotSymmetric).
func AllocAligned[T Elem](n, align int) (Array[T], error) {
	r, err := enter("AllocAligned")
	if err != nil {
		return Array[T]{}, err
	}
	defer r.leave()
	sz := elem.Size[T]()
	maxAlign := maxAllocAlign()
	var bad error
	if align < sz || align > maxAlign || align&(align-1) != 0 {
		// Reported by the collective, so PEs passing different aligns all
		// fail (ErrNotSymmetric) instead of leaving the good ones waiting.
		bad = errs.New(errs.ErrInvalidArgument, r.me, "AllocAligned",
			"align = %d bytes for %s; must be a power of two in [%d, %d]", align, elem.Name[T](), sz, maxAlign)
	}
	if n == 0 {
		return Array[T]{}, bad
	}
	return hostAlloc[T](r, opAllocAligned, n, uint64(max(align, heapAlign)), allocBytes[T](n), uint64(int64(align)), bad)
}

// maxAllocAlign is the largest alignment AllocAligned accepts: the
// alignment of every PE's heap mapping (the page size, and the heap's
// offset in its region).
func maxAllocAlign() int {
	pg := os.Getpagesize()
	return min(pg, 1<<bits.TrailingZeros64(uint64(heapOff)))
}

// allocBytes is n elements of T in bytes, or 0 when n < 1 or the count
// overflows (the allocation then fails with the reason).
func allocBytes[T Elem](n int) uint64 {
	sz := uint64(elem.Size[T]())
	if n > 0 && uint64(n) <= math.MaxInt64/sz {
		return uint64(n) * sz
	}
	return 0
}

// hostAlloc is Alloc, AllocAligned, AllocWithHints and NewLock: the
// collective allocation of n elements of T on the host heap, aligned to
// align (a power of two, at least heapAlign), as heap operation op whose
// operands a and b every PE compares. bad, when set, is the arguments'
// error, returned by every PE once they agree.
func hostAlloc[T Elem](r *runtime, op uint64, n int, align uint64, a, b uint64, bad error) (Array[T], error) {
	name := heapOpNames[op]
	r.world.Lock()
	defer r.world.Unlock()
	var out Array[T]
	err := r.heapCollective(op, a, b, func() (uint64, error) {
		if bad != nil {
			return 0, bad
		}
		blk, err := r.carve(name, n, elem.Size[T](), elem.Name[T](), align)
		if err != nil {
			return 0, err
		}
		out = Array[T]{b: blk}
		return blk.off, nil
	}, func() { _ = r.free(out.b, 0, elem.Name[T]()); out = Array[T]{} })
	return out, err
}

// carve is the local part of every host allocation (the same on every
// PE): a zeroed block of n > 0 elements of sz bytes. op and typ name the
// call and the element type for errors.
func (r *runtime) carve(op string, n, sz int, typ string, align uint64) (*block, error) {
	usz := uint64(sz)
	if n < 0 {
		return nil, errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d elements of %s; must be in [0, %d]",
			n, typ, r.heapLen/usz)
	}
	var bytes uint64
	if uint64(n) <= math.MaxInt64/usz {
		bytes = uint64(n) * usz
	}
	if bytes == 0 || bytes > r.heapLen {
		return nil, errs.Hint(errs.ErrHeapExhausted, "raise GOSHMEM_SYMMETRIC_SIZE", r.me, op,
			"n = %d elements of %s is more than the whole heap (%d bytes, at most %d elements)",
			n, typ, r.heapLen, r.heapLen/usz)
	}
	off, err := r.heapAlloc(bytes, align)
	if err != nil {
		if errors.Is(err, symmetric.ErrHeapExhausted) {
			return nil, errs.Wrap(errs.Mark(err, errs.ErrHeapExhausted), r.me, op, "n = %d elements of %s (%d bytes)", n, typ, bytes)
		}
		return nil, errs.Wrap(errs.Mark(err, errs.ErrInvalidArgument), r.me, op, "allocator")
	}
	clear(r.local(heapOff+off, int(bytes)))
	return &block{off: heapOff + off, n: n, bytes: bytes, gen: r.gen}, nil
}

// heapAlloc takes bytes from the host heap's allocator. Debug mode
// quarantines freed blocks (so stale slices read poison, not new data);
// they are given back before an allocation fails. Every PE runs the same
// allocator sequence, so all release together. Freed Arrays stay detected
// by their handle either way.
func (r *runtime) heapAlloc(bytes, align uint64) (uint64, error) {
	off, err := r.alloc.Alloc(bytes, align)
	if err != nil && r.debug && errors.Is(err, symmetric.ErrHeapExhausted) && r.alloc.Release() > 0 {
		off, err = r.alloc.Alloc(bytes, align)
	}
	return off, err
}

// Realloc changes the number of elements of a to n, keeping the first
// min(a.Len(), n) elements; elements past the old length are zeroed
// (Ref: OpenSHMEM 1.6 §9.3.1 shmem_realloc). It is collective: every PE
// calls it with the same array and n, in the same order. It begins with a
// barrier (no PE is still accessing a, and every PE's earlier puts to it
// are complete) and ends with one, so peers may access the result as soon
// as it returns on their side.
//
// The array shrinks in place, and grows in place when the heap space after
// it is free; otherwise it moves, and the result is aligned as Alloc's.
// On success a is invalid (as after Free: its Local slice must not be
// used) and the returned Array is the one to use; on failure a is
// unchanged. Realloc of the zero Array is Alloc(n) (so Realloc of it to 0
// returns the zero Array without communicating); Realloc(a, 0) frees a,
// as Free does, and returns the zero Array.
//
// Errors: n < 0 → ErrInvalidArgument; a freed array or one of an earlier
// Init → ErrInvalidArgument; a GPU array → ErrNotSupported; no room →
// ErrHeapExhausted (a unchanged); PEs passing different arrays or sizes →
// ErrNotSymmetric on every PE, nothing changed.
func Realloc[T Elem](a Array[T], n int) (Array[T], error) {
	r, err := enter("Realloc")
	if err != nil {
		return Array[T]{}, err
	}
	defer r.leave()
	if a.b == nil && n == 0 {
		return Array[T]{}, nil
	}
	var status uint64 // what every PE compares: the old block, or why it is unusable
	switch {
	case a.b == nil:
		status = reallocZero
	case a.b.gen != r.gen:
		status = reallocEarlierInit
	case a.b.freed.Load():
		status = reallocFreed
	case a.b.dev:
		status = reallocDevice
	default:
		status = a.b.off
	}
	nb := allocBytes[T](n)
	if n < 0 {
		nb = math.MaxUint64
	}
	r.world.Lock()
	defer r.world.Unlock()
	var out Array[T]
	err = r.heapCollective(opRealloc, status, nb, func() (uint64, error) {
		b, err := r.realloc(a.b, status, n, elem.Size[T](), elem.Name[T]())
		if err != nil || b == nil { // b nil: n == 0 freed a
			return 0, err
		}
		out = Array[T]{b: b}
		return b.off, nil
	}, nil) // no undo: the old block is already gone; heapCollective says to end the job
	return out, err
}

// Realloc's status values for arrays without a usable block (valid blocks
// are compared by their region offset, which is at least heapOff).
const (
	reallocZero        = 1 // the zero Array: allocate
	reallocEarlierInit = 2
	reallocFreed       = 3
	reallocDevice      = 4
)

// realloc is Realloc's local part, the same on every PE. For n == 0 it
// frees old and returns a nil block (the zero Array).
func (r *runtime) realloc(old *block, status uint64, n, sz int, typ string) (*block, error) {
	switch status {
	case reallocEarlierInit:
		return nil, errs.New(errs.ErrInvalidArgument, r.me, "Realloc", "array belongs to an earlier Init")
	case reallocFreed:
		return nil, errs.Hint(errs.ErrInvalidArgument, "do not use an array after Free or a successful Realloc", r.me, "Realloc",
			"array of %d %s at heap offset %d was already freed", old.n, typ, old.off-heapOff)
	case reallocDevice:
		return nil, errs.Hint(errs.ErrNotSupported, "AllocDevice a new array and copy", r.me, "Realloc",
			"array of %d %s is in GPU memory: Realloc works on host arrays", old.n, typ)
	}
	if n < 0 {
		return nil, errs.New(errs.ErrInvalidArgument, r.me, "Realloc", "n = %d elements of %s; must be in [0, %d]",
			n, typ, r.heapLen/uint64(sz))
	}
	if status == reallocZero {
		return r.carve("Realloc", n, sz, typ, heapAlign)
	}
	if n == 0 {
		return nil, r.free(old, 0, typ)
	}
	usz := uint64(sz)
	var bytes uint64
	if uint64(n) <= math.MaxInt64/usz {
		bytes = uint64(n) * usz
	}
	if bytes == 0 || bytes > r.heapLen {
		return nil, errs.Hint(errs.ErrHeapExhausted, "raise GOSHMEM_SYMMETRIC_SIZE", r.me, "Realloc",
			"n = %d elements of %s is more than the whole heap (%d bytes, at most %d elements)",
			n, typ, r.heapLen, r.heapLen/usz)
	}
	keep := min(bytes, old.bytes)
	ok, err := r.alloc.Resize(old.off-heapOff, bytes)
	if err != nil {
		return nil, errs.Wrap(errs.Mark(err, errs.ErrInvalidArgument), r.me, "Realloc", "allocator")
	}
	if ok {
		if bytes > old.bytes {
			clear(r.local(old.off+old.bytes, int(bytes-old.bytes)))
		}
		old.freed.Store(true)
		return &block{off: old.off, n: n, bytes: bytes, gen: r.gen}, nil
	}
	off, err := r.heapAlloc(bytes, heapAlign)
	if err != nil {
		if errors.Is(err, symmetric.ErrHeapExhausted) {
			return nil, errs.Wrap(errs.Mark(err, errs.ErrHeapExhausted), r.me, "Realloc",
				"n = %d elements of %s (%d bytes; the array keeps its %d elements)", n, typ, bytes, old.n)
		}
		return nil, errs.Wrap(errs.Mark(err, errs.ErrInvalidArgument), r.me, "Realloc", "allocator")
	}
	nb := &block{off: heapOff + off, n: n, bytes: bytes, gen: r.gen}
	dst := r.local(nb.off, int(bytes))
	copy(dst, r.local(old.off, int(keep)))
	clear(dst[keep:])
	if err := r.free(old, 0, typ); err != nil {
		return nil, err
	}
	return nb, nil
}

// heapOpWhat describes the operands of the heap operations that are not
// Alloc-shaped, for heapCollective's ErrNotSymmetric message.
var heapOpWhat = map[uint64]func(a, b uint64) string{
	opAllocAligned: func(a, b uint64) string { return sprintf("of %d bytes (align %d)", a, b) },
	opRealloc: func(a, b uint64) string {
		from := sprintf("of heap offset %d", a-heapOff)
		switch a {
		case reallocZero:
			from = "of the zero Array"
		case reallocEarlierInit:
			from = "of an array of an earlier Init"
		case reallocFreed:
			from = "of a freed array"
		case reallocDevice:
			from = "of a GPU array"
		}
		if b == math.MaxUint64 {
			return from + " to a negative length"
		}
		return sprintf("%s to %d bytes", from, b)
	},
	opLockFree: func(a, b uint64) string {
		switch b {
		case 1:
			return "of a nil Lock"
		case 2:
			return "of a lock of an earlier Init"
		case 3:
			return "of a freed lock"
		case lockFreeBusy:
			return sprintf("of the lock at heap offset %d while holding it or queued for it", a-heapOff)
		}
		return sprintf("of the lock at heap offset %d", a-heapOff)
	},
}
