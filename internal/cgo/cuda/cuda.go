// Package cuda is goshmem's binding to the CUDA driver API, loaded at run
// time with dlopen("libcuda.so.1") so that Go builds need no CUDA SDK and one
// binary built on a machine without a GPU runs on the GPU machine. It is the
// only package that says import "C" for CUDA. The types, enum values and
// signatures it uses are declared in driver.h from the driver API reference;
// shim.c resolves each entry point with dlsym, preferring the versioned
// symbols (cuMemAlloc_v2 ...) that cuda.h maps the plain names to.
//
// # Loading
//
// Load (or LoadLibrary) dlopens the driver, resolves every symbol and calls
// cuInit(0). Without an NVIDIA driver it returns an error matching
// ErrNoDriver; with a driver but no usable GPU one matching ErrNoDevice.
// Every other call made before a successful Load returns an error (the Load
// failure, when there was one), never a crash.
//
// # Contexts and OS threads
//
// The binding uses each device's primary context (the one the CUDA runtime
// uses too). A CUDA context is current per OS thread, and goroutines move
// between threads, so "make it current, then call" is not safe as two Go
// steps. Every method of Context, Module, Function, Stream and Event
// therefore makes ONE cgo call whose C side calls cuCtxSetCurrent and then
// the driver function: a cgo call runs start to finish on one OS thread, so
// nothing can migrate in between. cuCtxSetCurrent on the already-current
// context is a thread-local store, so this costs nanoseconds, and the launch
// path (Function.Launch) stays one cgo call with no goroutine hop. Where
// another context was current on that thread (another library's), the same
// cgo call makes it current again before it returns, so that library's
// next call on its thread finds its own; a thread with none keeps this
// package's, which is harmless because every call sets its own.
//
// Code that needs a context current across several calls that are not this
// package's (cgo into another CUDA library, say) uses Context.Do, which runs
// a function on a goroutine locked to one OS thread with the context
// current, like the request-channel worker of bootstrap/mpi.
//
// # Errors
//
// Driver failures are *Error values naming the call and the driver's error
// name and text (cuGetErrorName, cuGetErrorString). A kernel fault
// (CUDA_ERROR_ILLEGAL_ADDRESS, _ASSERT, _LAUNCH_FAILED ...) surfaces at the
// next synchronizing call and leaves the context unusable: IsStickyFault
// tells those apart.
//
// The driver is process-wide state, so this package holds the one table of
// resolved entry points (an exception to "no global mutable state", like the
// driver itself).
package cuda

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
)

// DefaultLibrary is the driver library Load opens: the soname the NVIDIA
// driver installs (the unversioned libcuda.so comes only with the SDK).
const DefaultLibrary = "libcuda.so.1"

// LibraryEnv names the environment variable that overrides DefaultLibrary for
// Load: a path or soname, used by tests to point at a fake driver.
// The runtime reads it once through internal/env's table and calls
// LoadLibrary; Load reads it directly for standalone tools and tests.
const LibraryEnv = "GOSHMEM_LIBCUDA"

// Sentinel errors; match with errors.Is.
var (
	// ErrNoDriver: the driver library cannot be loaded, lacks an entry point
	// goshmem needs, is the SDK's stub (CUDA_ERROR_STUB_LIBRARY), or does
	// not match the kernel module (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH).
	ErrNoDriver = errors.New("cuda: no usable NVIDIA driver")
	// ErrNoDevice: the driver loaded but sees no GPU (CUDA_ERROR_NO_DEVICE
	// from cuInit, or a device count of 0).
	ErrNoDevice = errors.New("cuda: no CUDA device")
	// ErrNotLoaded: a call was made before Load succeeded (and Load was
	// never tried; otherwise the error wraps Load's failure).
	ErrNotLoaded = errors.New("cuda: driver not loaded")
	// ErrStickyFault matches a *Error whose code leaves the context
	// unusable (see IsStickyFault).
	ErrStickyFault = errors.New("cuda: sticky kernel fault")
	// ErrReleased: the Context (or an object made from it) was used after
	// Context.Release.
	ErrReleased = errors.New("cuda: context released")
)

