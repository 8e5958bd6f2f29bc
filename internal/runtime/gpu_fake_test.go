package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	stderrors "errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/gpulib"
	"github.com/goshmem/goshmem/internal/logx"
	"github.com/goshmem/goshmem/internal/testutil"
	"github.com/goshmem/goshmem/internal/transport"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// The GPU backends through Init's lifecycle on the fake CUDA driver
// (internal/cgo/cuda/testdata/fakecuda.c): N PEs as goroutines of one
// process, each with its own Runtime over a local bootstrap. The driver is
// loaded once per process and the fake reads FAKECUDA_* at cuInit, so each
// case runs in a process of its own: TestGPUFake runs this test binary
// again for one case (TestGPUFakeCase), with the case's environment and
// FAKECUDA_LEAKS set, and the case ends by checking that the fake holds no
// live object (every backend closed what it made).

// fakeCases maps a case name to its environment and its body.
var fakeCases = map[string]struct {
	env []string
	run func(t *testing.T)
}{
	"on-1":              {nil, func(t *testing.T) { gpuOn(t, 1) }},
	"on-2":              {nil, func(t *testing.T) { gpuOn(t, 2) }},
	"on-3":              {nil, func(t *testing.T) { gpuOn(t, 3) }},
	"on-4":              {nil, func(t *testing.T) { gpuOn(t, 4) }},
	"auto-no-device":    {[]string{"FAKECUDA_INIT=100"}, gpuAutoNoDevice},
	"on-no-device":      {[]string{"FAKECUDA_INIT=100"}, gpuOnNoDevice},
	"auto-one-pe-fails": {nil, func(t *testing.T) { gpuOnePEFails(t, "auto") }},
	"on-one-pe-fails":   {nil, func(t *testing.T) { gpuOnePEFails(t, "on") }},
	"on-heap-refused":   {[]string{"FAKECUDA_VMM=0"}, gpuHeapRefused},
	"vmm-heap-refused":  {nil, gpuVMMHeapRefused},
	"vmm-grow-2":        {nil, func(t *testing.T) { gpuVMMGrow(t, 2) }},
	"vmm-grow-3":        {nil, func(t *testing.T) { gpuVMMGrow(t, 3) }},
	"vmm-off":           {[]string{"FAKECUDA_VMM=0"}, gpuVMMOff},
	// 3M rounds up to the fake's 2 MiB granularity: at least 4 MiB a
	// growth; the default (512M) is past the 64M limit: one growth maps it all
	"vmm-grow-step": {nil, func(t *testing.T) {
		gpuVMMGrowStep(t, "3M", func(mapped, need uint64) uint64 { return fakeRoundUp(max(need, mapped+4<<20)) })
	}},
	"vmm-grow-step-dflt": {nil, func(t *testing.T) {
		gpuVMMGrowStep(t, "", func(_, _ uint64) uint64 { return fakeMapped(64 << 20) })
	}},
	"vmm-ahead-2":                 {nil, func(t *testing.T) { gpuVMMAhead(t, 2) }},
	"vmm-ahead-3":                 {nil, func(t *testing.T) { gpuVMMAhead(t, 3) }},
	"vmm-ahead-block-3":           {nil, gpuVMMAheadBlock},
	"vmm-ahead-burst-2":           {[]string{"FAKECUDA_VMM_DELAY_MS=200"}, gpuVMMAheadBurst},
	"vmm-fd-table":                {nil, gpuVMMDescriptorTable},
	"vmm-ahead-tight":             {[]string{fmt.Sprintf("FAKECUDA_VMM_MEM=%d", 2*fakeMapped(4<<20)+4<<20+2<<20)}, gpuVMMAheadTight},
	"vmm-fixed":                   {nil, gpuVMMFixed},
	"vmm-proxy-grow":              {nil, func(t *testing.T) { vmmRemoteGrow(t, "proxy") }},
	"vmm-ibgda-grow":              {nil, func(t *testing.T) { vmmRemoteGrow(t, "ibgda") }},
	"vmm-ibgda-grow-one-pe-fails": {nil, vmmIBGDAGrowOnePEFails},
	"register-proxy":              {nil, func(t *testing.T) { registerRemote(t, "proxy") }},
	"register-ibgda":              {nil, func(t *testing.T) { registerRemote(t, "ibgda") }},
	"register-peer-heap":          {nil, registerPeerHeap},
	"register-heap-ahead":         {nil, registerHeapAhead},
	"on-heap-control":             {[]string{"FAKECUDA_VMM=0"}, gpuHeapControl},
	"grid-settings":               {nil, gpuGridSettings},
	"proxy-2":                     {nil, func(t *testing.T) { gpuProxy(t, 2) }},
	"proxy-2-lazy":                {[]string{"CUDA_MODULE_LOADING=LAZY"}, gpuProxyLazy},
	"proxy-3":                     {nil, func(t *testing.T) { gpuProxy(t, 3) }},
	"ibgda-soft-1":                {nil, func(t *testing.T) { gpuSoftNIC(t, 1, "gpu") }},
	"ibgda-soft-2":                {nil, func(t *testing.T) { gpuSoftNIC(t, 2, "gpu") }},
	"ibgda-soft-2-cpu":            {nil, func(t *testing.T) { gpuSoftNIC(t, 2, "cpu") }},
	"lib-trap":                    {nil, gpuLibTrap},
	"settle-trap":                 {nil, gpuSettleTrap},
	"settle-slow":                 {[]string{"FAKECUDA_CTXSYNC_DELAY_MS=300"}, gpuSettleSlow},
	"settle-warn-ends":            {[]string{"FAKECUDA_CTXSYNC_DELAY_MS=20"}, gpuSettleWarnEnds},
	"lib-load-busy-8":             {[]string{"FAKECUDA_DEVICES=1", "FAKECUDA_BUSY_LOAD=fail"}, func(t *testing.T) { gpuLibLoadBusy(t, 8) }},
	"launch-block-limit":          {nil, gpuLaunchBlockLimit},
	"lib-file":                    {nil, gpuLibFile},
	"lib-missing":                 {nil, gpuLibMissing},
	"team-table":                  {nil, gpuTeamTable},
	"stream-sync-capture":         {[]string{"FAKECUDA_CAPTURING=1"}, gpuStreamSyncCapture},
	"team-handle-range":           {nil, gpuTeamHandleRange},
	"launch-overlap":              {nil, func(t *testing.T) { gpuLaunchOverlap(t, "1", true) }},
	"launch-overlap-off":          {nil, func(t *testing.T) { gpuLaunchOverlap(t, "0", false) }},
	"launch-overlap-refused": {[]string{"FAKECUDA_LAUNCH_EX=unsupported"}, func(t *testing.T) {
		gpuLaunchOverlap(t, "1", false)
	}},
	// an A100: the library runs, with plain launches (no programmatic dependent launch before sm_90)
	"launch-overlap-sm80": {[]string{"FAKECUDA_CC=8.0"}, func(t *testing.T) { gpuLaunchOverlap(t, "1", false) }},
	"proxy-one-pe-fails": {nil, func(t *testing.T) {
		gpuRemoteOnePEFails(t, map[string]string{"GOSHMEM_GPU_TRANSPORT": "proxy", "GOSHMEM_PROXY_INFLIGHT": "0"},
			`GOSHMEM_PROXY_INFLIGHT="0"; must be auto or a number of chains in [1, 1048576]`)
	}},
	"ibgda-soft-one-pe-fails": {nil, func(t *testing.T) {
		gpuRemoteOnePEFails(t, map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "soft", "GOSHMEM_IBGDA_GID_INDEX": "x"},
			`GOSHMEM_IBGDA_GID_INDEX="x"; want a GID table index in [0, 255]`)
	}},
}

