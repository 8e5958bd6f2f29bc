package main

import (
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// The collective rows (host -coll), shared with bench/oshmem/oshbench.c
// -coll: every PE runs the operation and then BarrierAll, n times; PE 0's
// time of each op + barrier pair is a sample (the operation done
// everywhere). size is the bytes each PE contributes: the broadcast
// payload, the reduce or scan vector, the collect block, the alltoall
// block per destination PE (alltoalls: the payload per block, 8 B elements
// at source and dest stride 2).

// collSizes are the sizes of every collective row.
var collSizes = []int{8, 1 << 10, 64 << 10, 1 << 20}

// collStride is the alltoalls rows' source and dest stride.
const collStride = 2

// collItersFor is the iterations of a collective row: the full count up to
// 4 KiB, then fewer (bytes moved per size about constant), at least 100.
func collItersFor(iters, size int) int {
	if size <= 4096 {
		return iters
	}
	n := int(float64(iters) * 4096 / float64(size))
	return max(min(n, iters), min(100, iters))
}

// collWarmupFor is a tenth of the iterations, at least 5, at most -warmup.
func collWarmupFor(warm, n int) int { return min(warm, max(n/10, 5)) }

// collBufLen is the bytes of each source and dest buffer: npes blocks of
// the largest size at stride 2.
func collBufLen(maxSize, npes int) int { return collStride * maxSize * npes }

type collRow struct {
	name string
	run  func(size int) error
}

// collRows returns the rows over the buffers (allocated on every PE).
func (h *host) collRows(b8 shmem.Array[byte], s64, d64 shmem.Array[int64], sf, df shmem.Array[float64], d8 shmem.Array[byte]) []collRow {
	w := shmem.TeamWorld
	return []collRow{
		{"bcast", func(size int) error { return shmem.Broadcast(w, d8, b8, size, 0) }},
		{"reduce_sum_int64", func(size int) error { return shmem.Reduce(w, shmem.OpSum, d64, s64, size/8) }},
		{"reduce_sum_float64", func(size int) error { return shmem.Reduce(w, shmem.OpSum, df, sf, size/8) }},
		{"fcollect", func(size int) error { return shmem.FCollect(w, d8, b8, size) }},
		{"collect", func(size int) error { return shmem.Collect(w, d8, b8, size) }},
		{"alltoall", func(size int) error { return shmem.AllToAll(w, d8, b8, size) }},
		{"alltoalls", func(size int) error {
			return shmem.AllToAllStrided(w, d64, s64, collStride, collStride, size/8)
		}},
		{"inscan_sum_int64", func(size int) error { return shmem.SumInScan(w, d64, s64, size/8) }},
		{"exscan_sum_int64", func(size int) error { return shmem.SumExScan(w, d64, s64, size/8) }},
	}
}

// collectives runs the barrier row and every collective row (-coll).
func (h *host) collectives() error {
	maxSize := h.o.collMaxSize
	n := collBufLen(maxSize, h.npes)
	var err error
	alloc8 := func() (shmem.Array[byte], error) { return shmem.Alloc[byte](n) }
	b8, err := alloc8()
	if err != nil {
		return err
	}
	d8, err := alloc8()
	if err != nil {
		return err
	}
	s64, err := shmem.Alloc[int64](n / 8)
	if err != nil {
		return err
	}
	d64, err := shmem.Alloc[int64](n / 8)
	if err != nil {
		return err
	}
	sf, err := shmem.Alloc[float64](n / 8)
	if err != nil {
		return err
	}
	df, err := shmem.Alloc[float64](n / 8)
	if err != nil {
		return err
	}
	for i, s := 0, b8.Local(); i < len(s); i++ {
		s[i] = byte(h.me + 1)
	}
	for i, s := 0, s64.Local(); i < len(s); i++ {
		s[i] = int64(h.me + 1)
	}
	for i, s := 0, sf.Local(); i < len(s); i++ {
		s[i] = float64(h.me + 1)
	}
	if h.want("barrier") {
		if err := h.barrier(); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
	}
	for _, row := range h.collRows(b8, s64, d64, sf, df, d8) {
		if !h.want(row.name) {
			continue
		}
		for _, size := range collSizes {
			if size > maxSize {
				continue
			}
			if err := h.collRow(row.name, size, row.run); err != nil {
				return fmt.Errorf("%s %d: %w", row.name, size, err)
			}
		}
	}
	// The rows computed something: the int64 sum of PE+1 over every PE.
	s64.Local()[0] = int64(h.me + 1)
	if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, d64, s64, 1); err != nil {
		return err
	}
	if got, want := d64.Local()[0], int64(h.npes*(h.npes+1)/2); got != want {
		return fmt.Errorf("sum reduce check on PE %d: %d, want %d", h.me, got, want)
	}
	for _, a := range []interface{ Free() error }{df, sf, d64, s64, d8, b8} {
		if err := a.Free(); err != nil {
			return err
		}
	}
	return nil
}

// collRow times op + BarrierAll on every PE and reports PE 0's samples.
func (h *host) collRow(name string, size int, run func(size int) error) error {
	n := collItersFor(h.o.collIters, size)
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	op := func() error {
		if err := run(size); err != nil {
			return err
		}
		return shmem.BarrierAll()
	}
	s, timing, allocs, err := h.measure(n, collWarmupFor(h.o.warmup, n), op)
	if err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	h.emit(name, size, n, s, 0, timing+" op + barrier_all, PE0", allocs)
	return nil
}
