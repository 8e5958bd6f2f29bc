package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
)

// Module is a loaded CUDA module with this PE's device state installed.
type Module struct {
	m *cuda.Module
	// HasDeviceAPI: the module includes goshmem.h (defines goshmemi_device_state).
	HasDeviceAPI bool
}

// Function is one __global__ function of a Module, with its argument buffer.
type Function struct {
	f    *cuda.Function
	name string
	mu   sync.Mutex // guards args
	args cuda.Args
}

// Stream is a CUDA stream of this PE's GPU.
type Stream struct {
	s        cuda.Stream
	last     atomic.Pointer[string] // last kernel launched on it, for errors
	dead     atomic.Bool            // destroyed: calls on it are errors
	borrowed bool                   // another library's handle (WrapStream): never destroyed here
}

// gpuState is the runtime's launch state (the default stream, the last
// kernel launched), made on first use.
type gpuState struct {
	streamOnce sync.Once
	stream     *Stream
	streamErr  error
	lastKernel atomic.Pointer[string]
	lib        gpuLib // goshmem's own kernels (gpulib.go)
	// GOSHMEM_GPU_COLL_GRID and GOSHMEM_GPU_COLL_BLOCK (bytes)
	gridMin, gridBlock int
	gridFused          bool   // GOSHMEM_GPU_COLL_FUSED
	collLL             uint32 // GOSHMEM_GPU_COLL_LL (bytes)
	collThreads        int    // GOSHMEM_GPU_COLL_THREADS (0: auto)
	syncKernel         bool   // GOSHMEM_GPU_STREAM_SYNC=kernel
	syncAuto           bool   // GOSHMEM_GPU_STREAM_SYNC=auto
	syncDissem         bool   // GOSHMEM_GPU_STREAM_SYNC=dissemination
	overlap            bool   // GOSHMEM_GPU_LAUNCH_OVERLAP, until the driver refuses it (under lib.mu)
	streamSync         streamSync
	smsOnce            sync.Once
	nsms               int // the GPU's SM count (smCount)
	smsErr             error
	regs               devRegistry // RegisterDevice's buffers (register.go)
}

// NeedGPU is nil with a GPU heap, else why there is none, naming op.
func (r *Runtime) NeedGPU(op string) error {
	if r.GPU == nil {
		return errs.Wrap(r.GPUErr, r.Me, op, "no GPU")
	}
	return nil
}

// LoadModule loads image into this PE's GPU context and installs the
// device state into it; name is what errors call the image.
func (r *Runtime) LoadModule(image []byte, name string) (*Module, error) {
	if err := r.NeedGPU("LoadModule"); err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, errs.New(errs.ErrInvalidArgument, r.Me, "LoadModule", "%s is empty", name)
	}
	m, err := r.GPU.Ctx.ModuleLoadData(image)
	if err != nil {
		return nil, errors.WithHint(errs.New(errs.ErrInvalidArgument, r.Me, "LoadModule",
			"%s is not a CUDA module this GPU can load: %v", name, err),
			"build kernels for this GPU's architecture, e.g. nvcc -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin for sm_90 (H100/H200); use 80 for an A100, 100 for a B200")
	}
	found, err := r.GPU.InstallState(m)
	if err != nil {
		_ = m.Unload()
		return nil, err
	}
	return &Module{m: m, HasDeviceAPI: found}, nil
}

// Function looks up the module's kernel called name.
func (m *Module) Function(name string) (*Function, error) {
	f, err := m.m.Function(name)
	if err != nil {
		return nil, err
	}
	return &Function{f: f, name: name}, nil
}

// UnloadModule releases m; its kernels must not be launched afterwards.
func (r *Runtime) UnloadModule(m *Module) error {
	if r.GPU != nil {
		r.GPU.ForgetModule(m.m)
	}
	return m.m.Unload()
}

