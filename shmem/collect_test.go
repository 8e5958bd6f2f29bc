package shmem_test

import (
	stderrors "errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// The collectives of OpenSHMEM 1.6 on a 1-PE job: each is then a copy (or
// zeros, for the exclusive scan), and every argument error is reported.
func TestCollectives16OnePE(t *testing.T) {
	start(t)
	w := shmem.TeamWorld
	src, dst := alloc[int64](t, 12), alloc[int64](t, 13)
	s, d := src.Local(), dst.Local()
	for i := range s {
		s[i] = int64(10 + i)
	}
	reset := func() {
		for i := range d {
			d[i] = -1
		}
	}

	for _, n := range []int{0, 1, 5, 12} {
		reset()
		require.NoError(t, shmem.Collect(w, dst, src, n))
		assert.Equal(t, s[:n], d[:n], "Collect n=%d", n)
		assert.Equal(t, int64(-1), d[n], "Collect n=%d: past the block", n)
	}

	reset()
	require.NoError(t, shmem.AllToAllStrided(w, dst, src, 3, 2, 4))
	assert.Equal(t, []int64{10, -1, -1, 12, -1, -1, 14, -1, -1, 16, -1, -1, -1}, d, "AllToAllStrided dst stride 3, src stride 2")

	reset()
	require.NoError(t, shmem.SumInScan(w, dst, src, 7))
	assert.Equal(t, s[:7], d[:7], "SumInScan of one member")
	assert.Equal(t, int64(-1), d[7])
	reset()
	require.NoError(t, shmem.SumExScan(w, dst, src, 7))
	assert.Equal(t, make([]int64, 7), d[:7], "SumExScan of one member: zeros")
	assert.Equal(t, int64(-1), d[7])
	f := alloc[float32](t, 3)
	copy(f.Local(), []float32{0.5, 1.5, -2})
	require.NoError(t, shmem.SumInScan(w, f, f, 3), "in place")
	assert.Equal(t, []float32{0.5, 1.5, -2}, f.Local())

	is := func(err, sentinel error, contains ...string) {
		t.Helper()
		if assert.True(t, stderrors.Is(err, sentinel), "%v, want %v", err, sentinel) {
			for _, c := range contains {
				assert.Contains(t, err.Error(), c)
			}
		}
	}
	is(shmem.Collect(w, dst, src, 13), shmem.ErrOutOfBounds, "PE 0: Collect: n = 13; src has 12 elements (n must be in [0, 12])")
	is(shmem.Collect(w, dst, src, -1), shmem.ErrInvalidArgument, "n = -1; must be >= 0")
	small := alloc[int64](t, 2)
	is(shmem.Collect(w, small, src, 3), shmem.ErrOutOfBounds, "dst needs 3 elements (the sum of every member's n), has 2")
	is(shmem.AllToAllStrided(w, dst, src, 0, 1, 1), shmem.ErrInvalidArgument, "dstStride = 0; must be >= 1")
	require.NoError(t, shmem.AllToAllStrided(w, dst, src, 1, 5, 3), "src spans (3 - 1) * 5 + 1 = 11 of its 12 elements")
	is(shmem.AllToAllStrided(w, dst, src, 1, 6, 3), shmem.ErrOutOfBounds, "src needs 13 elements ((1 members * n 3 - 1) * srcStride 6 + 1), has 12")
	is(shmem.AllToAllStrided(w, dst, src, 1, 1, -2), shmem.ErrInvalidArgument, "n = -2")
	is(shmem.SumInScan(w, dst, src, 13), shmem.ErrOutOfBounds, "src needs 13 elements, has 12")
	is(shmem.SumExScan(shmem.TeamInvalid, dst, src, 1), shmem.ErrInvalidArgument, "not valid on this PE")
	require.NoError(t, small.Free())
	is(shmem.Collect(w, small, src, 1), shmem.ErrInvalidArgument, "use after Free")
	require.NoError(t, f.Free())
	require.NoError(t, dst.Free())
	require.NoError(t, src.Free())
	usable(t)
}

func TestCollectives16BeforeInit(t *testing.T) {
	var a shmem.Array[int32]
	for name, err := range map[string]error{
		"Collect":         shmem.Collect(shmem.TeamWorld, a, a, 1),
		"AllToAllStrided": shmem.AllToAllStrided(shmem.TeamWorld, a, a, 1, 1, 1),
		"SumInScan":       shmem.SumInScan(shmem.TeamWorld, a, a, 1),
		"SumExScan":       shmem.SumExScan(shmem.TeamWorld, a, a, 1),
	} {
		assert.ErrorIs(t, err, shmem.ErrNotInitialized, name)
	}
}
