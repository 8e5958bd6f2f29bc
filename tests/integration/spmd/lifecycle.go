package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	mpiboot "github.com/goshmem/goshmem/internal/bootstrap/mpi"
	"github.com/goshmem/goshmem/shmem"
)

// checkBeforeInit: every call before Init is ErrNotInitialized (local).
func checkBeforeInit(t *T) {
	Eq(t, "MyPE before Init", shmem.MyPE(), -1)
	Eq(t, "NPEs before Init", shmem.NPEs(), -1)
	notInitCalls(t, "before Init", shmem.Array[int64]{})
}

// checkAfterFinalize: every call after Finalize is ErrNotInitialized, an
// array of the finished run is dead, and (under MPI) a second Init says
// ErrNotSupported rather than crashing in MPI.
func checkAfterFinalize(t *T, old shmem.Array[int64]) {
	Eq(t, "MyPE after Finalize", shmem.MyPE(), -1)
	Eq(t, "NPEs after Finalize", shmem.NPEs(), -1)
	t.True("Local() of an array after Finalize is nil", old.Local() == nil)
	notInitCalls(t, "after Finalize", old)
	t.Is("Finalize twice", shmem.Finalize(), shmem.ErrNotInitialized)
	if mpiboot.UnderLauncher() {
		t.Is("Init after Finalize under MPI", shmem.Init(), shmem.ErrNotSupported, "MPI")
	}
}

func notInitCalls(t *T, when string, a shmem.Array[int64]) {
	w := func(op string) string { return op + " " + when }
	ni := shmem.ErrNotInitialized
	_, err := shmem.Alloc[int64](4)
	t.Is(w("Alloc"), err, ni, "Alloc")
	_, err = shmem.AllocDevice[int64](4)
	t.Is(w("AllocDevice"), err, ni)
	t.Is(w("Free"), a.Free(), ni)
	t.Is(w("Put"), shmem.Put(a, 0, []int64{1}, 0), ni, "Put")
	t.Is(w("PutNBI"), shmem.PutNBI(a, 0, []int64{1}, 0), ni)
	t.Is(w("Get"), shmem.Get(make([]int64, 1), a, 0, 0), ni)
	t.Is(w("GetNBI"), shmem.GetNBI(make([]int64, 1), a, 0, 0), ni)
	t.Is(w("P"), shmem.P(a, 0, 1, 0), ni)
	_, err = shmem.G(a, 0, 0)
	t.Is(w("G"), err, ni)
	_, err = shmem.AtomicFetchAdd(a, 0, 1, 0)
	t.Is(w("AtomicFetchAdd"), err, ni)
	t.Is(w("AtomicInc"), shmem.AtomicInc(a, 0, 0), ni)
	t.Is(w("WaitUntil"), shmem.WaitUntil(a, 0, shmem.CmpEQ, 0), ni)
	_, err = shmem.TestCmp(a, 0, shmem.CmpEQ, 0)
	t.Is(w("TestCmp"), err, ni)
	t.Is(w("Quiet"), shmem.Quiet(), ni)
	t.Is(w("Fence"), shmem.Fence(), ni)
	t.Is(w("BarrierAll"), shmem.BarrierAll(), ni)
	t.Is(w("SyncAll"), shmem.SyncAll(), ni)
	_, err = shmem.NewCtx()
	t.Is(w("NewCtx"), err, ni)
	t.Is(w("Reduce"), shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, 1), ni)
	t.Is(w("Broadcast"), shmem.Broadcast(shmem.TeamWorld, a, a, 1, 0), ni)
	_, err = shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	t.Is(w("TeamSplitStrided"), err, ni)
	t.True(w("TeamWorld.Valid() is false"), !shmem.TeamWorld.Valid())
	Eq(t, w("TeamWorld.MyPE()"), shmem.TeamWorld.MyPE(), -1)
}

