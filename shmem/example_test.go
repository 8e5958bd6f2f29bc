package shmem_test

// Runnable examples for pkg.go.dev. Each is an SPMD program, right at any
// number of PEs; under go test it runs as a 1-PE job (no mpirun), and its
// expected output is what PE 0 prints as the only PE. Every example calls
// Init and Finalize itself: the runtime may be started again after
// Finalize, so examples and tests share one process. The GPU examples have
// no output comment: they are compiled, not run (they need a GPU on every
// PE).

import (
	"fmt"
	"log"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/shmem"
)

// Every PE sends its number to its right neighbour in a ring; after the
// barrier each PE holds its left neighbour's number.
func Example() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	a, err := shmem.Alloc[int64](1) // collective: same n on every PE
	if err != nil {
		log.Fatal(err)
	}
	if err := shmem.Put(a, 0, []int64{int64(me)}, (me+1)%npes); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil { // puts complete and visible
		log.Fatal(err)
	}
	fmt.Printf("PE %d got %d from its left neighbour\n", me, a.Local()[0])
	// Output: PE 0 got 0 from its left neighbour
}

// A program started without a launcher is a job of one PE; under mpirun
// every process is one PE of the job.
func ExampleInit() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := shmem.Finalize(); err != nil { // collective, like Init
			log.Fatal(err)
		}
	}()
	fmt.Printf("PE %d of %d\n", shmem.MyPE(), shmem.NPEs())
	// Output: PE 0 of 1
}

// Alloc is collective: every PE allocates the same arrays in the same
// order, and the new memory is zeroed on every PE.
func ExampleAlloc() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()

	a, err := shmem.Alloc[float64](4)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free() // collective too
	// This PE's copy is plain memory.
	copy(a.Local(), []float64{0.5, 1.5})
	fmt.Println(a.Len(), a.Local())
	// Output: 4 [0.5 1.5 0 0]
}

// An allocation larger than the symmetric heap fails on every PE with
// ErrHeapExhausted, and the error carries a hint on what to change.
func ExampleAlloc_heapExhausted() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()

	_, err := shmem.Alloc[int64](1 << 40)
	fmt.Println(errors.Is(err, shmem.ErrHeapExhausted))
	fmt.Println(errors.GetAllHints(err))
	// Output:
	// true
	// [raise GOSHMEM_SYMMETRIC_SIZE]
}

// Put writes into a peer's copy of an array; a barrier makes every PE's
// puts visible everywhere.
func ExamplePut() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	row, err := shmem.Alloc[int32](3)
	if err != nil {
		log.Fatal(err)
	}
	right := (me + 1) % npes
	if err := shmem.Put(row, 0, []int32{int32(me), 10, 20}, right); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		fmt.Println(row.Local())
	}
	// Output: [0 10 20]
}

// A bad argument returns an error that matches its sentinel under
// errors.Is and names the PE, the call, the argument and its valid range.
// Nothing is written and the runtime stays usable.
func ExamplePut_peOutOfRange() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()

	a, err := shmem.Alloc[int64](4)
	if err != nil {
		log.Fatal(err)
	}
	err = shmem.Put(a, 0, []int64{1}, shmem.NPEs()) // one past the last PE
	fmt.Println(errors.Is(err, shmem.ErrPEOutOfRange))
	if shmem.MyPE() == 0 {
		fmt.Println(err)
	}
	// Output:
	// true
	// goshmem: PE 0: Put: pe = 1; must be in [0, 1): PE out of range
}

// Get reads a peer's copy; it returns once dst holds the data.
func ExampleGet() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	a, err := shmem.Alloc[int64](2)
	if err != nil {
		log.Fatal(err)
	}
	copy(a.Local(), []int64{int64(me), int64(me) * 100})
	if err := shmem.BarrierAll(); err != nil { // every PE has filled its copy
		log.Fatal(err)
	}
	got := make([]int64, 2)
	left := (me + npes - 1) % npes
	if err := shmem.Get(got, a, 0, left); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("PE %d read %v from PE %d\n", me, got, left)
	// Output: PE 0 read [0 0] from PE 0
}

// An index past the end of the array is ErrOutOfBounds; the message gives
// the elements asked for and the array's range.
func ExampleGet_outOfBounds() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()

	a, err := shmem.Alloc[int64](4)
	if err != nil {
		log.Fatal(err)
	}
	err = shmem.Get(make([]int64, 2), a, 3, shmem.MyPE())
	fmt.Println(errors.Is(err, shmem.ErrOutOfBounds))
	if shmem.MyPE() == 0 {
		fmt.Println(err)
	}
	// Output:
	// true
	// goshmem: PE 0: Get: index 3, length 2 on PE 0: elements [3, 5) are outside the array's [0, 4): index out of bounds
}

