package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	cerrors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/shmem"
)

func pe(t *T) string { return fmt.Sprintf("PE %d", t.me) }

// hint asserts that err carries a user hint (errors.WithHint) containing s.
func hint(t *T, what string, err error, s string) {
	if err == nil {
		return
	}
	hs := cerrors.GetAllHints(err)
	for _, h := range hs {
		if strings.Contains(h, s) {
			return
		}
	}
	t.Errorf("%s: hints %q of error %q do not mention %q", what, hs, err, s)
}

// errPERange: every RMA, AMO and signal call with a PE outside [0, n)
// returns ErrPEOutOfRange naming this PE, the bad PE and the range, and
// writes nothing.
func errPERange(t *T) {
	n := t.n
	a, err := shmem.Alloc[int64](4)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	sig, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	c, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", c.Destroy()) }()
	rng := fmt.Sprintf("[0, %d)", n)
	for _, bad := range []int{-1, n, n + 5, math.MinInt} {
		is := func(op string, err error) {
			t.Is(fmt.Sprintf("%s to PE %d", op, bad), err, shmem.ErrPEOutOfRange, pe(t), rng, fmt.Sprintf("pe = %d", bad), op)
		}
		buf := []int64{1, 2}
		is("Put", shmem.Put(a, 0, buf, bad))
		is("PutNBI", shmem.PutNBI(a, 0, buf, bad))
		is("Get", shmem.Get(buf, a, 0, bad))
		is("GetNBI", shmem.GetNBI(buf, a, 0, bad))
		is("P", shmem.P(a, 0, 1, bad))
		_, err := shmem.G(a, 0, bad)
		is("G", err)
		_, err = shmem.AtomicFetchAdd(a, 0, 1, bad)
		is("AtomicFetchAdd", err)
		is("AtomicInc", shmem.AtomicInc(a, 0, bad))
		_, err = shmem.AtomicCompareSwap(a, 0, 0, 1, bad)
		is("AtomicCompareSwap", err)
		_, err = shmem.AtomicSwap(a, 0, 1, bad)
		is("AtomicSwap", err)
		_, err = shmem.AtomicFetch(a, 0, bad)
		is("AtomicFetch", err)
		is("AtomicSet", shmem.AtomicSet(a, 0, 1, bad))
		_, err = shmem.AtomicFetchOr(a, 0, 1, bad)
		is("AtomicFetchOr", err)
		is("PutSignal", shmem.PutSignal(a, 0, buf, sig, 0, 1, shmem.SignalSet, bad))
		is("Put", shmem.PutCtx(c, a, 0, buf, bad))
		_, err = shmem.AtomicFetchAddCtx(c, a, 0, 1, bad)
		is("AtomicFetchAdd", err)
		Eq(t, "buf after a failed Get", buf[0], int64(1))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	EqSlice(t, "array after failed calls", a.Local(), []int64{0, 0, 0, 0})
	Eq(t, "signal after failed calls", sig.Local()[0], uint64(0))
	usable(t, "PE out of range")
}

// errBounds: indices and lengths outside the array give ErrOutOfBounds
// naming the range, and write nothing.
func errBounds(t *T) {
	me, n := t.me, t.n
	const L = 10
	a, err := shmem.Alloc[int32](L)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	sig, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	rng := fmt.Sprintf("[0, %d)", L)
	peer := (me + 1) % n
	oob := func(what string, err error, extra ...string) {
		t.Is(what, err, shmem.ErrOutOfBounds, append([]string{pe(t)}, extra...)...)
	}
	one, two, three := make([]int32, 1), make([]int32, 2), make([]int32, 3)
	oob("Put at index -1", shmem.Put(a, -1, one, peer), rng)
	oob("Put at index Len", shmem.Put(a, L, one, peer), rng)
	oob("Put of 3 at index Len-2", shmem.Put(a, L-2, three, peer), rng, "[8, 11)")
	oob("0-length Put at index Len+1", shmem.Put(a, L+1, nil, peer), rng)
	oob("PutNBI at index Len", shmem.PutNBI(a, L, one, peer), rng)
	oob("Get of 2 at index Len-1", shmem.Get(two, a, L-1, peer), rng)
	oob("GetNBI at index -5", shmem.GetNBI(one, a, -5, peer), rng)
	oob("Get at index MinInt", shmem.Get(one, a, math.MinInt, peer), rng)
	oob("Put at index MaxInt", shmem.Put(a, math.MaxInt, one, peer), rng)
	oob("P at index Len", shmem.P(a, L, 1, peer), rng)
	_, err = shmem.G(a, -1, peer)
	oob("G at index -1", err, rng)
	_, err = shmem.AtomicFetchAdd(a, L, 1, peer)
	oob("AtomicFetchAdd at index Len", err, rng)
	_, err = shmem.AtomicCompareSwap(a, -1, 0, 1, peer)
	oob("AtomicCompareSwap at index -1", err, rng)
	oob("WaitUntil at index Len", shmem.WaitUntil(a, L, shmem.CmpEQ, 0), rng)
	_, err = shmem.TestCmp(a, -1, shmem.CmpEQ, 0)
	oob("TestCmp at index -1", err, rng)
	oob("PutSignal data past the end", shmem.PutSignal(a, L-1, two, sig, 0, 1, shmem.SignalSet, peer), rng)
	oob("PutSignal signal index 1 of 1", shmem.PutSignal(a, 0, two, sig, 1, 1, shmem.SignalSet, peer), "[0, 1)")
	_, err = shmem.SignalWaitUntil(sig, 1, shmem.CmpEQ, 0)
	oob("SignalWaitUntil at index 1 of 1", err, "[0, 1)")
	// Collectives: counts larger than the arrays (same on every PE).
	oob("Reduce of Len+1", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, L+1))
	oob("Broadcast of Len+1", shmem.Broadcast(shmem.TeamWorld, a, a, L+1, 0))
	small, err := shmem.Alloc[int32](L*n - 1)
	t.Must("Alloc", err)
	oob("FCollect into a dst one element short", shmem.FCollect(shmem.TeamWorld, small, a, L))
	oob("AllToAll from a src one element short", shmem.AllToAll(shmem.TeamWorld, a, small, L))
	t.OK("Free", small.Free())
	t.Is("Reduce of -1 elements", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, -1), shmem.ErrInvalidArgument)
	t.Must("BarrierAll", shmem.BarrierAll())
	EqSlice(t, "array after failed calls", a.Local(), make([]int32, L))
	Eq(t, "signal after failed calls", sig.Local()[0], uint64(0))
	t.Must("BarrierAll", shmem.BarrierAll())
	// The edges that are in bounds work.
	t.OK("Put of 1 at index Len-1", shmem.Put(a, L-1, []int32{9}, peer))
	t.OK("0-length Put at index Len", shmem.Put(a, L, nil, peer))
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "last element put by the previous PE", a.Local()[L-1], int32(9))
	usable(t, "out of bounds")
}