var (
	loadMu    sync.Mutex   // serializes Load and unload
	loaded    atomic.Bool  // the entry-point table is complete and cuInit succeeded
	loadedLib string       // under loadMu
	loadErr   atomic.Value // loadFailure: why the last Load failed
)

type loadFailure struct{ err error }

// Load loads the driver named by $GOSHMEM_LIBCUDA, or DefaultLibrary when
// that is unset or empty; see LoadLibrary. It is idempotent and safe to call
// from several goroutines.
func Load() error {
	name := os.Getenv(LibraryEnv)
	if name == "" {
		name = DefaultLibrary
	}
	return LoadLibrary(name)
}

// LoadLibrary dlopens lib, resolves every driver entry point goshmem uses and
// calls cuInit(0), then checks that at least one device exists. Once it has
// succeeded it returns nil for the same lib and an error for another. A
// failed LoadLibrary leaves nothing loaded and may be retried. Errors match
// ErrNoDriver (no library, a missing symbol, the SDK stub, a user/kernel driver mismatch) or
// ErrNoDevice (no GPU); the caller reports both as "not supported".
func LoadLibrary(lib string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded.Load() {
		if lib == loadedLib {
			return nil
		}
		return errors.Newf("cuda: Load: driver already loaded from %q; cannot also load %q", loadedLib, lib)
	}
	err := loadLocked(lib)
	if err != nil {
		loadErr.Store(loadFailure{err})
		return err
	}
	loadedLib = lib
	loaded.Store(true)
	return nil
}

// ModuleLoadingEnv is the driver's module loading mode variable (EAGER or
// LAZY, read at cuInit; LAZY is the default of CUDA 12.2+ drivers).
const ModuleLoadingEnv = "CUDA_MODULE_LOADING"

var moduleLoadingSet atomic.Bool

// ModuleLoading is CUDA_MODULE_LOADING as the driver saw it at cuInit and
// whether goshmem set it (to EAGER, because it was unset). Lazy loading
// loads a kernel at its first cuModuleGetFunction or launch, which may
// synchronize the context: a kernel waiting for a host thread of goshmem
// (the GPU proxy, the soft NIC) then waits for a driver call that waits
// for it.
func ModuleLoading() (mode string, setByGoshmem bool) {
	return os.Getenv(ModuleLoadingEnv), moduleLoadingSet.Load()
}

func loadLocked(lib string) error {
	if os.Getenv(ModuleLoadingEnv) == "" && os.Setenv(ModuleLoadingEnv, "EAGER") == nil {
		moduleLoadingSet.Store(true)
	}
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	var buf [512]C.char
	switch C.goshmemi_cu_load(clib, &buf[0], C.size_t(len(buf))) {
	case 0:
	case 1:
		err := errors.Wrapf(ErrNoDriver, "cuda: Load: cannot dlopen %q", lib)
		err = errors.WithDetailf(err, "dlopen: %s", C.GoString(&buf[0]))
		return errors.WithHint(err, "no NVIDIA driver on this machine; GPU features are unavailable "+
			"(on a GPU machine: check that the NVIDIA driver is installed and "+lib+" is on the loader path)")
	default:
		err := errors.Wrapf(ErrNoDriver, "cuda: Load: %q lacks the driver entry point %s", lib, C.GoString(&buf[0]))
		return errors.WithHint(err, "the NVIDIA driver is too old for goshmem, or "+lib+" is not the driver's libcuda; update the driver")
	}
	if r := C.goshmemi_cuInit(0); r != 0 {
		err := errors.Wrapf(newError(int(r), "cuInit"), "cuda: Load (%s)", lib)
		C.goshmemi_cu_unload()
		switch {
		case errors.Is(err, ErrNoDevice):
			return errors.WithHint(err, noDeviceHint(lib))
		case errors.Is(err, ErrNoDriver):
			return errors.WithHint(err, lib+" is the CUDA SDK stub, or does not match the loaded NVIDIA kernel module; install (or reboot into) a matching NVIDIA driver")
		}
		return err
	}
	var n C.int
	if r := C.goshmemi_cuDeviceGetCount(&n); r != 0 {
		err := errors.Wrapf(newError(int(r), "cuDeviceGetCount"), "cuda: Load (%s)", lib)
		C.goshmemi_cu_unload()
		return err
	}
	if n <= 0 {
		C.goshmemi_cu_unload()
		return errors.WithHint(errors.Wrapf(ErrNoDevice, "cuda: Load (%s): cuDeviceGetCount found 0 devices", lib),
			noDeviceHint(lib))
	}
	return nil
}

