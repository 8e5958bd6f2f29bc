package shmem

import (
	"os"

	"github.com/goshmem/goshmem/internal/errs"
	core "github.com/goshmem/goshmem/internal/runtime"
)

// Module is a loaded CUDA module (a fatbin, cubin or PTX image) whose
// goshmemi_device_state pointer has been set to this PE's device state, so
// its kernels can call the device API of include/goshmem.h.
type Module struct {
	r    *runtime
	m    *core.Module
	name string
	// HasDeviceAPI reports whether the module includes goshmem.h (it
	// defines goshmemi_device_state).
	HasDeviceAPI bool
}

// Kernel is one __global__ function of a Module.
type Kernel struct {
	mod  *Module
	f    *core.Function
	name string
}

// Stream is a CUDA stream for launches. The zero of *Stream (nil) in a
// LaunchConfig means the PE's default stream, a non-blocking stream
// created on first use.
type Stream struct {
	r   *runtime
	s   *core.Stream
	err error // why StreamFromHandle could not wrap the handle
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
		return nil, errs.New(errs.ErrInvalidArgument, MyPE(), "LoadModuleFile", "%v", err)
	}
	return loadModule(image, path)
}

func loadModule(image []byte, name string) (*Module, error) {
	r, err := enter("LoadModule")
	if err != nil {
		return nil, err
	}
	defer r.leave()
	m, err := r.c.LoadModule(image, name)
	if err != nil {
		return nil, r.apiErr(err, "LoadModule")
	}
	return &Module{r: r, m: m, name: name, HasDeviceAPI: m.HasDeviceAPI}, nil
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
func (m *Module) Unload() error { return m.r.c.UnloadModule(m.m) }

// NewStream creates a non-blocking stream on this PE's GPU.
func NewStream() (*Stream, error) {
	r, err := enter("NewStream")
	if err != nil {
		return nil, err
	}
	defer r.leave()
	s, err := r.c.NewStream()
	if err != nil {
		return nil, r.apiErr(err, "NewStream")
	}
	return &Stream{r: r, s: s}, nil
}

// Synchronize waits for every launch on the stream and then, like the
// PE-wide Synchronize, for the work its kernels handed to the backends
// (the soft NIC's WQEs, the GPU proxy's requests). A kernel fault is
// reported here, naming the last kernel launched on the stream.
func (s *Stream) Synchronize() error {
	r, cs, err := s.use("Stream.Synchronize")
	if err != nil {
		return err
	}
	defer r.leave()
	return r.apiErr(r.c.SyncStream(cs, "Stream.Synchronize"), "Stream.Synchronize")
}

// Destroy releases the stream; a stream from StreamFromHandle is only
// retired (its handle belongs to the library that made it). Later calls
// on the stream return an error. Destroying twice is a no-op.
func (s *Stream) Destroy() error {
	if s == nil || s.s == nil {
		return nil
	}
	return s.s.Destroy()
}

// Launch starts k with the given shape and arguments on cfg.Stream (the
// default stream when nil) and returns without waiting. Arguments must
// match the kernel's parameters in size: int32, uint32, int64, uint64,
// float32, float64, uintptr (a device address), or a GPU Array (passed as
// its DevicePtr). A Go int is refused (C's int is 32 bits: say int32 or
// int64). Faults surface at the next Synchronize, naming the kernel. A
// block of more threads than the kernel's registers allow is refused with
// ErrInvalidArgument naming the kernel's limit (give the kernel
// __launch_bounds__ to have ptxas fit it in fewer registers).
func Launch(k *Kernel, cfg LaunchConfig, args ...any) error {
	return k.launch(cfg, false, args, "Launch")
}

// LaunchCollective is Launch for kernels that synchronize across PEs
// (device barriers, waits on peers' signals): every block must be resident
// at once, so it uses a cooperative launch and fails, naming the limit,
// when the grid exceeds what the GPU can hold. Every PE launches its part.
func LaunchCollective(k *Kernel, cfg LaunchConfig, args ...any) error {
	return k.launch(cfg, true, args, "LaunchCollective")
}

// launch is Launch (coop false) and LaunchCollective; op names the call
// for errors.As (the messages say "Launch" for both).
func (k *Kernel) launch(cfg LaunchConfig, coop bool, args []any, op string) error {
	if k == nil || k.mod == nil || k.f == nil {
		return errs.New(errs.ErrInvalidArgument, MyPE(), op, "a nil or zero Kernel: get kernels from Module.Kernel")
	}
	r := k.mod.r
	if current.Load() != r {
		return errs.At(errs.New(errs.ErrNotInitialized, -1, "Launch", "kernel %q belongs to a finalized runtime", k.name), -1, op)
	}
	r, s, err := cfg.Stream.use("Launch")
	if err != nil {
		return errs.At(err, MyPE(), op)
	}
	defer r.leave()
	return r.apiErr(r.c.Launch(k.f, cfg.Grid.arr(), cfg.Block.arr(), cfg.SharedMem, s, coop, args), op)
}

// Synchronize waits until every kernel and copy on this PE's GPU is done
// and, with the soft NIC (GOSHMEM_IBGDA_NIC=soft, an emulation), until the
// NIC has executed every WQE those kernels posted; with the GPU proxy,
// until its workers have served every request those kernels posted, so a
// host barrier after it covers what the kernels did. A kernel fault
// (illegal address, assert, trap) is reported here naming the last kernel
// launched; the GPU context is unusable afterwards, so the program should
// exit non-zero, which ends every PE of the job under mpirun.
func Synchronize() error {
	r, err := enter("Synchronize")
	if err != nil {
		return err
	}
	defer r.leave()
	return r.apiErr(r.c.Synchronize(nil, "Synchronize"), "Synchronize")
}
