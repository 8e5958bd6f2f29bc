package elem

import (
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reference implementations below work on values (float64 arithmetic
// and a search over every finite value of the format), not on bit fields,
// so they share no code or method with half.go.

// refF16Value is the value of binary16 bits h from its definition
// (Ref: IEEE 754-2019 §3.4): (-1)^s * 2^(e-15) * (1 + f/1024), subnormals
// (-1)^s * 2^-14 * (f/1024); e = 31 is infinity (f = 0) or NaN.
func refF16Value(h uint16) float64 {
	s, e, f := h>>15, int(h>>10&31), float64(h&1023)
	var v float64
	switch {
	case e == 31 && f == 0:
		v = math.Inf(1)
	case e == 31:
		v = math.NaN()
	case e == 0:
		v = math.Ldexp(f/1024, -14)
	default:
		v = math.Ldexp(1+f/1024, e-15)
	}
	if s == 1 {
		v = -v
	}
	return v
}

// f16Positives is every finite non-negative binary16 value in increasing
// order (bit patterns 0..0x7bff are increasing in value).
var f16Positives = func() []float64 {
	v := make([]float64, 0x7c00)
	for h := range v {
		v[h] = refF16Value(uint16(h))
	}
	return v
}()

// refF16Round rounds x to binary16 by searching the table: the nearest
// value, ties to the even bit pattern; past 65504 + half an ulp (65520)
// infinity, as IEEE's overflow rule (round as if the exponent were
// unbounded: the next value would be 65536).
func refF16Round(x float32) (uint16, bool) {
	v := float64(x)
	if math.IsNaN(v) {
		return 0, false
	}
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	if v >= 65520 {
		return sign | 0x7c00, true
	}
	i := sort.SearchFloat64s(f16Positives, v) // first >= v
	if i < len(f16Positives) && f16Positives[i] == v {
		return sign | uint16(i), true
	}
	if i == len(f16Positives) { // (65504, 65520): rounds down to 65504
		return sign | 0x7bff, true
	}
	lo, hi := f16Positives[i-1], f16Positives[i]
	switch dl, dh := v-lo, hi-v; {
	case dl < dh:
		return sign | uint16(i-1), true
	case dh < dl:
		return sign | uint16(i), true
	case (i-1)%2 == 0:
		return sign | uint16(i-1), true
	default:
		return sign | uint16(i), true
	}
}

// refBF16Round rounds x to bfloat16: the two bfloat16 neighbours of x are
// its float32 value truncated toward zero to 16 bits and the next one
// away from zero; the nearer wins, ties to even.
func refBF16Round(x float32) (uint16, bool) {
	if x != x {
		return 0, false
	}
	b := math.Float32bits(x)
	lo := b &^ 0xffff
	hiBits := uint64(lo) + 0x10000 // may step onto infinity: also a candidate
	v, vl := math.Abs(float64(x)), math.Abs(float64(math.Float32frombits(lo)))
	var vh float64
	if hiBits&0x7fffffff == 0x7f800000 {
		vh = math.Ldexp(1, 128) // where infinity sits for rounding (the overflow rule)
	} else {
		vh = math.Abs(float64(math.Float32frombits(uint32(hiBits))))
	}
	if math.IsInf(v, 0) {
		return uint16(b >> 16), true
	}
	switch dl, dh := v-vl, vh-v; {
	case dl < dh:
		return uint16(lo >> 16), true
	case dh < dl:
		return uint16(hiBits >> 16), true
	case (lo>>16)%2 == 0:
		return uint16(lo >> 16), true
	default:
		return uint16(hiBits >> 16), true
	}
}

func TestFloat16ToFloat32Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		got, want := Float16(h).Float32(), refF16Value(uint16(h))
		if math.IsNaN(want) {
			require.True(t, got != got, "%#04x: want NaN, got %v", h, got)
			assert.Equal(t, h&0x8000 != 0, math.Signbit(float64(got)), "%#04x: NaN sign", h)
			continue
		}
		require.Equal(t, want, float64(got), "%#04x", h)
		require.Equal(t, math.Signbit(want), math.Signbit(float64(got)), "%#04x: sign (of zero)", h)
	}
}