func noDeviceHint(lib string) string {
	return lib + " is installed but sees no GPU (no NVIDIA kernel module loaded, no GPU, or " +
		"CUDA_VISIBLE_DEVICES hides them all; check nvidia-smi); GPU features are unavailable"
}

// unload forgets the driver (dlclose). Only tests use it, to load another
// (fake) driver in the same process; nothing may be in use.
func unload() {
	loadMu.Lock()
	defer loadMu.Unlock()
	loaded.Store(false)
	loadedLib = ""
	loadErr.Store(loadFailure{})
	C.goshmemi_cu_unload()
}

// Loaded reports whether Load has succeeded.
func Loaded() bool { return loaded.Load() }

// ResolvedSymbols lists the driver symbols Load resolved, in table order
// (for GOSHMEM_INFO and tests: shows which versioned names were used).
// Empty before a successful Load.
func ResolvedSymbols() []string {
	if !loaded.Load() {
		return nil
	}
	n := int(C.goshmemi_cu_nsyms())
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if s := C.goshmemi_cu_sym_name(C.int(i)); s != nil {
			out = append(out, C.GoString(s))
		}
	}
	return out
}

// DriverVersion returns the driver's CUDA version as 1000*major + 10*minor
// (12040 for 12.4), from cuDriverGetVersion.
func DriverVersion() (int, error) {
	if err := ready("cuDriverGetVersion"); err != nil {
		return 0, err
	}
	var v C.int
	if err := check(C.goshmemi_cuDriverGetVersion(&v), "cuDriverGetVersion"); err != nil {
		return 0, err
	}
	return int(v), nil
}

// ready returns nil when the driver is loaded, else an error for call that
// wraps the Load failure (so errors.Is(err, ErrNoDriver) still holds) or
// ErrNotLoaded. Cheap: one atomic load on the good path.
func ready(call string) error {
	if loaded.Load() {
		return nil
	}
	return notLoaded(call)
}

func notLoaded(call string) error {
	if f, ok := loadErr.Load().(loadFailure); ok && f.err != nil {
		return errors.Wrapf(f.err, "cuda: %s: driver not loaded", call)
	}
	return errors.WithHint(errors.Wrapf(ErrNotLoaded, "cuda: %s", call), "call cuda.Load first")
}

// check turns a wrapper's result into nil or a *Error for call. The
// wrappers flag a failing cuCtxSetCurrent made on call's behalf.
func check(r C.int, call string) error {
	if r == 0 {
		return nil
	}
	return checkSlow(int(r), call)
}

func checkSlow(r int, call string) error {
	if r == C.GOSHMEMI_NOT_LOADED {
		return notLoaded(call)
	}
	if r&C.GOSHMEMI_SETCTX_FAILED != 0 {
		return newError(r&^C.GOSHMEMI_SETCTX_FAILED, "cuCtxSetCurrent (before "+call+")")
	}
	return newError(r, call)
}
