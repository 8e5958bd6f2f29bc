// Package netns runs goshmem across network namespaces: run.sh makes one
// "node" per namespace (veth + bridge on a private subnet), starts mpirun
// across them with an rsh agent that enters each namespace, and runs the
// integration suite and examples/jacobi-cpu with 2 x 2 PEs, so peers in
// other namespaces go over the ofi transport and the others over shm; then
// the same without a launcher, over the tcp bootstrap (a shell loop per
// namespace, PE 0 listening on node 0's address).
//
// It needs root (CAP_NET_ADMIN), ip, unshare, mpirun and go; it skips,
// saying which is missing, otherwise. When every tool is present and root
// can create a namespace, a failure is a failure.
package netns

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

func TestNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the namespace run takes minutes")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: creating network namespaces needs root (CAP_NET_ADMIN)")
	}
	for _, tool := range []string{"ip", "unshare", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found in PATH: the namespace test needs ip (iproute2), unshare (util-linux), mpirun (openmpi-bin) and go", tool)
		}
	}
	if testutil.OpenMPIRun() == "" {
		t.Skip("mpirun.openmpi not found in PATH: the namespace test needs ip (iproute2), unshare (util-linux), mpirun (openmpi-bin) and go")
	}
	// Root without CAP_NET_ADMIN (an unprivileged container) cannot make
	// namespaces: that is the platform, not goshmem.
	probe := fmt.Sprintf("gsprobe%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("root cannot create a network namespace here (%v: %s)", err, out)
	}
	_ = exec.Command("ip", "netns", "del", probe).Run()

	ctx, cancel := context.WithTimeout(context.Background(), 13*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./run.sh")
	cmd.Env = append(os.Environ(), "OUT="+t.TempDir())
	// SIGTERM, not SIGKILL, at the deadline: run.sh's trap removes the
	// namespaces, the links and the bridge.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("run.sh still running after 13 minutes (killed); output:\n%s", out)
	}
	require.NoError(t, err, "run.sh output:\n%s", out)
	t.Logf("%s", lastLines(string(out), 3))
}

func lastLines(s string, n int) string {
	end := len(s)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' && i != len(s)-1 {
			n--
			if n == 0 {
				return s[i+1 : end]
			}
		}
	}
	return s
}
