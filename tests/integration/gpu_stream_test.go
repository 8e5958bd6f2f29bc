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

// The stream-ordered calls (PutOnStream ... AllToAllOnStream, the team
// barrier, StreamFromHandle) and the host collectives on GPU arrays under
// mpirun on the fake CUDA driver, which runs goshmem's kernel library
// (gpulib/lib.cu, built for the host) by kernel name. The fake's
// streams are synchronous: each operation runs inside the call that
// queues it, so these runs check values, argument errors and the
// library's lifecycle (loaded on first use, unloaded at Finalize: no live
// driver object after it), not asynchrony. Each transport the GPU uses to
// reach peers: load/store (CUDA IPC; also with the grid path from 4 KiB),
// the CPU proxy, and IBGDA through the soft NIC (an emulation).
func TestGPUStream(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	steps := []string{"PutOnStream", "GetOnStream", "PutSignalOnStream", "RegisterDevice", "nvshmemx_buffer_register", "StreamFromHandle", "ReduceOnStream",
		"ReduceScatterOnStream", "BroadcastOnStream", "FCollectOnStream", "AllToAllOnStream", "team on stream",
		"barriers on stream", "host collectives on GPU arrays", "errors", "Finalize"}
	for _, tc := range []struct {
		name string
		env  []string
		nps  []int
	}{
		{"p2p", nil, []int{2, 4}},
		// the grid kernels from 4 KiB on 1 KiB blocks: the small cases too,
		// and the large ones on many blocks (odd splits at 3 PEs)
		// (fused up to the shared cap of one block per SM, then between
		// Sync kernels), and every grid between Sync kernels
		{"p2p-grid-small", []string{"GOSHMEM_GPU_COLL_GRID=4K", "GOSHMEM_GPU_COLL_BLOCK=1K"}, []int{2, 3}},
		{"p2p-grid-unfused", []string{"GOSHMEM_GPU_COLL_GRID=4K", "GOSHMEM_GPU_COLL_BLOCK=1K", "GOSHMEM_GPU_COLL_FUSED=0"}, []int{3}},
		// the small collectives without LL packets (the flag round), and
		// with LL packets only up to 16 bytes (both schemes in one job)
		{"p2p-noll", []string{"GOSHMEM_GPU_COLL_LL=off"}, []int{2}},
		// the on-stream barriers and syncs: memory operations (auto: for teams
		// of 2 members) at 3 PEs, flat, then as kernels for every team (with
		// the proxy and IBGDA they are kernels anyway)
		{"p2p-syncmemops", []string{"GOSHMEM_GPU_STREAM_SYNC=memops"}, []int{3}},
		{"p2p-synckernel", []string{"GOSHMEM_GPU_STREAM_SYNC=kernel"}, []int{3}},
		// and as memory operations in dissemination rounds (teams above 8
		// members use them), at an odd count
		{"p2p-syncdissem", []string{"GOSHMEM_GPU_STREAM_SYNC=dissemination"}, []int{3}},
		{"p2p-ll16", []string{"GOSHMEM_GPU_COLL_LL=16"}, []int{3}},
		{"proxy", []string{"GOSHMEM_GPU_TRANSPORT=proxy"}, []int{2, 4}},
		{"ibgda-soft", []string{"GOSHMEM_GPU_TRANSPORT=ibgda", "GOSHMEM_IBGDA_NIC=soft"}, []int{2}},
	} {
		for _, np := range tc.nps {
			t.Run(fmt.Sprintf("%s/np%d", tc.name, np), func(t *testing.T) {
				leaks := filepath.Join(t.TempDir(), "live")
				env := append([]string{"GOSHMEM_LIBCUDA=" + lib, "FAKECUDA_LEAKS=" + leaks, "GOSHMEM_GPU=on",
					"GOSHMEM_DEVICE_HEAP_SIZE=16M", "FAKECUDA_DEVICES=", "FAKECUDA_INIT=", "GOSHMEM_GPU_TRANSPORT="}, tc.env...)
				r := job(t, np, 120*time.Second, env, "-mode", "gpu-stream", "-heap", "16777216", "-guard", "100s")
				t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
				require.Equal(t, 0, r.code, "output:\n%s", r.out)
				assert.NotContains(t, r.out, "FAIL")
				var missing []string
				for pe := 0; pe < np; pe++ {
					for _, s := range steps {
						if l := fmt.Sprintf("gpu-stream: PE %d: %s: ok\n", pe, s); !strings.Contains(r.out, l) {
							missing = append(missing, strings.TrimSpace(l))
						}
					}
				}
				assert.Empty(t, missing, "steps that did not pass (output above)")
				noLiveObjects(t, leaks, np)
			})
		}
	}
}

// TestGPUStreamSharers: 3 PEs on the fake's 2 GPUs, so that PE 1 has a GPU
// to itself and PEs 0 and 2 share the other; a large FCollectOnStream over
// the team of PEs 0 and 1 (default settings: its syncs on the stream are
// memory operations) must pick the same grid scheme on both members
// (gpu-stream-sharers).
func TestGPUStreamSharers(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	leaks := filepath.Join(t.TempDir(), "live")
	env := []string{"GOSHMEM_LIBCUDA=" + lib, "FAKECUDA_LEAKS=" + leaks, "GOSHMEM_GPU=on", "GOSHMEM_DEVICE_HEAP_SIZE=96M",
		"FAKECUDA_DEVICES=2", "FAKECUDA_INIT=", "GOSHMEM_GPU_TRANSPORT="}
	r := job(t, 3, 60*time.Second, env, "-mode", "gpu-stream-sharers", "-heap", "16777216", "-guard", "30s")
	t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
	require.Equal(t, 0, r.code, "output:\n%s", r.out)
	for pe := 0; pe < 3; pe++ {
		assert.Contains(t, r.out, fmt.Sprintf("gpu-stream-sharers: PE %d: FCollectOnStream: ok\n", pe))
	}
	noLiveObjects(t, leaks, 3)
}