func TestBFloat16ToFloat32Exhaustive(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		got := BFloat16(b).Float32()
		s, e, f := b>>15, b>>7&255, float64(b&127)
		var want float64
		switch {
		case e == 255 && f != 0:
			require.True(t, got != got, "%#04x: want NaN", b)
			continue
		case e == 255:
			want = math.Inf(1)
		case e == 0:
			want = math.Ldexp(f/128, -126)
		default:
			want = math.Ldexp(1+f/128, e-127)
		}
		if s == 1 {
			want = -want
		}
		require.Equal(t, want, float64(got), "%#04x", b)
		require.Equal(t, math.Signbit(want), math.Signbit(float64(got)), "%#04x", b)
	}
}

// Every bit pattern survives the round trip through float32 (NaNs stay
// NaNs, quiet ones unchanged).
func TestHalfRoundTripExhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		x := Float16(h)
		y := Float16FromFloat32(x.Float32())
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			require.Equal(t, uint16(0x7c00), uint16(y)&0x7c00, "%#04x: NaN exponent", h)
			require.NotZero(t, uint16(y)&0x3ff, "%#04x: NaN stays NaN", h)
			require.Equal(t, h&0x8000, int(y)&0x8000, "%#04x: NaN sign", h)
			if h&0x200 != 0 {
				require.Equal(t, x, y, "%#04x: quiet NaN unchanged", h)
			}
		} else {
			require.Equal(t, x, y, "%#04x", h)
		}
		b := BFloat16(h)
		c := BFloat16FromFloat32(b.Float32())
		if h&0x7f80 == 0x7f80 && h&0x7f != 0 {
			require.True(t, c.Float32() != c.Float32(), "%#04x: bf16 NaN stays NaN", h)
			require.Equal(t, h&0x8000, int(c)&0x8000, "%#04x: bf16 NaN sign", h)
		} else {
			require.Equal(t, b, c, "%#04x", h)
		}
	}
}

// Rounding at every boundary: for each pair of adjacent binary16 values,
// their midpoint (a tie: to even), and the float32 neighbours of the
// midpoint (strictly nearer one side), in both signs.
func TestFloat16RoundingBoundaries(t *testing.T) {
	check := func(x float32) {
		want, ok := refF16Round(x)
		require.True(t, ok)
		got := Float16FromFloat32(x)
		require.Equal(t, want, uint16(got), "Float16FromFloat32(%g = %#08x)", x, math.Float32bits(x))
	}
	for h := 0; h < 0x7bff; h++ {
		lo, hi := f16Positives[h], f16Positives[h+1]
		mid := float32((lo + hi) / 2) // exact: 12 significant bits
		require.Equal(t, (lo+hi)/2, float64(mid))
		for _, x := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1))),
			float32(lo), math.Nextafter32(float32(lo), float32(math.Inf(1)))} {
			check(x)
			check(-x)
		}
	}
	// overflow: 65504 and up
	for _, x := range []float32{65504, 65519.996, 65520, 65536, 1e30, float32(math.Inf(1)), math.MaxFloat32} {
		check(x)
		check(-x)
	}
	// underflow: below the smallest subnormal (2^-24)
	for _, x := range []float32{0x1p-24, 0x1p-25, math.Nextafter32(0x1p-25, 1), math.Nextafter32(0x1p-25, 0), 0x1.8p-25,
		0x1p-26, 0x1p-149, 0} {
		check(x)
		check(-x)
	}
	assert.Equal(t, Float16(0x8000), Float16FromFloat32(float32(math.Copysign(0, -1))), "-0 keeps its sign")
	assert.Equal(t, Float16(0x7c00), Float16FromFloat32(65520), "65520 is the tie past 65504: infinity")
	assert.Equal(t, Float16(0x7bff), Float16FromFloat32(65519), "65519 rounds to 65504")
	assert.Equal(t, Float16(0x3c00), Float16FromFloat32(1))
	assert.Equal(t, Float16(0x3c00), Float16FromFloat32(1+0x1p-11), "tie 1 + half an ulp: to even (1)")
	assert.Equal(t, Float16(0x3c02), Float16FromFloat32(1+3*0x1p-11), "tie 1 + 1.5 ulp: to even (1 + 2 ulp)")
	assert.Equal(t, Float16(0x0001), Float16FromFloat32(0x1p-24), "smallest subnormal")
	assert.Equal(t, Float16(0x0000), Float16FromFloat32(0x1p-25), "half the smallest subnormal: tie to even (0)")
	assert.Equal(t, Float16(0x0400), Float16FromFloat32(0x1p-14), "smallest normal")
	assert.Equal(t, Float16(0x0400), Float16FromFloat32(math.Nextafter32(0x1p-14, 0)), "rounds up into the normals")
}

