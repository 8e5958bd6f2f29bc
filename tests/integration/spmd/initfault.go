package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	crdb "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	mpiboot "github.com/goshmem/goshmem/internal/bootstrap/mpi"
	"github.com/goshmem/goshmem/shmem"
)

// Per-rank faults of the lifecycle tests, read from SPMD_* variables (not
// GOSHMEM_*: those are goshmem's own table):
//
//	SPMD_RANK_ENV="1:GOSHMEM_TRANSPORT=ofi 0,2:FI_PROVIDER=shm"
//	    space-separated RANKS:NAME=VALUE items, applied first: each sets
//	    NAME=VALUE in the processes whose launcher rank is one of
//	    RANKS (comma-separated), so the variables below can be per rank too
//	SPMD_INIT_DELAY=2s   sleep before Init
//	SPMD_FSIZE=64M       RLIMIT_FSIZE (bytes, K/M/G suffix) set after the
//	                     bootstrap started, before Init makes the heap
//	SPMD_BOOT_DELAY=3:5s sleep before this PE's 3rd bootstrap Allgather
//	SPMD_BOOT_TRACE=1    print "spmd: rank R (pid P): bootstrap allgather #K"
//	                     as each Allgather starts
//	SPMD_EXIT_SYNC=DIR   before exiting, wait (up to 20 s) until every rank
//	                     has reached its exit (one file per rank in DIR):
//	                     mpirun ends the job at the first non-zero exit, and
//	                     a PE still printing its report would be killed
//
// SPMD_FSIZE, SPMD_BOOT_DELAY and SPMD_BOOT_TRACE run Init on a bootstrap
// this program makes (shmem.WithBootstrap), wrapping the MPI one.

// worldRank is the launcher's rank of this process (OMPI_COMM_WORLD_RANK
// under Open MPI, PMI_RANK under MPICH; 0 without a launcher).
func worldRank() int { return mpiboot.LauncherRank() }