// P and G move one element: here each PE writes its square into slot me
// of PE 0's table and PE 0 reads back its own slot.
func ExampleP() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	table, err := shmem.Alloc[int64](npes)
	if err != nil {
		log.Fatal(err)
	}
	if err := shmem.P(table, me, int64(me*me+7), 0); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		v, err := shmem.G(table, 0, 0)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("slot 0:", v)
	}
	// Output: slot 0: 7
}

// A shared counter on PE 0: every PE takes a ticket with one atomic add,
// and each ticket is handed out once.
func ExampleAtomicFetchAdd() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	counter, err := shmem.Alloc[uint64](1)
	if err != nil {
		log.Fatal(err)
	}
	ticket, err := shmem.AtomicFetchAdd(counter, 0, 1, 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		fmt.Printf("PE 0 took ticket %d; %d of %d handed out\n", ticket, counter.Local()[0], npes)
	}
	// Output: PE 0 took ticket 0; 1 of 1 handed out
}

// Leader election: every PE tries to swap its number (plus one) into a word
// on PE 0 that starts at 0; the one that finds 0 there won.
func ExampleAtomicCompareSwap() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me := shmem.MyPE()

	leader, err := shmem.Alloc[int64](1)
	if err != nil {
		log.Fatal(err)
	}
	old, err := shmem.AtomicCompareSwap(leader, 0, 0, int64(me+1), 0)
	if err != nil {
		log.Fatal(err)
	}
	if old == 0 {
		fmt.Printf("PE %d leads\n", me)
	}
	// Output: PE 0 leads
}

// PutSignal delivers data and then a signal: the receiver waits for the
// signal alone and then reads the data, with no barrier.
func ExamplePutSignal() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	data, err := shmem.Alloc[int32](2)
	if err != nil {
		log.Fatal(err)
	}
	sig, err := shmem.Alloc[uint64](1)
	if err != nil {
		log.Fatal(err)
	}
	msg := []int32{int32(me), int32(me) + 40}
	if err := shmem.PutSignal(data, 0, msg, sig, 0, 1, shmem.SignalSet, (me+1)%npes); err != nil {
		log.Fatal(err)
	}
	if _, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, 1); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("PE %d received %v\n", me, data.Local())
	// Output: PE 0 received [0 40]
}

// Every PE adds 1 to a signal word on PE 0; PE 0 waits until all have
// checked in.
func ExampleSignalWaitUntil() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	arrived, err := shmem.Alloc[uint64](1)
	if err != nil {
		log.Fatal(err)
	}
	if err := shmem.SignalUpdate(arrived, 0, 1, shmem.SignalAdd, 0); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		n, err := shmem.SignalWaitUntil(arrived, 0, shmem.CmpGE, uint64(npes))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("PEs checked in:", n)
	}
	// Output: PEs checked in: 1
}

// A put, a fence and a flag: the fence delivers the data before the flag,
// so once WaitUntil sees the flag the data is there too.
func ExampleWaitUntil() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	data, err := shmem.Alloc[float64](3)
	if err != nil {
		log.Fatal(err)
	}
	flag, err := shmem.Alloc[int32](1)
	if err != nil {
		log.Fatal(err)
	}
	right := (me + 1) % npes
	if err := shmem.Put(data, 0, []float64{1, 2.5, float64(me)}, right); err != nil {
		log.Fatal(err)
	}
	if err := shmem.Fence(); err != nil { // data before flag
		log.Fatal(err)
	}
	if err := shmem.P(flag, 0, 1, right); err != nil {
		log.Fatal(err)
	}
	if err := shmem.WaitUntil(flag, 0, shmem.CmpEQ, 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println(data.Local())
	// Output: [1 2.5 0]
}

// The even-numbered PEs form a team; team numbers and world numbers
// translate both ways.
func ExampleTeamSplitStrided() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	npes := shmem.NPEs()

	// Collective over TeamWorld: PEs 0, 2, 4, ...
	evens, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 2, (npes+1)/2)
	if err != nil {
		log.Fatal(err)
	}
	defer evens.Destroy() // collective over evens; odd PEs hold TeamInvalid
	if evens.Valid() && evens.MyPE() == 0 {
		last := evens.NPEs() - 1
		fmt.Printf("%d even PEs; team PE %d is world PE %d\n",
			evens.NPEs(), last, evens.TranslatePE(last, shmem.TeamWorld))
	}
	// Output: 1 even PEs; team PE 0 is world PE 0
}