// NewStream creates a non-blocking stream on this PE's GPU.
func (r *Runtime) NewStream() (*Stream, error) {
	if err := r.NeedGPU("NewStream"); err != nil {
		return nil, err
	}
	s, err := r.GPU.Ctx.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// DefaultStream is the PE's launch stream, made on first use: a
// non-blocking stream of its own, so the host API's atomic kernels (on
// the transport's stream) never queue behind a user's long-running kernel.
func (r *Runtime) DefaultStream() (*Stream, error) {
	g := &r.gpuState
	g.streamOnce.Do(func() { g.stream, g.streamErr = r.NewStream() })
	return g.stream, g.streamErr
}

// Destroy releases the stream (a borrowed one is only retired); later
// calls on it are errors. Destroying twice is a no-op.
func (s *Stream) Destroy() error {
	if s.dead.Swap(true) || s.borrowed {
		return nil
	}
	return s.s.Destroy()
}

// Handle is the stream's CUstream handle.
func (s *Stream) Handle() uintptr { return s.s.Handle() }

// DevicePtr is implemented by a GPU array passed as a kernel argument.
type DevicePtr interface{ DevicePtr() uintptr }

// Launch starts f on s (nil: the default stream); coop makes it a
// cooperative launch (every block resident), refused when the grid is
// larger than the GPU holds.
func (r *Runtime) Launch(f *Function, grid, block [3]uint32, sharedMem uint32, s *Stream, coop bool, args []any) error {
	if err := r.NeedGPU("Launch"); err != nil {
		return err
	}
	s, err := r.StreamOrDefault(s, "Launch")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.args.Reset()
	for i, v := range args {
		switch x := v.(type) {
		case int32:
			a.I32(x)
		case uint32:
			a.U32(x)
		case int64:
			a.I64(x)
		case uint64:
			a.U64(x)
		case float32:
			a.F32(x)
		case float64:
			a.F64(x)
		case uintptr:
			a.U64(uint64(x))
		case int8:
			a.I8(x)
		case uint8:
			a.U8(x)
		case int16:
			a.I16(x)
		case uint16:
			a.U16(x)
		case DevicePtr:
			p := x.DevicePtr()
			if p == 0 {
				return errs.New(errs.ErrInvalidArgument, r.Me, "Launch", "kernel %q argument %d: not a live GPU array (host array, freed, or zero)", f.name, i)
			}
			a.U64(uint64(p))
		case int:
			return errs.Hint(errs.ErrInvalidArgument, "C's int is 32 bits: pass int32(x), or int64(x) for long long",
				r.Me, "Launch", "kernel %q argument %d is a Go int (ambiguous size)", f.name, i)
		default:
			return errs.New(errs.ErrInvalidArgument, r.Me, "Launch", "kernel %q argument %d has unsupported type %T", f.name, i, v)
		}
	}
	threads := uint64(block[0]) * uint64(block[1]) * uint64(block[2])
	if coop {
		per, err := f.f.MaxActiveBlocksPerMultiprocessor(int(threads), int(sharedMem))
		if err != nil {
			return err
		}
		if per == 0 {
			if err := f.blockLimit(r.Me, threads, "LaunchCollective", nil); err != nil {
				return err
			}
		}
		sms, err := r.smCount()
		if err != nil {
			return err
		}
		if total := uint64(grid[0]) * uint64(grid[1]) * uint64(grid[2]); total > uint64(per*sms) {
			return errs.Hint(errs.ErrInvalidArgument, "shrink the grid: blocks of a collective launch must all be resident",
				r.Me, "LaunchCollective", "kernel %q: grid of %d blocks, at most %d resident (%d per SM x %d SMs)", f.name, total, per*sms, per, sms)
		}
		if err := f.f.LaunchCooperative(grid, block, sharedMem, s.s, a); err != nil {
			return f.launchError(r.Me, threads, "LaunchCollective", err)
		}
	} else if err := f.f.Launch(grid, block, sharedMem, s.s, a); err != nil {
		return f.launchError(r.Me, threads, "Launch", err)
	}
	s.last.Store(&f.name)
	r.gpuState.lastKernel.Store(&f.name)
	return nil
}

// launchError explains a launch the driver refused for lack of resources
// when the block is larger than the kernel allows (blockLimit); other
// errors come back as they are.
func (f *Function) launchError(me int, threads uint64, op string, err error) error {
	var ce *cuda.Error
	if errors.As(err, &ce) && ce.Code == cuda.CodeLaunchOutOfResources {
		if lim := f.blockLimit(me, threads, op, err); lim != nil {
			return lim
		}
	}
	return err
}

// blockLimit is the error for a block of more threads than the kernel can
// launch with (its registers per thread decide it: ptxas uses as many as
// help a kernel without launch bounds, so a kernel that inlines much of
// the device API, a collective say, may not fit 1024 threads); nil when
// the block fits or the limit cannot be read. The driver's refusal, when
// there was one, ends the message.
func (f *Function) blockLimit(me int, threads uint64, op string, refusal error) error {
	limit, err := f.f.Attribute(cuda.FuncMaxThreadsPerBlock)
	if err != nil || threads <= uint64(limit) {
		return nil
	}
	regs, err := f.f.Attribute(cuda.FuncNumRegs)
	if err != nil {
		regs = -1
	}
	detail := ""
	if refusal != nil {
		detail = " (" + refusal.Error() + ")"
	}
	return errs.Hint(errs.ErrInvalidArgument,
		"launch at most that many threads per block, or compile the kernel with __launch_bounds__(threads) so that ptxas fits it in fewer registers",
		me, op, "kernel %q: block of %d threads, at most %d for this kernel (it uses %d registers per thread)%s",
		f.name, threads, limit, regs, detail)
}

// Synchronize waits for s (nil: every stream of this PE's GPU), then for
// every backend's accepted work (Drain): with the soft NIC (an
// emulation) the WQEs the kernels posted, with the GPU proxy the requests.
// A kernel fault is reported naming the last kernel launched (on s), with
// every backend's diagnosis.
func (r *Runtime) Synchronize(s *Stream, op string) error {
	if err := r.NeedGPU(op); err != nil {
		return err
	}
	wait, last := r.GPU.Ctx.Synchronize, r.gpuState.lastKernel.Load()
	if s != nil {
		wait, last = s.s.Synchronize, s.last.Load()
	}
	if err := r.gpuWait(wait, last, op); err != nil {
		return errors.Join(r.kernelError(err, last, op), r.Diagnose(op))
	}
	if err := r.Drain(op); err != nil {
		return err
	}
	return r.ProxyErr(op)
}

// settleWarn is how often SettleGPU reports that it is still waiting.
var settleWarn = 10 * time.Second

// SettleGPU waits, in Finalize before the heaps go, for every kernel and
// copy queued on this PE's GPU (stream calls the program did not
// synchronize, its own kernels: they may still address the heaps) and for
// the work those handed to the backends, as Synchronize does; a fault in
// that work is its error. A kernel that never ends (one waiting for a
// signal no PE will send) keeps Finalize waiting, as it would keep
// Synchronize: every settleWarn the logger gets a warning naming the last
// kernel launched, so the wait is not silent. No GPU: nothing to do.
func (r *Runtime) SettleGPU() error {
	if r.GPU == nil {
		return nil
	}
	// The warnings end before SettleGPU returns: none comes after Finalize.
	stop, done := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done }()
	start, every := time.Now(), settleWarn
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				name := "(none launched)"
				if last := r.gpuState.lastKernel.Load(); last != nil {
					name = *last
				}
				msg := fmt.Sprintf("Finalize has waited %v for the work queued on this PE's GPU (last kernel launched: %q); "+
					"a kernel that waits for something no PE will send keeps it waiting", time.Since(start).Round(time.Second), name)
				r.Log.Warn(fmt.Sprintf("goshmem: warning: PE %d: %s\n", r.Me, msg), msg, logx.PE(r.Me))
			}
		}
	}()
	return r.Synchronize(nil, "Finalize")
}