// applyRankEnv applies SPMD_RANK_ENV to this process.
func applyRankEnv() error {
	rank := worldRank()
	for _, item := range strings.Fields(os.Getenv("SPMD_RANK_ENV")) {
		ranks, kv, ok := strings.Cut(item, ":")
		name, val, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 || name == "" {
			return fmt.Errorf("SPMD_RANK_ENV item %q: want RANKS:NAME=VALUE", item)
		}
		for _, s := range strings.Split(ranks, ",") {
			r, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("SPMD_RANK_ENV item %q: rank %q is not a number", item, s)
			}
			if r == rank {
				if err := os.Setenv(name, val); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// bytesOf parses 64M, 512K, 1G or a byte count.
func bytesOf(s string) (uint64, error) {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n * mult, err
}

// tracedBoot is the MPI bootstrap with SPMD_BOOT_DELAY and SPMD_BOOT_TRACE.
type tracedBoot struct {
	bootstrap.Bootstrap
	n       int
	delayAt int
	delay   time.Duration
	trace   bool
}

func (b *tracedBoot) Allgather(in []byte) ([]byte, error) {
	b.n++
	if b.trace {
		fmt.Fprintf(os.Stderr, "spmd: rank %d (pid %d): bootstrap allgather #%d\n", b.Rank(), os.Getpid(), b.n)
	}
	if b.n == b.delayAt {
		time.Sleep(b.delay)
	}
	return b.Bootstrap.Allgather(in)
}

// faultBoot makes the bootstrap of the SPMD_FSIZE, SPMD_BOOT_DELAY and
// SPMD_BOOT_TRACE faults (nil: none asked for; Init chooses its own).
func faultBoot() (bootstrap.Bootstrap, error) {
	fsize, delay, trace := os.Getenv("SPMD_FSIZE"), os.Getenv("SPMD_BOOT_DELAY"), os.Getenv("SPMD_BOOT_TRACE") != ""
	if fsize == "" && delay == "" && !trace {
		return nil, nil
	}
	tb := &tracedBoot{trace: trace}
	if delay != "" {
		at, d, ok := strings.Cut(delay, ":")
		var err error
		if tb.delayAt, err = strconv.Atoi(at); !ok || err != nil {
			return nil, fmt.Errorf("SPMD_BOOT_DELAY=%q: want N:DURATION", delay)
		}
		if tb.delay, err = time.ParseDuration(d); err != nil {
			return nil, fmt.Errorf("SPMD_BOOT_DELAY=%q: %v", delay, err)
		}
	}
	b, err := mpiboot.New()
	if err != nil {
		return nil, err
	}
	tb.Bootstrap = b
	if fsize != "" {
		// After MPI_Init, whose own files in /dev/shm may be larger.
		n, err := bytesOf(fsize)
		if err != nil {
			return nil, fmt.Errorf("SPMD_FSIZE=%q: %v", fsize, err)
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			return nil, fmt.Errorf("SPMD_FSIZE: setrlimit: %v", err)
		}
	}
	return tb, nil
}

// sentinels names the shmem sentinels err matches under the standard
// errors.Is.
func sentinels(err error) string {
	var names []string
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrNotInitialized", shmem.ErrNotInitialized}, {"ErrPEOutOfRange", shmem.ErrPEOutOfRange},
		{"ErrOutOfBounds", shmem.ErrOutOfBounds}, {"ErrHeapExhausted", shmem.ErrHeapExhausted},
		{"ErrNotSymmetric", shmem.ErrNotSymmetric}, {"ErrInvalidArgument", shmem.ErrInvalidArgument},
		{"ErrNotSupported", shmem.ErrNotSupported}, {"ErrTimeout", shmem.ErrTimeout},
	} {
		if errors.Is(err, s.err) {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return "no sentinel"
	}
	return strings.Join(names, ", ")
}

// report prints one PE's error of what on one line, then its hints.
func report(mode string, rank int, what string, err error) {
	fmt.Printf("%s: PE %d: %s failed (%s): %s\n", mode, rank, what, sentinels(err), strings.ReplaceAll(err.Error(), "\n", " | "))
	for _, h := range crdb.GetAllHints(err) {
		fmt.Printf("%s: PE %d: hint: %s\n", mode, rank, strings.ReplaceAll(h, "\n", " | "))
	}
}

// exitSync is SPMD_EXIT_SYNC: this rank has reported; wait for the others.
func exitSync() {
	dir := os.Getenv("SPMD_EXIT_SYNC")
	if dir == "" {
		return
	}
	n := mpiboot.LauncherSize()
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank%d", worldRank())), nil, 0o644)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) >= n {
			return
		}
	}
}

// initReport is -mode init-report: Init with the faults above, then print
// this PE's Init outcome ("init-report: PE R: Init failed (sentinels):
// error" and its hints, or "Init ok") and exit non-zero on failure. After
// a failed Init the process ends without further goshmem calls.
func initReport() int {
	rank := worldRank()
	if d := os.Getenv("SPMD_INIT_DELAY"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			fmt.Fprintf(os.Stderr, "spmd: SPMD_INIT_DELAY=%q: %v\n", d, err)
			return 2
		}
		time.Sleep(dur)
	}
	boot, err := faultBoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "spmd: rank %d: %v\n", rank, err)
		return 2
	}
	opts := initOpts()
	if boot != nil {
		opts = append(opts, shmem.WithBootstrap(boot))
	}
	fmt.Fprintf(os.Stderr, "spmd: rank %d (pid %d): entering Init\n", rank, os.Getpid())
	if err := shmem.Init(opts...); err != nil {
		report("init-report", rank, "Init", err)
		if boot != nil {
			_ = boot.Finalize() // Init finalizes only a bootstrap it chose
		}
		exitSync()
		return 1
	}
	fmt.Printf("init-report: PE %d: Init ok\n", shmem.MyPE())
	if err := shmem.Finalize(); err != nil {
		report("init-report", rank, "Finalize", err)
		exitSync()
		return 1
	}
	exitSync()
	return 0
}

// finalizeSkip is -mode finalize-skip: after Init and a barrier, PE 1
// never calls Finalize (it sleeps up to 20 s, then exits 0); every other
// PE's Finalize must fail with ErrTimeout under GOSHMEM_TIMEOUT naming
// PE 1. Each PE prints Finalize's outcome and exits non-zero on error.
func finalizeSkip() int {
	if err := shmem.Init(initOpts()...); err != nil {
		report("finalize-skip", worldRank(), "Init", err)
		return 1
	}
	me := shmem.MyPE()
	if err := shmem.BarrierAll(); err != nil {
		report("finalize-skip", me, "BarrierAll", err)
		return 1
	}
	if me == 1 {
		fmt.Fprintf(os.Stderr, "spmd: PE 1: skipping Finalize\n")
		time.Sleep(20 * time.Second)
		return 0
	}
	if err := shmem.Finalize(); err != nil {
		report("finalize-skip", me, "Finalize", err)
		return 1
	}
	fmt.Printf("finalize-skip: PE %d: Finalize ok\n", me)
	return 0
}
