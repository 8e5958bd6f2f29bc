//go:build !nostream

package main

import (
	"fmt"

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
