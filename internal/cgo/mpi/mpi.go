// Package mpi is goshmem's own minimal binding to MPI, loaded at run time
// with dlopen (as internal/cgo/cuda loads the CUDA driver), so that building
// a goshmem program needs no MPI headers or library and one binary runs
// under Open MPI's mpirun and under MPICH's mpiexec. It offers just what
// bootstrap needs: init/finalize, rank and size on MPI_COMM_WORLD,
// allgather, barrier, bcast, abort and node discovery. It is the only
// package that says import "C" for MPI.
//
// # Loading
//
// Load opens the library named by GOSHMEM_LIBMPI (a path or soname), or else
// the first of DefaultLibraries that loads and is an MPI goshmem speaks,
// Open MPI's first unless the environment shows an MPICH-family launcher
// (Candidates). The two ABIs differ in their handles (abi.h): Open MPI's
// MPI_COMM_WORLD is the address of the exported global ompi_mpi_comm_world,
// MPICH's is the int 0x44000000. The loader takes the library for Open MPI
// when it exports ompi_mpi_comm_world, and for the MPICH ABI when
// MPI_Get_library_version names MPICH or one of its ABI-compatible
// derivatives (Intel MPI, MVAPICH, Cray MPICH). Anything else is an error
// matching ErrNoMPI that names every library tried and why each failed.
// Nothing here loads MPI by itself: a program that never calls Load never
// touches an MPI library.
//
// # Calls
//
// Every function here is a plain blocking MPI call made on the calling OS
// thread. The binding does no locking of its own: callers must respect the
// thread level granted by InitThread. goshmem's bootstrap/mpi funnels every
// call through one goroutine locked to its thread (see that package for
// why). After InitThread the error handler of MPI_COMM_WORLD is
// MPI_ERRORS_RETURN, so failures come back as errors prefixed "mpi: " with
// MPI_Error_string's text. A call before Load is an error, never a crash.
//
// MPI is process-wide state, so this package holds the one table of
// resolved entry points (an exception to "no global mutable state", like
// the library itself).
package mpi

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
)

// LibraryEnv names the environment variable that, when set and not empty,
// is the one MPI library Load opens (a path or a soname), instead of the
// search of Candidates.
const LibraryEnv = "GOSHMEM_LIBMPI"

// The sonames Load tries when LibraryEnv is unset (see Candidates): Open
// MPI 3-5; the MPICH ABI as MPICH upstream, Intel MPI and MVAPICH install
// it (libmpi.so.12) and as Debian and Ubuntu install MPICH (libmpich.so.12);
// then the unversioned development links.
var (
	ompiLibraries  = []string{"libmpi.so.40"}
	mpichLibraries = []string{"libmpi.so.12", "libmpich.so.12"}
	devLibraries   = []string{"libmpi.so", "libmpich.so"}
)

// DefaultLibraries are the sonames Load tries when LibraryEnv is unset, in
// the order used outside an MPICH-family launcher.
var DefaultLibraries = concat(ompiLibraries, mpichLibraries, devLibraries)

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Impl is the MPI ABI of the loaded library.
type Impl int

// The ABIs goshmem speaks.
const (
	NoImpl  Impl = C.GOSHMEMI_MPI_NONE
	OpenMPI Impl = C.GOSHMEMI_MPI_OMPI
	MPICH   Impl = C.GOSHMEMI_MPI_MPICH // MPICH and its ABI-compatible derivatives
)

func (i Impl) String() string {
	switch i {
	case OpenMPI:
		return "Open MPI"
	case MPICH:
		return "MPICH"
	}
	return "none"
}

// Sentinel errors; match with errors.Is.
var (
	// ErrNoMPI: no library could be loaded, or none was an MPI goshmem
	// speaks (see Load).
	ErrNoMPI = errors.New("mpi: no usable MPI library")
	// ErrNotLoaded: a call was made before Load succeeded.
	ErrNotLoaded = errors.New("mpi: MPI library not loaded")
)

// Thread support levels of MPI_Init_thread, in increasing order: 0..3 in
// both ABIs. Ref: Open MPI 4.1 mpi.h (enum from MPI_THREAD_SINGLE); MPICH
// 4.0.2 mpi.h (#define MPI_THREAD_SINGLE 0 ... MPI_THREAD_MULTIPLE 3).
const (
	ThreadSingle     = 0
	ThreadFunneled   = 1
	ThreadSerialized = 2
	ThreadMultiple   = 3
)

