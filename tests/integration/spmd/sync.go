package main

import (
	"fmt"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// waitCase is one comparison: the word starts at init (cmp false), the
// writer first stores mid (still false), then final (true).
type waitCase struct {
	cmp               shmem.Cmp
	init, v, mid, fin int
}

var waitCases = []waitCase{
	{shmem.CmpEQ, 0, 5, 4, 5},
	{shmem.CmpNE, 0, 0, 0, 7},
	{shmem.CmpGT, 0, 2, 2, 3},
	{shmem.CmpGE, 0, 3, 2, 3},
	{shmem.CmpLT, 10, 5, 5, 4},
	{shmem.CmpLE, 10, 5, 6, 5},
}

// waitUntil: for every Cmp, each PE waits on its own word while the
// previous PE sets it (first to a value that does not satisfy the
// comparison, then to one that does); TestCmp agrees before and after.
func waitUntil[V shmem.Elem](t *T) {
	me, n := t.me, t.n
	w, err := shmem.Alloc[V](len(waitCases))
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	next := (me + 1) % n
	for i, c := range waitCases {
		what := fmt.Sprintf("%s: word %v %v %v", typeName[V](), c.init, c.cmp, c.v)
		w.Local()[i] = V(c.init)
		t.Must("BarrierAll", shmem.BarrierAll())
		ok, err := shmem.TestCmp(w, i, c.cmp, V(c.v))
		t.OK("TestCmp", err)
		Eq(t, "TestCmp before the write: "+what, ok, false)
		t.Must("BarrierAll", shmem.BarrierAll())
		var done chan error
		if n == 1 { // the writer is this PE: write, then wait (returns at once)
			t.OK("P", shmem.P(w, i, V(c.fin), next))
		} else {
			done = make(chan error, 1)
			go func() {
				// The writer: mid (not satisfying), pause, final.
				if c.mid != c.init {
					if err := shmem.P(w, i, V(c.mid), next); err != nil {
						done <- err
						return
					}
				}
				time.Sleep(2 * time.Millisecond)
				done <- shmem.AtomicSet(w, i, V(c.fin), next)
			}()
		}
		t.OK("WaitUntil "+what, shmem.WaitUntil(w, i, c.cmp, V(c.v)))
		if done != nil {
			t.OK("writer", <-done)
		}
		Eq(t, "value after WaitUntil "+what, w.Local()[i], V(c.fin))
		ok, err = shmem.TestCmp(w, i, c.cmp, V(c.v))
		t.OK("TestCmp", err)
		Eq(t, "TestCmp after the wait: "+what, ok, true)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// putSignalSet: a ring of PutSignal(SignalSet) rounds with a large payload;
// the receiver checks the whole payload as soon as it sees the signal, then
// acknowledges so the sender may overwrite the buffer.
func putSignalSet(t *T) {
	me, n := t.me, t.n
	const words = 128 << 10 // 1 MiB of float64
	rounds := 12
	if n > 4 {
		rounds = 6 // 8 PEs on 2 cores
	}
	buf, err := shmem.Alloc[float64](words)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", buf.Free()) }()
	sig, err := shmem.Alloc[uint64](2) // [0] data signal, [1] ack
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	next, prev := (me+1)%n, (me-1+n)%n
	src := make([]float64, words)
	for r := 1; r <= rounds; r++ {
		for i := range src {
			src[i] = float64(me*1_000_000 + r*10_000 + i%9973)
		}
		// Send, and overwrite src at once: PutSignal's src is reusable on return.
		t.OK("PutSignal", shmem.PutSignal(buf, 0, src, sig, 0, uint64(r), shmem.SignalSet, next))
		clear(src)
		got, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpGE, uint64(r))
		t.OK("SignalWaitUntil", err)
		Eq(t, fmt.Sprintf("round %d: signal value", r), got, uint64(r))
		loc := buf.Local()
		bad := 0
		for i := 0; i < words; i++ {
			if want := float64(prev*1_000_000 + r*10_000 + i%9973); loc[i] != want {
				if bad == 0 {
					t.Errorf("round %d: payload[%d] = %v after the signal, want %v", r, i, loc[i], want)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("round %d: %d of %d payload words stale when the signal was seen", r, bad, words)
		}
		// Acknowledge to the sender, then wait for our receiver's ack.
		t.OK("AtomicSet ack", shmem.AtomicSet(sig, 1, uint64(r), prev))
		_, err = shmem.SignalWaitUntil(sig, 1, shmem.CmpGE, uint64(r))
		t.OK("SignalWaitUntil ack", err)
	}
	v, err := shmem.SignalFetch(sig, 0)
	t.OK("SignalFetch", err)
	Eq(t, "SignalFetch", v, uint64(rounds))
	t.Must("BarrierAll", shmem.BarrierAll())
}

// putSignalAdd: every PE puts its block into every PE with SignalAdd 1; a
// receiver that sees the count reach n sees every block.
func putSignalAdd(t *T) {
	me, n := t.me, t.n
	const blk = 4096
	buf, err := shmem.Alloc[int32](n * blk)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", buf.Free()) }()
	sig, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	const rounds = 5
	for r := 1; r <= rounds; r++ {
		for k := 0; k < n; k++ {
			dst := (me + k) % n
			src := make([]int32, blk)
			for i := range src {
				src[i] = int32(r<<24 | me<<16 | dst<<12 | i)
			}
			t.OK("PutSignal add", shmem.PutSignal(buf, me*blk, src, sig, 0, 1, shmem.SignalAdd, dst))
		}
		got, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpGE, uint64(r*n))
		t.OK("SignalWaitUntil", err)
		if got < uint64(r*n) || got > uint64((r+1)*n) {
			t.Errorf("round %d: signal %d outside [%d, %d]", r, got, r*n, (r+1)*n)
		}
		loc := buf.Local()
		for s := 0; s < n; s++ {
			for _, i := range []int{0, 1, blk / 2, blk - 1} {
				if want := int32(r<<24 | s<<16 | me<<12 | i); loc[s*blk+i] != want {
					t.Errorf("round %d: block of PE %d [%d] = %#x, want %#x", r, s, i, loc[s*blk+i], want)
				}
			}
		}
		// Nobody starts round r+1 before every PE checked round r.
		t.Must("BarrierAll", shmem.BarrierAll())
	}
	Eq(t, "final signal", sig.Local()[0], uint64(rounds*n))
}

// fenceOrder: data put, Fence, flag P; the receiver that sees the flag
// sees the data. Also the same over a context.
func fenceOrder(t *T) {
	me, n := t.me, t.n
	const words = 8192
	data, err := shmem.Alloc[int64](words)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", data.Free()) }()
	flag, err := shmem.Alloc[int64](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", flag.Free()) }()
	next, prev := (me+1)%n, (me-1+n)%n
	src := make([]int64, words)
	for r := int64(1); r <= 20; r++ {
		for i := range src {
			src[i] = r*1000 + int64(i)
		}
		t.OK("Put", shmem.Put(data, 0, src, next))
		t.OK("Fence", shmem.Fence())
		t.OK("P flag", shmem.P(flag, 0, r, next))
		t.OK("WaitUntil", shmem.WaitUntil(flag, 0, shmem.CmpGE, r))
		loc := data.Local()
		if loc[0] != r*1000 || loc[words-1] != r*1000+words-1 || loc[words/2] != r*1000+words/2 {
			t.Errorf("round %d: data [%d %d %d] stale after the flag", r, loc[0], loc[words/2], loc[words-1])
		}
		t.OK("AtomicSet ack", shmem.AtomicSet(flag, 1, r, prev))
		t.OK("WaitUntil ack", shmem.WaitUntil(flag, 1, shmem.CmpGE, r))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// barrierOrder: puts issued before BarrierAll are visible after it on
// every PE; SyncAll after an explicit Quiet gives the same.
func barrierOrder(t *T) {
	me, n := t.me, t.n
	a, err := shmem.Alloc[int64](n * 64)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	for r := int64(1); r <= 10; r++ {
		for k := 0; k < n; k++ {
			dst := (me + k) % n
			src := make([]int64, 64)
			for i := range src {
				src[i] = r<<32 | int64(me)<<16 | int64(dst)<<8 | int64(i)
			}
			if r%2 == 0 {
				t.OK("PutNBI", shmem.PutNBI(a, me*64, src, dst))
			} else {
				t.OK("Put", shmem.Put(a, me*64, src, dst))
			}
		}
		if r%3 == 0 {
			t.OK("Quiet", shmem.Quiet())
			t.Must("SyncAll", shmem.SyncAll())
		} else {
			t.Must("BarrierAll", shmem.BarrierAll())
		}
		loc := a.Local()
		for s := 0; s < n; s++ {
			for _, i := range []int{0, 31, 63} {
				if want := r<<32 | int64(s)<<16 | int64(me)<<8 | int64(i); loc[s*64+i] != want {
					t.Errorf("round %d: from PE %d [%d] = %#x, want %#x", r, s, i, loc[s*64+i], want)
				}
			}
		}
		t.Must("SyncAll", shmem.SyncAll()) // everyone checked before the next round's puts
	}
}
