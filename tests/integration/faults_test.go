package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goTool is the go command that built this test: go test puts its
// GOROOT/bin first in PATH.
func goTool() string { return "go" }

// faultBin builds the spmd program with the library's fault-injection
// hooks (-tags goshmem_faults) and swaps it in for t.
func faultBin(t *testing.T) {
	t.Helper()
	needMPI(t)
	bin := filepath.Join(t.TempDir(), "spmd-faults")
	out, err := exec.Command(goTool(), "build", "-tags", "goshmem_faults", "-o", bin, "./spmd").CombinedOutput()
	require.NoError(t, err, "go build -tags goshmem_faults ./spmd: %s", out)
	old := spmdBin
	spmdBin = bin
	t.Cleanup(func() { spmdBin = old })
}

// Heaps that diverged on one PE (a block the others do not have): the next
// Alloc fails on every PE with ErrNotSymmetric naming the offsets, instead
// of returning arrays at different offsets where puts would land in the
// wrong place.
func TestHeapDiverged(t *testing.T) {
	faultBin(t)
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			r := job(t, np, 60*time.Second, nil, "-mode", "heap-diverge")
			require.Equal(t, 0, r.code, "output:\n%s", r.out)
			for pe := 0; pe < np; pe++ {
				assert.Contains(t, r.out, fmt.Sprintf("heap-diverge: PE %d: ok:", pe))
			}
		})
	}
}