// ThreadLevelName returns the MPI name of a thread support level
// ("MPI_THREAD_FUNNELED"), or "MPI_THREAD_<n>" for an unknown one.
func ThreadLevelName(level int) string {
	switch level {
	case ThreadSingle:
		return "MPI_THREAD_SINGLE"
	case ThreadFunneled:
		return "MPI_THREAD_FUNNELED"
	case ThreadSerialized:
		return "MPI_THREAD_SERIALIZED"
	case ThreadMultiple:
		return "MPI_THREAD_MULTIPLE"
	}
	return "MPI_THREAD_" + strconv.Itoa(level)
}

var (
	loadMu  sync.Mutex // serializes Load and unload; guards the fields below
	loaded  bool
	libName string // what was passed to dlopen
	libImpl Impl
	libVer  string // MPI_Get_library_version, trimmed
	loadErr error  // why the last Load failed
)

// mpichABI are the MPI_Get_library_version prefixes of the implementations
// that share MPICH's ABI (its handles and constants).
var mpichABI = []string{"MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"}

// ompiLauncherEnv and mpichLauncherEnv are variables that only the
// launchers of one family set: Open MPI's mpirun and PMIx servers
// (OMPI_COMM_WORLD_*, PMIX_RANK); MPICH's Hydra, Intel MPI's mpiexec and
// PMI-1/2 servers such as Slurm's srun --mpi=pmi2 (PMI_*, MPI_LOCALNRANKS,
// HYDI_CONTROL_FD).
var (
	ompiLauncherEnv  = []string{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}
	mpichLauncherEnv = []string{"PMI_RANK", "PMI_SIZE", "PMI_FD", "PMI_PORT", "MPI_LOCALNRANKS", "HYDI_CONTROL_FD"}
)

func anySet(keys []string) bool {
	for _, k := range keys {
		if _, ok := os.LookupEnv(k); ok {
			return true
		}
	}
	return false
}

// Candidates returns DefaultLibraries in the order Load tries them: the
// MPICH-ABI ones first when the environment shows an MPICH-family launcher
// and no Open MPI one (an Open MPI library in a process started by Hydra
// would make it a job of one), Open MPI's first otherwise.
func Candidates() []string {
	if anySet(mpichLauncherEnv) && !anySet(ompiLauncherEnv) {
		return concat(mpichLibraries, ompiLibraries, devLibraries)
	}
	return concat(ompiLibraries, mpichLibraries, devLibraries)
}

// Load loads the MPI library named by $GOSHMEM_LIBMPI, or else the first of
// Candidates() that is a usable MPI. It is idempotent and safe to call from
// several goroutines; see LoadLibrary.
func Load() error {
	if name := os.Getenv(LibraryEnv); name != "" {
		return LoadLibrary(name)
	}
	return LoadLibrary(Candidates()...)
}

// LoadLibrary dlopens the first of libs that loads, exports every MPI
// function goshmem calls and is Open MPI or of the MPICH ABI family. Once
// one has loaded, LoadLibrary returns nil if it is among libs and an error
// otherwise. A failed LoadLibrary leaves nothing loaded and may be
// retried; its error matches ErrNoMPI and lists every library tried, with
// dlerror's text or what the library lacked.
func LoadLibrary(libs ...string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded {
		for _, l := range libs {
			if l == libName {
				return nil
			}
		}
		return errors.Newf("mpi: Load: %s already loaded from %q; cannot also load %s", libImpl, libName, strings.Join(libs, ", "))
	}
	if len(libs) == 0 {
		return loadError("mpi: Load: no library to try")
	}
	var tried []string
	for _, lib := range libs {
		impl, ver, err := open(lib)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		loaded, libName, libImpl, libVer, loadErr = true, lib, impl, ver, nil
		return nil
	}
	var err error = loadError("mpi: Load: " + tried[0])
	if len(libs) > 1 {
		err = loadError("mpi: Load: no usable MPI library; tried " + strings.Join(tried, "; "))
	}
	err = errors.WithHint(err, "install Open MPI or MPICH (Debian: openmpi-bin or mpich), or set "+LibraryEnv+
		" to the MPI library of the launcher that started this program (a path or soname, e.g. "+
		"/usr/lib/x86_64-linux-gnu/libmpich.so.12)")
	loadErr = err
	return err
}

// loadError is a failed Load; it matches ErrNoMPI.
type loadError string

func (e loadError) Error() string        { return string(e) }
func (e loadError) Is(target error) bool { return target == ErrNoMPI }

