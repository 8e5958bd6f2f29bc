//go:build !nostream

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// On-stream rows: BarrierAllOnStream and ReduceOnStream (float sum, world)
// against nvshmemx_barrier_all_on_stream / nvshmemx_float_sum_reduce_on_stream
// (bench/gpu/nvshmem_perf.cu), and BroadcastOnStream, FCollectOnStream,
// AllToAllOnStream (float, world), timed alike: host clock around N enqueues
// on one stream and one Stream.Synchronize, after warm-up calls and a host
// barrier; mean per call. The Timing text adds the enqueue loop's time per
// call: when it is close to the whole, the host's launch rate is the
// limit, not the GPU. Then host_reduce_gpu: the blocking Reduce on the same
// GPU arrays at -coll-maxsize, as a ratio of the on-stream reduce of that
// size (target <= 1.2x).
func (d *dev) streamRows() error {
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	n := d.o.streamIters
	for i := 0; i < 10; i++ {
		if err := shmem.BarrierAllOnStream(s); err != nil {
			return err
		}
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	t0 := nanotime()
	for i := 0; i < n; i++ {
		if err := shmem.BarrierAllOnStream(s); err != nil {
			return err
		}
	}
	enq := float64(nanotime()-t0) / float64(n)
	if err := s.Synchronize(); err != nil {
		return err
	}
	per := float64(nanotime()-t0) / float64(n)
	d.emit(Row{Name: "barrier_on_stream", Iters: int64(n), MedianUS: per / 1000, P99US: per / 1000, Scope: "-", NPEs: d.npes,
		Timing: fmt.Sprintf("host clock around %d BarrierAllOnStream + one Stream.Synchronize; enqueue %.2f us/call", n, enq/1000)})
	if err := shmem.BarrierAll(); err != nil {
		return err
	}

	maxN := d.o.collMax / 4
	src, err := shmem.AllocDevice[float32](maxN * d.npes)
	if err != nil {
		return err
	}
	defer src.Free()
	dst, err := shmem.AllocDevice[float32](maxN * d.npes)
	if err != nil {
		return err
	}
	defer dst.Free()
	onStreamTop, err := d.streamSweep(s, "sum_reduce_on_stream", "ReduceOnStream(float32, OpSum, world)", func(ne int) error {
		return shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpSum, dst, src, ne)
	})
	if err != nil {
		return err
	}
	// the movers: size is the bytes of one block (NVSHMEM's perftest
	// shapes: a broadcast's data; fcollect and alltoall move one such block
	// per member)
	if _, err := d.streamSweep(s, "broadcast_on_stream", "BroadcastOnStream(float32, world, root 0)", func(ne int) error {
		return shmem.BroadcastOnStream(s, shmem.TeamWorld, dst, src, ne, 0)
	}); err != nil {
		return err
	}
	if _, err := d.streamSweep(s, "fcollect_on_stream", "FCollectOnStream(float32, world)", func(ne int) error {
		return shmem.FCollectOnStream(s, shmem.TeamWorld, dst, src, ne)
	}); err != nil {
		return err
	}
	if _, err := d.streamSweep(s, "alltoall_on_stream", "AllToAllOnStream(float32, world)", func(ne int) error {
		return shmem.AllToAllOnStream(s, shmem.TeamWorld, dst, src, ne)
	}); err != nil {
		return err
	}

	// host Reduce on the same GPU arrays, the largest size
	size := maxN * 4
	it := collIters(d.o.collIters, size)
	if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, dst, src, maxN); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	t0 = nanotime()
	for i := 0; i < it; i++ {
		if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, dst, src, maxN); err != nil {
			return err
		}
	}
	per = float64(nanotime()-t0) / float64(it)
	ratio := 0.0
	if onStreamTop > 0 {
		ratio = per / onStreamTop
	}
	d.emit(Row{Name: "host_reduce_gpu", Size: int64(size), Iters: int64(it), MedianUS: per / 1000, P99US: per / 1000,
		BWGBs: float64(size) / per, Scope: "-", NPEs: d.npes,
		Timing: fmt.Sprintf("host clock per blocking Reduce(float32, OpSum, world) on GPU arrays; %.2fx the on-stream reduce of this size (target <= 1.2x)", ratio)})
	return shmem.BarrierAll()
}