// Float16FromFloat32 and BFloat16FromFloat32 against the references on
// many float32 values: every exponent and sign with the rounding-relevant
// low bits fixed at their critical values, and random patterns.
func TestHalfFromFloat32Sampled(t *testing.T) {
	lows16 := []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000}   // binary16 drops 13 bits (normals)
	lowsBF := []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x18000, 0x10000} // bfloat16 drops 16
	for top := uint32(0); top < 1<<16; top++ {
		for _, lo := range lows16 {
			x := top<<16 | lo
			f := math.Float32frombits(x)
			if want, ok := refF16Round(f); ok {
				require.Equal(t, want, uint16(Float16FromFloat32(f)), "Float16FromFloat32(%#08x)", x)
			} else {
				require.True(t, Float16FromFloat32(f).Float32() != Float16FromFloat32(f).Float32(), "%#08x: NaN", x)
			}
		}
		for _, lo := range lowsBF {
			x := top<<16 | lo&0xffff
			f := math.Float32frombits(x)
			if want, ok := refBF16Round(f); ok {
				require.Equal(t, want, uint16(BFloat16FromFloat32(f)), "BFloat16FromFloat32(%#08x)", x)
			} else {
				g := BFloat16FromFloat32(f)
				require.True(t, g.Float32() != g.Float32(), "%#08x: NaN", x)
				require.Equal(t, x&0x80000000 != 0, g&0x8000 != 0, "%#08x: NaN sign", x)
			}
		}
	}
	rng := rand.New(rand.NewSource(17))
	for i := 0; i < 1<<20; i++ {
		x := rng.Uint32()
		f := math.Float32frombits(x)
		if want, ok := refF16Round(f); ok {
			require.Equal(t, want, uint16(Float16FromFloat32(f)), "Float16FromFloat32(%#08x)", x)
		}
		if want, ok := refBF16Round(f); ok {
			require.Equal(t, want, uint16(BFloat16FromFloat32(f)), "BFloat16FromFloat32(%#08x)", x)
		}
	}
}

// Subnormal binary16 results: every float32 in the subnormal range with
// the low bits at their critical values (the dropped part is 14 to 24 bits
// wide there).
func TestFloat16SubnormalRounding(t *testing.T) {
	for e := uint32(100); e <= 113; e++ {
		for hi := uint32(0); hi < 1<<12; hi++ {
			for _, lo := range []uint32{0, 1, 0x3ff, 0x400, 0x7ff} {
				x := e<<23 | hi<<11 | lo
				f := math.Float32frombits(x)
				want, _ := refF16Round(f)
				require.Equal(t, want, uint16(Float16FromFloat32(f)), "Float16FromFloat32(%#08x = %g)", x, f)
			}
		}
	}
}

func TestHalfNames(t *testing.T) {
	assert.Equal(t, "Float16", Name[Float16]())
	assert.Equal(t, "BFloat16", Name[BFloat16]())
	assert.True(t, IsFloat[Float16]())
	assert.True(t, IsFloat[BFloat16]())
	assert.False(t, IsFloat[uint16]())
	type myU16 uint16
	assert.False(t, IsFloat[myU16](), "a user type on uint16 is an integer")
	assert.Equal(t, KindFloat16, HalfKind[Float16]())
	assert.Equal(t, KindBFloat16, HalfKind[BFloat16]())
	assert.Equal(t, NotHalf, HalfKind[uint16]())
	assert.Equal(t, 2, Size[Float16]())
	assert.Equal(t, "1.5", Float16FromFloat32(1.5).String())
	assert.Equal(t, "-2", BFloat16FromFloat32(-2).String())
	assert.Equal(t, "65504", Float16(0x7bff).String())
}
