package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
	"github.com/goshmem/goshmem/shmem"
)

// finalizeGPUCaseEnv marks the child process that runs
// TestFinalizeSettlesGPUFakeCase.
const finalizeGPUCaseEnv = "GOSHMEM_TEST_FINALIZE_GPU"

// TestFinalizeSettlesGPUFake: a kernel the program launched and never
// synchronized that traps is Finalize's error (Finalize waits for the
// GPU's queued work before the heaps go), on the fake CUDA driver in a
// process of its own.
func TestFinalizeSettlesGPUFake(t *testing.T) {
	runFakeGPUCase(t, finalizeGPUCaseEnv, "TestFinalizeSettlesGPUFakeCase")
}

// TestFinalizeSettlesGPUFakeCase is TestFinalizeSettlesGPUFake's case.
func TestFinalizeSettlesGPUFakeCase(t *testing.T) {
	inFakeGPUCase(t, finalizeGPUCaseEnv, "TestFinalizeSettlesGPUFake")
	testutil.FakeLib(t) // what importing the gpulib module does
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
	// The fake runs the kernel at the launch; its trap is pending for the
	// next synchronization, which the program never does.
	require.NoError(t, shmem.LaunchTrappingBarrier())
	err := shmem.Finalize()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "goshmem: PE 0: Finalize: a kernel trapped")
	assert.Contains(t, err.Error(), `(last kernel launched: "goshmemi_lib_barrier"`)
	assert.ErrorIs(t, shmem.BarrierAll(), shmem.ErrFinalized, "finalized all the same")
}
