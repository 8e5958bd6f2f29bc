package shmem_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
	"github.com/goshmem/goshmem/shmem"
)

// Every test here is a 1-PE job: shmem.Init without mpirun bootstraps a
// job of one PE in-process, and Init/Finalize may be repeated.

// testHeap keeps Init cheap (the default is 1 GiB, reserved sparsely).
const testHeap = 8 << 20

func TestMain(m *testing.M) {
	// A test binary started by mpirun would make Init choose MPI.
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"} {
		if _, ok := os.LookupEnv(k); ok {
			fmt.Fprintf(os.Stderr, "shmem tests are 1-PE unit tests; run them without mpirun (%s is set)\n", k)
			os.Exit(2)
		}
	}
	// The fake CUDA driver of the gpu tests: built once, on first use.
	removeFake := testutil.ShareFakeCUDA()
	code := m.Run()
	removeFake()
	// Leak check: after Finalize nothing of this process refers to
	// /dev/shm (no heap region's descriptor or mapping is left).
	if leaked := testutil.ShmLeaks("/dev/shm"); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "leaked shared-memory regions: %v\n", leaked)
		code = 1
	}
	if shmem.MyPE() != -1 {
		fmt.Fprintln(os.Stderr, "a test left goshmem initialized")
		code = 1
	}
	os.Exit(code)
}

// start initializes a 1-PE job for one test and finalizes it afterwards.
func start(t testing.TB, opts ...shmem.Option) {
	t.Helper()
	opts = append([]shmem.Option{shmem.WithSymmetricSize(testHeap)}, opts...)
	require.NoError(t, shmem.Init(opts...))
	t.Cleanup(func() { require.NoError(t, shmem.Finalize()) })
}

// alloc is Alloc that must succeed.
func alloc[T shmem.Elem](t testing.TB, n int) shmem.Array[T] {
	t.Helper()
	a, err := shmem.Alloc[T](n)
	require.NoError(t, err)
	require.Equal(t, n, a.Len())
	return a
}

// usable checks the runtime still works: an allocation, a put/get round
// trip, an atomic and a barrier.
func usable(t *testing.T) {
	t.Helper()
	a := alloc[int64](t, 4)
	require.NoError(t, shmem.Put(a, 1, []int64{11, 22}, 0))
	got := make([]int64, 4)
	require.NoError(t, shmem.Get(got, a, 0, 0))
	require.Equal(t, []int64{0, 11, 22, 0}, got)
	old, err := shmem.AtomicFetchAdd(a, 3, 5, 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), old)
	require.NoError(t, shmem.BarrierAll())
	require.NoError(t, a.Free())
}
