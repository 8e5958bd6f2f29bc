package integration

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// The GPU backends through Init and Finalize under mpirun, one process per
// PE, on the fake CUDA driver (internal/cgo/cuda/testdata/fakecuda.c: its
// device memory is shared memory, so CUDA IPC maps a peer's heap as on a
// GPU node). Every job runs spmd -mode gpu-init, which prints each PE's
// outcome of Init, DeviceInfo, AllocDevice with traffic to the next PE,
// Synchronize and Finalize; each process's fake keeps its count of live
// driver objects (FAKECUDA_LEAKS), which must be zero after Finalize.

// gpuJob runs -mode gpu-init on np PEs with the fake driver, a 4 MiB GPU
// heap after the control area of 34 team slots (fakeControl),
// GOSHMEM_INFO=1 and env; it returns the job and the FAKECUDA_LEAKS prefix.
func gpuJob(t *testing.T, lib string, np int, env []string, args ...string) (result, string) {
	t.Helper()
	leaks := filepath.Join(t.TempDir(), "live")
	own := env
	env = append([]string{"GOSHMEM_LIBCUDA=" + lib, "FAKECUDA_LEAKS=" + leaks, "GOSHMEM_DEVICE_HEAP_SIZE=4M", "GOSHMEM_INFO=1",
		"GOSHMEM_MAX_TEAMS=34", "FAKECUDA_DEVICES=", "FAKECUDA_INIT=", "GOSHMEM_GPU=", "GOSHMEM_GPU_TRANSPORT="}, env...)
	r := job(t, np, 60*time.Second, env, append([]string{"-mode", "gpu-init", "-heap", "16777216", "-guard", "20s"}, args...)...)
	t.Logf("np %d %v %v: exit %d after %v; output:\n%s", np, own, args, r.code, r.wall.Round(time.Millisecond), r.out)
	return r, leaks
}

// fakeControl is the GPU heap's control area of gpuJob's 34 team slots
// (34 KiB each, then 64 KiB reserved: include/goshmem/device_state.h).
const fakeControl = 34*34816 + 65536

// noLiveObjects asserts that every process that used the fake driver
// released everything it made, and that procs processes used it.
func noLiveObjects(t *testing.T, leaks string, procs int) {
	t.Helper()
	files, err := filepath.Glob(leaks + ".*")
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		pid, err := strconv.Atoi(strings.TrimPrefix(f, leaks+"."))
		if err != nil {
			continue // a rename's temporary
		}
		n++
		live, _ := testutil.FakeCUDALive(t, leaks, pid)
		for k, v := range live {
			assert.Zero(t, v, "process %d still holds %d %s after Finalize", pid, v, k)
		}
	}
	assert.Equal(t, procs, n, "processes that used the fake driver")
}

// gpuLines asserts that every PE printed each line (every %d: the PE).
func gpuLines(t *testing.T, out string, np int, lines ...string) {
	t.Helper()
	var missing []string
	for pe := 0; pe < np; pe++ {
		for _, l := range lines {
			if want := strings.ReplaceAll(l, "%d", fmt.Sprint(pe)); !strings.Contains(out, want) {
				missing = append(missing, strings.TrimSpace(want))
			}
		}
	}
	assert.Empty(t, missing, "lines missing from the output (logged above)")
}

