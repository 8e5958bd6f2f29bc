package cuda

// #include <stdlib.h>
// #include <string.h>
// #include "shim.h"
import "C"

import (
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Module is a loaded CUDA module (cubin, fatbin or PTX) in one context.
type Module struct {
	ctx *Context
	h   C.CUmodule
}

// Function is a kernel of a Module.
type Function struct {
	ctx  *Context
	h    C.CUfunction
	name string
}

// ModuleLoadData loads a module image (cuModuleLoadData): a fatbin, a cubin
// or NUL-terminated-or-not PTX text. The bytes are copied to C memory, with a
// NUL appended (PTX needs it; binary images ignore it), for the call; the
// driver keeps its own copy, so image may be reused afterwards.
func (c *Context) ModuleLoadData(image []byte) (*Module, error) {
	h, err := c.live("cuModuleLoadData")
	if err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuModuleLoadData: empty image")
	}
	img := C.malloc(C.size_t(len(image) + 1))
	if img == nil {
		return nil, errors.Newf("cuda: cuModuleLoadData: cannot allocate %d bytes of C memory for the image", len(image)+1)
	}
	defer C.free(img)
	C.memcpy(img, unsafe.Pointer(unsafe.SliceData(image)), C.size_t(len(image)))
	*(*byte)(unsafe.Add(img, len(image))) = 0
	var m C.CUmodule
	if err := check(C.goshmemi_cuModuleLoadData(h, &m, img), "cuModuleLoadData"); err != nil {
		return nil, errors.WithHint(errors.Wrapf(err, "%d-byte image", len(image)),
			"the image must be a fatbin/cubin for this GPU's architecture or PTX the driver can JIT (nvcc -gencode arch=compute_NN,code=sm_NN with NN the GPU's compute capability, e.g. 80, 90 or 100; PTX from code=compute_NN runs on that NN and newer)")
	}
	return &Module{ctx: c, h: m}, nil
}

// ModuleLoad loads a module file (cuModuleLoad): .cubin, .fatbin or .ptx.
func (c *Context) ModuleLoad(path string) (*Module, error) {
	h, err := c.live("cuModuleLoad")
	if err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var m C.CUmodule
	if err := check(C.goshmemi_cuModuleLoad(h, &m, cpath), "cuModuleLoad"); err != nil {
		return nil, errors.Wrapf(err, "module file %q", path)
	}
	return &Module{ctx: c, h: m}, nil
}

// Function looks a kernel up by its symbol name (cuModuleGetFunction):
// the extern "C" name, or the mangled C++ name.
func (m *Module) Function(name string) (*Function, error) {
	h, err := m.ctx.live("cuModuleGetFunction")
	if err != nil {
		return nil, err
	}
	if m.h == nil {
		return nil, errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuModuleGetFunction(%q): module was unloaded", name)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	if r := C.goshmemi_cuModuleGetFunction(h, &f, m.h, cname); r != 0 {
		err := check(r, "cuModuleGetFunction")
		if r == C.CUDA_ERROR_NOT_FOUND {
			return nil, errors.WithHint(errors.Wrapf(err, "kernel %q is not in the module", name),
				`declare the kernel extern "C" (or pass its mangled name) and check the module was built from the right source`)
		}
		return nil, errors.Wrapf(err, "kernel %q", name)
	}
	return &Function{ctx: m.ctx, h: f, name: name}, nil
}

