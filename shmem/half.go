package shmem

import "github.com/goshmem/goshmem/internal/elem"

// Float16 is an IEEE 754 binary16 number held as its bit pattern (CUDA's
// half, NVSHMEM's half type): an Elem usable wherever float32 is. Every
// call treats it as a floating-point number: Reduce sums, multiplies and
// compares values (each element accumulated in float32 over the team and
// rounded once), the waits and tests compare values, and the integer-only
// atomics and bitwise reductions refuse it as they refuse float32. Go
// arithmetic on a Float16 value is on the bits: convert with Float32 and
// Float16FromFloat32.
type Float16 = elem.Float16

// BFloat16 is a bfloat16 number held as its bit pattern (the top half of a
// float32; CUDA's __nv_bfloat16, NVSHMEM's bfloat16 type), an Elem treated
// as floating point exactly as Float16 is.
type BFloat16 = elem.BFloat16

// Float16FromFloat32 rounds f to the nearest Float16, ties to even:
// beyond ±65504 (from ±65520 on) to ±infinity, below the smallest
// subnormal (2^-24) to a subnormal or zero, sign kept; a NaN stays a quiet
// NaN. (h Float16).Float32() converts back exactly.
func Float16FromFloat32(f float32) Float16 { return elem.Float16FromFloat32(f) }

// BFloat16FromFloat32 rounds f to the nearest BFloat16, ties to even
// (overflow to infinity; a NaN stays a quiet NaN). (b BFloat16).Float32()
// converts back exactly.
func BFloat16FromFloat32(f float32) BFloat16 { return elem.BFloat16FromFloat32(f) }

// compareHalf is compare for Float16/BFloat16 (kind: elem.HalfKind): on
// the values, so NaN compares unequal to everything and -0 == +0.
func compareHalf(kind int, x, v uint16, c Cmp) bool {
	var a, b float32
	if kind == elem.KindFloat16 {
		a, b = Float16(x).Float32(), Float16(v).Float32()
	} else {
		a, b = BFloat16(x).Float32(), BFloat16(v).Float32()
	}
	return compare(a, c, b)
}