// errAllocBad: Alloc of a negative count, more than the heap, or an
// overflowing byte count: the exact sentinel on every PE, nothing
// allocated. (Alloc(0) is valid: mem/alloc-zero.)
func errAllocBad(t *T) {
	for _, n := range []int{-1, math.MinInt} {
		_, err := shmem.Alloc[int64](n)
		t.Is(fmt.Sprintf("Alloc(%d)", n), err, shmem.ErrInvalidArgument, pe(t), fmt.Sprintf("n = %d", n))
	}
	_, err := shmem.Alloc[int64](1 << 40)
	t.Is("Alloc of 8 TiB", err, shmem.ErrHeapExhausted, pe(t), "more than the whole heap")
	hint(t, "Alloc of 8 TiB", err, "GOSHMEM_SYMMETRIC_SIZE")
	_, err = shmem.Alloc[float64](math.MaxInt)
	t.Is("Alloc(MaxInt) of float64 (byte count overflows)", err, shmem.ErrHeapExhausted, pe(t))
	_, err = shmem.Alloc[byte](int(*heapFlag) + 1)
	if *heapFlag != 0 {
		t.Is("Alloc of heap size + 1 bytes", err, shmem.ErrHeapExhausted, pe(t))
	}
	dev, err := shmem.AllocDevice[float32](16)
	t.Is("AllocDevice", err, shmem.ErrNotSupported, pe(t), "GPU")
	Eq(t, "AllocDevice result Len", dev.Len(), 0)
	usable(t, "bad Alloc")
}

// errNotSymmetric: different Alloc sizes, Free targets or split arguments
// on different PEs give ErrNotSymmetric on every PE and change nothing.
func errNotSymmetric(t *T) {
	me := t.me
	_, err := shmem.Alloc[int64](10 + me)
	t.Is("Alloc with a different n on every PE", err, shmem.ErrNotSymmetric, pe(t), "Alloc")
	n := 5
	if me == t.n-1 {
		n = -1 // one PE asks for an invalid size, the others a valid one
	}
	_, err = shmem.Alloc[int32](n)
	t.Is("Alloc of -1 on the last PE only", err, shmem.ErrNotSymmetric, pe(t))
	a, err := shmem.Alloc[int64](3)
	t.Must("Alloc", err)
	b, err := shmem.Alloc[int64](3)
	t.Must("Alloc", err)
	target := b
	if me == 0 {
		target = a
	}
	t.Is("Free of different arrays on different PEs", target.Free(), shmem.ErrNotSymmetric, pe(t), "Free")
	// Both are still live and usable.
	t.OK("Put into a after the failed Free", shmem.P(a, 0, int64(me), (me+1)%t.n))
	t.OK("Put into b after the failed Free", shmem.P(b, 0, int64(me), (me+1)%t.n))
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "a[0]", a.Local()[0], int64((me-1+t.n)%t.n))
	t.OK("Free a", a.Free())
	t.OK("Free b", b.Free())
	size := t.n
	if me == 0 {
		size = 1
	}
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, size)
	t.Is("TeamSplitStrided with different sizes", err, shmem.ErrNotSymmetric, pe(t))
	Eq(t, "team from the failed split", tm, shmem.TeamInvalid)
	usable(t, "not symmetric")
}

