package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// Locks, peer access, memory and query calls of OpenSHMEM 1.6 (issue 16).

func init() { moreChecks = append(moreChecks, registerMem16) }

func registerMem16() {
	register("lock/counter", lockCounter)
	register("lock/test", lockTest)
	register("lock/goroutines", lockGoroutines)
	registerMin("lock/free-held", 2, lockFreeHeld)
	registry = append(registry, check{name: "err/lock-timeout", fn: lockTimeout, needTimeout: true})
	register("mem/ptr", memPtr)
	register("mem/realloc", memRealloc)
	registerMin("mem/realloc-not-symmetric", 2, memReallocNotSymmetric)
	register("mem/aligned", memAligned)
	register("mem/alloc-zero", memAllocZero)
	register("query/info", queryInfo)
}

const lockK = 100 // critical sections per PE

// lockCounter: every PE takes a lock lockK times and, under it, increments
// a plain (non-atomic) counter on PE 0 with G and a PutNBI, and mirrors
// the new value to the last PE with a PutNBI on a context of its own,
// with no Quiet of its own: Clear's quiet must complete both before the
// next holder reads them. No update is lost (the final count is n*lockK)
// and every holder sees the previous holder's value in both places.
func lockCounter(t *T) {
	me, n := t.me, t.n
	l, err := shmem.NewLock()
	t.Must("NewLock", err)
	defer func() { t.OK("Lock.Free", l.Free()) }()
	ctr, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", ctr.Free()) }()
	mirror, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", mirror.Free()) }()
	ctx, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", ctx.Destroy()) }()
	last := n - 1
	for i := 0; i < lockK; i++ {
		if !t.OK("Lock.Set", l.Set()) {
			return
		}
		v, err := shmem.G(ctr, 0, 0)
		t.OK("G", err)
		m, err := shmem.G(mirror, 0, last)
		t.OK("G mirror", err)
		if m != v {
			t.Errorf("section %d: the counter on PE 0 is %d but its mirror on PE %d is %d: the previous holder's puts were not complete at its Clear", i, v, last, m)
		}
		// The buffers of the NBI puts stay untouched until Clear (its quiet).
		nv := []int64{v + 1}
		t.OK("PutNBI", shmem.PutNBI(ctr, 0, nv, 0))
		t.OK("PutNBICtx", shmem.PutNBICtx(ctx, mirror, 0, nv, last))
		if !t.OK("Lock.Clear", l.Clear()) {
			return
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	v, err := shmem.G(ctr, 0, 0)
	t.OK("G", err)
	Eq(t, "counter incremented under the lock", v, int64(n*lockK))
	m, err := shmem.G(mirror, 0, last)
	t.OK("G", err)
	Eq(t, "mirror", m, int64(n*lockK))
	_ = me
}

// lockTest: Test never waits. While PE 0 holds the lock every Test fails
// (PE 0's own too); once it is cleared, every PE takes it with Test alone
// (retrying) and increments a counter under it.
func lockTest(t *T) {
	me, n := t.me, t.n
	l, err := shmem.NewLock()
	t.Must("NewLock", err)
	defer func() { t.OK("Lock.Free", l.Free()) }()
	ctr, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", ctr.Free()) }()
	if me == 0 {
		ok, err := l.Test()
		t.OK("Lock.Test", err)
		t.True("PE 0 takes the new lock with Test", ok)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	for i := 0; i < 3; i++ {
		ok, err := l.Test()
		t.OK("Lock.Test", err)
		if ok {
			t.Errorf("Test #%d took the lock that PE 0 holds", i)
			if me != 0 {
				t.OK("Lock.Clear", l.Clear())
			}
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		t.OK("Lock.Clear", l.Clear())
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	tries := 0
	for {
		ok, err := l.Test()
		if !t.OK("Lock.Test", err) {
			return
		}
		tries++
		if ok {
			break
		}
		if tries%64 == 0 {
			time.Sleep(10 * time.Microsecond) // oversubscribed: let the holder run
		}
	}
	v, err := shmem.G(ctr, 0, 0)
	t.OK("G", err)
	t.OK("P", shmem.P(ctr, 0, v+1, 0))
	t.OK("Lock.Clear", l.Clear())
	t.Must("BarrierAll", shmem.BarrierAll())
	v, err = shmem.G(ctr, 0, 0)
	t.OK("G", err)
	Eq(t, "counter incremented once per PE under Test", v, int64(n))
}

// lockGoroutines: the lock is held by the PE, not the goroutine. Every PE
// runs several goroutines that each take it lockK/2 times; a plain counter
// on PE 0 ends exact. Clears come from another goroutine than the Set
// every other time.
func lockGoroutines(t *T) {
	n := t.n
	const g = 3
	l, err := shmem.NewLock()
	t.Must("NewLock", err)
	defer func() { t.OK("Lock.Free", l.Free()) }()
	ctr, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", ctr.Free()) }()
	var wg sync.WaitGroup
	errc := make(chan error, g)
	handoff := make(chan struct{})
	cleared := make(chan error)
	go func() { // clears on behalf of the others
		for range handoff {
			cleared <- l.Clear()
		}
	}()
	var mu sync.Mutex // one goroutine at a time uses the handoff
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < lockK/2; j++ {
				if err := l.Set(); err != nil {
					errc <- fmt.Errorf("goroutine %d: Set: %w", i, err)
					return
				}
				v, err := shmem.G(ctr, 0, 0)
				if err == nil {
					err = shmem.P(ctr, 0, v+1, 0)
				}
				if err != nil {
					errc <- err
					return
				}
				if j%2 == 0 {
					err = l.Clear()
				} else {
					mu.Lock()
					handoff <- struct{}{}
					err = <-cleared
					mu.Unlock()
				}
				if err != nil {
					errc <- fmt.Errorf("goroutine %d: Clear: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(handoff)
	close(errc)
	for err := range errc {
		t.OK("lock from goroutines", err)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	v, err := shmem.G(ctr, 0, 0)
	t.OK("G", err)
	Eq(t, "counter incremented by every goroutine of every PE", v, int64(n*g*(lockK/2)))
}

// lockFreeHeld: Free while one PE holds the lock fails on every PE and
// frees nothing; the lock still works and frees once cleared.
func lockFreeHeld(t *T) {
	me := t.me
	l, err := shmem.NewLock()
	t.Must("NewLock", err)
	if me == 1 {
		t.Must("Lock.Set", l.Set())
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	t.Is("Lock.Free while PE 1 holds it", l.Free(), shmem.ErrNotSymmetric, pe(t), "Lock.Free")
	if me == 1 {
		t.OK("Lock.Clear", l.Clear())
	}
	t.OK("Lock.Set after the failed Free", l.Set())
	t.OK("Lock.Clear", l.Clear())
	t.Must("BarrierAll", shmem.BarrierAll())
	t.OK("Lock.Free", l.Free())
	t.Is("Lock.Free twice", l.Free(), shmem.ErrInvalidArgument, pe(t), "freed")
	usable(t, "a failed Lock.Free")
}

// lockTimeout (GOSHMEM_TIMEOUT set): PE 0 holds the lock past the timeout;
// the others' Set fails with ErrTimeout naming the lock and the PE ahead
// of them. They stay queued: once PE 0 clears, Set again takes up the
// wait, and every PE gets the lock once more.
func lockTimeout(t *T) {
	me, n := t.me, t.n
	d, err := time.ParseDuration(os.Getenv("GOSHMEM_TIMEOUT"))
	t.Must("parse GOSHMEM_TIMEOUT", err)
	l, err := shmem.NewLock()
	t.Must("NewLock", err)
	defer func() { t.OK("Lock.Free", l.Free()) }()
	ctr, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", ctr.Free()) }()
	if me == 0 {
		t.Must("Lock.Set", l.Set())
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		time.Sleep(d * 3 / 2) // the others time out in Set and reach the barrier first
	} else {
		err := l.Set()
		t.Is("Lock.Set while PE 0 holds the lock", err, shmem.ErrTimeout, pe(t), "Lock.Set", "GOSHMEM_TIMEOUT", "ahead of this PE")
		hint(t, "Lock.Set timeout", err, "Set again")
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		t.OK("Lock.Clear", l.Clear())
	}
	for try := 0; me != 0; try++ {
		err := l.Set()
		if err == nil {
			break
		}
		if !errors.Is(err, shmem.ErrTimeout) || try == 20 {
			t.Fatalf("Lock.Set after PE 0 cleared: %v", err)
		}
	}
	v, err := shmem.G(ctr, 0, 0)
	t.OK("G", err)
	t.OK("P", shmem.P(ctr, 0, v+1, 0))
	if me != 0 {
		t.OK("Lock.Clear", l.Clear())
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	v, err = shmem.G(ctr, 0, 0)
	t.OK("G", err)
	Eq(t, "sections after the timeouts", v, int64(n))
}

// memPtr: every PE of this PE's node (TeamNode) is load/store reachable:
// Ptr of its copy is non-nil (this PE's is Local), stores through it land
// in the peer's Local, and loads through it read what the peer wrote; a PE
// on another node has no Ptr but stays PEAccessible.
func memPtr(t *T) {
	me, n := t.me, t.n
	a, err := shmem.Alloc[int64](n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	a.Local()[me] = int64(100 + me) // this PE's own mark
	t.Must("BarrierAll", shmem.BarrierAll())
	onNode := func(pe int) bool { return shmem.TeamWorld.TranslatePE(pe, shmem.TeamNode) >= 0 }
	for pe := 0; pe < n; pe++ {
		t.True(fmt.Sprintf("PEAccessible(%d)", pe), shmem.PEAccessible(pe))
		t.True(fmt.Sprintf("AddrAccessible(a, %d)", pe), shmem.AddrAccessible(a, pe))
		p := shmem.Ptr(a, pe)
		if !onNode(pe) {
			t.True(fmt.Sprintf("Ptr(a, %d) of a PE on another node is nil", pe), p == nil)
			continue
		}
		if p == nil {
			t.Errorf("Ptr(a, %d) is nil: PE %d is on this node", pe, pe)
			continue
		}
		Eq(t, fmt.Sprintf("len(Ptr(a, %d))", pe), len(p), n)
		Eq(t, fmt.Sprintf("load of PE %d's mark through Ptr", pe), p[pe], int64(100+pe))
	}
	t.True("PEAccessible(n) is false", !shmem.PEAccessible(n))
	own := shmem.Ptr(a, me)
	if len(own) > 0 && &own[0] != &a.Local()[0] {
		t.Errorf("Ptr(a, MyPE()) is not Local()")
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	// Store into the next PE's copy, at this PE's slot (a put where the
	// next PE is on another node).
	next := (me + 1) % n
	if p := shmem.Ptr(a, next); p != nil {
		p[me] = int64(1000*next + me)
	} else {
		t.OK("P", shmem.P(a, me, int64(1000*next+me), next))
		t.OK("Quiet", shmem.Quiet())
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	prev := (me - 1 + n) % n
	Eq(t, "store by the previous PE through Ptr", a.Local()[prev], int64(1000*me+prev))
}

// memRealloc: grow and shrink keep every PE's data; puts issued right
// before Realloc (not quieted) survive it; the grown part is zeroed and
// reachable from the peers; the zero Array reallocates to a fresh one.
func memRealloc(t *T) {
	me, n := t.me, t.n
	const k = 8
	a, err := shmem.Realloc(shmem.Array[int64]{}, k)
	t.Must("Realloc of the zero Array", err)
	Eq(t, "Len", a.Len(), k)
	next, prev := (me+1)%n, (me-1+n)%n
	for i := 0; i < k-1; i++ { // element k-1 is the previous PE's (it may be there already)
		a.Local()[i] = int64(me*100 + i)
	}
	// A put in flight: Realloc's opening barrier completes it.
	t.OK("PutNBI", shmem.PutNBI(a, k-1, []int64{int64(-1 - me)}, next))
	keep, err := shmem.Alloc[int64](1) // sits after a: the grow must move a
	t.Must("Alloc", err)
	defer func() { t.OK("Free", keep.Free()) }()
	b, err := shmem.Realloc(a, 3*k)
	t.Must("Realloc grow", err)
	Eq(t, "Len after grow", b.Len(), 3*k)
	for i := 0; i < k-1; i++ {
		Eq(t, fmt.Sprintf("element %d kept by the grow", i), b.Local()[i], int64(me*100+i))
	}
	Eq(t, "element put by the previous PE before Realloc", b.Local()[k-1], int64(-1-prev))
	for i := k; i < 3*k; i++ {
		if b.Local()[i] != 0 {
			t.Errorf("grown element %d is %d, want 0", i, b.Local()[i])
			break
		}
	}
	t.Is("Put into the old array", shmem.P(a, 0, 1, next), shmem.ErrInvalidArgument, "use after Free")
	t.Must("BarrierAll", shmem.BarrierAll()) // every PE has read its elements
	// The grown part is symmetric: the previous PE writes into it.
	t.OK("Put", shmem.Put(b, 2*k, []int64{int64(7000 + me)}, next))
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "grown element written by the previous PE", b.Local()[2*k], int64(7000+prev))
	// Shrink in place keeps the front.
	c, err := shmem.Realloc(b, k/2)
	t.Must("Realloc shrink", err)
	Eq(t, "Len after shrink", c.Len(), k/2)
	for i := 0; i < k/2; i++ {
		Eq(t, fmt.Sprintf("element %d kept by the shrink", i), c.Local()[i], int64(me*100+i))
	}
	t.Must("BarrierAll", shmem.BarrierAll()) // every PE has read its elements
	t.OK("Put after shrink", shmem.Put(c, k/2-1, []int64{int64(9000 + me)}, next))
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "element put after the shrink", c.Local()[k/2-1], int64(9000+prev))
	z, err := shmem.Realloc(c, 0)
	t.Must("Realloc to 0", err)
	Eq(t, "Len after Realloc to 0", z.Len(), 0)
	t.True("Realloc to 0 returns the zero Array", z == shmem.Array[int64]{})
	t.OK("Free of the zero Array", z.Free())
}

// memReallocNotSymmetric: PEs asking different sizes, or passing
// different arrays, fail with ErrNotSymmetric everywhere; nothing changes.
func memReallocNotSymmetric(t *T) {
	me := t.me
	a, err := shmem.Alloc[int32](4)
	t.Must("Alloc", err)
	a.Local()[3] = int32(me)
	_, err = shmem.Realloc(a, 8+me)
	t.Is("Realloc with a different n on every PE", err, shmem.ErrNotSymmetric, pe(t), "Realloc")
	Eq(t, "the array after the failed Realloc", a.Local()[3], int32(me))
	b, err := shmem.Alloc[int32](4)
	t.Must("Alloc", err)
	target := a
	if me == 0 {
		target = b
	}
	_, err = shmem.Realloc(target, 16)
	t.Is("Realloc of different arrays", err, shmem.ErrNotSymmetric, pe(t))
	align := 64
	if me == 0 {
		align = 128
	}
	_, err = shmem.AllocAligned[int32](4, align)
	t.Is("AllocAligned with different aligns", err, shmem.ErrNotSymmetric, pe(t), "AllocAligned")
	align = 64
	if me == 0 {
		align = 3 // bad on one PE only: every PE fails, none waits
	}
	_, err = shmem.AllocAligned[int32](4, align)
	t.Is("AllocAligned with a bad align on PE 0", err, shmem.ErrNotSymmetric, pe(t))
	t.OK("Free", a.Free())
	t.OK("Free", b.Free())
	usable(t, "a failed Realloc")
}

// memAligned: AllocAligned's Local slice is aligned on every PE, the
// array is symmetric (a peer's put lands), and bad aligns fail everywhere.
func memAligned(t *T) {
	me, n := t.me, t.n
	next, prev := (me+1)%n, (me-1+n)%n
	pad, err := shmem.Alloc[byte](24)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", pad.Free()) }()
	for _, align := range []int{8, 64, 128, 256, 1024, 4096} {
		a, err := shmem.AllocAligned[int64](5, align)
		if !t.OK(fmt.Sprintf("AllocAligned(5, %d)", align), err) {
			continue
		}
		if p := addr(a); p%uintptr(align) != 0 {
			t.Errorf("AllocAligned(5, %d): Local() at %#x", align, p)
		}
		t.OK("P", shmem.P(a, 4, int64(align+me), next))
		t.Must("BarrierAll", shmem.BarrierAll())
		Eq(t, fmt.Sprintf("align %d: element put by the previous PE", align), a.Local()[4], int64(align+prev))
		t.OK("Free", a.Free())
	}
	for _, align := range []int{0, 4, 24, 1 << 20} {
		_, err := shmem.AllocAligned[int64](5, align)
		t.Is(fmt.Sprintf("AllocAligned(5, %d)", align), err, shmem.ErrInvalidArgument, pe(t), "must be a power of two in [8, ")
	}
	usable(t, "bad aligns")
}

// memAllocZero: zero-size allocations follow OpenSHMEM 1.6 (a zero-size
// shmem_malloc performs no action and returns a null pointer): Alloc(0),
// AllocAligned(0, align), AllocWithHints(0, h), AllocDevice(0) and
// Realloc of the zero Array to 0 return the zero Array without
// communicating, and Free of it does nothing. Only the even PEs make these
// calls, between two collectives every PE makes: had any of them
// synchronized, the odd PEs' next collective would meet it and fail (a
// different kind, or the watchdog). Realloc(a, 0) frees a (collective).
func memAllocZero(t *T) {
	me, n := t.me, t.n
	t.Must("BarrierAll", shmem.BarrierAll())
	if me%2 == 0 {
		for range 3 { // repeated: each would be one more world collective
			z, err := shmem.Alloc[int64](0)
			t.OK("Alloc(0)", err)
			Eq(t, "Len of Alloc(0)", z.Len(), 0)
			t.True("Local of Alloc(0) is nil", z.Local() == nil)
			t.True("Alloc(0) is the zero Array", z == shmem.Array[int64]{})
			t.OK("empty Put into the zero Array", shmem.Put(z, 0, nil, (me+1)%n))
			t.OK("empty Get from the zero Array", shmem.Get(nil, z, 0, (me+1)%n))
			t.Is("P into the zero Array", shmem.P(z, 0, 1, (me+1)%n), shmem.ErrOutOfBounds, "zero Array")
			t.OK("Free of Alloc(0)", z.Free())
			t.OK("Free of Alloc(0) again", z.Free())
			za, err := shmem.AllocAligned[int32](0, 256)
			t.OK("AllocAligned(0)", err)
			t.True("AllocAligned(0) is the zero Array", za == shmem.Array[int32]{})
			zh, err := shmem.AllocWithHints[uint64](0, shmem.AllocSignalRemote)
			t.OK("AllocWithHints(0)", err)
			t.True("AllocWithHints(0) is the zero Array", zh == shmem.Array[uint64]{})
			zd, err := shmem.AllocDevice[float32](0)
			t.OK("AllocDevice(0)", err)
			t.True("AllocDevice(0) is the zero Array", zd == shmem.Array[float32]{})
			zr, err := shmem.Realloc(shmem.Array[int64]{}, 0)
			t.OK("Realloc of the zero Array to 0", err)
			t.True("Realloc(zero, 0) is the zero Array", zr == shmem.Array[int64]{})
			t.OK("Free of AllocWithHints(0)", zh.Free())
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	h, err := shmem.AllocWithHints[uint64](2, shmem.AllocAtomicsRemote|shmem.AllocSignalRemote|1<<20)
	t.Must("AllocWithHints", err)
	t.OK("AtomicAdd", shmem.AtomicAdd(h, 1, uint64(me+1), 0))
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		Eq(t, "sum of AtomicAdds into the hinted array", h.Local()[1], uint64(n*(n+1)/2))
	}
	// Realloc(a, 0) frees a on every PE and returns the zero Array.
	z, err := shmem.Realloc(h, 0)
	t.OK("Realloc to 0", err)
	t.True("Realloc(a, 0) is the zero Array", z == shmem.Array[uint64]{})
	t.Is("Free after Realloc to 0", h.Free(), shmem.ErrInvalidArgument, pe(t), "already freed")
	usable(t, "zero-size allocations")
}

// queryInfo: the query calls agree on every PE.
func queryInfo(t *T) {
	maj, min := shmem.InfoVersion()
	Eq(t, "InfoVersion", [2]int{maj, min}, [2]int{1, 6})
	Eq(t, "InfoName", shmem.InfoName(), "goshmem")
	Eq(t, "QueryThread", shmem.QueryThread(), shmem.ThreadMultiple)
	shmem.PControl(2)
	shmem.PControl(1)
}