// Global returns the address and size of a __device__ or __constant__
// variable of the module (cuModuleGetGlobal_v2).
func (m *Module) Global(name string) (DevicePtr, int, error) {
	h, err := m.ctx.live("cuModuleGetGlobal")
	if err != nil {
		return 0, 0, err
	}
	if m.h == nil {
		return 0, 0, errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuModuleGetGlobal(%q): module was unloaded", name)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var p C.CUdeviceptr
	var n C.size_t
	if r := C.goshmemi_cuModuleGetGlobal(h, &p, &n, m.h, cname); r != 0 {
		err := check(r, "cuModuleGetGlobal_v2")
		if r == C.CUDA_ERROR_NOT_FOUND {
			return 0, 0, errors.Wrapf(err, "global %q is not in the module", name)
		}
		return 0, 0, errors.Wrapf(err, "global %q", name)
	}
	return DevicePtr(p), int(n), nil
}

// Unload unloads the module (cuModuleUnload); its Functions must not be
// launched afterwards. Unloading twice is a no-op.
func (m *Module) Unload() error {
	h, err := m.ctx.live("cuModuleUnload")
	if err != nil {
		return err
	}
	if m.h == nil {
		return nil
	}
	mh := m.h
	m.h = nil
	return check(C.goshmemi_cuModuleUnload(h, mh), "cuModuleUnload")
}

// Name returns the kernel's symbol name.
func (f *Function) Name() string { return f.name }

// Launch launches the kernel on stream (the zero Stream: the context's NULL
// stream) with grid x block threads, sharedMem bytes of dynamic shared
// memory and the parameters in args (nil: none). It returns once the launch
// is queued: a fault inside the kernel surfaces at the next synchronizing
// call (IsStickyFault). One cgo call, no goroutine hop: the C side copies
// args to its stack, makes the context current and calls cuLaunchKernel.
// It allocates nothing.
func (f *Function) Launch(grid, block [3]uint32, sharedMem uint32, stream Stream, args *Args) error {
	return f.launch(grid, block, sharedMem, stream, args, C.GOSHMEMI_LAUNCH_PLAIN, "cuLaunchKernel")
}

// LaunchOverlapped is Launch through cuLaunchKernelEx with programmatic
// stream serialization (CUDA's programmatic dependent launch): the kernel
// may be scheduled while the stream's previous kernel still runs, once that
// kernel executes griddepcontrol.launch_dependents, so its launch latency
// overlaps the previous kernel. The kernel itself must execute
// griddepcontrol.wait (cudaGridDependencySynchronize) before it touches
// memory the stream's earlier work writes; that wait returns when the
// previous kernel has completed and its writes are visible. Work after it
// on the stream is ordered as after Launch. A driver without
// cuLaunchKernelEx answers CUDA_ERROR_NOT_SUPPORTED.
func (f *Function) LaunchOverlapped(grid, block [3]uint32, sharedMem uint32, stream Stream, args *Args) error {
	return f.launch(grid, block, sharedMem, stream, args, C.GOSHMEMI_LAUNCH_OVERLAP, "cuLaunchKernelEx")
}

// LaunchCooperative is Launch through cuLaunchCooperativeKernel: all blocks
// are co-resident (grid-wide sync is allowed), so the grid must fit the
// device at once (see MaxActiveBlocksPerMultiprocessor and
// AttrMultiprocessorCount) or the launch fails with
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
func (f *Function) LaunchCooperative(grid, block [3]uint32, sharedMem uint32, stream Stream, args *Args) error {
	return f.launch(grid, block, sharedMem, stream, args, C.GOSHMEMI_LAUNCH_COOPERATIVE, "cuLaunchCooperativeKernel")
}

func (f *Function) launch(grid, block [3]uint32, smem uint32, stream Stream, args *Args, mode C.int, call string) error {
	h, err := f.ctx.live(call)
	if err != nil {
		return err
	}
	var (
		buf   *C.uchar
		nbuf  int
		offs  *C.uint
		nargs int
	)
	if args != nil {
		if args.err != nil {
			return errors.Wrapf(args.err, "cuda: %s(%s)", call, f.name)
		}
		if nargs = len(args.offs); nargs > 0 {
			buf = (*C.uchar)(unsafe.Pointer(unsafe.SliceData(args.buf)))
			nbuf = len(args.buf)
			offs = (*C.uint)(unsafe.Pointer(unsafe.SliceData(args.offs)))
		}
	}
	r := C.goshmemi_launch(h, f.h,
		C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.uint(smem), stream.h, buf, C.size_t(nbuf), offs, C.int(nargs), mode)
	if r != 0 {
		return launchError(r, call, f.name, grid, block, smem)
	}
	return nil
}

func launchError(r C.int, call, name string, grid, block [3]uint32, smem uint32) error {
	return errors.Wrapf(check(r, call), "kernel %s grid %v block %v shared %d", name, grid, block, smem)
}

// Attribute returns one of the kernel's attributes (cuFuncGetAttribute).
func (f *Function) Attribute(a FuncAttribute) (int, error) {
	h, err := f.ctx.live("cuFuncGetAttribute")
	if err != nil {
		return 0, err
	}
	var v C.int
	if err := check(C.goshmemi_cuFuncGetAttribute(h, &v, C.int(a), f.h), "cuFuncGetAttribute"); err != nil {
		return 0, errors.Wrapf(err, "kernel %s attribute %d", f.name, int(a))
	}
	return int(v), nil
}

// MaxActiveBlocksPerMultiprocessor returns how many blocks of blockSize
// threads using smem bytes of dynamic shared memory fit on one SM at once
// (cuOccupancyMaxActiveBlocksPerMultiprocessor).
func (f *Function) MaxActiveBlocksPerMultiprocessor(blockSize, smem int) (int, error) {
	h, err := f.ctx.live("cuOccupancyMaxActiveBlocksPerMultiprocessor")
	if err != nil {
		return 0, err
	}
	if blockSize <= 0 || smem < 0 {
		return 0, errors.Wrapf(errs.ErrInvalidArgument,
			"cuda: cuOccupancyMaxActiveBlocksPerMultiprocessor(%s): blockSize=%d smem=%d, want blockSize > 0, smem >= 0", f.name, blockSize, smem)
	}
	var n C.int
	if err := check(C.goshmemi_cuOccupancyMaxActiveBlocksPerMultiprocessor(h, &n, f.h, C.int(blockSize), C.size_t(smem)),
		"cuOccupancyMaxActiveBlocksPerMultiprocessor"); err != nil {
		return 0, errors.Wrapf(err, "kernel %s", f.name)
	}
	return int(n), nil
}
