// Package gpulib describes goshmem's kernel library to the runtime: the
// kernels behind the stream-ordered calls of package shmem and the host
// collectives on GPU arrays, their names, argument words and codes (lib.h's
// values), and the registry through which the library's image arrives.
//
// The image itself (lib.fatbin, 7 MiB) lives in the module
// github.com/goshmem/goshmem/gpulib, so that only the programs that run
// these kernels carry it: such a program imports that package for its
// side effect, as a database/sql driver is imported, and its init calls
// Register. A program without it gets an error naming the import from the
// first call that needs a kernel.
package gpulib

import (
	"fmt"
	"sync"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// ABI is lib.h's GOSHMEMI_LIB_ABI: the version of the kernels' names,
// arguments and codes that this package describes. The gpulib module
// registers its image with the version it was built for; Image refuses a
// registration of another, so a program that mixes versions of the two
// modules gets an error instead of kernels that misread their arguments.
const ABI = 1

// ImportPath is the package whose import registers the kernel library.
const ImportPath = "github.com/goshmem/goshmem/gpulib"

// registry is the image registered by ImportPath's init (or a test).
var registry struct {
	mu    sync.Mutex
	image []byte
	abi   int
	set   bool
}

// Register makes image, built for ABI version abi, the kernel library of
// this program. The init of package ImportPath calls it; a later call
// replaces the image (tests register the fake driver's image so).
func Register(abi int, image []byte) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.image, registry.abi, registry.set = image, abi, true
}

// Unregister forgets the registered image (tests of a program without the
// library).
func Unregister() {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.image, registry.abi, registry.set = nil, 0, false
}

// Image is the registered kernel library image. Without one, or with one
// built for another ABI, the error matches errs.ErrNotSupported and says
// what the program must import (or which versions to align).
func Image() ([]byte, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	hint := fmt.Sprintf("a program that uses the *OnStream calls or host collectives on GPU arrays imports the kernel library:\n\timport _ %q\nat the same version as github.com/goshmem/goshmem", ImportPath)
	switch {
	case !registry.set:
		return nil, errors.WithHint(errs.New(errs.ErrNotSupported, -1, "",
			"goshmem's kernel library is not in this program: add import _ %q to its main package", ImportPath), hint)
	case registry.abi != ABI:
		return nil, errors.WithHint(errs.New(errs.ErrNotSupported, -1, "",
			"the kernel library registered by %s has ABI %d, this github.com/goshmem/goshmem needs ABI %d: require the same version of both modules",
			ImportPath, registry.abi, ABI), hint)
	case len(registry.image) == 0:
		return nil, errs.New(errs.ErrInvalidArgument, -1, "", "the kernel library registered by %s is empty", ImportPath)
	}
	return registry.image, nil
}

// Threads is GOSHMEMI_LIB_THREADS: the block every kernel runs as, but
// the one-block collectives (a block of CollThreads, internal/runtime).
const Threads = 1024

// NArgs is GOSHMEMI_LIB_NARGS: the words of every kernel's one argument.
const NArgs = 8

// Codes of lib.h (GOSHMEMI_LIB_CMP_*, GOSHMEMI_LIB_SIGNAL_*, GOSHMEMI_LIB_OP_*).
const (
	CmpEQ, CmpNE, CmpGT, CmpGE, CmpLT, CmpLE = 0, 1, 2, 3, 4, 5
	SignalSet, SignalAdd                     = 0, 1
)

// Kernel names a library kernel.
type Kernel int

// The point-to-point, synchronization and data-movement kernels; the
// reductions follow, one per type (Reduce).
const (
	Put Kernel = iota
	Get
	PutSignal
	SignalWait
	Quiet
	Barrier
	Sync
	Broadcast
	FCollect
	AllToAll
	// MovePart is the grid kernel of a large broadcast, fcollect or
	// alltoall's data step (every member load/store reachable; between two
	// Sync kernels; v[4] is a Move* code).
	MovePart
	// MoveFused is MovePart with the two team syncs in the kernel: the
	// whole collective in one launch (a grid of at most one block per SM
	// shared among the GPU's PEs).
	MoveFused
	nFixed
)

// Codes of MovePart's v[4] (GOSHMEMI_LIB_MOVE_*).
const (
	MoveBroadcast, MoveFCollect, MoveAllToAll = 0, 1, 2
)

// ArgFused is GOSHMEMI_LIB_ARG_FUSED: the argument word that makes a grid
// reduction (ReducePart) run the team syncs around its data step itself,
// so the collective is one launch (the movers' form is MoveFused).
const ArgFused = 6

var fixedNames = [nFixed]string{"goshmemi_lib_put", "goshmemi_lib_get", "goshmemi_lib_put_signal",
	"goshmemi_lib_signal_wait", "goshmemi_lib_quiet", "goshmemi_lib_barrier", "goshmemi_lib_sync",
	"goshmemi_lib_broadcast", "goshmemi_lib_fcollect", "goshmemi_lib_alltoall", "goshmemi_lib_move_part",
	"goshmemi_lib_move_fused"}

// Types are the element types of the reduction kernels, in Type order,
// as the device collectives name them (goshmemx_<T>_<op>_reduce_block);
// OpNames the operators (GOSHMEMI_LIB_OP_*), in shmem.Op order.
var (
	Types   = [...]string{"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float", "double", "half", "bfloat16"}
	OpNames = [...]string{"sum", "prod", "min", "max", "and", "or", "xor"}
)

// Type indexes Types.
type Type int

// The floating-point types (Types[Float32] == "float", ...).
const (
	Float32 Type = 8 + iota
	Float64
	Float16
	BFloat16
)

// IsFloat reports whether the type's reductions lack and/or/xor.
func (t Type) IsFloat() bool { return t >= 8 }

// Reduce is the reduction kernel for type t (the all-reduce and the
// reduce-scatter, by its last argument; the operator is an argument too).
func Reduce(t Type) Kernel { return nFixed + Kernel(t) }

// ReducePart is the grid kernel of a large reduction's data step for
// type t (every member load/store reachable; between two Sync kernels, or
// fused: ArgFused): the kernel of Reduce's arguments, on several blocks.
func ReducePart(t Type) Kernel { return nFixed + Kernel(len(Types)) + Kernel(t) }

// Count is the number of kernels.
const Count = int(nFixed) + 2*len(Types)

// Name is k's symbol in the module.
func (k Kernel) Name() string {
	switch {
	case k < nFixed:
		return fixedNames[k]
	case k < nFixed+Kernel(len(Types)):
		return fmt.Sprintf("goshmemi_lib_reduce_%s", Types[k-nFixed])
	}
	return fmt.Sprintf("goshmemi_lib_reduce_part_%s", Types[k-nFixed-Kernel(len(Types))])
}
