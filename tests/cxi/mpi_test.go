// Package cxitest runs the CXI triggered path across processes: the SPMD
// program in ./spmd under mpirun -np 2 over the sockets provider's real
// deferred work (the GPU's trigger is forwarded by the monitor: emulation).
// The in-process tests are in ./e2e and ../../internal/cxi.
package cxitest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

func TestCXIAcrossProcesses(t *testing.T) {
	mpirun := testutil.OpenMPIRun()
	if mpirun == "" {
		t.Skip("mpirun not found in PATH: install OpenMPI (Debian: openmpi-bin) to run the multi-process CXI test")
	}
	bin := filepath.Join(t.TempDir(), "cxi-spmd")
	// go test puts the GOROOT/bin that built this test first in PATH.
	out, err := exec.Command("go", "build", "-o", bin, "./spmd").CombinedOutput()
	require.NoError(t, err, "go build ./spmd:\n%s", out)

	// The device header's barriers record arrivals on a board every PE
	// maps (both run on this host): after each barrier, every PE's
	// arrival must be there.
	board := filepath.Join(t.TempDir(), "board")
	require.NoError(t, os.WriteFile(board, make([]byte, 4096), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "--oversubscribe", "-np", "2", bin)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"FI_SOCKETS_PE_WAITTIME=0", "GOSHMEM_CXI_ENGINE=fabric", "GOSHMEM_CXI_PROVIDER=sockets",
		"GOSHMEM_TIMEOUT=", "GOSHMEM_DEBUG=", "GOSHMEM_GPU=off", "CXI_SPMD_BOARD="+board)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("still running after 120s (killed); output:\n%s", buf.String())
	}
	require.NoError(t, err, "output:\n%s", buf.String())
	o := buf.String()
	for _, pe := range []string{"0", "1"} {
		assert.Contains(t, o, "cxi-spmd: PE "+pe+": PASS")
		assert.Contains(t, o, "cxi-spmd: PE "+pe+": fabric:sockets; emulation: GPU trigger forwarded by the monitor")
	}
	for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
		t.Log(l)
	}
	t.Logf("2 PEs under mpirun: %v", time.Since(start).Round(time.Millisecond))
}