// fakeCaseEnv names the case a child process runs.
const fakeCaseEnv = "GOSHMEM_TEST_FAKE_GPU_CASE"

func TestGPUFake(t *testing.T) {
	if os.Getenv(fakeCaseEnv) != "" {
		t.Skip("a child process runs only TestGPUFakeCase")
	}
	lib := testutil.FakeCUDA(t)
	names := make([]string, 0, len(fakeCases))
	for n := range fakeCases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGPUFakeCase$", "-test.v", "-test.count=1", "-test.timeout=100s")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "FAKECUDA_") && !strings.HasPrefix(kv, "GOSHMEM_") && !strings.HasPrefix(kv, "CUDA_MODULE_LOADING=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, fakeCaseEnv+"="+name, "GOSHMEM_LIBCUDA="+lib, "FAKECUDA_LEAKS="+filepath.Join(t.TempDir(), "live"))
			cmd.Env = append(cmd.Env, fakeCases[name].env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, ctx.Err(), "case %s did not end; output:\n%s", name, out)
			require.NoError(t, err, "case %s; output:\n%s", name, out)
			require.Contains(t, string(out), "--- PASS: TestGPUFakeCase", "the case did not run; output:\n%s", out)
		})
	}
}

// TestGPUFakeCase is one case of TestGPUFake, in a process of its own.
func TestGPUFakeCase(t *testing.T) {
	name := os.Getenv(fakeCaseEnv)
	if name == "" {
		t.Skip("run by TestGPUFake in a process of its own")
	}
	c, ok := fakeCases[name]
	require.True(t, ok, "no case %q", name)
	testutil.FakeLib(t) // what importing the gpulib module does
	c.run(t)
	if t.Failed() {
		return
	}
	live, ok := testutil.FakeCUDALive(t, os.Getenv("FAKECUDA_LEAKS"), os.Getpid())
	if !ok {
		return // no object was ever made
	}
	for k, n := range live {
		assert.Zero(t, n, "the fake driver still holds %d %s after every Runtime closed", n, k)
	}
}

// pe is one PE's outcome of a fake job.
type pe struct {
	err      error // New's
	info     string
	gpuErr   error
	backends []string
	dev      int
	devName  string
	busID    string
	remote   []int
	work     error // work's (nil when New failed)
}

// fakeTeams is the fake jobs' GOSHMEM_MAX_TEAMS (a case may set another):
// past the 32 rows of device state version 1, and a small control area.
const fakeTeams = 34

// fakeControl is the GPU heap's control area of fakeTeams slots, and
// fakeGran the fake's VMM granularity.
const (
	fakeControl = fakeTeams*cudatr.TeamSlotBytes + 64<<10
	fakeGran    = 2 << 20
)

// fakeMapped is what a VMM heap of heap bytes (and the control area) maps.
func fakeMapped(heap uint64) uint64 { return (fakeControl + heap + fakeGran - 1) &^ (fakeGran - 1) }

