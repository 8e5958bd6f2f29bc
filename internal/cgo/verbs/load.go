package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/goshmem/goshmem/internal/errs"
)

// The rdma-core libraries this package loads with dlopen, by soname: the
// verbs core and the mlx5 provider (Debian and Ubuntu ship them in
// libibverbs1 and ibverbs-providers).
const (
	libIBVerbs = "libibverbs.so.1"
	libMLX5    = "libmlx5.so.1"
)

// pathSetting is the setting that asks for this package (internal/runtime
// calls it for GOSHMEM_IBGDA_NIC=mlx5, the default, or auto).
const pathSetting = "GOSHMEM_GPU_TRANSPORT=ibgda with GOSHMEM_IBGDA_NIC=mlx5"

// minRelease is the oldest rdma-core whose libraries export every function
// abi.h lists (mlx5dv_devx_umem_reg_ex@MLX5_1.19 came with v35).
const minRelease = 35

// umemDmabufRelease is the first rdma-core whose libmlx5 takes
// MLX5DV_UMEM_MASK_DMABUF in mlx5dv_devx_umem_reg_ex.
const umemDmabufRelease = 43

// loadHint is the hint of every failure to load rdma-core.
const loadHint = "install rdma-core's user-space libraries, release 35 or newer " +
	"(Debian and Ubuntu: libibverbs1 and ibverbs-providers); without a ConnectX use " +
	"GOSHMEM_GPU_TRANSPORT=proxy, or GOSHMEM_IBGDA_NIC=soft for the emulation"

// lib is the state of the loader: the libraries are opened on the first
// call that needs them (Probe, Open, OpenDevX, HaveUmemDmabuf), once.
var lib struct {
	mu    sync.Mutex
	names [2]string // libibverbs, libmlx5 ("": the sonames above; tests set others)
	tried bool
	err   error
	// release is the rdma-core release of the loaded libmlx5, read from
	// its file name (libmlx5.so.1.24.44.0: 44); -1 when the name has none.
	release int
}

// load opens rdma-core on first use and returns the outcome of that
// attempt on every later call.
func load() error {
	_, err := loaded()
	return err
}

// loaded is load that also returns libmlx5's release (-1: unknown).
func loaded() (int, error) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if !lib.tried {
		lib.tried = true
		lib.release, lib.err = loadLibs(lib.names[0], lib.names[1])
	}
	return lib.release, lib.err
}

// loadLibs dlopens ibverbs and mlx5 (the sonames when "") and resolves
// every function. A failure matches errs.ErrNotSupported and names the
// setting that asked for rdma-core, the library and dlerror's text.
func loadLibs(ibverbs, mlx5 string) (int, error) {
	if ibverbs == "" {
		ibverbs = libIBVerbs
	}
	if mlx5 == "" {
		mlx5 = libMLX5
	}
	cv, cm := C.CString(ibverbs), C.CString(mlx5)
	defer C.free(unsafe.Pointer(cv))
	defer C.free(unsafe.Pointer(cm))
	var buf [1024]C.char
	rc := C.gv_load(cv, cm, &buf[0], C.size_t(len(buf)))
	detail := C.GoString(&buf[0])
	fail := func(format string, args ...any) error {
		return errs.Hint(errs.ErrNotSupported, loadHint, -1, "verbs",
			"%s loads rdma-core at run time: "+format, append([]any{pathSetting}, args...)...)
	}
	switch rc {
	case C.GV_LOAD_OK:
	case C.GV_LOAD_NO_IBVERBS:
		return -1, fail("dlopen(%q) (the verbs library): %s", ibverbs, detail)
	case C.GV_LOAD_NO_MLX5:
		return -1, fail("dlopen(%q) (the mlx5 provider; %q loaded): %s", mlx5, ibverbs, detail)
	case C.GV_LOAD_OLD_IBVERBS:
		return -1, fail("%q is older than rdma-core %d: no %s", ibverbs, minRelease, detail)
	case C.GV_LOAD_OLD_MLX5:
		return -1, fail("%q is older than rdma-core %d: no %s", mlx5, minRelease, detail)
	default:
		return -1, fail("gv_load(%q, %q) returned %d: %s", ibverbs, mlx5, int(rc), detail)
	}
	var path [4096]C.char
	if C.gv_lib_path(1, &path[0], C.size_t(len(path))) != 0 {
		return -1, nil
	}
	return releaseOf(C.GoString(&path[0])), nil
}

// releaseOf reads the rdma-core release from a library's file name:
// rdma-core installs lib<name>.so.<soversion>.<abi>.<release>.0 (e.g.
// libmlx5.so.1.24.44.0). Other names (a vendor build) give -1.
func releaseOf(path string) int {
	base := filepath.Base(path)
	i := strings.Index(base, ".so.")
	if i < 0 {
		return -1
	}
	f := strings.Split(base[i+len(".so."):], ".")
	if len(f) != 4 {
		return -1
	}
	for _, s := range f {
		if _, err := strconv.Atoi(s); err != nil {
			return -1
		}
	}
	r, _ := strconv.Atoi(f[2])
	return r
}

// setLibraries makes the next use load ibverbs and mlx5 instead of the
// sonames ("" restores them): a test hook. Functions already resolved stay
// in use until a later load succeeds.
func setLibraries(ibverbs, mlx5 string) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	lib.names = [2]string{ibverbs, mlx5}
	lib.tried, lib.err, lib.release = false, nil, 0
}