// errGPUWaitTimeout marks gpuWait's timeout (kernelError passes it on).
var errGPUWaitTimeout = errors.New("GPU wait timed out")

// gpuWait runs wait (cuCtxSynchronize or cuStreamSynchronize). With the
// soft NIC (an emulation) and GOSHMEM_TIMEOUT it gives up after a little
// more than the timeout (the device's own IBGDA waits trap after exactly
// the timeout, and their report is the better message): a kernel that
// spins on something the NIC never delivers, outside any IBGDA wait, is
// then an ErrTimeout naming the kernel, with the NIC's view of every QP,
// instead of a silent hang. The kernel keeps running: the program should
// exit non-zero.
func (r *Runtime) gpuWait(wait func() error, last *string, op string) error {
	if r.softNIC == nil || r.Policy.Timeout <= 0 {
		return wait()
	}
	limit := r.Policy.Timeout + r.Policy.Timeout/4 + time.Second
	done := make(chan error, 1)
	go func() { done <- wait() }() // left behind on timeout: it returns if the kernel ever ends
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		name := "(none launched)"
		if last != nil {
			name = *last
		}
		return errs.Mark(errs.Hint(errs.ErrTimeout, "the kernel is still running: exit the program non-zero (under mpirun that ends every PE)",
			r.Me, op, "kernel %q still running after %v (GOSHMEM_TIMEOUT=%v)", name, limit.Round(time.Second), r.Policy.Timeout),
			errGPUWaitTimeout)
	}
}

func (r *Runtime) kernelError(err error, last *string, op string) error {
	if errors.Is(err, errGPUWaitTimeout) {
		return err
	}
	name := "(none launched)"
	if last != nil {
		name = *last
	}
	if cuda.IsStickyFault(err) {
		// A device call that saw bad input or timed out left its record
		// before trapping: name it (the trap may have been in an earlier
		// kernel than the last one launched).
		if de := r.GPU.DeviceError(); de != nil {
			class := errs.ErrInvalidArgument
			if de.Timeout() {
				class = errs.ErrTimeout
			}
			return errors.WithHint(errs.New(class, r.Me, op,
				"a kernel trapped: %v (last kernel launched: %q; %v); the GPU context is unusable", de, name, err),
				"exit the program non-zero: under mpirun that ends every PE")
		}
		return errors.WithHint(errs.New(errs.ErrInvalidArgument, r.Me, op,
			"kernel %q (the last launched) faulted: %v; the GPU context is unusable", name, err),
			"exit the program non-zero: under mpirun that ends every PE; run with compute-sanitizer to find the faulting access")
	}
	return errs.Wrap(err, r.Me, op, "after kernel %q", name)
}

// ProxyErr is the GPU proxy's first rejected request or the reason a
// worker stopped (nil without a proxy or a problem).
func (r *Runtime) ProxyErr(op string) error {
	if r.proxy == nil {
		return nil
	}
	if err := r.proxy.Err(); err != nil {
		return errors.WithHint(errs.Wrap(err, r.Me, op, "GPU proxy"),
			"a device call named a PE or offset the proxy cannot serve, or a proxy worker stopped: the kernels that used it trapped (GOSHMEMI_ERR_PROXY_*)")
	}
	return nil
}
