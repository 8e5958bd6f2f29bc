package elem

import (
	"math"
	"strconv"
)

// Float16 is an IEEE 754 binary16 number held as its bit pattern (1 sign,
// 5 exponent, 10 fraction bits): CUDA's half. Arithmetic on the Go type is
// on the bits; convert with Float32 and Float16FromFloat32.
type Float16 uint16

// BFloat16 is a bfloat16 number held as its bit pattern (1 sign, 8
// exponent, 7 fraction bits: the top half of a float32): CUDA's
// __nv_bfloat16.
type BFloat16 uint16

// Half kinds (HalfKind).
const (
	NotHalf = iota
	KindFloat16
	KindBFloat16
)

// HalfKind reports whether T is Float16 or BFloat16 (exactly those types:
// another type defined on uint16 is an integer).
func HalfKind[T Elem]() int {
	var z T
	switch any(z).(type) {
	case Float16:
		return KindFloat16
	case BFloat16:
		return KindBFloat16
	}
	return NotHalf
}

// Float32 is h's value (exact: every binary16 value is a float32).
func (h Float16) Float32() float32 { return math.Float32frombits(f16ToF32Bits(uint16(h))) }

// String formats h's value as strconv.FormatFloat(x, 'g', -1, 32) does.
func (h Float16) String() string { return strconv.FormatFloat(float64(h.Float32()), 'g', -1, 32) }

// Float16FromFloat32 rounds f to the nearest binary16 value, ties to even:
// values beyond the largest finite one (65504) round to infinity, tiny ones
// to subnormals or zero (sign kept); a NaN stays a NaN (quiet, sign and top
// payload bits kept).
func Float16FromFloat32(f float32) Float16 { return Float16(f32BitsToF16(math.Float32bits(f))) }

// Float32 is b's value (exact).
func (b BFloat16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// String formats b's value as strconv.FormatFloat(x, 'g', -1, 32) does.
func (b BFloat16) String() string { return strconv.FormatFloat(float64(b.Float32()), 'g', -1, 32) }

// BFloat16FromFloat32 rounds f to the nearest bfloat16 value, ties to even
// (overflow to infinity; a NaN stays a quiet NaN with its sign).
func BFloat16FromFloat32(f float32) BFloat16 {
	x := math.Float32bits(f)
	if x&0x7fffffff > 0x7f800000 { // NaN: keep the sign and top payload, set the quiet bit
		return BFloat16(x>>16 | 0x0040)
	}
	// Round to nearest even on the 16 dropped bits: adding 0x7fff plus the
	// kept lsb carries into the kept half exactly when the dropped part is
	// above half, or half with an odd kept part (a carry out of the
	// fraction raises the exponent, up to infinity: also correct).
	return BFloat16((x + 0x7fff + (x>>16)&1) >> 16)
}

// f16ToF32Bits widens binary16 bits to float32 bits.
func f16ToF32Bits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf, NaN (payload kept in the top fraction bits)
		return sign | 0x7f800000 | frac<<13
	case exp != 0: // normal: rebias 15 -> 127
		return sign | (exp+112)<<23 | frac<<13
	case frac == 0:
		return sign
	}
	// subnormal: frac * 2^-24; normalise it
	e := uint32(113) // exponent field of 2^-14
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return sign | e<<23 | (frac&0x3ff)<<13
}

// f32BitsToF16 narrows float32 bits to binary16 bits, rounding to nearest
// even.
func f32BitsToF16(x uint32) uint16 {
	sign := uint16(x>>16) & 0x8000
	a := x & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN: quiet, top payload bits kept
		return sign | 0x7e00 | uint16(a>>13)&0x3ff
	case a >= 0x477ff000: // >= 65520 (halfway past 65504) or Inf: infinity
		return sign | 0x7c00
	case a >= 0x38800000: // normal result (|f| >= 2^-14)
		// rebias the exponent, then round on the 13 dropped bits; a carry
		// out of the fraction raises the exponent correctly
		m := a - 0x38000000 // exponent 127 -> 15
		return sign | uint16((m+0x0fff+(m>>13)&1)>>13)
	case a < 0x33000000: // < 2^-25 (half the smallest subnormal): zero
		return sign
	}
	// subnormal result: value = m * 2^-24 with m = significand >> shift
	e := a >> 23
	sig := a&0x7fffff | 0x800000 // 24 bits, value sig * 2^(e-150)
	shift := 126 - e             // q counts units of 2^-24: sig * 2^(e-150) / 2^-24 = sig >> (126 - e)
	q := sig >> shift
	rem := sig & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++ // may reach 0x400: the smallest normal, also correct
	}
	return sign | uint16(q)
}
