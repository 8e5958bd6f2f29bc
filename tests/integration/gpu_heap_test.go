package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// The GPU heap that grows (CUDA VMM), one process per PE under mpirun, on
// the fake CUDA driver: its reservations are PROT_NONE ranges and its
// chunks memfds, so a chunk a PE maps from a peer's descriptor (sent
// over a Unix socket) is the peer's memory, as on a GPU node. spmd -mode
// gpu-heap grows the heap past GOSHMEM_DEVICE_HEAP_SIZE=4M in AllocDevice
// (symmetric offsets: AllocDevice fails on every PE when they differ),
// puts from PE 0 into PE 1's new chunk, frees and grows again, and
// allocates past GOSHMEM_DEVICE_HEAP_MAX=64M; with FAKECUDA_VMM=0 the heap
// is the fixed legacy-IPC one; with -deny-ptrace every PE runs under a
// seccomp filter that refuses ptrace access (pidfd_getfd,
// process_vm_readv), as in a container. Finalize must leave no reservation, chunk
// or mapping behind (FAKECUDA_LEAKS).
func TestGPUHeapGrowth(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	for _, tc := range []struct {
		name  string
		env   []string
		nps   []int
		steps []string
		info  string
		args  []string
	}{
		// GOSHMEM_MAX_TEAMS=34: a control area of 1249280 bytes before
		// the 4 MiB heap (6 MiB mapped in 2 MiB chunks) and the 64 MiB
		// maximum (66 MiB reserved).
		{"vmm", nil, []int{2, 3}, []string{"grow", "grow again", "past the maximum", "Finalize"},
			"GPU heap: CUDA VMM, growing from 6291456 bytes mapped up to 69206016 reserved, at least 2097152 bytes at a time (GOSHMEM_DEVICE_HEAP_CHUNK), prepared in the background once the heap has less than that left (or less than the largest block so far, doubled while allocations outrun it, up to 4 times as much), in chunks of 2097152-byte granularity, shared by file descriptors; the first 1249280 bytes hold 34 team slots", nil},
		// the descriptors pass where a container's seccomp profile (or
		// Yama's ptrace_scope 1) forbids ptrace access between the PEs
		{"vmm-no-ptrace", nil, []int{3}, []string{"grow", "grow again", "past the maximum", "Finalize"}, "GPU heap: CUDA VMM", []string{"-deny-ptrace"}},
		{"legacy", []string{"FAKECUDA_VMM=0"}, []int{2}, []string{"fixed heap", "Finalize"},
			"GPU heap: cuMemAlloc of 5443584 bytes shared by legacy CUDA IPC", nil},
	} {
		for _, np := range tc.nps {
			t.Run(fmt.Sprintf("%s/np%d", tc.name, np), func(t *testing.T) {
				leaks := filepath.Join(t.TempDir(), "live")
				env := append([]string{"GOSHMEM_LIBCUDA=" + lib, "FAKECUDA_LEAKS=" + leaks, "GOSHMEM_GPU=on", "GOSHMEM_INFO=1",
					"GOSHMEM_DEVICE_HEAP_SIZE=4M", "GOSHMEM_DEVICE_HEAP_MAX=64M", "GOSHMEM_DEVICE_HEAP_CHUNK=2M", "GOSHMEM_MAX_TEAMS=34", "FAKECUDA_DEVICES=", "FAKECUDA_INIT=",
					"FAKECUDA_VMM=", "GOSHMEM_GPU_TRANSPORT="}, tc.env...)
				r := job(t, np, 90*time.Second, env, append([]string{"-mode", "gpu-heap", "-heap", "16777216", "-guard", "60s"}, tc.args...)...)
				t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
				require.Equal(t, 0, r.code, "output:\n%s", r.out)
				assert.NotContains(t, r.out, "FAIL")
				assert.NotContains(t, r.out, "not prepared ahead", "the PEs' processes share the prepared chunks")
				var missing []string
				for pe := 0; pe < np; pe++ {
					for _, s := range tc.steps {
						if l := fmt.Sprintf("gpu-heap: PE %d: %s: ok\n", pe, s); !strings.Contains(r.out, l) {
							missing = append(missing, strings.TrimSpace(l))
						}
					}
				}
				assert.Empty(t, missing, "steps that did not pass (output above)")
				assert.Contains(t, r.out, tc.info, "GOSHMEM_INFO's heap line")
				noLiveObjects(t, leaks, np)
			})
		}
	}
}