func checkInitTwice(t *T) {
	err := shmem.Init()
	t.Is("Init while initialized", err, shmem.ErrInvalidArgument, fmt.Sprintf("PE %d", t.me), "already initialized")
	hint(t, "Init while initialized", err, "Finalize")
	Eq(t, "MyPE after the failed Init", shmem.MyPE(), t.me)
	Eq(t, "NPEs after the failed Init", shmem.NPEs(), t.n)
	usable(t, "Init twice")
}

// initFin is -mode initfin: Init and Finalize only, timed.
func initFin() int {
	t0 := time.Now()
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	t1 := time.Now()
	me, n := shmem.MyPE(), shmem.NPEs()
	if err := shmem.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Finalize: %+v\n", err)
		return 1
	}
	t2 := time.Now()
	if me == 0 {
		fmt.Printf("initfin: np %d: Init %v, Finalize %v\n", n, t1.Sub(t0).Round(time.Microsecond), t2.Sub(t1).Round(time.Microsecond))
	}
	return 0
}

// initAsym is -mode init-asym: every PE asks Init for a different heap
// size; Init must fail with ErrNotSymmetric on every PE (and leave MPI
// finalized, so the job still ends cleanly).
func initAsym() int {
	rank := mpiboot.LauncherRank()
	err := shmem.Init(shmem.WithSymmetricSize(uint64(16+rank) << 20))
	switch {
	case err == nil && mpiboot.LauncherSize() == 1:
		fmt.Printf("init-asym: PE %d: ok (1 PE: nothing to differ)\n", rank)
		_ = shmem.Finalize()
		return 0
	case err == nil:
		fmt.Printf("init-asym: PE %d: Init succeeded with a heap size the other PEs do not share\n", rank)
		_ = shmem.Finalize()
		return 1
	case !errors.Is(err, shmem.ErrNotSymmetric):
		fmt.Printf("init-asym: PE %d: got %v, want ErrNotSymmetric\n", rank, err)
		return 1
	case !strings.Contains(err.Error(), "GOSHMEM_SYMMETRIC_SIZE") && !strings.Contains(err.Error(), "heap size"):
		fmt.Printf("init-asym: PE %d: error %q does not name the heap size\n", rank, err)
		return 1
	}
	t := &T{name: "init-asym", me: rank}
	notInitCalls(t, "after a failed Init", shmem.Array[int64]{})
	if t.fails > 0 {
		return 1
	}
	fmt.Printf("init-asym: PE %d: ok: %v\n", rank, err)
	return 0
}

// fault is -mode fault-panic / fault-exit: PE 1 dies without Finalize while
// every other PE waits on it (WaitUntil on a word only PE 1 would set, or
// BarrierAll). The survivors print what their wait returned and exit 1.
func fault(mode string) int {
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	if n < 2 {
		fmt.Fprintln(os.Stderr, "spmd: fault modes need at least 2 PEs")
		return 2
	}
	flag, err := shmem.Alloc[int64](1)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spmd: PE %d: Alloc: %+v\n", me, err)
		return 1
	}
	if err := shmem.BarrierAll(); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: PE %d: BarrierAll: %+v\n", me, err)
		return 1
	}
	if me == 1 {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "spmd: PE 1: injecting %s\n", mode)
		if mode == "fault-exit" {
			os.Exit(3)
		}
		panic("spmd: injected fault on PE 1")
	}
	t0 := time.Now()
	if *faultWait == "barrier" {
		err = shmem.BarrierAll()
	} else if *faultWait == "get" {
		// Remote reads of the dead PE (over ofi: its endpoint is gone).
		for err == nil && time.Since(t0) < time.Minute {
			_, err = shmem.G(flag, 0, 1)
		}
	} else {
		err = shmem.WaitUntil(flag, 0, shmem.CmpEQ, 1)
	}
	fmt.Fprintf(os.Stderr, "spmd: PE %d: %s returned after %v: %v\n", me, *faultWait, time.Since(t0).Round(time.Millisecond), err)
	return 1
}
