package shmem

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/ibgda"
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
)

// Module is a loaded CUDA module (a fatbin, cubin or PTX image) whose
// goshmemi_device_state pointer has been set to this PE's device state, so
// its kernels can call the device API of include/goshmem.h.
type Module struct {
	r    *runtime
	m    *cuda.Module
	name string
	// HasDeviceAPI reports whether the module includes goshmem.h (it
	// defines goshmemi_device_state).
	HasDeviceAPI bool
}

// Kernel is one __global__ function of a Module.
type Kernel struct {
	mod  *Module
	f    *cuda.Function
	name string

	mu   sync.Mutex // guards args
	args cuda.Args
}

// Stream is a CUDA stream for launches. The zero of *Stream (nil) in a
// LaunchConfig means the PE's default stream, a non-blocking stream
// created at Init.
type Stream struct {
	r    *runtime
	s    cuda.Stream
	last atomic.Pointer[string] // last kernel launched on it, for errors
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Dim returns Dim3{x, y, z}; missing dimensions are 1.
func Dim(dims ...uint32) Dim3 {
	d := Dim3{1, 1, 1}
	if len(dims) > 0 {
		d.X = dims[0]
	}
	if len(dims) > 1 {
		d.Y = dims[1]
	}
	if len(dims) > 2 {
		d.Z = dims[2]
	}
	return d
}

func (d Dim3) arr() [3]uint32 {
	a := [3]uint32{d.X, d.Y, d.Z}
	for i := range a {
		if a[i] == 0 {
			a[i] = 1
		}
	}
	return a
}

// LaunchConfig is a kernel launch's shape.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedMem   uint32  // dynamic shared memory bytes
	Stream      *Stream // nil: the default stream
}

func (r *runtime) needGPU(op string) error {
	if r.gpu == nil {
		return errors.Wrapf(r.gpuErr, "goshmem: PE %d: %s", r.me, op)
	}
	return nil
}

// LoadModule loads a CUDA module image (fatbin with sm_90 SASS and
// compute_90 PTX, a cubin, or PTX text) into this PE's GPU context and
// installs the device state into it. Not collective.
func LoadModule(image []byte) (*Module, error) {
	return loadModule(image, "module image")
}

// LoadModuleFile is LoadModule of the file at path; an error names the file.
func LoadModuleFile(path string) (*Module, error) {
	image, err := os.ReadFile(path)
	if err != nil {
		r := current.Load()
		pe := -1
		if r != nil {
			pe = r.me
		}
		return nil, errs.New(errs.ErrInvalidArgument, pe, "LoadModuleFile", "%v", err)
	}
	return loadModule(image, path)
}

func loadModule(image []byte, name string) (*Module, error) {
	r, err := rt("LoadModule")
	if err != nil {
		return nil, err
	}
	if err := r.needGPU("LoadModule"); err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, errs.New(errs.ErrInvalidArgument, r.me, "LoadModule", "%s is empty", name)
	}
	m, err := r.gpu.Ctx.ModuleLoadData(image)
	if err != nil {
		return nil, errors.WithHint(errs.New(errs.ErrInvalidArgument, r.me, "LoadModule",
			"%s is not a CUDA module this GPU can load: %v", name, err),
			"build kernels with nvcc -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin")
	}
	found, err := r.gpu.InstallState(m)
	if err != nil {
		_ = m.Unload()
		return nil, err
	}
	return &Module{r: r, m: m, name: name, HasDeviceAPI: found}, nil
}

// Kernel returns the module's kernel called name (an extern "C" name, or
// the mangled C++ name).
func (m *Module) Kernel(name string) (*Kernel, error) {
	f, err := m.m.Function(name)
	if err != nil {
		return nil, errs.New(errs.ErrInvalidArgument, m.r.me, "Module.Kernel", "kernel %q is not in %s: %v", name, m.name, err)
	}
	return &Kernel{mod: m, f: f, name: name}, nil
}

// Name is the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Unload releases the module; its kernels must not be launched afterwards.
func (m *Module) Unload() error {
	if m.r.gpu != nil {
		m.r.gpu.ForgetModule(m.m)
	}
	return m.m.Unload()
}

// NewStream creates a non-blocking stream on this PE's GPU.
func NewStream() (*Stream, error) {
	r, err := rt("NewStream")
	if err != nil {
		return nil, err
	}
	if err := r.needGPU("NewStream"); err != nil {
		return nil, err
	}
	s, err := r.gpu.Ctx.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return nil, err
	}
	return &Stream{r: r, s: s}, nil
}

// Synchronize waits for every launch on the stream (and, with the soft NIC,
// for the WQEs posted so far to execute). A kernel fault is reported here,
// naming the last kernel launched on the stream.
func (s *Stream) Synchronize() error {
	if err := s.r.gpuWait(s.s.Synchronize, s.last.Load(), "Stream.Synchronize"); err != nil {
		return errors.Join(s.r.kernelError(err, s.last.Load(), "Stream.Synchronize"), s.r.proxyErr("Stream.Synchronize"),
			s.r.softNICErr())
	}
	if err := s.r.drainNIC("Stream.Synchronize"); err != nil {
		return err
	}
	return s.r.drainProxy("Stream.Synchronize")
}

