package integration

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// The GPU each PE chooses, at 2 PEs on a fake driver with 4 devices:
// local rank by default; GOSHMEM_DEVICE; shmem.WithDevice over it; the
// device of a context the program made current on the thread calling Init
// (kept current, not replaced); and an ordinal out of range, on every PE
// or on PE 1 alone, which fails Init on every PE naming the setting and
// the valid range. tests/gpu/run.sh runs the same program on a real GPU.
func TestGPUDevice(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	for _, tc := range []struct {
		name string
		env  []string
		want [2]int // each PE's device; -1: Init fails
	}{
		{"local-rank", nil, [2]int{0, 1}},
		{"env", []string{"GOSHMEM_DEVICE=3"}, [2]int{3, 3}},
		{"option", []string{"GOSHMEM_DEVICE=3", "SPMD_WITH_DEVICE=2"}, [2]int{2, 2}},
		{"current", []string{"SPMD_CURRENT_DEVICE=2"}, [2]int{2, 2}},
		{"current-option", []string{"SPMD_CURRENT_DEVICE=3", "SPMD_WITH_DEVICE=1"}, [2]int{1, 1}},
		{"out-of-range", []string{"GOSHMEM_DEVICE=4"}, [2]int{-1, -1}},
		{"out-of-range-one-pe", []string{"SPMD_RANK_ENV=1:GOSHMEM_DEVICE=4"}, [2]int{-1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaks := filepath.Join(t.TempDir(), "live")
			env := append([]string{"GOSHMEM_LIBCUDA=" + lib, "FAKECUDA_LEAKS=" + leaks, "GOSHMEM_GPU=on",
				"GOSHMEM_DEVICE_HEAP_SIZE=4M", "FAKECUDA_DEVICES=4", "FAKECUDA_INIT=", "GOSHMEM_GPU_TRANSPORT=",
				"GOSHMEM_DEVICE=", "SPMD_WITH_DEVICE=", "SPMD_CURRENT_DEVICE="}, tc.env...)
			r := job(t, 2, 60*time.Second, env, "-mode", "gpu-device", "-heap", "16777216", "-guard", "20s")
			t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
			require.Equal(t, 0, r.code, "output:\n%s", r.out)
			assert.NotContains(t, r.out, "FAIL")
			for pe, d := range tc.want {
				if d < 0 {
					assert.Contains(t, r.out, fmt.Sprintf("gpu-device: rank %d: Init failed (ErrInvalidArgument=true):", pe))
					continue
				}
				assert.Contains(t, r.out, fmt.Sprintf("gpu-device: PE %d: device %d\n", pe, d))
				assert.Contains(t, r.out, fmt.Sprintf("gpu-device: PE %d: GPU heap: ok\n", pe))
			}
			if tc.want[0] < 0 {
				assert.Contains(t, r.out, "GOSHMEM_DEVICE=4: no such GPU; this node has 4, valid range [0, 4)")
				return
			}
			noLiveObjects(t, leaks, 2)
		})
	}
}
