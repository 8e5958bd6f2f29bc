package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/gpulib"
	"github.com/goshmem/goshmem/internal/logx"
	"github.com/goshmem/goshmem/internal/symmetric"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// gpuBackend is the GPU symmetric heap: cuMemAlloc'd on every PE, mapped
// to the node's peers with CUDA IPC (GOSHMEM_GPU: auto, on, off). Under
// auto a PE without a usable GPU declines, and then no PE has a GPU heap
// (AllocDevice explains why on every PE).
type gpuBackend struct {
	r    *Runtime
	auto bool
	t    *cudatr.Transport
}

// newGPUBackend is the GPU heap's backend, or nil (with r.GPUErr set)
// when GOSHMEM_GPU turns it off.
func (r *Runtime) newGPUBackend() (Backend, error) {
	mode := r.Settings.String("GOSHMEM_GPU")
	switch mode {
	case "off", "0", "no":
		r.GPUErr = errs.Hint(errs.ErrNotSupported, "unset GOSHMEM_GPU (or set it to auto) to use the GPU",
			r.Me, "AllocDevice", "GOSHMEM_GPU=%s turned the GPU heap off", mode)
		return nil, nil
	case "auto", "on", "1", "yes":
	default:
		// The settings agree, so every PE fails here alike.
		return nil, errs.New(errs.ErrInvalidArgument, r.Me, "Init", "GOSHMEM_GPU=%q; want auto, on or off", mode)
	}
	return &gpuBackend{r: r, auto: mode == "auto"}, nil
}

func (b *gpuBackend) Name() string { return "GPU heap" }

func (b *gpuBackend) Setup() ([]byte, error) {
	r := b.r
	size := (r.Settings.Size("GOSHMEM_DEVICE_HEAP_SIZE") + 4095) &^ 4095
	if err := r.gridSettings(); err != nil {
		return nil, err
	}
	lr, _ := bootstrap.LocalRank(r.Boot)
	dev, err := r.deviceChoice(lr)
	if err != nil {
		return nil, err
	}
	heapMax, err := r.deviceHeapMax()
	if err != nil {
		return nil, err
	}
	t, rec, err := cudatr.Setup(r.Me, r.NPEs, dev, size, heapMax, r.Teams.MaxTeams, r.Settings.String("GOSHMEM_LIBCUDA"))
	if err != nil {
		if b.auto && errors.Is(err, errs.ErrNotSupported) {
			return nil, Decline(err)
		}
		return nil, err
	}
	t.CollLL = r.gpuState.collLL
	t.SetGrowStep(r.Settings.Size("GOSHMEM_DEVICE_HEAP_CHUNK"))
	t.Warn = func(msg string) {
		r.Log.Warn(fmt.Sprintf("goshmem: warning: PE %d: %s\n", r.Me, msg), msg, logx.PE(r.Me))
	}
	b.t, r.gpuCaller = t, t
	return rec, nil
}

// deviceHeapMax is GOSHMEM_DEVICE_HEAP_MAX in bytes, 0 for auto (the
// GPU's memory), cudatr.HeapMaxFixed for fixed.
func (r *Runtime) deviceHeapMax() (uint64, error) {
	v := r.Settings.String("GOSHMEM_DEVICE_HEAP_MAX")
	switch v {
	case "auto":
		return 0, nil
	case "fixed":
		return cudatr.HeapMaxFixed, nil
	}
	n, err := env.ParseSize(v)
	if err != nil || n == 0 || n == cudatr.HeapMaxFixed {
		return 0, errs.Hint(errs.ErrInvalidArgument, "e.g. GOSHMEM_DEVICE_HEAP_MAX=64G, auto or fixed", r.Me, "Init",
			"GOSHMEM_DEVICE_HEAP_MAX=%q; must be auto, fixed or a size in bytes (suffix K, M, G, T), at least 1", v)
	}
	return n, nil
}