func errDoubleFree(t *T) {
	a, err := shmem.Alloc[uint32](17)
	t.Must("Alloc", err)
	t.OK("Free", a.Free())
	err = a.Free()
	t.Is("Free twice", err, shmem.ErrInvalidArgument, pe(t), "already freed")
	hint(t, "Free twice", err, "once")
	var zero shmem.Array[uint32]
	t.OK("Free of the zero Array (does nothing)", zero.Free())
	usable(t, "double Free")
}

// errUseAfterFree: every call on a freed array is ErrInvalidArgument; with
// GOSHMEM_DEBUG=1 a stale Local slice reads the poison pattern.
func errUseAfterFree(t *T) {
	me := t.me
	a, err := shmem.Alloc[int64](8)
	t.Must("Alloc", err)
	dst, err := shmem.Alloc[int64](8 * t.n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	stale := a.Local()
	for i := range stale {
		stale[i] = 12345
	}
	t.OK("Free", a.Free())
	t.True("Local() after Free is nil", a.Local() == nil)
	ia := shmem.ErrInvalidArgument
	uaf := func(what string, err error) { t.Is(what+" after Free", err, ia, pe(t), "use after Free") }
	buf := make([]int64, 2)
	uaf("Put", shmem.Put(a, 0, buf, me))
	uaf("PutNBI", shmem.PutNBI(a, 0, buf, me))
	uaf("Get", shmem.Get(buf, a, 0, me))
	uaf("GetNBI", shmem.GetNBI(buf, a, 0, me))
	uaf("P", shmem.P(a, 0, 1, me))
	_, err = shmem.G(a, 0, me)
	uaf("G", err)
	_, err = shmem.AtomicFetchAdd(a, 0, 1, me)
	uaf("AtomicFetchAdd", err)
	uaf("WaitUntil", shmem.WaitUntil(a, 0, shmem.CmpEQ, 0))
	_, err = shmem.TestCmp(a, 0, shmem.CmpEQ, 0)
	uaf("TestCmp", err)
	uaf("Reduce", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, 1))
	uaf("Broadcast", shmem.Broadcast(shmem.TeamWorld, dst, a, 1, 0))
	uaf("FCollect", shmem.FCollect(shmem.TeamWorld, dst, a, 1))
	uaf("AllToAll", shmem.AllToAll(shmem.TeamWorld, dst, a, 1))
	var zero shmem.Array[int64]
	t.Is("Put on the zero Array", shmem.Put(zero, 0, buf, me), shmem.ErrOutOfBounds, pe(t), "zero Array has no elements")
	t.True("Local() of the zero Array is nil", zero.Local() == nil)
	Eq(t, "Len() of the zero Array", zero.Len(), 0)
	if debugOn() {
		for i, v := range stale {
			if uint64(v) != 0xdbdbdbdbdbdbdbdb {
				t.Errorf("GOSHMEM_DEBUG=1: stale slice [%d] = %#x after Free, want the poison 0xdbdbdbdbdbdbdbdb", i, uint64(v))
				break
			}
		}
	}
	usable(t, "use after Free")
}

// errReduceOps: bitwise reductions on floating point and unknown ops are
// ErrInvalidArgument; the same array then reduces fine.
func errReduceOps(t *T) {
	f32, err := shmem.Alloc[float32](4)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", f32.Free()) }()
	f64, err := shmem.Alloc[float64](4)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", f64.Free()) }()
	for _, op := range []shmem.Op{shmem.OpAnd, shmem.OpOr, shmem.OpXor} {
		t.Is(fmt.Sprintf("Reduce %v on float32", op), shmem.Reduce(shmem.TeamWorld, op, f32, f32, 4), shmem.ErrInvalidArgument, pe(t), "float32")
		t.Is(fmt.Sprintf("Reduce %v on float64", op), shmem.Reduce(shmem.TeamWorld, op, f64, f64, 4), shmem.ErrInvalidArgument, pe(t))
	}
	for _, op := range []shmem.Op{shmem.Op(-1), shmem.Op(7), shmem.Op(99)} {
		t.Is(fmt.Sprintf("Reduce with op %d", int(op)), shmem.Reduce(shmem.TeamWorld, op, f64, f64, 4), shmem.ErrInvalidArgument, pe(t))
	}
	f32.Local()[0] = float32(t.me) + 0.5
	t.OK("Reduce OpSum on float32", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, f32, f32, 1))
	Eq(t, "sum of PE+0.5", f32.Local()[0], float32(t.n*(t.n-1)/2)+float32(t.n)*0.5)
	usable(t, "bad Reduce op")
}

