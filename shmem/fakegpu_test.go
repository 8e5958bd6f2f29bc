package shmem_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// runFakeGPUCase runs the test named name (a 1-PE case on the fake CUDA
// driver, which a process loads once) in a process of its own: this test
// binary again, with marker=1 in its environment (the case skips
// without it: inFakeGPUCase; the calling test with it), GOSHMEM_GPU=on, a
// 4 MiB device heap and env. The parent's FAKECUDA_ and GOSHMEM_ variables
// are dropped. It fails unless the case ran and passed within two minutes.
func runFakeGPUCase(t *testing.T, marker, name string, env ...string) {
	t.Helper()
	if os.Getenv(marker) != "" {
		t.Skipf("the child process runs only %s", name)
	}
	lib := testutil.FakeCUDA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1", "-test.timeout=100s")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKECUDA_") && !strings.HasPrefix(kv, "GOSHMEM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, marker+"=1", "GOSHMEM_LIBCUDA="+lib, "GOSHMEM_GPU=on", "GOSHMEM_DEVICE_HEAP_SIZE=4M")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the case did not end; output:\n%s", out)
	require.NoError(t, err, "output:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+name, "the case did not run; output:\n%s", out)
}

// inFakeGPUCase skips a case of runFakeGPUCase outside the process that
// runFakeGPUCase started for it (marker unset); parent names the test
// that runs it.
func inFakeGPUCase(t *testing.T, marker, parent string) {
	t.Helper()
	if os.Getenv(marker) == "" {
		t.Skipf("run by %s in a process of its own", parent)
	}
}