// TeamSplit2D makes the rows and columns of a grid; PE p sits at
// x = p mod xrange, y = p div xrange.
func ExampleTeamSplit2D() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me := shmem.MyPE()

	row, col, err := shmem.TeamSplit2D(shmem.TeamWorld, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer col.Destroy()
	defer row.Destroy()
	if me == 0 {
		fmt.Printf("PE 0 at (%d, %d): row of %d, column of %d\n",
			row.MyPE(), col.MyPE(), row.NPEs(), col.NPEs())
	}
	// Output: PE 0 at (0, 0): row of 1, column of 1
}

// TranslatePE maps a PE's number in one team to its number in another, or
// -1 when it is not a member there.
func ExampleTeam_TranslatePE() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	npes := shmem.NPEs()

	// The upper half of the PEs (PE 0 alone in a 1-PE job).
	upper, err := shmem.TeamSplitStrided(shmem.TeamWorld, npes/2, 1, npes-npes/2)
	if err != nil {
		log.Fatal(err)
	}
	defer upper.Destroy()
	if shmem.MyPE() == npes-1 {
		fmt.Println("world", npes-1, "is upper", shmem.TeamWorld.TranslatePE(npes-1, upper))
		fmt.Println("upper 0 is world", upper.TranslatePE(0, shmem.TeamWorld))
	}
	// Output:
	// world 0 is upper 0
	// upper 0 is world 0
}

// An all-reduce over TeamWorld: every PE gets the sum and the maximum.
func ExampleReduce() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	src, err := shmem.Alloc[int64](2)
	if err != nil {
		log.Fatal(err)
	}
	sum, err := shmem.Alloc[int64](2)
	if err != nil {
		log.Fatal(err)
	}
	copy(src.Local(), []int64{int64(me + 1), int64(10 * me)})
	if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, sum, src, 2); err != nil {
		log.Fatal(err)
	}
	if err := shmem.Reduce(shmem.TeamWorld, shmem.OpMax, src, src, 2); err != nil { // dst may be src
		log.Fatal(err)
	}
	if me == 0 {
		fmt.Printf("sum %v, max %v over %d PEs\n", sum.Local(), src.Local(), npes)
	}
	// Output: sum [1 0], max [1 0] over 1 PEs
}

// The root's data lands in dst on every member, the root included.
func ExampleBroadcast() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	src, err := shmem.Alloc[float32](3)
	if err != nil {
		log.Fatal(err)
	}
	dst, err := shmem.Alloc[float32](3)
	if err != nil {
		log.Fatal(err)
	}
	const root = 0
	if me == root {
		copy(src.Local(), []float32{0.25, 0.5, 1})
	}
	if err := shmem.Broadcast(shmem.TeamWorld, dst, src, 3, root); err != nil {
		log.Fatal(err)
	}
	if me == npes-1 {
		fmt.Println(dst.Local())
	}
	// Output: [0.25 0.5 1]
}

// FCollect concatenates every member's block in team order.
func ExampleFCollect() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	src, err := shmem.Alloc[int32](2)
	if err != nil {
		log.Fatal(err)
	}
	all, err := shmem.Alloc[int32](2 * npes) // n * team size
	if err != nil {
		log.Fatal(err)
	}
	copy(src.Local(), []int32{int32(me), int32(me * me)})
	if err := shmem.FCollect(shmem.TeamWorld, all, src, 2); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		fmt.Println(all.Local())
	}
	// Output: [0 0]
}

// AllToAll sends block j of src to PE j, where it lands at block me of dst:
// PE i receives 100*j + i from every PE j.
func ExampleAllToAll() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	src, err := shmem.Alloc[int64](npes)
	if err != nil {
		log.Fatal(err)
	}
	dst, err := shmem.Alloc[int64](npes)
	if err != nil {
		log.Fatal(err)
	}
	for j := range src.Local() {
		src.Local()[j] = int64(100*me + j)
	}
	if err := shmem.AllToAll(shmem.TeamWorld, dst, src, 1); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		fmt.Println(dst.Local())
	}
	// Output: [0]
}

// A context is its own completion scope: Quiet on it waits for its puts
// only. Here that Quiet is what completes the put, and SyncAll (which
// completes nothing) tells the target it may read.
func ExampleNewCtx() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	a, err := shmem.Alloc[int64](1)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := shmem.NewCtx() // not collective
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Destroy()
	if err := shmem.PutCtx(ctx, a, 0, []int64{int64(me) + 1000}, (me+1)%npes); err != nil {
		log.Fatal(err)
	}
	if err := ctx.Quiet(); err != nil {
		log.Fatal(err)
	}
	if err := shmem.SyncAll(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Local()[0], ctx.Team() == shmem.TeamWorld)
	// Output: 1000 true
}