// fakeJob runs New on n PEs with the settings base plus the PE's own
// (extra(pe), may be nil), then work on every PE whose New succeeded, then
// Close. The GPU heap is small (the fake's device memory is host memory).
func fakeJob(t *testing.T, n int, base map[string]string, extra func(pe int) map[string]string, work func(r *Runtime) error) []pe {
	t.Helper()
	settings := make([]env.Settings, n)
	for i := range settings {
		vals := map[string]string{"GOSHMEM_LIBCUDA": os.Getenv("GOSHMEM_LIBCUDA"), "GOSHMEM_DEVICE_HEAP_SIZE": "4M",
			"GOSHMEM_MAX_TEAMS": fmt.Sprint(fakeTeams)}
		for k, v := range base {
			vals[k] = v
		}
		if extra != nil {
			for k, v := range extra(i) {
				vals[k] = v
			}
		}
		var err error
		settings[i], err = env.Read(func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
		require.NoError(t, err)
	}
	out := make([]pe, n)
	// local.Run: a PE whose work fails early ends the others' collectives
	// (with an error naming it) instead of leaving them in a barrier.
	_ = local.Run(n, func(b bootstrap.Bootstrap) error {
		p := &out[b.Rank()]
		r, err := New(b, settings[b.Rank()], Config{HeapSize: 8 << 20})
		if err != nil {
			p.err = err
			return nil
		}
		defer r.Close()
		var buf bytes.Buffer
		r.Info(logx.New(nil, &buf))
		p.info, p.gpuErr = buf.String(), r.GPUErr
		for _, be := range r.Backends() {
			p.backends = append(p.backends, be.Name())
		}
		if g := r.GPU; g != nil {
			p.dev, p.devName, p.busID, p.remote = int(g.Dev), g.DevName, g.BusID, g.RemotePEs()
		}
		if work != nil {
			p.work = work(r)
		}
		return p.work
	})
	return out
}

// heapTraffic is AllocDevice's and the host API's use of the GPU heap on
// every PE: an allocation at the same offset everywhere, a put to the next
// PE, a fetch-add and a compare-swap on PE 0's words (the fake runs the
// host-atomics PTX kernels), each checked after a barrier, then the
// default launch stream, Synchronize (every backend's Drain) and the Free.
func heapTraffic(r *Runtime) error {
	off, err := r.GAlloc.Alloc(256, GPUAlign)
	if err != nil {
		return err
	}
	doff := r.GPUControlBytes() + off
	g := r.GPU
	if err := g.ZeroBlock(doff, 256); err != nil {
		return err
	}
	if err := r.Boot.Barrier(); err != nil {
		return err
	}
	next, prev := (r.Me+1)%r.NPEs, (r.Me+r.NPEs-1)%r.NPEs
	if err := g.Put(nil, next, doff, binary.LittleEndian.AppendUint64(nil, uint64(100+r.Me))); err != nil {
		return err
	}
	if _, err := g.Atomic(nil, transport.AMOAdd, 8, 0, doff+8, 1, 0); err != nil {
		return err
	}
	if _, err := g.Atomic(nil, transport.AMOCompareSwap, 4, 0, doff+16, uint64(r.Me+1), 0); err != nil {
		return err
	}
	if err := r.Boot.Barrier(); err != nil {
		return err
	}
	got := make([]byte, 24)
	if err := g.Get(nil, got, r.Me, doff); err != nil {
		return err
	}
	if v := binary.LittleEndian.Uint64(got); v != uint64(100+prev) {
		return fmt.Errorf("PE %d: word put by PE %d is %d, want %d", r.Me, prev, v, 100+prev)
	}
	if r.Me == 0 {
		if v := binary.LittleEndian.Uint64(got[8:]); v != uint64(r.NPEs) {
			return fmt.Errorf("PE 0: fetch-add counter is %d after %d PEs added 1", v, r.NPEs)
		}
		// One PE's compare-swap from 0 won; the others saw its value.
		if v := binary.LittleEndian.Uint32(got[16:]); v < 1 || v > uint32(r.NPEs) {
			return fmt.Errorf("PE 0: compare-swap word is %d, want one PE's number + 1 in [1, %d]", v, r.NPEs)
		}
	}
	// The launch stream a program's first Launch makes: Close releases it.
	if _, err := r.DefaultStream(); err != nil {
		return err
	}
	if err := r.Synchronize(nil, "Synchronize"); err != nil {
		return err
	}
	if err := r.Boot.Barrier(); err != nil {
		return err
	}
	_, err = r.GAlloc.Free(off)
	return err
}

// GOSHMEM_GPU=on with a fake device per PE (two fake GPUs: PE k uses GPU
// k%2): Init succeeds, the GPU heap is a backend with its GOSHMEM_INFO
// line, every PE reaches every other by load/store, and the heap carries
// puts and atomics.
func gpuOn(t *testing.T, n int) {
	got := fakeJob(t, n, map[string]string{"GOSHMEM_GPU": "on"}, nil, heapTraffic)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d: GPU heap traffic", i)
		assert.NoError(t, p.gpuErr, "PE %d", i)
		assert.Equal(t, i%2, p.dev, "PE %d: GPU by node-local rank", i)
		assert.Equal(t, fmt.Sprintf("Fake H200 #%d", i%2), p.devName)
		assert.Equal(t, fmt.Sprintf("0000:%02X:00.0", 0x18+i%2), p.busID)
		assert.Contains(t, p.backends, "GPU heap", "PE %d", i)
		assert.Empty(t, p.remote, "PE %d: every PE is reached by load/store", i)
		how := "cuda (IPC/NVLink)"
		if n == 1 {
			how = "cuda (same GPU)"
		}
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: GPU %d (Fake H200 #%d, PCI 0000:%02X:00.0) chosen by local rank %d modulo 2 devices; kernels reach PEs %v by load/store (%s)\n",
			i, i%2, i%2, 0x18+i%2, i, all, how))
		assert.NotContains(t, p.info, "GPU heap off")
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: CUDA_MODULE_LOADING=EAGER (set by goshmem, it was unset", i))
	}
}

// GOSHMEM_GPU=auto and no device (cuInit says CUDA_ERROR_NO_DEVICE): Init
// succeeds without a GPU heap, and what needs it fails with
// ErrNotSupported carrying the driver's reason.
func gpuAutoNoDevice(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "auto"}, nil, func(r *Runtime) error {
		if r.GPU != nil || r.GAlloc != nil {
			return fmt.Errorf("PE %d: a GPU heap without a device", r.Me)
		}
		err := r.NeedGPU("AllocDevice")
		if !stderrors.Is(err, errs.ErrNotSupported) {
			return fmt.Errorf("PE %d: NeedGPU: %v, want ErrNotSupported", r.Me, err)
		}
		if err := r.Synchronize(nil, "Synchronize"); !stderrors.Is(err, errs.ErrNotSupported) {
			return fmt.Errorf("PE %d: Synchronize without a GPU: %v, want ErrNotSupported", r.Me, err)
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work)
		require.Error(t, p.gpuErr, "PE %d", i)
		assert.True(t, stderrors.Is(p.gpuErr, errs.ErrNotSupported), "PE %d: %v", i, p.gpuErr)
		assert.Contains(t, p.gpuErr.Error(), fmt.Sprintf("PE %d: Init: no GPU", i))
		assert.Contains(t, p.gpuErr.Error(), "CUDA_ERROR_NO_DEVICE (100)")
		assert.NotContains(t, p.backends, "GPU heap")
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: GPU heap off: ", i))
	}
}

// GOSHMEM_GPU=on and no device: every PE's Init fails, naming each PE
// (each has no GPU) and matching ErrNotSupported.
func gpuOnNoDevice(t *testing.T) {
	got := fakeJob(t, 3, map[string]string{"GOSHMEM_GPU": "on"}, nil, nil)
	for i, p := range got {
		require.Error(t, p.err, "PE %d", i)
		assert.True(t, stderrors.Is(p.err, errs.ErrNotSupported), "PE %d: %v", i, p.err)
		msg := p.err.Error()
		assert.Contains(t, msg, "GPU heap failed on 3 PEs")
		for j := 0; j < 3; j++ {
			assert.Contains(t, msg, fmt.Sprintf("PE %d: Init: no GPU", j), "PE %d's error", i)
		}
		assert.Contains(t, msg, "CUDA_ERROR_NO_DEVICE")
	}
}

