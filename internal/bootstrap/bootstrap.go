// Package bootstrap is how goshmem's PEs find each other before any
// symmetric memory exists: rank and size, node-local placement, and a few
// out-of-band collectives used only at setup (never on the data path).
//
// Implementations: bootstrap/mpi (goshmem's own cgo MPI binding, used under
// mpirun and for a program started alone as a 1-PE job), bootstrap/tcp
// (launcher-free jobs: ranks from the environment or a unique ID, a
// rendezvous over TCP) and bootstrap/local (N PEs as goroutines of one
// process, for fast unit tests).
package bootstrap

import "log/slog"

// Bootstrap is the out-of-band channel between the PEs of one job.
//
// Every collective method (Allgather, Barrier, Bcast) must be called by every
// PE of the job in the same order, like MPI collectives. Implementations are
// safe for use by several goroutines of one PE, but collectives of one PE
// must not be issued concurrently.
type Bootstrap interface {
	// Name identifies the implementation ("mpi", "local", ...), for GOSHMEM_INFO.
	Name() string
	// Rank is this PE's number in [0, Size()).
	Rank() int
	// Size is the number of PEs in the job.
	Size() int
	// Node reports which node every rank lives on: Node()[r] is a small
	// integer, equal for ranks that share a host (and so can share memory).
	Node() []int
	// Allgather contributes in (the same length on every PE) and returns the
	// concatenation of every rank's contribution, in rank order.
	Allgather(in []byte) ([]byte, error)
	// Barrier returns once every PE has entered it.
	Barrier() error
	// Bcast overwrites buf on every PE with root's buf (same length everywhere).
	Bcast(buf []byte, root int) error
	// Abort ends the whole job (every PE) with the given exit code after
	// printing msg; it does not return.
	Abort(code int, msg string)
	// Finalize releases the bootstrap; no other method may be called after it.
	Finalize() error
}

// Logged is a Bootstrap whose messages (an abort, a refused connection)
// can go to the program's *slog.Logger (shmem.WithLogger) instead of
// stderr. The runtime calls SetLogger once it exists; nil keeps stderr.
type Logged interface {
	SetLogger(l *slog.Logger)
}

// LocalRank returns b's rank among the PEs of its own node and the number
// of PEs on that node.
func LocalRank(b Bootstrap) (rank, size int) {
	nodes := b.Node()
	me := nodes[b.Rank()]
	for r, n := range nodes {
		if n != me {
			continue
		}
		if r < b.Rank() {
			rank++
		}
		size++
	}
	return rank, size
}