// A critical section across PEs: each PE in turn reads a total on PE 0,
// adds to it and writes it back. Clear completes the write before the next
// PE gets the lock.
func ExampleLock_Set() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me := shmem.MyPE()

	lock, err := shmem.NewLock() // collective
	if err != nil {
		log.Fatal(err)
	}
	total, err := shmem.Alloc[int64](1)
	if err != nil {
		log.Fatal(err)
	}
	if err := lock.Set(); err != nil {
		log.Fatal(err)
	}
	v, err := shmem.G(total, 0, 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := shmem.P(total, 0, v+int64(me)+1, 0); err != nil {
		log.Fatal(err)
	}
	if err := lock.Clear(); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		fmt.Println("total:", total.Local()[0]) // 1 + 2 + ... + NPEs
	}
	// Output: total: 1
}

// IPut scatters a contiguous slice with a stride: here into column 1 of a
// 3x3 row-major matrix on the right neighbour.
func ExampleIPut() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	const n = 3
	m, err := shmem.Alloc[int32](n * n)
	if err != nil {
		log.Fatal(err)
	}
	col := []int32{1, 2, 3}
	// n elements, 1 apart in col, to m[1], m[1+n], m[1+2n] on the right PE.
	if err := shmem.IPut(m, 1, n, col, 1, n, (me+1)%npes); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	for r := 0; r < n; r++ {
		fmt.Println(m.Local()[r*n : (r+1)*n])
	}
	// Output:
	// [0 1 0]
	// [0 2 0]
	// [0 3 0]
}

// IGet gathers strided elements from a peer: column 2 of its 3x3 row-major
// matrix into a contiguous slice.
func ExampleIGet() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	const n = 3
	m, err := shmem.Alloc[int32](n * n)
	if err != nil {
		log.Fatal(err)
	}
	for i := range m.Local() {
		m.Local()[i] = int32(100*me + i)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	col := make([]int32, n)
	// n elements from m[2], m[2+n], m[2+2n] on the left PE, to col[0], col[1], col[2].
	if err := shmem.IGet(col, 1, m, 2, n, n, (me+npes-1)%npes); err != nil {
		log.Fatal(err)
	}
	fmt.Println(col)
	// Output: [2 5 8]
}

// Device arrays live in GPU memory: kernels address them through
// DevicePtr, and the host calls (Put, Get, the collectives) take them too.
// Without a GPU on every PE, AllocDevice returns ErrNotSupported.
func ExampleAllocDevice() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	x, err := shmem.AllocDevice[float32](1024)
	if errors.Is(err, shmem.ErrNotSupported) {
		log.Fatal("this example needs a GPU: ", err)
	} else if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	// A host put into the right neighbour's GPU memory, then an
	// all-reduce run by goshmem's kernels.
	if err := shmem.Put(x, 0, []float32{float32(me)}, (me+1)%npes); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, x, x, x.Len()); err != nil {
		log.Fatal(err)
	}
	first := make([]float32, 1)
	if err := shmem.Get(first, x, 0, me); err != nil {
		log.Fatal(err)
	}
	fmt.Println(x.OnDevice(), first[0]) // the sum of 0..npes-1
}

// The on-stream calls enqueue communication on a CUDA stream, ordered with
// the kernels queued there, and return without waiting: here a ring
// exchange between GPU arrays, then a barrier, all in stream order.
func ExamplePutOnStream() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()
	me, npes := shmem.MyPE(), shmem.NPEs()

	const n = 1 << 20
	src, err := shmem.AllocDevice[float32](n)
	if err != nil {
		log.Fatal(err)
	}
	dst, err := shmem.AllocDevice[float32](n)
	if err != nil {
		log.Fatal(err)
	}
	s, err := shmem.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Destroy()
	// ... kernels launched on s fill src ...
	if err := shmem.PutOnStream(s, dst, 0, src, 0, n, (me+1)%npes); err != nil {
		log.Fatal(err)
	}
	if err := shmem.BarrierAllOnStream(s); err != nil {
		log.Fatal(err)
	}
	// ... kernels launched on s now read dst ...
	if err := s.Synchronize(); err != nil { // the host waits for the stream
		log.Fatal(err)
	}
}

// Stream-ordered collectives: the PEs' streams run the all-reduce between
// the kernels that produce and consume its data, as NCCL programs do.
func ExampleReduceOnStream() {
	if err := shmem.Init(); err != nil {
		log.Fatal(err)
	}
	defer shmem.Finalize()

	grad, err := shmem.AllocDevice[shmem.BFloat16](4096)
	if err != nil {
		log.Fatal(err)
	}
	s, err := shmem.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Destroy()
	// ... a backward-pass kernel on s writes grad ...
	if err := shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpSum, grad, grad, grad.Len()); err != nil {
		log.Fatal(err)
	}
	// ... an optimizer kernel on s reads the summed grad ...
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
}