// One PE without a usable driver (PE 1's GOSHMEM_LIBCUDA names no
// library; in one process the others have loaded the fake, and a second
// library is refused: either way PE 1 has no GPU). Under auto every PE's
// Init succeeds without a GPU heap, the others' reason naming PE 1, and
// the PEs that had set one up released it; under on every PE's Init fails
// naming PE 1.
func gpuOnePEFails(t *testing.T, mode string) {
	missing := filepath.Join(t.TempDir(), "libcuda-missing.so")
	extra := func(pe int) map[string]string {
		if pe == 1 {
			return map[string]string{"GOSHMEM_LIBCUDA": missing}
		}
		return nil
	}
	got := fakeJob(t, 3, map[string]string{"GOSHMEM_GPU": mode}, extra, func(r *Runtime) error {
		if r.GPU != nil {
			return fmt.Errorf("PE %d: a GPU heap although PE 1 has none", r.Me)
		}
		return nil
	})
	for i, p := range got {
		if mode == "on" {
			require.Error(t, p.err, "PE %d", i)
			assert.True(t, stderrors.Is(p.err, errs.ErrNotSupported), "PE %d: %v", i, p.err)
			assert.Contains(t, p.err.Error(), "PE 1: Init: no GPU", "PE %d", i)
			if i != 1 {
				assert.Contains(t, p.err.Error(), "GPU heap failed on another PE: PE 1: Init: no GPU", "PE %d", i)
			}
			continue
		}
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work)
		require.Error(t, p.gpuErr, "PE %d", i)
		assert.True(t, stderrors.Is(p.gpuErr, errs.ErrNotSupported), "PE %d: %v", i, p.gpuErr)
		if i == 1 {
			assert.Contains(t, p.gpuErr.Error(), "PE 1: Init: no GPU")
		} else {
			assert.Contains(t, p.gpuErr.Error(), fmt.Sprintf("PE %d: Init: GPU heap is off: PE 1: Init: no GPU", i))
		}
		assert.NotContains(t, p.backends, "GPU heap")
	}
}

// A heap the fake refuses (more than its 1 TiB): under on every PE's Init
// fails; the PE's own error says to lower GOSHMEM_DEVICE_HEAP_SIZE.
func gpuHeapRefused(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_SIZE": "2T"}, nil, nil)
	for i, p := range got {
		require.Error(t, p.err, "PE %d", i)
		assert.True(t, stderrors.Is(p.err, errs.ErrNotSupported), "PE %d: %v", i, p.err)
		assert.Contains(t, p.err.Error(), fmt.Sprintf("GPU heap of %d bytes (GOSHMEM_DEVICE_HEAP_SIZE and a %d-byte control area) on GPU",
			fakeControl+2<<40, fakeControl))
		assert.Contains(t, p.err.Error(), "CUDA_ERROR_OUT_OF_MEMORY")
		assert.Contains(t, errors.FlattenHints(p.err), "lower GOSHMEM_DEVICE_HEAP_SIZE")
	}
}

// gpuHeapControl: the control area of the team slots comes on top of the
// heap: a fixed (legacy) 64 KiB heap with GOSHMEM_MAX_TEAMS=40 is the
// control area of 40 slots and 64 KiB for the allocator.
func gpuHeapControl(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "auto", "GOSHMEM_DEVICE_HEAP_SIZE": "64K", "GOSHMEM_MAX_TEAMS": "40"}, nil,
		func(r *Runtime) error {
			if r.GPU == nil || r.GPU.MaxTeams() != 40 || r.GPUControlBytes() != cudatr.ControlBytes(40) || r.GAlloc.Total() != 64<<10 ||
				r.GPU.Size() != cudatr.ControlBytes(40)+64<<10 {
				return fmt.Errorf("PE %d: GPU %v, control %d, allocator %d, heap %d", r.Me, r.GPU != nil, r.GPUControlBytes(), r.GAlloc.Total(), r.GPU.Size())
			}
			return nil
		})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// A grid block size outside [1K, 1G], a grid threshold that is not a
