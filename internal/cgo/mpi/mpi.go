// Package mpi is goshmem's own minimal cgo binding to MPI (OpenMPI 4.1 here),
// just what bootstrap needs: init/finalize, rank and size on MPI_COMM_WORLD,
// allgather, barrier, bcast, abort and node discovery. It is the only package
// that says import "C" for MPI.
//
// Every function here is a plain blocking MPI call made on the calling OS
// thread. The binding does no locking of its own: callers must respect the
// thread level granted by InitThread. goshmem's bootstrap/mpi funnels every
// call through one goroutine locked to its thread (see that package for why).
//
// OpenMPI's MPI_COMM_WORLD, MPI_BYTE, MPI_INFO_NULL ... are macros over
// global symbols that cgo cannot name, so the preamble wraps each call that
// needs them in a small static C helper (goshmemi_mpi_*). After InitThread
// the error handler of MPI_COMM_WORLD is MPI_ERRORS_RETURN, so failures come
// back as errors prefixed "mpi: " with MPI_Error_string's text.
package mpi

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <mpi.h>

static int goshmemi_mpi_init_thread(int required, int *provided) {
	int rc = MPI_Init_thread(NULL, NULL, required, provided);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static int goshmemi_mpi_rank(int *rank) { return MPI_Comm_rank(MPI_COMM_WORLD, rank); }
static int goshmemi_mpi_size(int *size) { return MPI_Comm_size(MPI_COMM_WORLD, size); }
static int goshmemi_mpi_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

static int goshmemi_mpi_allgather(void *in, int n, void *out) {
	return MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD);
}

static int goshmemi_mpi_bcast(void *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}

static int goshmemi_mpi_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

// goshmemi_mpi_node_leaders stores in leaders[r], for every world rank r, the
// lowest world rank on r's shared-memory node (MPI_COMM_TYPE_SHARED).
// leaders must hold MPI_Comm_size(MPI_COMM_WORLD) ints.
static int goshmemi_mpi_node_leaders(int *leaders) {
	int rc, wrank, leader;
	MPI_Comm node;
	rc = MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
	rc = MPI_Allreduce(&wrank, &leader, 1, MPI_INT, MPI_MIN, node);
	if (rc == MPI_SUCCESS)
		rc = MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
	int frc = MPI_Comm_free(&node);
	return rc != MPI_SUCCESS ? rc : frc;
}

static int goshmemi_mpi_error_string(int code, char *buf, int *len) {
	return MPI_Error_string(code, buf, len);
}
*/
import "C"

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/cockroachdb/errors"
)

// Thread support levels of MPI_Init_thread, in increasing order.
const (
	ThreadSingle     = int(C.MPI_THREAD_SINGLE)
	ThreadFunneled   = int(C.MPI_THREAD_FUNNELED)
	ThreadSerialized = int(C.MPI_THREAD_SERIALIZED)
	ThreadMultiple   = int(C.MPI_THREAD_MULTIPLE)
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

// check turns an MPI return code into nil or an error "mpi: <op>: <MPI text>".
func check(rc C.int, op string) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	var n C.int
	if C.goshmemi_mpi_error_string(rc, &buf[0], &n) != C.MPI_SUCCESS || n <= 0 {
		return errors.Newf("mpi: %s: error code %d", op, int(rc))
	}
	return errors.Newf("mpi: %s: %s (error code %d)", op, C.GoStringN(&buf[0], n), int(rc))
}

// InitThread calls MPI_Init_thread(NULL, NULL, required, &provided) and sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD. It returns the thread level MPI
// granted; checking that it is enough is the caller's business.
func InitThread(required int) (provided int, err error) {
	var p C.int
	if err := check(C.goshmemi_mpi_init_thread(C.int(required), &p), "MPI_Init_thread"); err != nil {
		return 0, err
	}
	return int(p), nil
}

// Initialized reports whether MPI_Init or MPI_Init_thread has been called.
func Initialized() (bool, error) {
	var flag C.int
	if err := check(C.MPI_Initialized(&flag), "MPI_Initialized"); err != nil {
		return false, err
	}
	return flag != 0, nil
}

// Finalized reports whether MPI_Finalize has been called.
func Finalized() (bool, error) {
	var flag C.int
	if err := check(C.MPI_Finalized(&flag), "MPI_Finalized"); err != nil {
		return false, err
	}
	return flag != 0, nil
}

// Finalize calls MPI_Finalize.
func Finalize() error {
	return check(C.MPI_Finalize(), "MPI_Finalize")
}

// Rank returns this process's rank in MPI_COMM_WORLD.
func Rank() (int, error) {
	var r C.int
	if err := check(C.goshmemi_mpi_rank(&r), "MPI_Comm_rank"); err != nil {
		return 0, err
	}
	return int(r), nil
}

// Size returns the size of MPI_COMM_WORLD.
func Size() (int, error) {
	var s C.int
	if err := check(C.goshmemi_mpi_size(&s), "MPI_Comm_size"); err != nil {
		return 0, err
	}
	return int(s), nil
}

// Barrier calls MPI_Barrier on MPI_COMM_WORLD.
func Barrier() error {
	return check(C.goshmemi_mpi_barrier(), "MPI_Barrier")
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
	if len(in) == 0 {
		return check(C.goshmemi_mpi_allgather(nil, 0, nil), "MPI_Allgather")
	}
	// Passing Go memory for the duration of the call is allowed: the bytes
	// hold no Go pointers and C keeps nothing after returning.
	return check(C.goshmemi_mpi_allgather(unsafe.Pointer(unsafe.SliceData(in)), C.int(len(in)),
		unsafe.Pointer(unsafe.SliceData(out))), "MPI_Allgather")
}

// Bcast calls MPI_Bcast of buf (len(buf) bytes, the same on every rank) from
// root on MPI_COMM_WORLD.
func Bcast(buf []byte, root int) error {
	if len(buf) > math.MaxInt32 {
		return errors.Newf("mpi: MPI_Bcast: %d bytes is over the MPI int count limit %d", len(buf), math.MaxInt32)
	}
	return check(C.goshmemi_mpi_bcast(unsafe.Pointer(unsafe.SliceData(buf)), C.int(len(buf)), C.int(root)), "MPI_Bcast")
}

// Abort calls MPI_Abort(MPI_COMM_WORLD, code), which normally ends every
// process of the job and does not return. If it does return, the error says
// why.
func Abort(code int) error {
	return check(C.goshmemi_mpi_abort(C.int(code)), "MPI_Abort")
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
	if err := check(C.goshmemi_mpi_node_leaders(&leaders[0]), "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)"); err != nil {
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