// open tries one library: dlopen, the MPI functions, the ABI.
func open(lib string) (Impl, string, error) {
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	var buf [512]C.char
	switch C.goshmemi_mpi_open(clib, &buf[0], C.size_t(len(buf))) {
	case 0:
	case 1:
		return NoImpl, "", errors.Newf("%s (dlopen: %s)", lib, C.GoString(&buf[0]))
	default:
		return NoImpl, "", errors.Newf("%s is not an MPI library: it lacks %s", lib, C.GoString(&buf[0]))
	}
	ver := libraryVersion()
	impl := NoImpl
	sym := C.CString("ompi_mpi_comm_world")
	defer C.free(unsafe.Pointer(sym))
	if C.goshmemi_mpi_has_symbol(sym) != 0 {
		impl = OpenMPI
	} else {
		for _, p := range mpichABI {
			if strings.Contains(ver, p) {
				impl = MPICH
				break
			}
		}
	}
	if impl == NoImpl {
		C.goshmemi_mpi_close()
		return NoImpl, "", errors.Newf("%s is an MPI goshmem does not speak (%q): neither Open MPI (it exports no "+
			"ompi_mpi_comm_world) nor of the MPICH ABI (MPICH, Intel MPI, MVAPICH, Cray MPICH)", lib, firstLine(ver))
	}
	if C.goshmemi_mpi_select(C.int(impl), &buf[0], C.size_t(len(buf))) != 0 {
		C.goshmemi_mpi_close()
		return NoImpl, "", errors.Newf("%s looks like %s but lacks %s", lib, impl, C.GoString(&buf[0]))
	}
	return impl, ver, nil
}

