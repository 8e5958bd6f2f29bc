// Package mpiboot is the MPI implementation of bootstrap.Bootstrap, over
// goshmem's own MPI binding (internal/cgo/mpi), which loads Open MPI's or
// MPICH's library at run time. It is what a program started by mpirun,
// mpiexec or another PMI launcher (see UnderLauncher) uses.
//
// Every MPI call of the process, MPI_Init_thread and MPI_Finalize included,
// runs on one goroutine that holds runtime.LockOSThread for its whole life;
// the methods hand it closures over a channel and wait for the answer. The
// job asks only for MPI_THREAD_FUNNELED. The reason is measured, not
// stylistic: MPI_THREAD_MULTIPLE in this OpenMPI (4.1) is bimodal under
// concurrent blocking calls (milliseconds or tens of seconds, the same in
// plain C; tested on Debian 12's OpenMPI 4.1.4), and Go moves goroutines
// between threads freely.
package mpiboot

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/cgo/mpi"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
)

// launcherEnv are environment variables that a launcher sets in every
// process it starts: Open MPI's mpirun (OMPI_COMM_WORLD_*), PMIx servers
// (PMIX_RANK: Open MPI 4/5, Slurm srun --mpi=pmix), PMI-1/2 (PMI_RANK,
// PMI_SIZE, PMI_FD, PMI_PORT: MPICH's Hydra mpiexec, Intel MPI, Slurm srun
// --mpi=pmi2) and Hydra's own (MPI_LOCALNRANKS, MPI_LOCALRANKID,
// HYDI_CONTROL_FD). Hydra's HYDRA_* variables are not among them: those are
// the user's settings for mpiexec (HYDRA_LAUNCHER, HYDRA_HOST_FILE ...) and
// may be exported in a shell that starts a program alone.
var launcherEnv = []string{
	"OMPI_COMM_WORLD_SIZE",
	"OMPI_COMM_WORLD_RANK",
	"PMIX_RANK",
	"PMI_RANK",
	"PMI_SIZE",
	"PMI_FD",
	"PMI_PORT",
	"MPI_LOCALNRANKS",
	"MPI_LOCALRANKID",
	"HYDI_CONTROL_FD",
}

// UnderLauncher reports whether this process was started by mpirun, mpiexec
// or a PMI launcher, judged by the environment it left (OMPI_COMM_WORLD_SIZE,
// PMIX_RANK, PMI_RANK, PMI_SIZE, PMI_FD, MPI_LOCALNRANKS ...). A program not
// under a launcher is a 1-PE job and need not pay for MPI at all: it never
// loads an MPI library.
func UnderLauncher() bool {
	for _, k := range launcherEnv {
		if _, ok := os.LookupEnv(k); ok {
			return true
		}
	}
	return false
}

