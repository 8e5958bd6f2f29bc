package main

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/shmem"
)

// putSignalLoad: PutSignal ordering under load. Each round a context sends
// 63 non-blocking puts of 16 KiB from a symmetric source (zero-copy on ofi),
// then PutSignal of the 64th chunk with the round number, while another
// context streams 1 MiB puts to the same target. When the receiver sees the
// signal, every word of all 64 chunks must hold that round's values (the
// fence inside PutSignal orders the signal after the data of its context,
// earlier non-blocking puts included).
func putSignalLoad(t *T) {
	me, n := t.me, t.n
	const chunks, cw = 64, 2048
	const words = chunks * cw
	rounds := 8
	if n > 4 {
		rounds = 4
	}
	data, err := shmem.Alloc[int64](words)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", data.Free()) }()
	src, err := shmem.Alloc[int64](words)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	noise, err := shmem.Alloc[int64](128 << 10)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", noise.Free()) }()
	sig, err := shmem.Alloc[uint64](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	t.Must("BarrierAll", shmem.BarrierAll())
	next, prev := (me+1)%n, (me-1+n)%n

	c, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	nc, err := shmem.NewCtx()
	t.Must("NewCtx (noise)", err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() { // load: bulk puts on another context to the same target
		defer wg.Done()
		buf := make([]int64, noise.Len())
		for i := 0; !stop.Load(); i++ {
			err := shmem.PutNBICtx(nc, noise, 0, buf, next)
			if err == nil {
				err = nc.Quiet()
			}
			if err != nil {
				mu.Lock()
				t.Errorf("noise put %d: %v", i, err)
				mu.Unlock()
				return
			}
		}
	}()
	val := func(pe, r, i int) int64 { return int64(pe)<<40 | int64(r)<<24 | int64(i) }
	for r := 1; r <= rounds; r++ {
		loc := src.Local()
		for i := range loc {
			loc[i] = val(me, r, i)
		}
		for k := 0; k < chunks-1; k++ {
			t.OK("PutNBICtx", shmem.PutNBICtx(c, data, k*cw, loc[k*cw:(k+1)*cw], next))
		}
		t.OK("PutSignalCtx", shmem.PutSignalCtx(c, data, (chunks-1)*cw, loc[(chunks-1)*cw:], sig, 0, uint64(r), shmem.SignalSet, next))
		got, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpGE, uint64(r))
		t.OK("SignalWaitUntil", err)
		Eq(t, fmt.Sprintf("round %d: signal", r), got, uint64(r))
		d := data.Local()
		bad := 0
		for i := range d {
			if d[i] != val(prev, r, i) {
				if bad == 0 {
					t.Errorf("round %d: word %d (chunk %d) = %#x after the signal, want %#x", r, i, i/cw, d[i], val(prev, r, i))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("round %d: %d of %d words stale when the signal was seen", r, bad, words)
		}
		// The sources may be rewritten once this context is quiet and the
		// receiver acknowledged.
		t.OK("Ctx.Quiet", c.Quiet())
		t.OK("AtomicSet ack", shmem.AtomicSet(sig, 1, uint64(r), prev))
		_, err = shmem.SignalWaitUntil(sig, 1, shmem.CmpGE, uint64(r))
		t.OK("SignalWaitUntil ack", err)
	}
	stop.Store(true)
	wg.Wait()
	t.OK("Ctx.Destroy", c.Destroy())
	t.OK("Ctx.Destroy (noise)", nc.Destroy())
	t.Must("BarrierAll", shmem.BarrierAll())
}
