package shmem_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

func TestHalfConversions(t *testing.T) {
	assert.Equal(t, shmem.Float16(0x3c00), shmem.Float16FromFloat32(1))
	assert.Equal(t, shmem.Float16(0xc000), shmem.Float16FromFloat32(-2))
	assert.Equal(t, shmem.Float16(0x7bff), shmem.Float16FromFloat32(65504))
	assert.Equal(t, shmem.Float16(0x7c00), shmem.Float16FromFloat32(1e6), "overflow: +Inf")
	assert.Equal(t, shmem.Float16(0x0001), shmem.Float16FromFloat32(0x1p-24), "smallest subnormal")
	assert.Equal(t, float32(0.333251953125), shmem.Float16FromFloat32(1.0/3).Float32())
	assert.Equal(t, shmem.BFloat16(0x3f80), shmem.BFloat16FromFloat32(1))
	assert.Equal(t, shmem.BFloat16(0x3eab), shmem.BFloat16FromFloat32(1.0/3), "0x3eaaaaab rounds up")
	assert.Equal(t, float32(3.140625), shmem.BFloat16FromFloat32(math.Pi).Float32())
	nan := shmem.Float16FromFloat32(float32(math.NaN()))
	assert.True(t, math.IsNaN(float64(nan.Float32())))
	assert.Equal(t, "0.5", fmt.Sprint(shmem.Float16FromFloat32(0.5)), "a Float16 prints as its value")
}

