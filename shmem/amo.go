package shmem

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
)

// Atomic memory operations (Ref: OpenSHMEM 1.6 §9.7). Arguments follow
// OpenSHMEM's order: the symmetric array and index, the operand(s), then the
// target PE. Every atomic is performed at the target as one indivisible
// read-modify-write with respect to every other atomic on the same word,
// from any PE. Widths: 32- and 64-bit integers use the processor's atomic
// instructions; 8- and 16-bit integers use a compare-and-swap loop on the
// aligned 32-bit word containing them (atomic, never torn, neighbours
// untouched). The arithmetic, compare-and-swap and bitwise atomics take
// Integer element types only (OpenSHMEM's standard and bitwise AMO types),
// so AtomicAdd on a float64 array does not compile; AtomicFetch, AtomicSet
// and AtomicSwap (the extended AMOs) take every Elem, floating point
// included (Ref: OpenSHMEM 1.6 §9.7, Tables 10-12).

// Integer is the element types of the integer-only atomics: every Elem but
// float32 and float64 (and types defined on them). Float16 and BFloat16
// satisfy it (they are defined on uint16) but are floating point: the
// integer-only atomics refuse them at run time with ErrInvalidArgument, as
// Reduce refuses bitwise operators on them.
type Integer = elem.Integer

func toBits[T Elem](v T) uint64 {
	p := unsafe.Pointer(&v)
	switch unsafe.Sizeof(v) {
	case 8:
		return *(*uint64)(p)
	case 4:
		return uint64(*(*uint32)(p))
	case 2:
		return uint64(*(*uint16)(p))
	default:
		return uint64(*(*uint8)(p))
	}
}

func fromBits[T Elem](b uint64) T {
	var v T
	p := unsafe.Pointer(&v)
	switch unsafe.Sizeof(v) {
	case 8:
		*(*uint64)(p) = b
	case 4:
		*(*uint32)(p) = uint32(b)
	case 2:
		*(*uint16)(p) = uint16(b)
	default:
		*(*uint8)(p) = uint8(b)
	}
	return v
}

// amo runs one atomic on context c. intOnly rejects floating-point T.
func amo[T Elem](c *Ctx, name string, op transport.AMO, intOnly bool, a Array[T], idx int, v, cmp T, pe int) (T, error) {
	dk := dataOf(a.b)
	r, c, err := c.use(name, &pe, dk)
	if err != nil {
		return 0, err
	}
	if intOnly && elem.IsFloat[T]() {
		r.leaveData(dk)
		return 0, markErr(errs.Hint(errs.ErrInvalidArgument,
			"use an integer element type, or AtomicFetch/AtomicSet/AtomicSwap for floating point",
			r.me, name, "element type %s: %s is defined for integer types only", elem.Name[T](), name), errs.ErrNotSupported)
	}
	off, err := span(r, a, name, idx, 1, pe)
	if err != nil {
		r.leaveData(dk)
		return 0, err
	}
	old, err := r.trFor(a.b, pe).Atomic(c.q, op, elem.Size[T](), pe, off, toBits(v), toBits(cmp))
	r.leaveData(dk)
	return fromBits[T](old), r.apiErr(err, name)
}

// AtomicFetchAdd adds v to a[idx] on pe and returns the old value.
func AtomicFetchAdd[T Integer](a Array[T], idx int, v T, pe int) (T, error) {
	return amo(nil, "AtomicFetchAdd", transport.AMOAdd, true, a, idx, v, 0, pe)
}

// AtomicFetchAddCtx is AtomicFetchAdd on context c.
func AtomicFetchAddCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) (T, error) {
	return amo(c, "AtomicFetchAdd", transport.AMOAdd, true, a, idx, v, 0, pe)
}

// AtomicAdd adds v to a[idx] on pe.
func AtomicAdd[T Integer](a Array[T], idx int, v T, pe int) error {
	_, err := amo(nil, "AtomicAdd", transport.AMOAdd, true, a, idx, v, 0, pe)
	return err
}

// AtomicAddCtx is AtomicAdd on context c.
func AtomicAddCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) error {
	_, err := amo(c, "AtomicAdd", transport.AMOAdd, true, a, idx, v, 0, pe)
	return err
}

// AtomicFetchInc adds 1 to a[idx] on pe and returns the old value.
func AtomicFetchInc[T Integer](a Array[T], idx int, pe int) (T, error) {
	return amo(nil, "AtomicFetchInc", transport.AMOAdd, true, a, idx, 1, 0, pe)
}

// AtomicFetchIncCtx is AtomicFetchInc on context c.
func AtomicFetchIncCtx[T Integer](c *Ctx, a Array[T], idx int, pe int) (T, error) {
	return amo(c, "AtomicFetchInc", transport.AMOAdd, true, a, idx, 1, 0, pe)
}

// AtomicInc adds 1 to a[idx] on pe.
func AtomicInc[T Integer](a Array[T], idx int, pe int) error {
	_, err := amo(nil, "AtomicInc", transport.AMOAdd, true, a, idx, 1, 0, pe)
	return err
}

// AtomicIncCtx is AtomicInc on context c.
func AtomicIncCtx[T Integer](c *Ctx, a Array[T], idx int, pe int) error {
	_, err := amo(c, "AtomicInc", transport.AMOAdd, true, a, idx, 1, 0, pe)
	return err
}