// errCollArgs: Broadcast root out of range, collectives on TeamInvalid,
// bad splits, bad Cmp and SignalOp values.
func errCollArgs(t *T) {
	n := t.n
	a, err := shmem.Alloc[int32](4)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	sig, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	for _, root := range []int{-1, n, n + 3} {
		t.Is(fmt.Sprintf("Broadcast from root %d", root), shmem.Broadcast(shmem.TeamWorld, a, a, 4, root),
			shmem.ErrPEOutOfRange, pe(t), fmt.Sprintf("[0, %d)", n), fmt.Sprintf("root = %d", root))
	}
	inv := shmem.TeamInvalid
	ia := shmem.ErrInvalidArgument
	t.Is("Reduce on TeamInvalid", shmem.Reduce(inv, shmem.OpSum, a, a, 1), ia, pe(t))
	t.Is("Broadcast on TeamInvalid", shmem.Broadcast(inv, a, a, 1, 0), ia)
	t.Is("FCollect on TeamInvalid", shmem.FCollect(inv, a, a, 1), ia)
	t.Is("AllToAll on TeamInvalid", shmem.AllToAll(inv, a, a, 1), ia)
	t.Is("Sync on TeamInvalid", inv.Sync(), ia)
	_, err = shmem.TeamSplitStrided(inv, 0, 1, 1)
	t.Is("TeamSplitStrided of TeamInvalid", err, ia)
	for _, sp := range []split{{"start n", n, 1, 1}, {"start -1", -1, 1, 1}, {"size 0", 0, 1, 0},
		{"size n+1", 0, 1, n + 1}, {"stride 0 size 2", 0, 0, 2}, {"past the end", 0, 2, n}} {
		if sp.name == "past the end" && n == 1 {
			sp.stride = 1
			sp.size = 2
		}
		if sp.name == "stride 0 size 2" && n == 1 {
			continue // size 2 > n already covered
		}
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, sp.start, sp.stride, sp.size)
		t.Is("TeamSplitStrided "+sp.name, err, ia, pe(t))
		Eq(t, "team of a failed split", tm, shmem.TeamInvalid)
	}
	for _, c := range []shmem.Cmp{shmem.Cmp(-1), shmem.Cmp(6), shmem.Cmp(42)} {
		t.Is(fmt.Sprintf("WaitUntil with Cmp(%d)", int(c)), shmem.WaitUntil(a, 0, c, 0), ia, pe(t))
		_, err := shmem.TestCmp(a, 0, c, 0)
		t.Is(fmt.Sprintf("TestCmp with Cmp(%d)", int(c)), err, ia)
	}
	t.Is("PutSignal with SignalOp(1)", shmem.PutSignal(a, 0, []int32{1}, sig, 0, 1, shmem.SignalOp(1), t.me), ia, pe(t))
	usable(t, "bad collective arguments")
}

// errTimeout: with GOSHMEM_TIMEOUT set, an unsatisfiable wait ends with
// ErrTimeout naming the word, the comparison and the value.
func errTimeout(t *T) {
	d, err := time.ParseDuration(os.Getenv("GOSHMEM_TIMEOUT"))
	t.Must("parse GOSHMEM_TIMEOUT", err)
	// When a wait gives up is internal/spin's (tested with a fake clock);
	// here the outcome: the error names the wait and the setting.
	w, err := shmem.Alloc[int64](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	sig, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	w.Local()[1] = 3
	err = shmem.WaitUntil(w, 1, shmem.CmpEQ, 7)
	t.Is("WaitUntil that nobody satisfies", err, shmem.ErrTimeout, pe(t), "WaitUntil", "a[1] == 7", "GOSHMEM_TIMEOUT="+d.String(), "still 3")
	_, err = shmem.SignalWaitUntil(sig, 0, shmem.CmpGE, 1)
	t.Is("SignalWaitUntil that nobody satisfies", err, shmem.ErrTimeout, pe(t), ">= 1")
	if errors.Is(err, shmem.ErrInvalidArgument) {
		t.Errorf("timeout error also matches ErrInvalidArgument: %v", err)
	}
	usable(t, "a timed-out wait")
}