// deviceChoice is the GPU this PE asks for: WithDevice's ordinal, else
// GOSHMEM_DEVICE's, else none (the thread's current context, else the
// local rank decides; see cudatr.Choice).
func (r *Runtime) deviceChoice(localRank int) (cudatr.Choice, error) {
	c := cudatr.Choice{Ordinal: -1, LocalRank: localRank}
	if r.device != nil {
		// A negative ordinal is refused where the device count is known
		// (cudatr.Setup), so the error names the valid range.
		c.Ordinal, c.Source = *r.device, "WithDevice"
		return c, nil
	}
	if v := r.Settings.String("GOSHMEM_DEVICE"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return c, errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_DEVICE to a device ordinal (0, 1, ...) or unset it", r.Me, "Init",
				"GOSHMEM_DEVICE=%q; must be a device ordinal, at least 0", v)
		}
		c.Ordinal, c.Source = n, "GOSHMEM_DEVICE"
	}
	return c, nil
}

// gridSettings checks GOSHMEM_GPU_COLL_GRID, GOSHMEM_GPU_COLL_BLOCK,
// GOSHMEM_GPU_COLL_LL, GOSHMEM_GPU_STREAM_SYNC and GOSHMEM_GPU_COLL_THREADS
// and keeps them, GOSHMEM_GPU_COLL_FUSED and GOSHMEM_GPU_LAUNCH_OVERLAP for
// GridMinBytes, LibBlocks, GridFused, StreamSync, CollThreads, libLaunch and
// the device state.
func (r *Runtime) gridSettings() error {
	blk := r.Settings.Size("GOSHMEM_GPU_COLL_BLOCK")
	if blk < 1<<10 || blk > 1<<30 {
		return errs.New(errs.ErrInvalidArgument, r.Me, "Init", "GOSHMEM_GPU_COLL_BLOCK=%d bytes; must be in [1K, 1G]", blk)
	}
	r.gpuState.gridBlock, r.gpuState.gridMin = int(blk), 0
	r.gpuState.gridFused = r.Settings.Bool("GOSHMEM_GPU_COLL_FUSED")
	if g := r.Settings.String("GOSHMEM_GPU_COLL_GRID"); g != "off" {
		n, err := env.ParseSize(g)
		if err != nil {
			return errs.Hint(errs.ErrInvalidArgument, "e.g. GOSHMEM_GPU_COLL_GRID=256K, or off", r.Me, "Init",
				"GOSHMEM_GPU_COLL_GRID=%q; must be off or a size in bytes (suffix K, M, G)", g)
		}
		r.gpuState.gridMin = int(min(n, 1<<62))
	}
	r.gpuState.collLL = 0
	if g := r.Settings.String("GOSHMEM_GPU_COLL_LL"); g != "off" {
		n, err := env.ParseSize(g)
		if err != nil || n > 1<<20 {
			return errs.Hint(errs.ErrInvalidArgument, "e.g. GOSHMEM_GPU_COLL_LL=1K, or off", r.Me, "Init",
				"GOSHMEM_GPU_COLL_LL=%q; must be off or a size in bytes up to 1M (suffix K, M)", g)
		}
		r.gpuState.collLL = uint32(n)
	}
	switch g := r.Settings.String("GOSHMEM_GPU_STREAM_SYNC"); g {
	case "auto", "memops", "dissemination", "kernel":
		r.gpuState.syncAuto, r.gpuState.syncKernel, r.gpuState.syncDissem = g == "auto", g == "kernel", g == "dissemination"
	default:
		return errs.New(errs.ErrInvalidArgument, r.Me, "Init", "GOSHMEM_GPU_STREAM_SYNC=%q; must be auto, memops, dissemination or kernel", g)
	}
	r.gpuState.overlap = r.Settings.Bool("GOSHMEM_GPU_LAUNCH_OVERLAP")
	r.gpuState.collThreads = 0
	if g := r.Settings.String("GOSHMEM_GPU_COLL_THREADS"); g != "auto" {
		n, err := strconv.Atoi(g)
		if err != nil || n < 32 || n > gpulib.Threads || n%32 != 0 {
			return errs.New(errs.ErrInvalidArgument, r.Me, "Init",
				"GOSHMEM_GPU_COLL_THREADS=%q; must be auto or a multiple of 32 in [32, %d]", g, gpulib.Threads)
		}
		r.gpuState.collThreads = n
	}
	return nil
}

