// Command probe is the SPMD program that bootstrap/mpi's tests run under
// mpirun (and alone). It prints one line per fact, each starting with
// "PE <rank>:", for the test to parse. The first argument picks a scenario:
//
//	info      rank, size, node, an allgather and a bcast
//	mismatch  Allgather with a different length on odd ranks
//	finalize  Finalize twice, then a Barrier
//	panic     rank 2 panics after a Barrier while the others wait in a second one
//	abort     rank 2 calls Abort(3, "boom") after a Barrier while the others wait
//
// With PROBE_STDERR_DIR set, each process writes its standard error (its
// own lines, goshmem's and the MPI library's) to a file of its own in that
// folder instead of the launcher's pipe: a launcher that ends the job at
// an abort may exit before it has forwarded what the aborting rank wrote.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	mpiboot "github.com/goshmem/goshmem/internal/bootstrap/mpi"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe info|mismatch|finalize|panic|abort")
		os.Exit(2)
	}
	if dir := os.Getenv("PROBE_STDERR_DIR"); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.err", os.Getpid())))
		if err == nil {
			err = unix.Dup2(int(f.Fd()), 2)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "probe: PROBE_STDERR_DIR:", err)
			os.Exit(2)
		}
	}
	var b bootstrap.Bootstrap
	launcher := mpiboot.UnderLauncher()
	if launcher {
		var err error
		if b, err = mpiboot.New(); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	} else {
		bs, err := local.NewJob(1, local.ExitOnAbort())
		if err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
		b = bs[0]
	}
	rank := b.Rank()
	say := func(format string, args ...any) {
		fmt.Printf("PE %d: "+format+"\n", append([]any{rank}, args...)...)
	}
	must := func(err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "PE %d: %v\n", rank, err)
			os.Exit(1)
		}
	}

	switch os.Args[1] {
	case "info":
		say("launcher=%v name=%s size=%d node=%v", launcher, b.Name(), b.Size(), b.Node())
		out, err := b.Allgather([]byte{byte(rank), byte(100 + rank)})
		must(err)
		say("allgather=%v", out)
		buf := []byte{byte(rank), byte(rank), byte(rank)}
		must(b.Bcast(buf, b.Size()-1))
		say("bcast=%v", buf)
		must(b.Barrier())
	case "mismatch":
		_, err := b.Allgather(make([]byte, 1+rank%2))
		say("allgather error=%v", err)
		must(b.Barrier())
		say("barrier after mismatch ok")
	case "finalize":
		must(b.Finalize())
		say("finalize 2: %v", b.Finalize())
		say("barrier after finalize: %v", b.Barrier())
		return
	case "panic":
		must(b.Barrier())
		if rank == 2 {
			panic("probe: PE 2 panics on purpose")
		}
		say("waiting in barrier")
		must(b.Barrier())
	case "abort":
		must(b.Barrier())
		if rank == 2 {
			b.Abort(3, "boom")
			panic("Abort returned")
		}
		say("waiting in barrier")
		must(b.Barrier())
	default:
		fmt.Fprintln(os.Stderr, "probe: unknown scenario", os.Args[1])
		os.Exit(2)
	}
	must(b.Finalize())
	say("done")
}