// libraryVersion is MPI_Get_library_version's text, "" if it fails.
func libraryVersion() string {
	buf := make([]C.char, C.GOSHMEMI_MPI_MAX_LIBRARY_VERSION_STRING)
	var n C.int
	if C.goshmemi_mpi_library_version(&buf[0], &n) != 0 || n <= 0 || int(n) > len(buf) {
		return ""
	}
	return strings.TrimRight(C.GoStringN(&buf[0], n), "\x00 \n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// unload forgets the library (dlclose). Only tests use it; MPI must not
// have been initialized.
func unload() {
	loadMu.Lock()
	defer loadMu.Unlock()
	loaded, libName, libImpl, libVer, loadErr = false, "", NoImpl, "", nil
	C.goshmemi_mpi_close()
}

// Library returns what Load loaded: the name given to dlopen, the ABI and
// the first line of MPI_Get_library_version ("Open MPI v4.1.4, ...",
// "MPICH Version: 4.0.2"); NoImpl before a successful Load.
func Library() (name string, impl Impl, version string) {
	loadMu.Lock()
	defer loadMu.Unlock()
	return libName, libImpl, firstLine(libVer)
}

// ready returns nil once Load has succeeded, else an error for call that
// wraps the Load failure (so errors.Is(err, ErrNoMPI) holds) or
// ErrNotLoaded.
func ready(call string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded {
		return nil
	}
	if loadErr != nil {
		return errors.Wrapf(loadErr, "mpi: %s: MPI not loaded", call)
	}
	return errors.WithHint(errors.Wrapf(ErrNotLoaded, "mpi: %s", call), "call mpi.Load first")
}

// check turns an MPI return code into nil or an error "mpi: <op>: <MPI text>".
func check(rc C.int, op string) error {
	if rc == C.GOSHMEMI_MPI_SUCCESS {
		return nil
	}
	if rc == C.GOSHMEMI_MPI_NOT_LOADED {
		return ready(op)
	}
	var buf [C.GOSHMEMI_MPI_MAX_ERROR_STRING]C.char
	var n C.int
	if C.goshmemi_mpi_error_string(rc, &buf[0], &n) != C.GOSHMEMI_MPI_SUCCESS || n <= 0 || int(n) > len(buf) {
		return errors.Newf("mpi: %s: error code %d", op, int(rc))
	}
	return errors.Newf("mpi: %s: %s (error code %d)", op, C.GoStringN(&buf[0], n), int(rc))
}

// call runs one wrapper after checking that a library is loaded.
func call(op string, f func() C.int) error {
	if err := ready(op); err != nil {
		return err
	}
	return check(f(), op)
}

// InitThread calls MPI_Init_thread(NULL, NULL, required, &provided) and sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD. It returns the thread level MPI
// granted; checking that it is enough is the caller's business.
func InitThread(required int) (provided int, err error) {
	var p C.int
	if err := call("MPI_Init_thread", func() C.int { return C.goshmemi_mpi_init_thread(C.int(required), &p) }); err != nil {
		return 0, err
	}
	return int(p), nil
}

// Initialized reports whether MPI_Init or MPI_Init_thread has been called.
func Initialized() (bool, error) {
	var flag C.int
	if err := call("MPI_Initialized", func() C.int { return C.goshmemi_mpi_initialized(&flag) }); err != nil {
		return false, err
	}
	return flag != 0, nil
}

// Finalized reports whether MPI_Finalize has been called.
func Finalized() (bool, error) {
	var flag C.int
	if err := call("MPI_Finalized", func() C.int { return C.goshmemi_mpi_finalized(&flag) }); err != nil {
		return false, err
	}
	return flag != 0, nil
}

// Finalize calls MPI_Finalize.
func Finalize() error {
	return call("MPI_Finalize", func() C.int { return C.goshmemi_mpi_finalize() })
}

// Rank returns this process's rank in MPI_COMM_WORLD.
func Rank() (int, error) {
	var r C.int
	if err := call("MPI_Comm_rank", func() C.int { return C.goshmemi_mpi_rank(&r) }); err != nil {
		return 0, err
	}
	return int(r), nil
}

// Size returns the size of MPI_COMM_WORLD.
func Size() (int, error) {
	var s C.int
	if err := call("MPI_Comm_size", func() C.int { return C.goshmemi_mpi_size(&s) }); err != nil {
		return 0, err
	}
	return int(s), nil
}

// Barrier calls MPI_Barrier on MPI_COMM_WORLD.
func Barrier() error {
	return call("MPI_Barrier", func() C.int { return C.goshmemi_mpi_barrier() })
}

// Allgather calls MPI_Allgather of len(in) bytes per rank on MPI_COMM_WORLD
// into out, which must hold exactly len(in)*Size() bytes. Every rank must
// pass the same len(in) (MPI cannot check that; bootstrap/mpi does).
func Allgather(in, out []byte) error {
	size, err := Size()
	if err != nil {
		return err
	}
	if len(in) > math.MaxInt32 {
		return errors.Newf("mpi: MPI_Allgather: %d bytes per rank is over the MPI int count limit %d", len(in), math.MaxInt32)
	}
	if len(out) != len(in)*size {
		return errors.Newf("mpi: MPI_Allgather: out holds %d bytes, want %d (%d bytes from each of %d ranks)",
			len(out), len(in)*size, len(in), size)
	}
	// Passing Go memory for the duration of the call is allowed: the bytes
	// hold no Go pointers and C keeps nothing after returning.
	return call("MPI_Allgather", func() C.int {
		return C.goshmemi_mpi_allgather(unsafe.Pointer(unsafe.SliceData(in)), C.int(len(in)),
			unsafe.Pointer(unsafe.SliceData(out)))
	})
}

// Bcast calls MPI_Bcast of buf (len(buf) bytes, the same on every rank) from
// root on MPI_COMM_WORLD.
func Bcast(buf []byte, root int) error {
	if len(buf) > math.MaxInt32 {
		return errors.Newf("mpi: MPI_Bcast: %d bytes is over the MPI int count limit %d", len(buf), math.MaxInt32)
	}
	return call("MPI_Bcast", func() C.int {
		return C.goshmemi_mpi_bcast(unsafe.Pointer(unsafe.SliceData(buf)), C.int(len(buf)), C.int(root))
	})
}

// Abort calls MPI_Abort(MPI_COMM_WORLD, code), which normally ends every
// process of the job and does not return. If it does return, the error says
// why.
func Abort(code int) error {
	return call("MPI_Abort", func() C.int { return C.goshmemi_mpi_abort(C.int(code)) })
}

// NodeIDs returns, for every rank of MPI_COMM_WORLD, the number of its
// shared-memory node (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). Nodes
// are numbered 0..nnodes-1 in order of the first rank that lives on them, so
// rank 0 is always on node 0. Collective over MPI_COMM_WORLD.
func NodeIDs() ([]int, error) {
	size, err := Size()
	if err != nil {
		return nil, err
	}
	leaders := make([]C.int, size)
	if err := call("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)", func() C.int {
		return C.goshmemi_mpi_node_leaders(&leaders[0])
	}); err != nil {
		return nil, err
	}
	keys := make([]int, size)
	for r, l := range leaders {
		keys[r] = int(l)
	}
	return NumberByFirstAppearance(keys), nil
}

// NumberByFirstAppearance maps each distinct key to 0, 1, 2 ... in the order
// in which keys first appear: [7 7 3 7 3 9] -> [0 0 1 0 1 2].
func NumberByFirstAppearance(keys []int) []int {
	ids := make([]int, len(keys))
	seen := make(map[int]int, len(keys))
	for i, k := range keys {
		id, ok := seen[k]
		if !ok {
			id = len(seen)
			seen[k] = id
		}
		ids[i] = id
	}
	return ids
}

// Describe names the loaded library for diagnostics: "Open MPI
// (libmpi.so.40: Open MPI v4.1.4, ...)", or "no MPI loaded".
func Describe() string {
	name, impl, ver := Library()
	if impl == NoImpl {
		return "no MPI loaded"
	}
	return fmt.Sprintf("%s (%s: %s)", impl, name, ver)
}