// halfCalls runs every host call that takes float32 on a half type T
// (1 PE): RMA, strided, atomics of every Elem, waits and tests on values,
// Reduce (float32 accumulation), scans, collect and the data collectives;
// and checks that the integer-only calls refuse it as they refuse float32.
func halfCalls[T shmem.Float16 | shmem.BFloat16](t *testing.T, of func(float32) T) {
	start(t)
	a := alloc[T](t, 64)
	b := alloc[T](t, 64)
	vals := make([]T, 16)
	for i := range vals {
		vals[i] = of(float32(i) - 7.5)
	}
	// RMA
	require.NoError(t, shmem.Put(a, 1, vals, 0))
	got := make([]T, 16)
	require.NoError(t, shmem.Get(got, a, 1, 0))
	assert.Equal(t, vals, got)
	require.NoError(t, shmem.PutNBI(a, 20, vals[:3], 0))
	require.NoError(t, shmem.Quiet())
	assert.Equal(t, vals[:3], a.Local()[20:23])
	require.NoError(t, shmem.P(a, 0, of(0.25), 0))
	g, err := shmem.G(a, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, of(0.25), g)
	// strided
	require.NoError(t, shmem.IPut(b, 0, 2, vals, 3, 5, 0))
	for k := 0; k < 5; k++ {
		assert.Equal(t, vals[3*k], b.Local()[2*k], "IPut element %d", k)
	}
	sg := make([]T, 5)
	require.NoError(t, shmem.IGet(sg, 1, b, 0, 2, 5, 0))
	for k := 0; k < 5; k++ {
		assert.Equal(t, vals[3*k], sg[k], "IGet element %d", k)
	}
	// the extended atomics take every Elem
	require.NoError(t, shmem.AtomicSet(a, 40, of(1.5), 0))
	old, err := shmem.AtomicSwap(a, 40, of(-3), 0)
	require.NoError(t, err)
	assert.Equal(t, of(1.5), old)
	f, err := shmem.AtomicFetch(a, 40, 0)
	require.NoError(t, err)
	assert.Equal(t, of(-3), f)
	// the integer-only ones refuse half types, as they refuse float32
	_, err = shmem.AtomicFetchAdd(a, 40, of(1), 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "integer types only")
	require.ErrorIs(t, shmem.AtomicInc(a, 40, 0), shmem.ErrInvalidArgument)
	_, err = shmem.AtomicCompareSwap(a, 40, of(-3), of(2), 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	require.ErrorIs(t, shmem.AtomicXor(a, 40, of(2), 0), shmem.ErrInvalidArgument)
	assert.Equal(t, of(-3), a.Local()[40], "a refused atomic changed nothing")

	// waits and tests compare values, not bit patterns: -2 < 1 although
	// its bits are larger; -0 == +0; NaN is unequal to itself
	a.Local()[50] = of(-2)
	for _, c := range []struct {
		cmp  shmem.Cmp
		v    float32
		want bool
	}{
		{shmem.CmpLT, 1, true}, {shmem.CmpGT, 1, false}, {shmem.CmpGE, -2, true}, {shmem.CmpLE, -2.5, false},
		{shmem.CmpNE, -2, false}, {shmem.CmpEQ, -2, true}, {shmem.CmpGT, -3, true},
	} {
		ok, err := shmem.TestCmp(a, 50, c.cmp, of(c.v))
		require.NoError(t, err)
		assert.Equal(t, c.want, ok, "-2 %v %v", c.cmp, c.v)
	}
	require.NoError(t, shmem.WaitUntil(a, 50, shmem.CmpLT, of(0)))
	a.Local()[51] = of(float32(math.Copysign(0, -1)))
	ok, err := shmem.TestCmp(a, 51, shmem.CmpEQ, of(0))
	require.NoError(t, err)
	assert.True(t, ok, "-0 == +0")
	a.Local()[52] = of(float32(math.NaN()))
	ok, err = shmem.TestCmp(a, 52, shmem.CmpEQ, a.Local()[52])
	require.NoError(t, err)
	assert.False(t, ok, "NaN != NaN")
	ok, err = shmem.TestCmp(a, 52, shmem.CmpNE, a.Local()[52])
	require.NoError(t, err)
	assert.True(t, ok)
	a.Local()[53], a.Local()[54] = of(4), of(-4)
	i, err := shmem.WaitUntilAny(a, 53, 2, nil, shmem.CmpLT, of(0))
	require.NoError(t, err)
	assert.Equal(t, 1, i, "-4 < 0 (index 1 of the set)")
	all, err := shmem.TestAll(a, 53, 2, nil, shmem.CmpGT, of(-5))
	require.NoError(t, err)
	assert.True(t, all)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = shmem.TestCmp(a, 50, shmem.CmpLT, of(0))
		_ = shmem.WaitUntil(a, 53, shmem.CmpGT, of(0))
	}), "waits and tests on half types allocate nothing")

	// collectives (one PE: the results are the PE's own, rounded)
	src, dst := alloc[T](t, 16), alloc[T](t, 16)
	copy(src.Local(), vals)
	for _, op := range []shmem.Op{shmem.OpSum, shmem.OpProd, shmem.OpMin, shmem.OpMax} {
		require.NoError(t, shmem.Reduce(shmem.TeamWorld, op, dst, src, 16), "%v", op)
		assert.Equal(t, vals, dst.Local(), "%v", op)
	}
	err = shmem.Reduce(shmem.TeamWorld, shmem.OpAnd, dst, src, 16)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "floating point")
	require.NoError(t, shmem.SumInScan(shmem.TeamWorld, dst, src, 16))
	assert.Equal(t, vals, dst.Local())
	require.NoError(t, shmem.SumExScan(shmem.TeamWorld, dst, src, 16))
	assert.Equal(t, make([]T, 16), dst.Local(), "exclusive scan on member 0: zeros")
	require.NoError(t, shmem.Broadcast(shmem.TeamWorld, dst, src, 16, 0))
	assert.Equal(t, vals, dst.Local())
	clear(dst.Local())
	require.NoError(t, shmem.FCollect(shmem.TeamWorld, dst, src, 7))
	assert.Equal(t, vals[:7], dst.Local()[:7])
	clear(dst.Local())
	require.NoError(t, shmem.Collect(shmem.TeamWorld, dst, src, 5))
	assert.Equal(t, vals[:5], dst.Local()[:5])
	clear(dst.Local())
	require.NoError(t, shmem.AllToAll(shmem.TeamWorld, dst, src, 9))
	assert.Equal(t, vals[:9], dst.Local()[:9])
}

func TestFloat16Calls(t *testing.T)  { halfCalls(t, shmem.Float16FromFloat32) }
func TestBFloat16Calls(t *testing.T) { halfCalls(t, shmem.BFloat16FromFloat32) }