// AtomicCompareSwap stores v into a[idx] on pe if it equals cond, and
// returns the old value either way (Ref: OpenSHMEM 1.6 §9.7.4).
func AtomicCompareSwap[T Integer](a Array[T], idx int, cond, v T, pe int) (T, error) {
	return amo(nil, "AtomicCompareSwap", transport.AMOCompareSwap, true, a, idx, v, cond, pe)
}

// AtomicCompareSwapCtx is AtomicCompareSwap on context c.
func AtomicCompareSwapCtx[T Integer](c *Ctx, a Array[T], idx int, cond, v T, pe int) (T, error) {
	return amo(c, "AtomicCompareSwap", transport.AMOCompareSwap, true, a, idx, v, cond, pe)
}

// AtomicSwap stores v into a[idx] on pe and returns the old value
// (floating-point types included).
func AtomicSwap[T Elem](a Array[T], idx int, v T, pe int) (T, error) {
	return amo(nil, "AtomicSwap", transport.AMOSwap, false, a, idx, v, 0, pe)
}

// AtomicSwapCtx is AtomicSwap on context c.
func AtomicSwapCtx[T Elem](c *Ctx, a Array[T], idx int, v T, pe int) (T, error) {
	return amo(c, "AtomicSwap", transport.AMOSwap, false, a, idx, v, 0, pe)
}

// AtomicFetch atomically reads a[idx] on pe (floating-point types included).
func AtomicFetch[T Elem](a Array[T], idx int, pe int) (T, error) {
	return amo(nil, "AtomicFetch", transport.AMOFetch, false, a, idx, 0, 0, pe)
}

// AtomicFetchCtx is AtomicFetch on context c.
func AtomicFetchCtx[T Elem](c *Ctx, a Array[T], idx int, pe int) (T, error) {
	return amo(c, "AtomicFetch", transport.AMOFetch, false, a, idx, 0, 0, pe)
}

// AtomicSet atomically writes v to a[idx] on pe (floating-point types included).
func AtomicSet[T Elem](a Array[T], idx int, v T, pe int) error {
	_, err := amo(nil, "AtomicSet", transport.AMOSet, false, a, idx, v, 0, pe)
	return err
}

// AtomicSetCtx is AtomicSet on context c.
func AtomicSetCtx[T Elem](c *Ctx, a Array[T], idx int, v T, pe int) error {
	_, err := amo(c, "AtomicSet", transport.AMOSet, false, a, idx, v, 0, pe)
	return err
}

// AtomicFetchAnd ands v into a[idx] on pe and returns the old value.
func AtomicFetchAnd[T Integer](a Array[T], idx int, v T, pe int) (T, error) {
	return amo(nil, "AtomicFetchAnd", transport.AMOAnd, true, a, idx, v, 0, pe)
}

// AtomicFetchAndCtx is AtomicFetchAnd on context c.
func AtomicFetchAndCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) (T, error) {
	return amo(c, "AtomicFetchAnd", transport.AMOAnd, true, a, idx, v, 0, pe)
}

// AtomicFetchOr ors v into a[idx] on pe and returns the old value.
func AtomicFetchOr[T Integer](a Array[T], idx int, v T, pe int) (T, error) {
	return amo(nil, "AtomicFetchOr", transport.AMOOr, true, a, idx, v, 0, pe)
}

// AtomicFetchOrCtx is AtomicFetchOr on context c.
func AtomicFetchOrCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) (T, error) {
	return amo(c, "AtomicFetchOr", transport.AMOOr, true, a, idx, v, 0, pe)
}

// AtomicFetchXor xors v into a[idx] on pe and returns the old value.
func AtomicFetchXor[T Integer](a Array[T], idx int, v T, pe int) (T, error) {
	return amo(nil, "AtomicFetchXor", transport.AMOXor, true, a, idx, v, 0, pe)
}

// AtomicFetchXorCtx is AtomicFetchXor on context c.
func AtomicFetchXorCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) (T, error) {
	return amo(c, "AtomicFetchXor", transport.AMOXor, true, a, idx, v, 0, pe)
}

// AtomicAnd ands v into a[idx] on pe (the non-fetching form of
// AtomicFetchAnd; likewise AtomicOr and AtomicXor).
func AtomicAnd[T Integer](a Array[T], idx int, v T, pe int) error {
	_, err := amo(nil, "AtomicAnd", transport.AMOAnd, true, a, idx, v, 0, pe)
	return err
}

// AtomicAndCtx is AtomicAnd on context c.
func AtomicAndCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) error {
	_, err := amo(c, "AtomicAnd", transport.AMOAnd, true, a, idx, v, 0, pe)
	return err
}

// AtomicOr ors v into a[idx] on pe.
func AtomicOr[T Integer](a Array[T], idx int, v T, pe int) error {
	_, err := amo(nil, "AtomicOr", transport.AMOOr, true, a, idx, v, 0, pe)
	return err
}

// AtomicXor xors v into a[idx] on pe.
func AtomicXor[T Integer](a Array[T], idx int, v T, pe int) error {
	_, err := amo(nil, "AtomicXor", transport.AMOXor, true, a, idx, v, 0, pe)
	return err
}

// AtomicOrCtx is AtomicOr on context c.
func AtomicOrCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) error {
	_, err := amo(c, "AtomicOr", transport.AMOOr, true, a, idx, v, 0, pe)
	return err
}

// AtomicXorCtx is AtomicXor on context c.
func AtomicXorCtx[T Integer](c *Ctx, a Array[T], idx int, v T, pe int) error {
	_, err := amo(c, "AtomicXor", transport.AMOXor, true, a, idx, v, 0, pe)
	return err
}
