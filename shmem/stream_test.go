package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
	"github.com/goshmem/goshmem/shmem"
)

// Before Init every stream-ordered call says so, and StreamFromHandle's
// stream reports it at use.
func TestOnStreamBeforeInit(t *testing.T) {
	var a shmem.Array[int64]
	var sig shmem.Array[uint64]
	s := shmem.StreamFromHandle(0)
	require.NotNil(t, s)
	assert.Zero(t, s.Handle())
	for name, err := range map[string]error{
		"PutOnStream":             shmem.PutOnStream(nil, a, 0, a, 0, 1, 0),
		"GetOnStream":             shmem.GetOnStream(s, a, 0, a, 0, 1, 0),
		"PutSignalOnStream":       shmem.PutSignalOnStream(nil, a, 0, a, 0, 1, sig, 0, 1, shmem.SignalSet, 0),
		"SignalWaitUntilOnStream": shmem.SignalWaitUntilOnStream(nil, sig, 0, shmem.CmpEQ, 1),
		"QuietOnStream":           shmem.QuietOnStream(s),
		"BarrierAllOnStream":      shmem.BarrierAllOnStream(nil),
		"SyncAllOnStream":         shmem.SyncAllOnStream(nil),
		"BarrierOnStream":         shmem.TeamWorld.BarrierOnStream(nil),
		"SyncOnStream":            shmem.TeamWorld.SyncOnStream(nil),
		"ReduceOnStream":          shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, a, a, 1),
		"ReduceScatterOnStream":   shmem.ReduceScatterOnStream(nil, shmem.TeamWorld, shmem.OpSum, a, a, 1),
		"BroadcastOnStream":       shmem.BroadcastOnStream(nil, shmem.TeamWorld, a, a, 1, 0),
		"FCollectOnStream":        shmem.FCollectOnStream(nil, shmem.TeamWorld, a, a, 1),
		"AllToAllOnStream":        shmem.AllToAllOnStream(nil, shmem.TeamWorld, a, a, 1),
		"Stream.Synchronize":      s.Synchronize(),
	} {
		assert.ErrorIs(t, err, shmem.ErrNotInitialized, name)
	}
	assert.NoError(t, s.Destroy())
}

// Without a GPU heap the calls return ErrNotSupported, before looking at
// their arrays.
func TestOnStreamNoGPU(t *testing.T) {
	start(t)
	h := alloc[int64](t, 4)
	assert.ErrorIs(t, shmem.PutOnStream(nil, h, 0, h, 0, 1, 0), shmem.ErrNotSupported)
	assert.ErrorIs(t, shmem.BarrierAllOnStream(nil), shmem.ErrNotSupported)
	assert.ErrorIs(t, shmem.TeamWorld.SyncOnStream(nil), shmem.ErrNotSupported)
	assert.ErrorIs(t, shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, h, h, 1), shmem.ErrNotSupported)
	s := shmem.StreamFromHandle(0)
	assert.ErrorIs(t, shmem.QuietOnStream(s), shmem.ErrNotSupported)
	// the host collectives keep working on host arrays
	require.NoError(t, shmem.Reduce(shmem.TeamWorld, shmem.OpSum, h, h, 4))
}

const streamGPUCaseEnv = "GOSHMEM_TEST_STREAM_GPU"

// TestOnStreamGPUFake: the on-stream calls in a 1-PE job on the fake CUDA
// driver, which runs the embedded kernel library's host build (the fake's
// streams are synchronous); in a process of its own, as the driver loads
// once per process.
func TestOnStreamGPUFake(t *testing.T) {
	runFakeGPUCase(t, streamGPUCaseEnv, "TestOnStreamGPUFakeCase")
}

// TestOnStreamGPUFakeCase is TestOnStreamGPUFake's case.
func TestOnStreamGPUFakeCase(t *testing.T) {
	inFakeGPUCase(t, streamGPUCaseEnv, "TestOnStreamGPUFake")
	testutil.FakeLib(t) // what importing the gpulib module does
	start(t)
	x, err := shmem.AllocDevice[float64](9)
	require.NoError(t, err)
	y, err := shmem.AllocDevice[float64](9)
	require.NoError(t, err)
	sig, err := shmem.AllocDevice[uint64](1)
	require.NoError(t, err)
	require.NoError(t, shmem.Put(x, 0, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0))
	s, err := shmem.NewStream()
	require.NoError(t, err)
	require.NoError(t, shmem.PutOnStream(s, y, 1, x, 0, 8, 0))
	require.NoError(t, shmem.PutSignalOnStream(s, y, 0, x, 8, 1, sig, 0, 3, shmem.SignalAdd, 0))
	require.NoError(t, shmem.SignalWaitUntilOnStream(s, sig, 0, shmem.CmpEQ, 3))
	require.NoError(t, shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpMax, x, y, 9))
	require.NoError(t, shmem.BarrierAllOnStream(s))
	require.NoError(t, s.Synchronize())
	got := make([]float64, 9)
	require.NoError(t, shmem.Get(got, x, 0, 0))
	assert.Equal(t, []float64{9, 1, 2, 3, 4, 5, 6, 7, 8}, got)
	// the blocking form on GPU arrays
	require.NoError(t, shmem.Broadcast(shmem.TeamWorld, y, x, 9, 0))
	require.NoError(t, shmem.Get(got, y, 0, 0))
	assert.Equal(t, []float64{9, 1, 2, 3, 4, 5, 6, 7, 8}, got)
	require.NoError(t, s.Destroy())
	assert.ErrorIs(t, shmem.QuietOnStream(s), shmem.ErrInvalidArgument, "a destroyed stream")
	assert.ErrorIs(t, s.Synchronize(), shmem.ErrInvalidArgument, "a destroyed stream")
}