func peRange(np int) string {
	s := make([]string, np)
	for i := range s {
		s[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// GOSHMEM_GPU=on with a fake GPU per PE (two fake GPUs: PE k uses GPU
// k%2): Init succeeds, DeviceInfo names the fake device, AllocDevice's
// array carries a put to the next PE (through the CUDA IPC mapping of its
// heap in this process) and atomics, the GPU heap's GOSHMEM_INFO line
// appears, and Finalize releases every driver object.
func TestGPUFakeOn(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	for _, launch := range []int{0, 1, 2, 4} { // 0: no launcher, a 1-PE job
		name, np := fmt.Sprintf("np%d", launch), max(launch, 1)
		if launch == 0 {
			name = "no-launcher"
		}
		t.Run(name, func(t *testing.T) {
			r, leaks := gpuJob(t, lib, launch, []string{"GOSHMEM_GPU=on"})
			require.Equal(t, 0, r.code, "output:\n%s", r.out)
			assert.NotContains(t, r.out, "FAIL")
			how := "cuda (IPC/NVLink)"
			if np == 1 {
				how = "cuda (same GPU)"
			}
			for pe := 0; pe < np; pe++ {
				d := pe % 2
				// the heap after the control area: 4 MiB and the rest of the fake's last 2 MiB chunk
				assert.Contains(t, r.out, fmt.Sprintf("gpu-init: PE %d: device %d \"Fake H200 #%d\" PCI 0000:%02X:00.0 heap %d same-device %v\n",
					pe, d, d, 0x18+d, (fakeControl+4<<20+2<<20-1)&^(2<<20-1)-fakeControl, np == 1))
				assert.Contains(t, r.out, fmt.Sprintf("goshmem: info: PE %d: GPU %d (Fake H200 #%d, PCI 0000:%02X:00.0) chosen by local rank %d modulo 2 devices; kernels reach PEs %s by load/store (%s)\n",
					pe, d, d, 0x18+d, pe, peRange(np), how))
			}
			gpuLines(t, r.out, np, "gpu-init: PE %d: Init: ok\n", "gpu-init: PE %d: GPU heap: ok\n", "gpu-init: PE %d: Finalize: ok\n")
			noLiveObjects(t, leaks, np)
		})
	}
}

// No device anywhere (the fake's cuInit says CUDA_ERROR_NO_DEVICE): under
// auto Init succeeds and DeviceInfo and AllocDevice say why there is no
// GPU heap (ErrNotSupported); under on every PE's Init fails naming each.
func TestGPUFakeNoDevice(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	const np = 2
	t.Run("auto", func(t *testing.T) {
		r, leaks := gpuJob(t, lib, np, []string{"GOSHMEM_GPU=auto", "FAKECUDA_INIT=100"})
		require.Equal(t, 0, r.code, "output:\n%s", r.out)
		assert.NotContains(t, r.out, "FAIL")
		gpuLines(t, r.out, np, "gpu-init: PE %d: Init: ok\n",
			"gpu-init: PE %d: no device (ErrNotSupported=true): goshmem: PE %d: Init: no GPU: ",
			"gpu-init: PE %d: AllocDevice (ErrNotSupported=true): goshmem: PE %d: AllocDevice: n = 16 elements of int64: no GPU symmetric heap: Init: no GPU: ",
			"gpu-init: PE %d: Finalize: ok\n", "goshmem: info: PE %d: GPU heap off: ")
		assert.Contains(t, r.out, "CUDA_ERROR_NO_DEVICE (100)")
		noLiveObjects(t, leaks, 0)
	})
	t.Run("on", func(t *testing.T) {
		r, leaks := gpuJob(t, lib, np, []string{"GOSHMEM_GPU=on", "FAKECUDA_INIT=100"})
		require.Equal(t, 0, r.code, "output:\n%s", r.out)
		for rank := 0; rank < np; rank++ {
			line := lineWith(r.out, fmt.Sprintf("gpu-init: rank %d: Init failed", rank))
			require.NotEmpty(t, line, "rank %d's Init did not fail; output:\n%s", rank, r.out)
			assert.Contains(t, line, "(ErrNotSupported=true)")
			assert.Contains(t, line, "GPU heap failed on 2 PEs")
			assert.Contains(t, line, "PE 0: Init: no GPU")
			assert.Contains(t, line, "PE 1: Init: no GPU")
		}
		assert.NotContains(t, r.out, "Init: ok")
		noLiveObjects(t, leaks, 0)
	})
}

// One PE without a GPU (rank 1's fake says CUDA_ERROR_NO_DEVICE): under
// auto every PE's Init succeeds without a GPU heap, AllocDevice naming PE
// 1 on every PE, and the PEs that had set a heap up released it; under on
// every PE's Init fails naming PE 1.
func TestGPUFakeOnePE(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprintf("auto/np%d", np), func(t *testing.T) {
			r, leaks := gpuJob(t, lib, np, []string{"GOSHMEM_GPU=auto", "SPMD_RANK_ENV=1:FAKECUDA_INIT=100"})
			require.Equal(t, 0, r.code, "output:\n%s", r.out)
			assert.NotContains(t, r.out, "FAIL")
			gpuLines(t, r.out, np, "gpu-init: PE %d: Init: ok\n", "gpu-init: PE %d: Finalize: ok\n")
			for pe := 0; pe < np; pe++ {
				line := lineWith(r.out, fmt.Sprintf("gpu-init: PE %d: AllocDevice (ErrNotSupported=true): ", pe))
				require.NotEmpty(t, line, "PE %d: AllocDevice did not fail with ErrNotSupported; output:\n%s", pe, r.out)
				if pe == 1 {
					assert.Contains(t, line, "PE 1: AllocDevice: n = 16 elements of int64: no GPU symmetric heap: Init: no GPU")
				} else {
					assert.Contains(t, line, "GPU heap is off: PE 1: Init: no GPU", "PE %d", pe)
				}
				assert.Contains(t, line, "CUDA_ERROR_NO_DEVICE")
			}
			noLiveObjects(t, leaks, np-1)
		})
		t.Run(fmt.Sprintf("on/np%d", np), func(t *testing.T) {
			r, leaks := gpuJob(t, lib, np, []string{"GOSHMEM_GPU=on", "SPMD_RANK_ENV=1:FAKECUDA_INIT=100"})
			require.Equal(t, 0, r.code, "output:\n%s", r.out)
			assert.NotContains(t, r.out, "Init: ok")
			for rank := 0; rank < np; rank++ {
				line := lineWith(r.out, fmt.Sprintf("gpu-init: rank %d: Init failed (ErrNotSupported=true): ", rank))
				require.NotEmpty(t, line, "rank %d's Init did not fail with ErrNotSupported; output:\n%s", rank, r.out)
				assert.Contains(t, line, "PE 1: Init: no GPU")
				if rank != 1 {
					assert.Contains(t, line, "GPU heap failed on another PE: PE 1: Init: no GPU")
					assert.Contains(t, line, "(GPU heap)")
				}
			}
			noLiveObjects(t, leaks, np-1)
		})
	}
}

// The GPU's remote paths under mpirun: GOSHMEM_GPU_TRANSPORT=proxy (every
// other PE through this PE's proxy workers) and ibgda with the soft NIC
// (an emulation): Init starts them, Synchronize drains them, Finalize
// stops them and releases every driver object.
func TestGPUFakeRemote(t *testing.T) {
	needMPI(t)
	lib := testutil.FakeCUDA(t)
	const np = 2
	for _, tc := range []struct {
		name string
		env  []string
		info string // %d: the PE, then the other PE
	}{
		{"proxy", []string{"GOSHMEM_GPU_TRANSPORT=proxy"}, "goshmem: info: PE %d: GPU proxy: kernels reach PEs [%d] through the "},
		{"ibgda-soft", []string{"GOSHMEM_GPU_TRANSPORT=ibgda", "GOSHMEM_IBGDA_NIC=soft"},
			"goshmem: info: PE %d: GPU transport ibgda: soft NIC (EMULATION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, leaks := gpuJob(t, lib, np, append([]string{"GOSHMEM_GPU=on"}, tc.env...))
			require.Equal(t, 0, r.code, "output:\n%s", r.out)
			assert.NotContains(t, r.out, "FAIL")
			gpuLines(t, r.out, np, "gpu-init: PE %d: Init: ok\n", "gpu-init: PE %d: GPU heap: ok\n", "gpu-init: PE %d: Finalize: ok\n")
			for pe := 0; pe < np; pe++ {
				want := tc.info
				if strings.Count(want, "%d") == 2 {
					want = fmt.Sprintf(want, pe, 1-pe)
				} else {
					want = fmt.Sprintf(want, pe)
				}
				assert.Contains(t, r.out, want)
			}
			noLiveObjects(t, leaks, np)
		})
	}
}

// lineWith is the first line of out containing s ("" if none).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