// size or off, an LL limit that is not off or a size up to 1M, or a stream
// sync that is not auto, memops, dissemination or kernel, fails Init on every PE, naming it; a valid pair reaches
// GridMinBytes and LibBlocks (whose cap is shared by the PEs on one GPU),
// and GOSHMEM_GPU_COLL_FUSED GridFused.
func gpuGridSettings(t *testing.T) {
	for _, c := range []struct{ k, v, want string }{
		{"GOSHMEM_GPU_COLL_BLOCK", "512", "GOSHMEM_GPU_COLL_BLOCK=512 bytes; must be in [1K, 1G]"},
		{"GOSHMEM_GPU_COLL_GRID", "0", `GOSHMEM_GPU_COLL_GRID="0"; must be off or a size in bytes`},
		{"GOSHMEM_GPU_COLL_GRID", "never", `GOSHMEM_GPU_COLL_GRID="never"; must be off or a size in bytes`},
		{"GOSHMEM_GPU_COLL_LL", "0", `GOSHMEM_GPU_COLL_LL="0"; must be off or a size in bytes up to 1M`},
		{"GOSHMEM_GPU_COLL_LL", "2M", `GOSHMEM_GPU_COLL_LL="2M"; must be off or a size in bytes up to 1M`},
		{"GOSHMEM_GPU_COLL_THREADS", "48", `GOSHMEM_GPU_COLL_THREADS="48"; must be auto or a multiple of 32 in [32, 1024]`},
		{"GOSHMEM_GPU_COLL_THREADS", "2048", `GOSHMEM_GPU_COLL_THREADS="2048"; must be auto or a multiple of 32 in [32, 1024]`},
		{"GOSHMEM_GPU_STREAM_SYNC", "kernels", `GOSHMEM_GPU_STREAM_SYNC="kernels"; must be auto, memops, dissemination or kernel`},
	} {
		got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", c.k: c.v}, nil, nil)
		for i, p := range got {
			require.Error(t, p.err, "PE %d, %s=%s", i, c.k, c.v)
			assert.True(t, stderrors.Is(p.err, errs.ErrInvalidArgument), "PE %d: %v", i, p.err)
			assert.Contains(t, p.err.Error(), c.want)
		}
	}
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_COLL_GRID": "off"}, nil,
		func(r *Runtime) error {
			if g := r.GridMinBytes(); g != 0 {
				return fmt.Errorf("GOSHMEM_GPU_COLL_GRID=off: GridMinBytes = %d, want 0", g)
			}
			return nil
		})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d", i)
		assert.NoError(t, p.work, "PE %d", i)
	}
	got = fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_COLL_GRID": "64K", "GOSHMEM_GPU_COLL_BLOCK": "32K"}, nil,
		func(r *Runtime) error {
			if g := r.GridMinBytes(); g != 64<<10 {
				return fmt.Errorf("GridMinBytes = %d, want 65536", g)
			}
			sms, err := r.GPU.Dev.Attribute(cuda.AttrMultiprocessorCount)
			if err != nil {
				return err
			}
			sh := r.GPU.DeviceSharers()
			if sh < 1 || sh > 2 {
				return fmt.Errorf("DeviceSharers = %d, want 1 or 2", sh)
			}
			fine := max(1, sms/sh)
			cases := []struct {
				k           gpulib.Kernel
				bytes, want int
			}{
				{gpulib.ReducePart(gpulib.Float32), 1, 1},
				{gpulib.ReducePart(gpulib.Float32), 32 << 10, 1},
				{gpulib.ReducePart(gpulib.Float32), 32<<10 + 1, min(2, fine)},
				{gpulib.ReducePart(gpulib.Float32), 1 << 20, min(32, fine)},
				{gpulib.ReducePart(gpulib.Float32), 1 << 40, fine},
				{gpulib.MovePart, 1, 1},
				{gpulib.MovePart, 1 << 20, min(32, fine)},
				{gpulib.MovePart, 256 << 20, max(fine, min(1024, 2*sms))},
				{gpulib.MovePart, 1 << 40, 2 * sms},
			}
			for _, c := range cases {
				if b := r.LibBlocks(c.k, c.bytes); b != c.want {
					return fmt.Errorf("LibBlocks(%s, %d) = %d, want %d (%d SMs, %d PEs on the GPU)", c.k.Name(), c.bytes, b, c.want, sms, sh)
				}
			}
			// fused (the default) up to the shared one-block-per-SM cap
			if !r.GridFused(1) || !r.GridFused(fine) || r.GridFused(fine+1) {
				return fmt.Errorf("GridFused(1, %d, %d) = %v, %v, %v; want true, true, false", fine, fine+1,
					r.GridFused(1), r.GridFused(fine), r.GridFused(fine+1))
			}
			return nil
		})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d", i)
		assert.NoError(t, p.work, "PE %d", i)
	}
	// the one-block collectives' block: by size (auto), or the setting;
	// the LL limit reaches the device state
	for _, c := range []struct {
		env  map[string]string
		want [][2]int // {work, threads}
		ll   uint32
	}{
		{map[string]string{"GOSHMEM_GPU": "on"}, [][2]int{{0, 32}, {16 * 32, 32}, {16*32 + 16, 64}, {8 << 10, 512}, {1 << 20, 1024}}, 2048},
		{map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_COLL_THREADS": "256", "GOSHMEM_GPU_COLL_LL": "off"}, [][2]int{{0, 256}, {1 << 20, 256}}, 0},
	} {
		got = fakeJob(t, 2, c.env, nil, func(r *Runtime) error {
			for _, w := range c.want {
				if n := r.CollThreads(w[0]); n != w[1] {
					return fmt.Errorf("%v: CollThreads(%d) = %d, want %d", c.env, w[0], n, w[1])
				}
			}
			if r.GPU.CollLL != c.ll {
				return fmt.Errorf("%v: coll_ll_bytes %d, want %d", c.env, r.GPU.CollLL, c.ll)
			}
			return nil
		})
		for i, p := range got {
			require.NoError(t, p.err, "PE %d", i)
			assert.NoError(t, p.work, "PE %d", i)
		}
	}
	got = fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_COLL_FUSED": "0"}, nil,
		func(r *Runtime) error {
			if r.GridFused(1) {
				return fmt.Errorf("GOSHMEM_GPU_COLL_FUSED=0: GridFused(1) = true")
			}
			return nil
		})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d", i)
		assert.NoError(t, p.work, "PE %d", i)
	}
}

// GOSHMEM_GPU_TRANSPORT=proxy: every other PE is reached through this
// PE's proxy workers (heap_base 0 in the device state); the workers start
// at Connect, Synchronize drains them, and Close stops them.
func gpuProxy(t *testing.T, n int) {
	got := fakeJob(t, n, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_TRANSPORT": "proxy", "GOSHMEM_PROXY_WORKERS": "2"}, nil,
		func(r *Runtime) error {
			if r.proxy == nil {
				return fmt.Errorf("PE %d: no GPU proxy", r.Me)
			}
			if err := heapTraffic(r); err != nil {
				return err
			}
			if err := r.Diagnose("Synchronize"); err != nil {
				return fmt.Errorf("PE %d: Diagnose of a healthy job: %v", r.Me, err)
			}
			if l := &r.gpuState.lib; !l.loaded || l.err != nil {
				return fmt.Errorf("PE %d: the kernel library was not loaded at Init with the proxy (err %v)", r.Me, l.err)
			}
			return nil
		})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
		others := otherPEs(i, n)
		assert.Equal(t, others, p.remote, "PE %d: PEs the device reaches through the proxy", i)
		assert.Equal(t, []string{"symmetric heap", "shm", "GPU heap", "GPU proxy"}, p.backends)
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: GPU proxy: kernels reach PEs %v through the ", i, others))
	}
}

// nicRegions moves data the way the soft NIC does (cudatr.HeapRegion: the
// copy kernel through the mapped staging buffer, the host-atomics kernels):
// a write into the next PE's heap, read back by its owner, and a fetch-add
// on PE 0's word.
func nicRegions(r *Runtime) error {
	off, err := r.GAlloc.Alloc(64, GPUAlign)
	if err != nil {
		return err
	}
	doff := r.GPUControlBytes() + off
	if err := r.GPU.ZeroBlock(doff, 64); err != nil {
		return err
	}
	if err := r.Boot.Barrier(); err != nil {
		return err
	}
	next, prev := (r.Me+1)%r.NPEs, (r.Me+r.NPEs-1)%r.NPEs
	hn, err := r.GPU.HeapRegion(next)
	if err != nil {
		return err
	}
	msg := []byte(fmt.Sprintf("from PE %d", r.Me))
	if err := hn.WriteAt(msg, doff); err != nil {
		return err
	}
	h0, err := r.GPU.HeapRegion(0)
	if err != nil {
		return err
	}
	if _, err := h0.Atomic8(doff+32, false, 5, 0); err != nil {
		return err
	}
	if err := r.Boot.Barrier(); err != nil {
		return err
	}
	own, err := r.GPU.HeapRegion(r.Me)
	if err != nil {
		return err
	}
	got := make([]byte, 40)
	if err := own.ReadAt(got, doff); err != nil {
		return err
	}
	if want := fmt.Sprintf("from PE %d", prev); string(got[:len(want)]) != want {
		return fmt.Errorf("PE %d: soft NIC region read %q, want %q", r.Me, got[:len(want)], want)
	}
	if r.Me == 0 {
		if v := binary.LittleEndian.Uint64(got[32:]); v != uint64(5*r.NPEs) {
			return fmt.Errorf("PE 0: soft NIC fetch-add word is %d, want %d", v, 5*r.NPEs)
		}
	}
	if err := r.Boot.Barrier(); err != nil {
		return err
	}
	_, err = r.GAlloc.Free(off)
	return err
}

// GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=soft: the soft NIC (an
// emulation) starts with QPs to every other PE (none on 1 PE), primes its
// copy and atomic kernels (run by the fake), Synchronize drains it, and
// Close stops it before the GPU heap goes.
func gpuSoftNIC(t *testing.T, n int, bell string) {
	got := fakeJob(t, n, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "soft",
		"GOSHMEM_IBGDA_DOORBELL": bell}, nil,
		func(r *Runtime) error {
			if r.softNIC == nil {
				return fmt.Errorf("PE %d: no soft NIC", r.Me)
			}
			if err := heapTraffic(r); err != nil {
				return err
			}
			if err := nicRegions(r); err != nil {
				return err
			}
			if err := r.Diagnose("Synchronize"); err != nil {
				return fmt.Errorf("PE %d: Diagnose of an idle soft NIC: %v", r.Me, err)
			}
			return nil
		})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
		others := otherPEs(i, n)
		assert.Equal(t, others, p.remote, "PE %d: PEs the device reaches over IBGDA", i)
		assert.Equal(t, []string{"symmetric heap", "shm", "GPU heap", "IBGDA"}, p.backends)
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: GPU transport ibgda: soft NIC (EMULATION", i))
		assert.Contains(t, p.info, "device API to other PEs over IBGDA, queues in host-pinned memory")
		if bell == "cpu" {
			assert.Contains(t, p.info, "CPU-assisted doorbells")
		}
	}
}

// A GPU remote path that fails on PE 1 only (a setting read by that
// backend alone, bad on PE 1): every PE's Init fails in that phase naming
// PE 1, and every PE closes what the earlier phases and its own remote
// backend had made (the GPU heap, the other PEs' proxy rings or soft NIC).
func gpuRemoteOnePEFails(t *testing.T, bad map[string]string, want string) {
	base := map[string]string{"GOSHMEM_GPU": "on"}
	for k := range bad {
		if k == "GOSHMEM_GPU_TRANSPORT" || k == "GOSHMEM_IBGDA_NIC" {
			base[k] = bad[k]
		}
	}
	got := fakeJob(t, 3, base, func(pe int) map[string]string {
		if pe == 1 {
			return bad
		}
		return nil
	}, nil)
	for i, p := range got {
		require.Error(t, p.err, "PE %d", i)
		assert.True(t, stderrors.Is(p.err, errs.ErrInvalidArgument), "PE %d: %v", i, p.err)
		assert.Contains(t, p.err.Error(), "PE 1: Init: "+want, "PE %d", i)
		if i != 1 {
			assert.Contains(t, p.err.Error(), "GPU remote path failed on another PE: PE 1: ", "PE %d", i)
		}
	}
}

// otherPEs is every PE of n but i, in order.
func otherPEs(i, n int) []int {
	var o []int
	for j := 0; j < n; j++ {
		if j != i {
			o = append(o, j)
		}
	}
	return o
}

// gpuLaunchOverlap: with GOSHMEM_GPU_LAUNCH_OVERLAP=setting, 2 PEs run
// one-block library kernels back to back on one stream (a put, barriers,
// a grid kernel's neighbours) and each sees the other's data after the
// barrier. The one-block kernels go through cuLaunchKernelEx while the
// driver takes it (want: still overlapping at the end); a driver that
// answers CUDA_ERROR_NOT_SUPPORTED (FAKECUDA_LAUNCH_EX=unsupported) gets
// plain launches from the first refusal on, and the calls still succeed.
// A GPU before sm_90 has plain launches from Init on, where the library
// is loaded.
func gpuLaunchOverlap(t *testing.T, setting string, want bool) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_LAUNCH_OVERLAP": setting}, nil, func(r *Runtime) error {
		major, _, err := r.GPU.Dev.ComputeCapability()
		if err != nil {
			return err
		}
		if atInit := setting == "1" && major >= pdlMajor; r.gpuState.overlap != atInit {
			return fmt.Errorf("overlap %v after Init with GOSHMEM_GPU_LAUNCH_OVERLAP=%s on compute capability %d.x, want %v",
				r.gpuState.overlap, setting, major, atInit)
		}
		off, err := r.GAlloc.Alloc(16, GPUAlign)
		if err != nil {
			return err
		}
		doff, g, me := r.GPUControlBytes()+off, r.GPU, uint64(r.Me)
		if err := g.Put(nil, r.Me, doff, binary.LittleEndian.AppendUint64(make([]byte, 8), 100+me)); err != nil {
			return err
		}
		world := [gpulib.NArgs]uint64{0}
		if err := r.LibLaunch(nil, gpulib.Barrier, &world, "BarrierAllOnStream"); err != nil {
			return err
		}
		// my word 1 to the other PE's word 0, then barriers behind it
		dst := uint64(g.Base()) + doff
		put := [gpulib.NArgs]uint64{dst, dst + 8, 8, 1 - me}
		if err := r.LibLaunch(nil, gpulib.Put, &put, "PutOnStream"); err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			if err := r.LibLaunch(nil, gpulib.Barrier, &world, "BarrierAllOnStream"); err != nil {
				return err
			}
		}
		if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
			return err
		}
		got := make([]byte, 8)
		if err := g.Get(nil, got, r.Me, doff); err != nil {
			return err
		}
		if v := binary.LittleEndian.Uint64(got); v != 101-me {
			return fmt.Errorf("PE %d: word 0 = %d after the put and barriers, want %d", r.Me, v, 101-me)
		}
		if r.gpuState.overlap != want {
			return fmt.Errorf("overlap %v after the launches, want %v", r.gpuState.overlap, want)
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d Init", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// gpuLibFile: GOSHMEM_GPU_LIB loads the kernel library from a file (here a
// copy of the built-in one); a file that cannot be read fails the library's
// first call, naming the setting and the path.
func gpuLibFile(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "lib.fatbin")
	require.NoError(t, os.WriteFile(lib, testutil.FakeLibImage, 0o600))
	for _, c := range []struct{ path, want string }{
		{lib, ""},
		{lib + ".missing", `GOSHMEM_GPU_LIB="` + lib + `.missing": reading the kernel library`},
	} {
		got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_LIB": c.path}, nil, func(r *Runtime) error {
			v := [gpulib.NArgs]uint64{0}
			if err := r.LibLaunch(nil, gpulib.Barrier, &v, "BarrierAllOnStream"); err != nil {
				return err
			}
			return r.SyncStream(nil, "Stream.Synchronize")
		})
		require.NoError(t, got[0].err)
		if c.want == "" {
			assert.NoError(t, got[0].work)
		} else {
			assert.ErrorContains(t, got[0].work, "goshmem: PE 0: BarrierAllOnStream: "+c.want)
		}
	}
}