// drainNIC: after a kernel ended, the WQEs it posted may still be in the
// soft NIC's queues (the device API does not wait for completion without a
// quiet; the kernel's end is no quiet). Synchronize waits for the NIC to
// execute them, so a host barrier after it covers what the kernels did
// (as their stores do over load/store). Nothing to do without the soft NIC.
func (r *runtime) drainNIC(op string) error {
	if r.softNIC == nil {
		return nil
	}
	err := r.softNIC.nic.Drain(r.policy.Timeout)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ibgda.ErrNotDrained):
		return errors.Mark(errors.Wrapf(err, "goshmem: PE %d: %s", r.me, op), errs.ErrTimeout)
	default:
		return errors.Wrapf(err, "goshmem: PE %d: %s: soft NIC (EMULATION)", r.me, op)
	}
}

// Destroy releases the stream.
func (s *Stream) Destroy() error { return s.s.Destroy() }

// Launch starts k with the given shape and arguments on cfg.Stream (the
// default stream when nil) and returns without waiting. Arguments must
// match the kernel's parameters in size: int32, uint32, int64, uint64,
// float32, float64, uintptr (a device address), or a GPU Array (passed as
// its DevicePtr). A Go int is refused (C's int is 32 bits: say int32 or
// int64). Faults surface at the next Synchronize, naming the kernel.
func Launch(k *Kernel, cfg LaunchConfig, args ...any) error {
	return k.launch(cfg, false, args)
}

// LaunchCollective is Launch for kernels that synchronize across PEs
// (device barriers, waits on peers' signals): every block must be resident
// at once, so it uses a cooperative launch and fails, naming the limit,
// when the grid exceeds what the GPU can hold. Every PE launches its part.
func LaunchCollective(k *Kernel, cfg LaunchConfig, args ...any) error {
	return k.launch(cfg, true, args)
}

// deviceArg is implemented by Array[T]: a GPU array as a kernel argument.
type deviceArg interface{ DevicePtr() uintptr }

func (k *Kernel) launch(cfg LaunchConfig, coop bool, args []any) error {
	r := k.mod.r
	if current.Load() != r {
		return errs.New(errs.ErrNotInitialized, -1, "Launch", "kernel %q belongs to a finalized runtime", k.name)
	}
	if err := r.needGPU("Launch"); err != nil {
		return err
	}
	s := cfg.Stream
	if s == nil {
		var err error
		if s, err = r.defaultStream(); err != nil {
			return err
		}
	}
	grid, block := cfg.Grid.arr(), cfg.Block.arr()
	k.mu.Lock()
	defer k.mu.Unlock()
	a := k.args.Reset()
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
		case deviceArg:
			p := x.DevicePtr()
			if p == 0 {
				return errs.New(errs.ErrInvalidArgument, r.me, "Launch", "kernel %q argument %d: not a live GPU array (host array, freed, or zero)", k.name, i)
			}
			a.U64(uint64(p))
		case int:
			return errs.Hint(errs.ErrInvalidArgument, "C's int is 32 bits: pass int32(x), or int64(x) for long long",
				r.me, "Launch", "kernel %q argument %d is a Go int (ambiguous size)", k.name, i)
		default:
			return errs.New(errs.ErrInvalidArgument, r.me, "Launch", "kernel %q argument %d has unsupported type %T", k.name, i, v)
		}
	}
	if coop {
		per, err := k.f.MaxActiveBlocksPerMultiprocessor(int(block[0]*block[1]*block[2]), int(cfg.SharedMem))
		if err != nil {
			return err
		}
		sms, err := r.gpu.Dev.Attribute(cuda.AttrMultiprocessorCount)
		if err != nil {
			return err
		}
		if total := uint64(grid[0]) * uint64(grid[1]) * uint64(grid[2]); total > uint64(per*sms) {
			return errs.Hint(errs.ErrInvalidArgument, "shrink the grid: blocks of a collective launch must all be resident",
				r.me, "LaunchCollective", "kernel %q: grid of %d blocks, at most %d resident (%d per SM x %d SMs)", k.name, total, per*sms, per, sms)
		}
		if err := k.f.LaunchCooperative(grid, block, cfg.SharedMem, s.s, a); err != nil {
			return err
		}
	} else if err := k.f.Launch(grid, block, cfg.SharedMem, s.s, a); err != nil {
		return err
	}
	s.last.Store(&k.name)
	r.lastKernel.Store(&k.name)
	return nil
}