// streamSweep times call(n elements of float32) on s from 8 B to
// -coll-maxsize: host clock around N enqueues and one Synchronize, after
// two warm-up calls and a barrier; one row per size, name. It returns
// the time per call at the largest size (ns).
func (d *dev) streamSweep(s *shmem.Stream, name, what string, call func(n int) error) (float64, error) {
	var top float64
	for size := 8; size <= d.o.collMax; size *= 2 {
		ne := size / 4
		it := collIters(d.o.collIters, size)
		for i := 0; i < 2; i++ {
			if err := call(ne); err != nil {
				return 0, err
			}
		}
		if err := s.Synchronize(); err != nil {
			return 0, err
		}
		if err := shmem.BarrierAll(); err != nil {
			return 0, err
		}
		t0 := nanotime()
		for i := 0; i < it; i++ {
			if err := call(ne); err != nil {
				return 0, err
			}
		}
		enq := float64(nanotime()-t0) / float64(it)
		if err := s.Synchronize(); err != nil {
			return 0, err
		}
		per := float64(nanotime()-t0) / float64(it)
		if size*2 > d.o.collMax {
			top = per
		}
		d.emit(Row{Name: name, Size: int64(size), Iters: int64(it), MedianUS: per / 1000, P99US: per / 1000,
			BWGBs: float64(size) / per, Scope: "-", NPEs: d.npes,
			Timing: fmt.Sprintf("host clock around %d %s + one Stream.Synchronize; enqueue %.2f us/call", it, what, enq/1000)})
		if err := shmem.BarrierAll(); err != nil {
			return 0, err
		}
	}
	return top, nil
}

// prepWindows and prepBurst: each prep row times prepWindows bursts of
// prepBurst stream calls queued back to back and one Synchronize (as a
// program queues its kernels): enough of them to span a preparation.
const prepWindows, prepBurst = 200, 16

// prepRows: what a growth prepared in the background costs the program's
// kernels meanwhile. stream_settled times prepWindows bursts of prepBurst
// ReduceOnStream of 16 bytes (float32 sum, world: a kernel each; an
// on-stream barrier of 2 PEs is stream memory operations, which no kernel
// holds back), each burst followed by Stream.Synchronize, after a 100 ms
// pause (no preparation runs); stream_in_prep the same right after an
// AllocDevice that grew the heap, which starts the next preparation (its
// driver calls and its memset run beside the reductions). A row's time is
// per call; the Timing text gives the largest burst and the bursts' time
// beyond the settled median, summed: how long the preparation held the
// program's kernels back. A heap that does not grow (legacy IPC) has no
// stream_in_prep row.
func (d *dev) prepRows() error {
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	const ne = 4 // 16 bytes of float32
	src, err := shmem.AllocDevice[float32](ne)
	if err != nil {
		return err
	}
	defer src.Free()
	dst, err := shmem.AllocDevice[float32](ne)
	if err != nil {
		return err
	}
	defer dst.Free()
	times := func() ([]int64, error) { // per burst
		t := make([]int64, prepWindows)
		for i := range t {
			t0 := nanotime()
			for range prepBurst {
				if err := shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpSum, dst, src, ne); err != nil {
					return nil, err
				}
			}
			if err := s.Synchronize(); err != nil {
				return nil, err
			}
			t[i] = nanotime() - t0
		}
		return t, shmem.BarrierAll()
	}
	if _, err := times(); err != nil { // warm-up
		return err
	}
	time.Sleep(100 * time.Millisecond)
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	settled, err := times()
	if err != nil {
		return err
	}
	// blocks of the smallest row size until one grows the heap
	var keep []shmem.Array[byte]
	defer func() {
		for _, a := range keep {
			_ = a.Free()
		}
	}()
	for grew := false; !grew; {
		if len(keep) == 1<<12 {
			if d.me == 0 {
				fmt.Fprintf(os.Stderr, "# no stream_in_prep row: %d AllocDevice calls of %d bytes did not grow the heap\n", len(keep), allocMinSize)
			}
			return shmem.BarrierAll()
		}
		before, err := heapMapped()
		if err != nil {
			return err
		}
		a, err := shmem.AllocDevice[byte](allocMinSize)
		if errors.Is(err, shmem.ErrHeapExhausted) {
			if d.me == 0 {
				fmt.Fprintln(os.Stderr, "# no stream_in_prep row: the GPU heap does not grow (GOSHMEM_INFO=1 says which heap is used)")
			}
			return shmem.BarrierAll()
		} else if err != nil {
			return err
		}
		keep = append(keep, a)
		after, err := heapMapped()
		if err != nil {
			return err
		}
		grew = after > before
	}
	in, err := times()
	if err != nil {
		return err
	}
	base := Summarize(append([]int64(nil), settled...)).Median
	for _, r := range []struct {
		name string
		t    []int64
		when string
	}{{"stream_settled", settled, "after a 100 ms pause (no preparation runs)"},
		{"stream_in_prep", in, "right after an AllocDevice that grew the heap and started the next preparation"}} {
		var over, top float64
		for _, v := range r.t {
			over += max(float64(v)-base, 0)
			top = max(top, float64(v))
		}
		sm := Summarize(r.t)
		d.emit(Row{Name: r.name, Size: 16, Iters: int64(len(r.t) * prepBurst), MedianUS: sm.Median / 1000 / prepBurst, P99US: sm.P99 / 1000 / prepBurst, Scope: "-", NPEs: d.npes,
			Timing: fmt.Sprintf("host clock per ReduceOnStream(float32, 16 B, OpSum, world), in %d bursts of %d + Stream.Synchronize, %s; largest burst %.1f us; beyond the settled median burst %.1f us in all",
				len(r.t), prepBurst, r.when, top/1000, over/1000)})
	}
	return nil
}