// gpuLibMissing: in a program that does not import the gpulib module the
// first call that needs a kernel fails, naming the PE, the call and the
// import; calls that need none (a stream's synchronize) still work.
func gpuLibMissing(t *testing.T) {
	gpulib.Unregister()
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		v := [gpulib.NArgs]uint64{0}
		err := r.LibLaunch(nil, gpulib.Barrier, &v, "BarrierAllOnStream")
		if err == nil {
			return fmt.Errorf("LibLaunch without a kernel library succeeded")
		}
		want := `goshmem: PE 0: BarrierAllOnStream: goshmem's kernel library is not in this program: add import _ "github.com/goshmem/goshmem/gpulib" to its main package`
		if !strings.HasPrefix(err.Error(), want) || !stderrors.Is(err, errs.ErrNotSupported) {
			return fmt.Errorf("got %q (ErrNotSupported: %v), want %q...", err, stderrors.Is(err, errs.ErrNotSupported), want)
		}
		return r.SyncStream(nil, "Stream.Synchronize")
	})
	require.NoError(t, got[0].err)
	assert.NoError(t, got[0].work)
}

// gpuLibTrap: a library kernel whose device call traps (a barrier on team
// 31, which this PE is not a member of) is reported at the next
// synchronization with the device's own record (code, message, block and
// thread), read from host memory after the fault; the job still closes
// cleanly.
func gpuLibTrap(t *testing.T) {
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		v := [gpulib.NArgs]uint64{31}
		if err := r.LibLaunch(nil, gpulib.Barrier, &v, "BarrierOnStream"); err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		err := r.SyncStream(nil, "Stream.Synchronize")
		if err == nil {
			return fmt.Errorf("a trapped barrier kernel synchronized without an error")
		}
		return err
	})
	require.NoError(t, got[0].err)
	err := got[0].work
	require.Error(t, err)
	assert.Contains(t, err.Error(), "goshmem: PE 0: Stream.Synchronize: a kernel trapped: device call failed on PE 0 (block 0, thread 0): "+
		"team not initialized, or this PE is not a member [GOSHMEMI_ERR_BAD_TEAM (4), info 31, 0] "+
		`(last kernel launched: "goshmemi_lib_barrier"; `)
	assert.Contains(t, err.Error(), "CUDA_ERROR_LAUNCH_FAILED (719)")
}

// gpuSettleTrap: a kernel queued and never synchronized that traps is
// Finalize's error (SettleGPU), with the device's record, before the
// heaps go.
func gpuSettleTrap(t *testing.T) {
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		v := [gpulib.NArgs]uint64{31}
		if err := r.LibLaunch(nil, gpulib.Barrier, &v, "BarrierOnStream"); err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		return r.SettleGPU()
	})
	require.NoError(t, got[0].err)
	require.Error(t, got[0].work)
	assert.Contains(t, got[0].work.Error(), "goshmem: PE 0: Finalize: a kernel trapped: device call failed on PE 0 (block 0, thread 0): "+
		"team not initialized, or this PE is not a member")
}

// gpuSettleSlow: while SettleGPU waits for the GPU (here a
// cuCtxSynchronize of 300 ms), the logger gets a warning every
// settleWarn naming the last kernel; the wait then succeeds.
func gpuSettleSlow(t *testing.T) {
	old := settleWarn
	settleWarn = 50 * time.Millisecond
	defer func() { settleWarn = old }()
	var buf syncBuffer
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		v := [gpulib.NArgs]uint64{}
		if err := r.LibLaunch(nil, gpulib.Barrier, &v, "BarrierAllOnStream"); err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		r.Log = logx.New(nil, &buf)
		return r.SettleGPU()
	})
	require.NoError(t, got[0].err)
	require.NoError(t, got[0].work)
	out := buf.String()
	assert.Contains(t, out, "goshmem: warning: PE 0: Finalize has waited ")
	assert.Contains(t, out, `for the work queued on this PE's GPU (last kernel launched: "goshmemi_lib_barrier")`)
}

// gpuSettleWarnEnds: SettleGPU's warnings end when it returns (none is
// logged after Finalize), however often they come.
func gpuSettleWarnEnds(t *testing.T) {
	old := settleWarn
	settleWarn = time.Microsecond
	defer func() { settleWarn = old }()
	var buf syncBuffer
	late := 0
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		r.Log = logx.New(nil, &buf)
		for range 10 {
			if err := r.SettleGPU(); err != nil {
				return err
			}
			at := buf.String()
			time.Sleep(5 * time.Millisecond)
			if buf.String() != at {
				late++
			}
		}
		return nil
	})
	require.NoError(t, got[0].err)
	require.NoError(t, got[0].work)
	assert.Contains(t, buf.String(), "goshmem: warning: PE 0: Finalize has waited")
	assert.Zero(t, late, "SettleGPU calls followed by a warning after they returned")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader on
