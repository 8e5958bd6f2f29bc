package shmem

import (
	"encoding/binary"
	"math/big"
	"sync/atomic"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// Elem is every type a symmetric array may hold: the integers, float32,
// float64, Float16 and BFloat16 (see the package doc, Element types).
type Elem = elem.Elem

// Array is a symmetric array of n elements of T: every PE has one at the
// same offset of its symmetric heap, so an Array value names the remote
// copies as well as the local one. Copies of an Array value refer to the
// same allocation. The zero Array is OpenSHMEM's null pointer: Alloc(0)
// returns it; it has no elements (Len 0, Local nil), an access of no
// elements passes and any other is out of bounds, and Free of it does
// nothing.
type Array[T Elem] struct {
	b *block
}

type block struct {
	off   uint64 // region offset of element 0
	n     int
	bytes uint64
	gen   uint64
	dev   bool   // GPU heap (AllocDevice), or registered (reg != 0)
	reg   uint64 // device address of element 0 of a registered buffer (RegisterDevice); 0: symmetric
	freed atomic.Bool
}

// Len is the number of elements on each PE (0 for the zero Array).
func (a Array[T]) Len() int {
	if a.b == nil {
		return 0
	}
	return a.b.n
}

// Local is this PE's part of the array: a slice over symmetric memory that
// peers may read and write. It is nil for a freed or zero Array, after
// Finalize, and for GPU arrays (use DevicePtr for those). Plain loads and stores through it are not atomic and not
// ordered with respect to peers: use WaitUntil/TestCmp/atomics for words
// that peers update concurrently.
//
// A slice kept past Free aliases whatever a later allocation places
// there, as a pointer does in C. A slice kept past Finalize stays mapped
// and never faults: it reads zeros (this PE's region is replaced by
// private zero pages) and its writes reach nobody.
func (a Array[T]) Local() []T {
	r := current.Load()
	if r == nil || a.b == nil || a.b.dev || a.b.freed.Load() || a.b.gen != r.gen {
		return nil
	}
	return unsafe.Slice((*T)(r.localPtr(a.b.off)), a.b.n)
}

// Free releases the array on every PE. It is collective (every PE frees the
// same array, in the same order as its other collective heap calls) and
// begins with a barrier, so no PE is still accessing it (Ref: OpenSHMEM 1.6
// §9.3.1 shmem_free). Freeing twice returns ErrInvalidArgument. A slice
// kept from Local stays usable memory after Free, but it aliases later
// allocations, as in C. Free of
// the zero Array does nothing and returns nil without communicating
// (shmem_free of a null pointer).
func (a Array[T]) Free() error {
	r, err := enter("Free")
	if err != nil {
		return err
	}
	defer r.leave()
	if a.b == nil {
		return nil
	}
	if a.b.reg != 0 {
		return r.unregister(a.b, elem.Name[T]())
	}
	status := uint64(0)
	var off uint64
	switch {
	case a.b.gen != r.gen:
		status = 2
	case a.b.freed.Load():
		status = 3
	default:
		off = a.b.off
	}
	r.world.Lock()
	defer r.world.Unlock()
	err = r.heapCollective(opFree, off, status, func() (uint64, error) {
		return off, r.free(a.b, status, elem.Name[T]())
	}, nil)
	return err
}

// free is Free's local part, the same on every PE (status as Free
// computed it: 2 earlier Init, 3 already freed).
func (r *runtime) free(b *block, status uint64, typ string) error {
	switch status {
	case 2:
		return errs.New(errs.ErrInvalidArgument, r.me, "Free", "array belongs to an earlier Init")
	case 3:
		return errs.Hint(errs.ErrInvalidArgument, "free each array once", r.me, "Free",
			"array of %d %s at heap offset %d was already freed", b.n, typ, b.off-heapOff)
	}
	if b.dev {
		if _, err := r.galloc.Free(b.off - r.c.GPUControlBytes()); err != nil {
			return errs.New(errs.ErrInvalidArgument, r.me, "Free", "%v", err)
		}
		b.freed.Store(true)
		return nil
	}
	if _, err := r.alloc.Free(b.off - heapOff); err != nil {
		return errs.New(errs.ErrInvalidArgument, r.me, "Free", "%v", err)
	}
	b.freed.Store(true)
	if r.debug {
		poison(r.local(b.off, int(b.bytes)))
	}
	return nil
}

// poisonByte fills freed memory in debug mode, so a stale Local slice reads
// garbage that is easy to recognise (0xdbdbdbdb...).
const poisonByte = 0xdb

func poison(b []byte) {
	for i := range b {
		b[i] = poisonByte
	}
}

// Alloc allocates a symmetric array of n elements of T on the host heap of
// every PE. It is collective: every PE calls it with the same n, in the same
// order. The memory is zeroed, and the call ends with a barrier, so peers
// may write into the new array as soon as it returns on their side
// (Ref: OpenSHMEM 1.6 §9.3.1 shmem_malloc). Alloc(0) returns the zero
// Array and nil without communicating: no barrier, no heap space (a
// zero-size shmem_malloc returns a null pointer and performs no action).
//
// Errors: n < 0 → ErrInvalidArgument; more than the heap holds →
// ErrHeapExhausted (hint: raise GOSHMEM_SYMMETRIC_SIZE); PEs asking
// different sizes → ErrNotSymmetric on every PE, nothing allocated.
func Alloc[T Elem](n int) (Array[T], error) {
	r, err := enter("Alloc")
	if err != nil {
		return Array[T]{}, err
	}
	defer r.leave()
	if n == 0 {
		return Array[T]{}, nil
	}
	bytes := allocBytes[T](n)
	return hostAlloc[T](r, opAlloc, n, heapAlign, bytes, uint64(int64(n)), nil)
}

const (
	opAlloc       = 1
	opFree        = 2
	opAllocDevice = 3
	// alloc16.go, lock.go
	opAllocAligned = 4
	opAllocHints   = 5
	opRealloc      = 6
	opNewLock      = 7
	opLockFree     = 8
)

var heapOpNames = map[uint64]string{opAlloc: "Alloc", opFree: "Free", opAllocDevice: "AllocDevice",
	opAllocAligned: "AllocAligned", opAllocHints: "AllocWithHints", opRealloc: "Realloc",
	opNewLock: "NewLock", opLockFree: "Lock.Free"}

// heapOpKinds is the collective kind each heap operation's syncs carry.
var heapOpKinds = map[uint64]collectives.Kind{opAlloc: collectives.KindAlloc, opFree: collectives.KindFree,
	opAllocDevice: collectives.KindAllocDevice, opAllocAligned: collectives.KindAlloc,
	opAllocHints: collectives.KindAlloc, opRealloc: collectives.KindAlloc, opNewLock: collectives.KindAlloc,
	opLockFree: collectives.KindFree}

// heapCollective runs a collective heap operation: every PE publishes
// (sequence, op, a, b), all compare, and only if every PE asked the same
// thing does fn run (the same fn on every PE, deterministic allocator, so
// offsets agree). fn returns the heap offset it allocated or freed; a
// second exchange compares every PE's offset and outcome, so heaps that
// diverged anyway fail the call on every PE (undo, when set, gives back
// this PE's block) instead of letting puts land in the wrong place. That
// exchange also orders fn's effects (zeroed memory) before any peer's
// next access. The syncs carry the operation's kind, so a PE calling
// another collective (or another heap operation) here is found by every
// PE and leaves the world team out of step; arguments that differ fail
// the same way everywhere and leave it usable. The caller holds r.world.Lock.
// Its error names the public call (heapOpNames) for errors.As.
func (r *runtime) heapCollective(op uint64, a, b uint64, fn func() (uint64, error), undo func()) error {
	return r.apiErr(r.heapSync(op, a, b, fn, undo), heapOpNames[op])
}

// heapSync is heapCollective before its error is named for the call.
func (r *runtime) heapSync(op uint64, a, b uint64, fn func() (uint64, error), undo func()) error {
	r.collSeq++
	var in [32]byte
	binary.LittleEndian.PutUint64(in[0:], r.collSeq)
	binary.LittleEndian.PutUint64(in[8:], op)
	binary.LittleEndian.PutUint64(in[16:], a)
	binary.LittleEndian.PutUint64(in[24:], b)
	kind := heapOpKinds[op]
	all, err := r.world.ExchangeAs(r, kind, in[:])
	if err != nil {
		return err
	}
	for pe, got := range all {
		if string(got) == string(in[:]) {
			continue
		}
		what := func(x []byte) string {
			o := binary.LittleEndian.Uint64(x[8:])
			name := heapOpNames[o]
			if d := heapOpWhat[o]; d != nil {
				return sprintf("call #%d %s %s", binary.LittleEndian.Uint64(x[0:]), name,
					d(binary.LittleEndian.Uint64(x[16:]), binary.LittleEndian.Uint64(x[24:])))
			}
			if o == opAlloc || o == opAllocDevice || o == opAllocHints || o == opNewLock {
				return sprintf("call #%d %s of %d bytes (n = %d)", binary.LittleEndian.Uint64(x[0:]), name,
					binary.LittleEndian.Uint64(x[16:]), int64(binary.LittleEndian.Uint64(x[24:])))
			}
			return sprintf("call #%d %s of heap offset %d (status %d)", binary.LittleEndian.Uint64(x[0:]), name,
				binary.LittleEndian.Uint64(x[16:]), binary.LittleEndian.Uint64(x[24:]))
		}
		return errs.Hint(errs.ErrNotSymmetric, "every PE must make the same Alloc/Free calls with the same sizes, in the same order",
			r.me, heapOpNames[op], "PE %d made %s, this PE made %s", pe, what(got), what(in[:]))
	}
	off, ferr := fn()
	// [offset][0 = done, else the error's sentinel code + 1]
	var res [16]byte
	binary.LittleEndian.PutUint64(res[0:], off)
	if ferr != nil {
		binary.LittleEndian.PutUint64(res[0:], 0)
		binary.LittleEndian.PutUint64(res[8:], uint64(errs.Code(ferr))+1)
	}
	outs, err := r.world.ExchangeAs(r, kind, res[:])
	if err != nil {
		return errors.Join(ferr, err)
	}
	outcome := func(x []byte) string {
		if st := binary.LittleEndian.Uint64(x[8:]); st != 0 {
			return sprintf("failed (%v)", errs.Sentinel(byte(st-1)))
		}
		return sprintf("returned heap offset %d", binary.LittleEndian.Uint64(x[0:]))
	}
	for pe, got := range outs {
		if string(got) == string(res[:]) {
			continue
		}
		if ferr == nil && undo != nil {
			undo()
		}
		return errors.Join(ferr, errs.Hint(errs.ErrNotSymmetric, "end the job: every PE must run with the same settings and make the same heap calls",
			r.me, heapOpNames[op], "the symmetric heaps diverged: call #%d %s here, %s on PE %d", r.collSeq, outcome(res[:]), outcome(got), pe))
	}
	return ferr
}

// span checks an access to elements [idx, idx+n) of a on pe and returns its
// region offset. op names the call for the error.
func span[T Elem](r *runtime, a Array[T], op string, idx, n, pe int) (uint64, error) {
	if a.b == nil {
		return zeroSpan(r, op, idx, n, pe)
	}
	if a.b.freed.Load() || a.b.gen != r.gen {
		return 0, badArray(r, a, op)
	}
	if a.b.reg != 0 {
		return 0, notSymmetric(r, op, "the array")
	}
	if uint(pe) >= uint(r.npes) {
		return 0, errs.New(errs.ErrPEOutOfRange, r.me, op, "pe = %d; must be in [0, %d)", pe, r.npes)
	}
	if idx < 0 || n < 0 || idx > a.b.n || n > a.b.n-idx {
		return 0, errs.New(errs.ErrOutOfBounds, r.me, op, "index %d, length %d on PE %d: elements [%d, %s) are outside the array's [0, %d)",
			idx, n, pe, idx, exactSum(idx, n), a.b.n)
	}
	if a.b.dev && !r.c.GPU.Reachable(pe) {
		return 0, errs.Hint(errs.ErrNotSupported, "GPU arrays are reachable from the PEs of one node", r.me, op,
			"the GPU heap of PE %d is not mapped on this PE (another node)", pe)
	}
	return a.b.off + uint64(idx)*uint64(elem.Size[T]()), nil
}

// zeroSpan is span of the zero Array: no elements, so only an access of
// none at index 0 passes (heapOff: an offset no transport reads or writes
// for 0 bytes).
func zeroSpan(r *runtime, op string, idx, n, pe int) (uint64, error) {
	if uint(pe) >= uint(r.npes) {
		return 0, errs.New(errs.ErrPEOutOfRange, r.me, op, "pe = %d; must be in [0, %d)", pe, r.npes)
	}
	if idx != 0 || n != 0 {
		return 0, errs.New(errs.ErrOutOfBounds, r.me, op, "index %d, length %d on PE %d: the zero Array has no elements (Alloc(0) returns it)",
			idx, n, pe)
	}
	return heapOff, nil
}

// exactSum is idx+n in decimal, without int overflow (error texts only).
func exactSum(idx, n int) string {
	return new(big.Int).Add(big.NewInt(int64(idx)), big.NewInt(int64(n))).String()
}

func badArray[T Elem](r *runtime, a Array[T], op string) error {
	switch {
	case a.b == nil:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "the zero Array: allocate arrays with shmem.Alloc")
	case a.b.gen != r.gen:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "the array belongs to an earlier Init")
	case a.b.reg != 0:
		return errs.Hint(errs.ErrInvalidArgument, "do not use an array after Free", r.me, op,
			"use after Free: the registered GPU buffer of %d %s at %#x was unregistered", a.b.n, elem.Name[T](), a.b.reg)
	default:
		return errs.Hint(errs.ErrInvalidArgument, "do not use an array after Free", r.me, op,
			"use after Free: array of %d %s at heap offset %d was freed", a.b.n, elem.Name[T](), a.b.off-heapOff)
	}
}