func (b *gpuBackend) Connect(_ int, recs [][]byte) ([]byte, bool, error) {
	r := b.r
	if err := b.t.Connect(recs, r.Node); err != nil {
		return nil, false, err
	}
	var err error
	if r.GAlloc, err = symmetric.NewAllocator(b.t.Limit()-b.t.ControlBytes(), GPUAlign); err != nil {
		return nil, false, errs.Wrap(err, r.Me, "Init", "GPU heap allocator")
	}
	r.gpuState.streamSync.epoch = make([]uint64, b.t.MaxTeams())
	r.GPU = b.t
	return nil, true, nil
}

func (b *gpuBackend) Drain(string, time.Duration) error { return nil }
func (b *gpuBackend) Diagnose() string                  { return "" }

// Info is the line on how kernels reach the other PEs' GPU heaps.
func (b *gpuBackend) Info() []string {
	r, g := b.r, b.t
	isRem := map[int]bool{}
	for _, pe := range g.RemotePEs() {
		isRem[pe] = true
	}
	var p2p []int
	for pe := 0; pe < r.NPEs; pe++ {
		if !isRem[pe] {
			p2p = append(p2p, pe)
		}
	}
	lines := []string{fmt.Sprintf("PE %d: GPU %d (%s, PCI %s) chosen by %s; kernels reach PEs %v by load/store (%s)",
		r.Me, int(g.Dev), g.DevName, g.BusID, g.DevWhy, p2p, g.Name())}
	lines = append(lines, fmt.Sprintf("PE %d: GPU heap: %s", r.Me, g.HeapMode()))
	switch mode, set := cuda.ModuleLoading(); {
	case set:
		lines = append(lines, fmt.Sprintf("PE %d: %s=EAGER (set by goshmem, it was unset: kernels load with their module, never while a kernel waits for the GPU proxy)", r.Me, cuda.ModuleLoadingEnv))
	case !strings.EqualFold(mode, "EAGER") && len(g.RemotePEs()) > 0:
		lines = append(lines, fmt.Sprintf("PE %d: %s=%q: kernels of modules loaded lazily while a kernel waits for the remote GPU transport can hang until GOSHMEM_TIMEOUT; set it to EAGER", r.Me, cuda.ModuleLoadingEnv, mode))
	}
	return lines
}

func (b *gpuBackend) Close() error {
	b.r.GPU = nil
	if b.t == nil {
		return nil
	}
	t := b.t
	b.t = nil
	// The kernel library and the launch stream (DefaultStream) belong to
	// this context.
	lerr := b.r.closeLib(t)
	var serr error
	if g := &b.r.gpuState; g.stream != nil {
		serr = g.stream.Destroy()
		g.stream = nil
	}
	return errors.Join(lerr, serr, t.Close())
}

// gpuRemoteBackends is the phase after the GPU heap: how kernels reach
// the peers CUDA IPC does not map (GOSHMEM_GPU_TRANSPORT), and the IBGDA
// NIC check, which runs with or without a GPU heap.
func (r *Runtime) gpuRemoteBackends() []Backend {
	mode := r.Settings.String("GOSHMEM_GPU_TRANSPORT")
	if mode == "ibgda" {
		return []Backend{&ibgdaBackend{r: r}}
	}
	if r.GPU == nil {
		if mode != "auto" && mode != "p2p" && mode != "proxy" {
			return []Backend{&badSetting{r: r, err: errs.Hint(errs.ErrInvalidArgument, "use GOSHMEM_GPU_TRANSPORT=auto, p2p, proxy or ibgda",
				r.Me, "Init", "GOSHMEM_GPU_TRANSPORT=%q is not a GPU transport", mode)}}
		}
		return nil
	}
	return []Backend{&proxyBackend{r: r}}
}

// badSetting is a backend whose Setup fails with err (a setting checked
// where its backend would run, so that every PE fails in the same phase).
type badSetting struct {
	r   *Runtime
	err error
}

func (b *badSetting) Name() string                                { return "settings" }
func (b *badSetting) Setup() ([]byte, error)                      { return nil, b.err }
func (b *badSetting) Connect(int, [][]byte) ([]byte, bool, error) { return nil, true, nil }
func (b *badSetting) Drain(string, time.Duration) error           { return nil }
func (b *badSetting) Diagnose() string                            { return "" }
func (b *badSetting) Info() []string                              { return nil }
func (b *badSetting) Close() error                                { return nil }
