package main

import (
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// Strided rows (shared with bench/oshmem/oshbench.c): iput_bw and iget_bw
// move size bytes of 8-byte elements at stride 2 on both sides (IPut/IGet
// with dstStride = srcStride = 2, as shmem_long_iput/iget with tst = sst =
// 2), PE 0 to or from PE 1, sizes 4 KiB to min(1 MiB, maxsize/2). Timed
// per window of stridedWindow calls (iput_bw: then one Quiet), like put_bw.
const (
	stridedWindow  = 16
	stridedMaxSize = 1 << 20
	stridedStride  = 2
)

// stridedBW runs iput_bw (put) or iget_bw over every size, on one
// symmetric array and one local slice sized for the largest.
func (h *host) stridedBW(put bool) error {
	hi := min(stridedMaxSize, h.o.maxSize/2)
	list := sizes(max(4096, h.o.minSize), hi)
	if len(list) == 0 {
		return nil
	}
	span := stridedStride * hi / 8
	a, err := shmem.Alloc[int64](span)
	if err != nil {
		return err
	}
	local := make([]int64, span)
	for i := range local {
		local[i] = int64(h.me + 1)
	}
	for _, size := range list {
		if err := h.stridedRow(put, a, local, size); err != nil {
			_ = a.Free()
			return fmt.Errorf("size %d: %w", size, err)
		}
	}
	return a.Free()
}

func (h *host) stridedRow(put bool, a shmem.Array[int64], local []int64, size int) error {
	n := size / 8
	pe := h.peer
	window := func() error {
		for k := 0; k < stridedWindow; k++ {
			var err error
			if put {
				err = shmem.IPut(a, 0, stridedStride, local, stridedStride, n, pe)
			} else {
				err = shmem.IGet(local, stridedStride, a, 0, stridedStride, n, pe)
			}
			if err != nil {
				return err
			}
		}
		if put {
			return shmem.Quiet()
		}
		return nil
	}
	nwin, allocs, err := h.timeWindows(window, stridedWindow)
	if err != nil {
		return err
	}
	// PE 0's local slice holds 1s: the target checks the last element.
	if put && h.me == min(1, h.npes-1) && a.Local()[stridedStride*(n-1)] != 1 {
		return fmt.Errorf("iput_bw %d: data did not arrive at PE %d", size, h.me)
	}
	if h.me != 0 {
		return nil
	}
	name := "iget_bw"
	if put {
		name = "iput_bw"
	}
	s := Summarize(h.samples[:nwin])
	bw := 0.0
	if s.Median > 0 {
		bw = float64(size) * stridedWindow / s.Median
	}
	h.emit(name, size, nwin, s, bw, fmt.Sprintf("per-window W=%d, stride %d, 8 B elements (us per window)", stridedWindow, stridedStride), allocs)
	return nil
}
