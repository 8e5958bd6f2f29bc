package shmem_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// waitGPUCaseEnv marks the child process that runs TestWaitSetGPUFakeCase.
const waitGPUCaseEnv = "GOSHMEM_TEST_WAITSET_GPU"

// TestWaitSetGPUFake: the multi-element waits and tests on a GPU array
// (AllocDevice) of a 1-PE job on the fake CUDA driver
// (internal/cgo/cuda/testdata/fakecuda.c). The driver is loaded once per
// process, so the case runs in a process of its own (this test binary
// again, TestWaitSetGPUFakeCase only).
func TestWaitSetGPUFake(t *testing.T) {
	runFakeGPUCase(t, waitGPUCaseEnv, "TestWaitSetGPUFakeCase")
}

// TestWaitSetGPUFakeCase is TestWaitSetGPUFake's case, in its own process.
func TestWaitSetGPUFakeCase(t *testing.T) {
	inFakeGPUCase(t, waitGPUCaseEnv, "TestWaitSetGPUFake")
	t.Run("results", func(t *testing.T) {
		start(t, shmem.WithTimeout(20*time.Second))
		a, err := shmem.AllocDevice[int64](8)
		require.NoError(t, err)
		require.True(t, a.OnDevice())
		require.NoError(t, shmem.Put(a, 0, []int64{5, 1, 2, 1, 0, 1, 4, 5}, 0))
		// The set a[1:7] = 1 2 1 0 1 4.
		ok, err := shmem.TestAll(a, 1, 6, []bool{false, true, false, true, false, true}, shmem.CmpEQ, 1)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = shmem.TestAllVector(a, 1, 6, nil, shmem.CmpLE, []int64{1, 2, 1, 0, 1, 3})
		require.NoError(t, err)
		assert.False(t, ok)
		some, err := shmem.TestSome(a, 1, 6, nil, shmem.CmpEQ, 1)
		require.NoError(t, err)
		assert.Equal(t, []int{0, 2, 4}, some)
		i, ok, err := shmem.TestAny(a, 1, 6, nil, shmem.CmpGT, 3)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, 5, i)
		seen := map[int]int{}
		for range anyCalls {
			i, err := shmem.WaitUntilAny(a, 1, 6, nil, shmem.CmpEQ, 1)
			require.NoError(t, err)
			seen[i]++
		}
		assert.Equal(t, []int{0, 2, 4}, sortedKeys(seen))
		some, err = shmem.WaitUntilSomeVector(a, 1, 6, nil, shmem.CmpGE, []int64{9, 9, 1, 9, 9, 4})
		require.NoError(t, err)
		assert.Equal(t, []int{2, 5}, some)

		// Woken: another goroutine sets the elements still waited for.
		done := make(chan error, 1)
		go func() {
			time.Sleep(time.Millisecond)
			if err := shmem.AtomicSet(a, 4, 1, 0); err != nil {
				done <- err
				return
			}
			time.Sleep(time.Millisecond)
			done <- shmem.Put(a, 2, []int64{1}, 0)
		}()
		require.NoError(t, shmem.WaitUntilAll(a, 1, 6, []bool{false, false, false, false, false, true}, shmem.CmpEQ, 1))
		require.NoError(t, <-done)
		require.NoError(t, a.Free())
	})
	t.Run("timeout", func(t *testing.T) {
		start(t, shmem.WithTimeout(30*time.Millisecond))
		a, err := shmem.AllocDevice[uint32](4)
		require.NoError(t, err)
		_, err = shmem.WaitUntilAny(a, 0, 4, nil, shmem.CmpEQ, 3)
		require.ErrorIs(t, err, shmem.ErrTimeout)
		assert.Contains(t, err.Error(), "any of GPU array a[0:4] == 3 (uint32)")
		assert.Contains(t, err.Error(), "a[0] = 0, a[1] = 0, a[2] = 0, a[3] = 0")
		require.NoError(t, a.Free())
	})
}