// Synchronize waits until every kernel and copy on this PE's GPU is done
// and, with the soft NIC (GOSHMEM_IBGDA_NIC=soft, an emulation), until the
// NIC has executed every WQE those kernels posted; with the GPU proxy,
// until its workers have served every request those kernels posted.
// A kernel fault (illegal address, assert, trap) is reported here naming
// the last kernel launched; the GPU context is unusable afterwards, so the
// program should exit non-zero, which ends every PE of the job under mpirun.
func Synchronize() error {
	r, err := rt("Synchronize")
	if err != nil {
		return err
	}
	if err := r.needGPU("Synchronize"); err != nil {
		return err
	}
	if err := r.gpuWait(r.gpu.Ctx.Synchronize, r.lastKernel.Load(), "Synchronize"); err != nil {
		return errors.Join(r.kernelError(err, r.lastKernel.Load(), "Synchronize"), r.proxyErr("Synchronize"),
			r.softNICErr())
	}
	if err := r.drainNIC("Synchronize"); err != nil {
		return err
	}
	if err := r.drainProxy("Synchronize"); err != nil {
		return err
	}
	return r.proxyErr("Synchronize")
}

// drainProxy: after the kernels ended, requests they posted to the GPU
// proxy may still be in its rings or in flight to another PE (the device
// API does not wait for completion without a quiet; a kernel's end is no
// quiet). Synchronize waits for the workers to serve them (Proxy.Drain),
// so a host barrier after it covers what the kernels did, as their stores
// do over load/store. Nothing to do without a proxy.
func (r *runtime) drainProxy(op string) error {
	if r.proxy == nil {
		return nil
	}
	if err := r.proxy.Drain(r.policy.Timeout); err != nil {
		return errors.Wrapf(err, "goshmem: PE %d: %s: GPU proxy", r.me, op)
	}
	return nil
}

// errGPUWaitTimeout marks gpuWait's timeout (kernelError passes it on).
var errGPUWaitTimeout = errors.New("GPU wait timed out")

// gpuWait runs wait (cuCtxSynchronize or cuStreamSynchronize). With the
// soft NIC (an emulation) and GOSHMEM_TIMEOUT it gives up after a little
// more than the timeout (the device's own IBGDA waits trap after exactly
// the timeout, and their report is the better message): a kernel that
// spins on something the NIC never delivers, outside any IBGDA wait (a
// barrier waiting for a peer's arrival, say), is then an ErrTimeout naming
// the kernel, with the NIC's view of every QP (softNICErr), instead of a
// silent hang. The kernel keeps running: the program should exit non-zero.
func (r *runtime) gpuWait(wait func() error, last *string, op string) error {
	if r.softNIC == nil || r.policy.Timeout <= 0 {
		return wait()
	}
	limit := r.policy.Timeout + r.policy.Timeout/4 + time.Second
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
			r.me, op, "kernel %q still running after %v (GOSHMEM_TIMEOUT=%v)", name, limit.Round(time.Second), r.policy.Timeout),
			errGPUWaitTimeout)
	}
}

// softNICErr is what the soft NIC and the device's IBGDA report word say
// after a failed or timed-out GPU wait (nil without an IBGDA NIC or news);
// with a ConnectX (GOSHMEM_IBGDA_NIC=mlx5), the report word alone.
func (r *runtime) softNICErr() error {
	if r.mlx5 != nil && r.mlx5.report != nil {
		if msg := reportMessage(r.mlx5.report, r.mlx5.names); msg != "" {
			return errors.Newf("goshmem: PE %d: mlx5 %s: %s", r.me, r.mlx5.v.Name, msg)
		}
	}
	if r.softNIC == nil {
		return nil
	}
	if d := r.softNIC.diagnose(); d != "" {
		return errors.Newf("goshmem: PE %d: %s", r.me, d)
	}
	return nil
}

func (r *runtime) kernelError(err error, last *string, op string) error {
	if errors.Is(err, errGPUWaitTimeout) {
		return err
	}
	name := "(none launched)"
	if last != nil {
		name = *last
	}
	if cuda.IsStickyFault(err) {
		return errors.WithHint(errs.New(errs.ErrInvalidArgument, r.me, op,
			"kernel %q (the last launched) faulted: %v; the GPU context is unusable", name, err),
			"exit the program non-zero: under mpirun that ends every PE; run with compute-sanitizer to find the faulting access")
	}
	return errors.Wrapf(err, "goshmem: PE %d: %s after kernel %q", r.me, op, name)
}

// defaultStream is the PE's launch stream, made on first use: a
// non-blocking stream of its own, so the host API's atomic kernels (on
// the transport's stream) never queue behind a user's long-running kernel.
func (r *runtime) defaultStream() (*Stream, error) {
	r.streamOnce.Do(func() {
		s, err := r.gpu.Ctx.StreamCreate(cuda.StreamNonBlocking)
		if err != nil {
			r.streamErr = err
			return
		}
		r.stream = &Stream{r: r, s: s}
	})
	return r.stream, r.streamErr
}
