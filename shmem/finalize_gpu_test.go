package shmem_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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
	if os.Getenv(finalizeGPUCaseEnv) != "" {
		t.Skip("the child process runs only TestFinalizeSettlesGPUFakeCase")
	}
	lib := testutil.FakeCUDA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFinalizeSettlesGPUFakeCase$", "-test.v", "-test.count=1", "-test.timeout=100s")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKECUDA_") && !strings.HasPrefix(kv, "GOSHMEM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, finalizeGPUCaseEnv+"=1", "GOSHMEM_LIBCUDA="+lib, "GOSHMEM_GPU=on", "GOSHMEM_DEVICE_HEAP_SIZE=4M")
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the case did not end; output:\n%s", out)
	require.NoError(t, err, "output:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestFinalizeSettlesGPUFakeCase", "the case did not run; output:\n%s", out)
}

// TestFinalizeSettlesGPUFakeCase is TestFinalizeSettlesGPUFake's case.
func TestFinalizeSettlesGPUFakeCase(t *testing.T) {
	if os.Getenv(finalizeGPUCaseEnv) == "" {
		t.Skip("run by TestFinalizeSettlesGPUFake in a process of its own")
	}
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
