package fabric

/*
#include <stdlib.h>
#include "ops.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Library is the soname Load opens.
const Library = "libfabric.so.1"

// MinVersion is the oldest libfabric Load accepts, "major.minor": the API
// version the binding asks fi_getinfo for (abi.h GOSHMEMI_FI_API_VERSION;
// a test checks they agree).
const MinVersion = "1.14"

// ErrNoLibrary says libfabric could not be loaded (missing, too old, or
// lacking a symbol). It also matches ErrNoProvider (no provider can be
// offered without the library) and errs.ErrNotSupported.
var ErrNoLibrary = errors.New("fabric: libfabric cannot be loaded")

// What asks for libfabric, named in the error when it cannot be loaded:
// the entry points' callers and the settings that lead there.
const (
	forOFI      = "the ofi transport (GOSHMEM_TRANSPORT=ofi, or auto with PEs on several nodes)"
	forCXI      = "the CXI triggered path's fabric engine (shmem.WithCXI, GOSHMEM_CXI_ENGINE=auto or fabric)"
	forEndpoint = "a libfabric endpoint (the ofi transport, GOSHMEM_TRANSPORT; the CXI software engine, GOSHMEM_CXI_ENGINE=software)"
	forAny      = "goshmem's libfabric binding"
)

// lib is the outcome of the one attempt to load Library: libfabric is
// process-wide state, and so is this (an exception to "no global mutable
// state", like internal/cgo/mpi's table).
var lib struct {
	once sync.Once
	err  *loadFailure // nil once loaded
}

// How goshmemi_fab_load fails (ops.h).
const (
	loadDlopen  = C.GOSHMEMI_FAB_LOAD_DLOPEN  // dlopen failed
	loadSymbol  = C.GOSHMEMI_FAB_LOAD_SYMBOL  // a function at its version is missing
	loadVersion = C.GOSHMEMI_FAB_LOAD_VERSION // fi_version() is older than MinVersion
)

// loadFailure is why dlopen or the symbol binding failed.
type loadFailure struct {
	name   string // what was passed to dlopen
	code   int    // loadDlopen, loadSymbol or loadVersion
	detail string // dlerror's text, the missing symbol, or the version found
}

// Load opens Library the first time it is called (later calls return the
// first outcome). who names what needs libfabric, with the setting that
// selected it (e.g. "the ofi transport (GOSHMEM_TRANSPORT=ofi)"), for the
// error; "" is a generic name. The error matches ErrNoLibrary.
func Load(who string) error {
	lib.once.Do(func() { lib.err = dlopen(Library) })
	if lib.err == nil {
		return nil
	}
	return lib.err.error(who)
}

// dlopen loads name into the package's table; on failure the table is left
// as it was (a test may try a name that does not exist).
func dlopen(name string) *loadFailure {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf [512]C.char
	if rc := C.goshmemi_fab_load(cname, &buf[0], C.size_t(len(buf))); rc != 0 {
		return &loadFailure{name: name, code: int(rc), detail: C.GoString(&buf[0])}
	}
	return nil
}

// error words the failure for who ("": forAny), with the hint that fixes it.
func (f *loadFailure) error(who string) error {
	if who == "" {
		who = forAny
	}
	var err error
	switch f.code {
	case loadVersion:
		err = errors.Newf("fabric: %s needs %s %s or later: dlopen(%q) found version %s",
			who, f.name, MinVersion, f.name, f.detail)
	case loadSymbol:
		err = errors.Newf("fabric: %s needs %s: dlopen(%q) loaded a library without %s",
			who, f.name, f.name, f.detail)
	default:
		err = errors.Newf("fabric: %s needs %s: dlopen(%q): %s", who, f.name, f.name, f.detail)
	}
	err = errors.WithHint(err, fmt.Sprintf("install libfabric %s or later (Debian and Ubuntu: package libfabric1), "+
		"or add the directory holding %s to LD_LIBRARY_PATH", MinVersion, f.name))
	return errs.Mark(errs.Mark(errs.Mark(err, ErrNoLibrary), ErrNoProvider), errs.ErrNotSupported)
}

// LoadedVersion is the loaded library's version ("1.17"), or "" before a
// successful Load.
func LoadedVersion() string {
	v := uint32(C.goshmemi_fab_loaded_version())
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v>>16, v&0xffff)
}

// apiVersion is abi.h's GOSHMEMI_FI_API_VERSION, "major.minor".
func apiVersion() string {
	v := uint32(C.GOSHMEMI_FI_API_VERSION)
	return fmt.Sprintf("%d.%d", v>>16, v&0xffff)
}