// LauncherSize is the job size a launcher announced in the environment
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE), 0 when none did.
func LauncherSize() int {
	return launcherInt("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
}

// LauncherRank is this process's rank as a launcher announced it
// (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK), 0 when none did: what errors
// name before MPI itself can say.
func LauncherRank() int {
	return launcherInt("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
}

func launcherInt(keys ...string) int {
	for _, k := range keys {
		if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n >= 0 {
			return n
		}
	}
	return 0
}

// Library names the MPI library New loaded, for GOSHMEM_INFO: "Open MPI
// (libmpi.so.40: Open MPI v4.1.4, ...)", "MPICH (libmpich.so.12: MPICH
// Version: 4.0.2)", or "no MPI loaded".
func Library() string { return mpi.Describe() }

// abortWait is how long Abort waits for the MPI goroutine to take its
// MPI_Abort request before it gives up and exits the process instead (the
// goroutine may be blocked in a collective that will never complete).
const abortWait = 2 * time.Second

// request is one unit of work for the MPI goroutine.
type request struct {
	fn   func() error
	errc chan error // buffered, capacity 1
	stop bool       // the goroutine ends after fn (MPI_Finalize)
}

// boot is the MPI bootstrap of one process.
type boot struct {
	rank, size int
	nodes      []int

	reqs chan request
	done chan struct{} // closed when the MPI goroutine has ended
	log  *logx.Switch  // Abort's messages: stderr, or SetLogger's
}

var (
	_ bootstrap.Bootstrap = (*boot)(nil)
	_ bootstrap.Logged    = (*boot)(nil)
)

// New loads the MPI library (mpi.Load: GOSHMEM_LIBMPI, else the default
// search), initializes MPI (MPI_Init_thread asking for MPI_THREAD_FUNNELED)
// on a goroutine of its own, locked to its OS thread, and learns rank, size
// and the node of every rank. It fails if no MPI library loads (an error
// matching mpi.ErrNoMPI and errs.ErrNotSupported that names every library
// tried), if MPI was already initialized or finalized in this process, if
// MPI grants less than MPI_THREAD_FUNNELED, or if MPI sees a job of another
// size than the launcher announced (the library is not the launcher's MPI).
// New is collective: every process of the job calls it.
func New() (bootstrap.Bootstrap, error) {
	b := &boot{
		rank: LauncherRank(),
		reqs: make(chan request),
		done: make(chan struct{}),
		log:  logx.NewSwitch(os.Stderr),
	}
	go b.loop()

	err := b.call("New", false, func() error {
		if err := mpi.Load(); err != nil {
			// No usable MPI is a missing feature of this machine.
			return errs.Mark(err, errs.ErrNotSupported)
		}
		inited, err := mpi.Initialized()
		if err != nil {
			return err
		}
		fin, err := mpi.Finalized()
		if err != nil {
			return err
		}
		if fin {
			return errors.WithHint(errors.New("MPI was already finalized in this process"),
				"a process can run MPI (and so bootstrap/mpi) only once")
		}
		if inited {
			return errors.WithHint(errors.New("MPI was already initialized in this process"),
				"goshmem initializes MPI itself; do not call MPI_Init before shmem.Init")
		}
		provided, err := mpi.InitThread(mpi.ThreadFunneled)
		if err != nil {
			return err
		}
		if provided < mpi.ThreadFunneled {
			_ = mpi.Finalize()
			return errors.Newf("MPI provided thread level %s, goshmem requires at least %s",
				mpi.ThreadLevelName(provided), mpi.ThreadLevelName(mpi.ThreadFunneled))
		}
		rank, err := mpi.Rank()
		if err != nil {
			return err
		}
		size, err := mpi.Size()
		if err != nil {
			return err
		}
		if n := LauncherSize(); n > 0 && n != size {
			_ = mpi.Finalize()
			return errors.WithHint(errors.Newf("the launcher started %d processes, but %s sees a job of %d",
				n, mpi.Describe(), size),
				"the MPI library is not the one of the launcher (Open MPI's mpirun needs libmpi.so.40, "+
					"MPICH's mpiexec libmpich.so.12 or libmpi.so.12): set "+mpi.LibraryEnv+" to the launcher's library")
		}
		b.rank, b.size = rank, size
		b.nodes, err = mpi.NodeIDs()
		return err
	})
	if err != nil {
		b.stopLoop()
		return nil, err
	}
	return b, nil
}

// loop is the MPI goroutine: the only one that ever calls into MPI.
func (b *boot) loop() {
	// Never unlocked: when this goroutine returns its thread ends with it,
	// so no other goroutine ever runs on the thread MPI initialized.
	runtime.LockOSThread()
	for r := range b.reqs {
		err := r.fn()
		if r.stop {
			close(b.done)
			r.errc <- err
			return
		}
		r.errc <- err
	}
}

// stopLoop ends the MPI goroutine without calling MPI (New's failure path).
func (b *boot) stopLoop() {
	_ = b.call("stop", true, func() error { return nil })
}

// call runs fn on the MPI goroutine and returns its error wrapped with the
// PE and op. After Finalize it fails without touching MPI.
func (b *boot) call(op string, stop bool, fn func() error) error {
	r := request{fn: fn, errc: make(chan error, 1), stop: stop}
	select {
	case b.reqs <- r:
	case <-b.done:
		return errors.Newf("bootstrap/mpi: PE %d: %s after Finalize", b.rank, op)
	}
	if err := <-r.errc; err != nil {
		return errors.Wrapf(err, "bootstrap/mpi: PE %d: %s", b.rank, op)
	}
	return nil
}

// Name returns "mpi".
func (b *boot) Name() string { return "mpi" }

// Rank returns this PE's rank in MPI_COMM_WORLD.
func (b *boot) Rank() int { return b.rank }

// Size returns the size of MPI_COMM_WORLD.
func (b *boot) Size() int { return b.size }

// Node returns a copy of the node of every rank (MPI_COMM_TYPE_SHARED,
// numbered in order of first appearance).
func (b *boot) Node() []int { return append([]int(nil), b.nodes...) }

// exchangeHeaders allgathers one (length, root) pair per PE so that every PE
// sees the same mismatch, if any, and fails the same way instead of some PEs
// hanging or reading truncated data. Runs on the MPI goroutine.
func (b *boot) exchangeHeaders(n, root int) ([]int64, []int64, error) {
	var hdr [16]byte
	binary.LittleEndian.PutUint64(hdr[0:], uint64(n))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(int64(root)))
	all := make([]byte, 16*b.size)
	if err := mpi.Allgather(hdr[:], all); err != nil {
		return nil, nil, err
	}
	lens := make([]int64, b.size)
	roots := make([]int64, b.size)
	for r := range b.size {
		lens[r] = int64(binary.LittleEndian.Uint64(all[16*r:]))
		roots[r] = int64(binary.LittleEndian.Uint64(all[16*r+8:]))
	}
	return lens, roots, nil
}

func allEqual(v []int64) bool {
	for _, x := range v {
		if x != v[0] {
			return false
		}
	}
	return true
}

// Allgather returns every rank's in, concatenated in rank order. The lengths
// are exchanged first: if they differ, every PE gets an error listing them.
func (b *boot) Allgather(in []byte) ([]byte, error) {
	var out []byte
	err := b.call(fmt.Sprintf("Allgather(%d bytes)", len(in)), false, func() error {
		lens, _, err := b.exchangeHeaders(len(in), 0)
		if err != nil {
			return err
		}
		if !allEqual(lens) {
			return errors.Newf("Allgather lengths differ between PEs: %v", lens)
		}
		out = make([]byte, len(in)*b.size)
		return mpi.Allgather(in, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Barrier returns once every PE has entered it (MPI_Barrier).
func (b *boot) Barrier() error {
	return b.call("Barrier", false, mpi.Barrier)
}

// Bcast overwrites buf on every PE with root's buf. Lengths and roots are
// exchanged first: a mismatch, or a root outside [0, Size()), is an error on
// every PE.
func (b *boot) Bcast(buf []byte, root int) error {
	return b.call(fmt.Sprintf("Bcast(%d bytes, root %d)", len(buf), root), false, func() error {
		lens, roots, err := b.exchangeHeaders(len(buf), root)
		if err != nil {
			return err
		}
		if !allEqual(lens) {
			return errors.Newf("Bcast lengths differ between PEs: %v", lens)
		}
		if !allEqual(roots) {
			return errors.Newf("Bcast roots differ between PEs: %v", roots)
		}
		if root < 0 || root >= b.size {
			return errors.Newf("Bcast root %d is outside [0, %d)", root, b.size)
		}
		return mpi.Bcast(buf, root)
	})
}

// SetLogger sends Abort's messages to l instead of stderr.
func (b *boot) SetLogger(l *slog.Logger) { b.log.Set(l) }

// say is one of Abort's messages, as the line "goshmem: PE <rank>: <msg>".
func (b *boot) say(msg string, attrs ...slog.Attr) {
	attrs = append(attrs, logx.PE(b.rank), slog.String("backend", "bootstrap"))
	b.log.Log(slog.LevelError, fmt.Sprintf("goshmem: PE %d: %s\n", b.rank, msg), msg, attrs...)
}

// Abort prints "goshmem: PE <rank>: <msg>" to stderr and ends the job with
// MPI_Abort(MPI_COMM_WORLD, code), run on the MPI goroutine. If that
// goroutine is busy (blocked in a collective) for abortWait, or MPI is
// already finalized, or MPI_Abort returns, the process exits with code
// instead; mpirun then ends the other processes because this one exited
// without MPI_Finalize. Abort does not return.
func (b *boot) Abort(code int, msg string) {
	b.say(msg, slog.Int("code", code))
	r := request{fn: func() error { return mpi.Abort(code) }, errc: make(chan error, 1)}
	timer := time.NewTimer(abortWait)
	select {
	case b.reqs <- r:
		if err := <-r.errc; err != nil {
			b.say(err.Error())
		}
	case <-b.done:
	case <-timer.C:
		b.say(fmt.Sprintf("MPI busy for %v, exiting without MPI_Abort", abortWait))
	}
	os.Exit(code)
}

// Finalize calls MPI_Finalize on the MPI goroutine and ends that goroutine.
// Every later call, Finalize included, returns an error without touching MPI.
func (b *boot) Finalize() error {
	return b.call("Finalize", true, mpi.Finalize)
}