// different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gpuTeamTable: teams in rows and slots 5 and 33 of the device team table
// on 2 PEs (a row the state holds inline, and one past them and past the
// 32 rows of device state version 1, read from the table in device
// memory): SetDeviceTeam publishes each, and the kernel library's barrier,
// its reduction (LL packets and the flag round, in the slot's scratch and
// LL packets) and an on-stream sync (memory operations on the slot's
// words) run on it with the values checked.
func gpuTeamTable(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		if r.GPU.MaxTeams() != fakeTeams {
			return fmt.Errorf("PE %d: %d device team rows, want %d", r.Me, r.GPU.MaxTeams(), fakeTeams)
		}
		const n = 2000
		off, err := r.GAlloc.Alloc(16*n, GPUAlign)
		if err != nil {
			return err
		}
		g, me := r.GPU, int64(r.Me)
		src, dst := r.GPUControlBytes()+off, r.GPUControlBytes()+off+8*n
		vals := make([]byte, 8*n)
		for i := range n {
			binary.LittleEndian.PutUint64(vals[8*i:], uint64(me*1000+int64(i)))
		}
		if err := g.Put(nil, r.Me, src, vals); err != nil {
			return err
		}
		for _, slot := range []int{5, 33} {
			if err := r.SetDeviceTeam(slot, 1, -1, 2, 1-r.Me); err != nil { // the world reversed: PEs 1, 0
				return err
			}
			if err := r.Boot.Barrier(); err != nil { // every member's slot zeroed
				return err
			}
			team := [gpulib.NArgs]uint64{uint64(slot)}
			if err := r.LibLaunch(nil, gpulib.Barrier, &team, "Team.BarrierOnStream"); err != nil {
				return err
			}
			for _, cnt := range []int{100, n} { // LL packets, then the flag round in scratch-sized steps
				args := [gpulib.NArgs]uint64{uint64(slot), uint64(g.Base()) + dst, uint64(g.Base()) + src, uint64(cnt), 0, 0}
				if err := r.LibLaunchColl(nil, gpulib.Reduce(3), &args, 16*cnt, "ReduceOnStream"); err != nil { // int64 sum
					return err
				}
				if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
					return err
				}
				out := make([]byte, 8*cnt)
				if err := g.Get(nil, out, r.Me, dst); err != nil {
					return err
				}
				for i := range cnt {
					if v := int64(binary.LittleEndian.Uint64(out[8*i:])); v != 1000+2*int64(i) {
						return fmt.Errorf("PE %d: reduce of %d on team %d: element %d is %d, want %d", r.Me, cnt, slot, i, v, 1000+2*i)
					}
				}
			}
			for range 3 {
				if ok, err := r.StreamSync(nil, slot, 1, -1, 2, 1-r.Me, "Team.SyncOnStream"); !ok || err != nil {
					return fmt.Errorf("PE %d: on-stream sync on slot %d: took the memops path %v, %v", r.Me, slot, ok, err)
				}
			}
			if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
				return err
			}
		}
		_, err = r.GAlloc.Free(off)
		return err
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d Init", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// gpuStreamSyncCapture: on a stream being captured into a CUDA graph
// (FAKECUDA_CAPTURING=1), the on-stream sync declines the memory
// operations path (their epochs would be frozen into the graph, and a
// replay would not wait): the caller launches the sync kernel, which
// syncs the team.
func gpuStreamSyncCapture(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_STREAM_SYNC": "memops"}, nil, func(r *Runtime) error {
		for range 3 {
			ok, err := r.StreamSync(nil, 0, 0, 1, 2, r.Me, "SyncAllOnStream")
			if ok || err != nil {
				return fmt.Errorf("PE %d: on-stream sync while capturing: took the memops path %v, %v", r.Me, ok, err)
			}
			world := [gpulib.NArgs]uint64{0}
			if err := r.LibLaunch(nil, gpulib.Barrier, &world, "SyncAllOnStream"); err != nil {
				return err
			}
		}
		return r.SyncStream(nil, "Stream.Synchronize")
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d Init", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// gpuTeamHandleRange: a device team handle must be below GOSHMEM_MAX_TEAMS
// (the team table's rows): a library barrier on handle fakeTeams traps,
// and the error names the range with the handle and the count.
func gpuTeamHandleRange(t *testing.T) {
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		v := [gpulib.NArgs]uint64{fakeTeams}
		if err := r.LibLaunch(nil, gpulib.Barrier, &v, "Team.BarrierOnStream"); err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		return r.SyncStream(nil, "Stream.Synchronize")
	})
	require.NoError(t, got[0].err)
	require.Error(t, got[0].work)
	assert.Contains(t, got[0].work.Error(), fmt.Sprintf("team handle out of range [0, max_teams): GOSHMEM_MAX_TEAMS [GOSHMEMI_ERR_BAD_TEAM (4), info %d, %d]",
		fakeTeams, fakeTeams))
}

// gpuLaunchBlockLimit: a block larger than the kernel's registers allow
// (fake_heavy: 96 per thread, at most 672 threads) is refused, by Launch
// and by LaunchCollective, with the kernel's limit and what to do about it;
// a block within the limit launches.
func gpuLaunchBlockLimit(t *testing.T) {
	var errs3 [3]error
	got := fakeJob(t, 1, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		m, err := r.LoadModule([]byte("FAKEMODULE-PLAIN"), "fake module")
		if err != nil {
			return err
		}
		defer r.UnloadModule(m)
		f, err := m.Function("fake_heavy")
		if err != nil {
			return err
		}
		one := [3]uint32{1, 1, 1}
		errs3[0] = r.Launch(f, one, [3]uint32{32, 8, 4}, 0, nil, false, nil)
		errs3[1] = r.Launch(f, one, [3]uint32{672, 1, 1}, 0, nil, false, nil)
		errs3[2] = r.Launch(f, one, [3]uint32{1024, 1, 1}, 0, nil, true, nil)
		return r.Synchronize(nil, "Synchronize")
	})
	require.NoError(t, got[0].err)
	require.NoError(t, got[0].work)
	for i, op := range map[int]string{0: "Launch", 2: "LaunchCollective"} {
		err := errs3[i]
		require.Error(t, err, op)
		assert.True(t, errors.Is(err, errs.ErrInvalidArgument), "%s: %v", op, err)
		assert.Contains(t, err.Error(), "goshmem: PE 0: "+op+`: kernel "fake_heavy": block of 1024 threads, at most 672 for this kernel (it uses 96 registers per thread)`)
		assert.Contains(t, strings.Join(errors.GetAllHints(err), " "), "__launch_bounds__")
	}
	assert.Contains(t, errs3[0].Error(), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "the driver's refusal is kept")
	assert.NoError(t, errs3[1])
}

// gpuProxyLazy: a CUDA_MODULE_LOADING the user chose is left alone, and
// with the proxy serving kernels a lazy one is reported (kernels loaded
// while a kernel waits for the proxy can hang).
func gpuProxyLazy(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_GPU_TRANSPORT": "proxy"}, nil, nil)
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		assert.Equal(t, "LAZY", os.Getenv("CUDA_MODULE_LOADING"))
		assert.Contains(t, p.info, fmt.Sprintf(`goshmem: info: PE %d: CUDA_MODULE_LOADING="LAZY": kernels of modules loaded lazily while a kernel waits for the remote GPU transport can hang until GOSHMEM_TIMEOUT; set it to EAGER`, i))
		assert.NotContains(t, p.info, "set by goshmem")
	}
}
