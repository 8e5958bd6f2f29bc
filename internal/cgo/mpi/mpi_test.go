package mpi

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNumberByFirstAppearance(t *testing.T) {
	tests := []struct {
		name string
		keys []int
		want []int
	}{
		{"empty", []int{}, []int{}},
		{"one", []int{5}, []int{0}},
		{"one node", []int{0, 0, 0, 0}, []int{0, 0, 0, 0}},
		{"blocked", []int{0, 0, 2, 2}, []int{0, 0, 1, 1}},
		{"round robin", []int{0, 1, 0, 1}, []int{0, 1, 0, 1}},
		{"unsorted keys", []int{7, 7, 3, 7, 3, 9}, []int{0, 0, 1, 0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NumberByFirstAppearance(tt.keys))
		})
	}
}

func TestThreadLevelName(t *testing.T) {
	assert.Less(t, ThreadSingle, ThreadFunneled)
	assert.Less(t, ThreadFunneled, ThreadSerialized)
	assert.Less(t, ThreadSerialized, ThreadMultiple)
	assert.Equal(t, "MPI_THREAD_SINGLE", ThreadLevelName(ThreadSingle))
	assert.Equal(t, "MPI_THREAD_FUNNELED", ThreadLevelName(ThreadFunneled))
	assert.Equal(t, "MPI_THREAD_SERIALIZED", ThreadLevelName(ThreadSerialized))
	assert.Equal(t, "MPI_THREAD_MULTIPLE", ThreadLevelName(ThreadMultiple))
	assert.Equal(t, "MPI_THREAD_42", ThreadLevelName(42))
}

// TestSingleton runs the whole binding as a 1-process MPI job (the test
// binary is not under mpirun, so MPI_Init_thread makes a singleton). All
// calls stay on one locked OS thread, as MPI_THREAD_FUNNELED requires.
// Multi-rank behaviour is covered by bootstrap/mpi's mpirun tests.
func TestSingleton(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	ok, err := Initialized()
	require.NoError(t, err)
	require.False(t, ok, "MPI already initialized in this test binary")

	provided, err := InitThread(ThreadFunneled)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, provided, ThreadFunneled, "provided %s", ThreadLevelName(provided))

	ok, err = Initialized()
	require.NoError(t, err)
	assert.True(t, ok)

	rank, err := Rank()
	require.NoError(t, err)
	assert.Equal(t, 0, rank)
	size, err := Size()
	require.NoError(t, err)
	assert.Equal(t, 1, size)

	require.NoError(t, Barrier())

	out := make([]byte, 3)
	require.NoError(t, Allgather([]byte("abc"), out))
	assert.Equal(t, []byte("abc"), out)
	require.NoError(t, Allgather(nil, nil))

	err = Allgather([]byte("abc"), make([]byte, 2))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mpi: MPI_Allgather: out holds 2 bytes, want 3")

	buf := []byte{1, 2, 3}
	require.NoError(t, Bcast(buf, 0))
	assert.Equal(t, []byte{1, 2, 3}, buf)

	// A bad root is an MPI error returned (MPI_ERRORS_RETURN), with MPI's text.
	err = Bcast(buf, 5)
	require.Error(t, err)
	assert.Regexp(t, `^mpi: MPI_Bcast: .*\(error code \d+\)$`, err.Error())

	nodes, err := NodeIDs()
	require.NoError(t, err)
	assert.Equal(t, []int{0}, nodes)

	require.NoError(t, Finalize())
	fin, err := Finalized()
	require.NoError(t, err)
	assert.True(t, fin)
}
