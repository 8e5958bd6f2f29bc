package main

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/shmem"
)

// Alloc rows: the cost of an AllocDevice that grows the GPU heap (CUDA VMM:
// a new chunk mapped on every PE, its descriptor exchanged, the peers'
// views mapped, the block zeroed, a closing barrier) against a cuMemAlloc
// of the same size on every PE at once in the same run (the issue's
// target: at most 2x at 2 and 4 PEs), an AllocDevice that fits in the
// mapped heap, for reference, and the mean AllocDevice of a series that
// keeps growing the heap (alloc_series: a growth maps at least
// GOSHMEM_DEVICE_HEAP_CHUNK, so the calls after it fit). Sizes from
// -alloc-minsize (2 MiB) to -alloc-maxsize. Each sample is PE 0's host
// clock around one call, after a barrier.
//
// Whether a call grew the heap is read from DeviceInfo's HeapBytes (the
// same on every PE) before and after it. The calls that do not grow are
// kept until the mapped heap is full (so holes left by earlier rows are
// filled), then each further call grows it; the alloc_fit samples free
// one grown block and allocate its size again. The heap never shrinks, so
// each size's blocks are freed before the next size, whose calls reuse
// them first.

// allocMinSize is the smallest alloc row size.
const allocMinSize = 2 << 20

// allocGrowBudget bounds what the growth samples of one row map on
// every PE (the PEs may share one GPU): reps+1 growths of size bytes.
const allocGrowBudget = 8 << 30

// allocRepsFor is the number of samples of each alloc row at size: reps,
// but no more than allocGrowBudget allows (at least 1).
func allocRepsFor(reps, size int) int {
	return max(min(reps, allocGrowBudget/size-1), 1)
}

// primaryCtx retains this PE's GPU's primary context, the one goshmem
// uses (goshmem-perf makes no context current before Init); Release it.
func primaryCtx() (*cuda.Context, error) {
	info, err := shmem.DeviceInfo()
	if err != nil {
		return nil, err
	}
	return cuda.Device(info.Device).RetainPrimary()
}

func heapMapped() (uint64, error) {
	g, err := shmem.DeviceInfo()
	return g.HeapBytes, err
}

func (d *dev) allocRows() error {
	ctx, err := primaryCtx()
	if err != nil {
		return err
	}
	defer ctx.Release()
	// warm-up: the first cuMemAlloc and AllocDevice of a process pay for
	// setup that later ones do not
	if p, err := ctx.MemAlloc(allocMinSize); err != nil {
		return err
	} else if err := ctx.MemFree(p); err != nil {
		return err
	}
	// every size's cuMemAlloc samples first, back to back: before the
	// first AllocDevice, so that no growth prepared in the background
	// runs beside them
	cu := map[int][]int64{}
	for size := d.o.allocMin; size <= d.o.allocMax; size *= 2 {
		for range allocRepsFor(d.o.allocReps, size) {
			t, err := d.cuAllocSample(ctx, size)
			if err != nil {
				return fmt.Errorf("cuMemAlloc of %d bytes: %w", size, err)
			}
			cu[size] = append(cu[size], t)
		}
	}
	if a, err := shmem.AllocDevice[byte](allocMinSize); err != nil {
		return err
	} else if err := a.Free(); err != nil {
		return err
	}
	// first, while the mapped heap is still small: the heap's first
	// growths come within a few blocks
	if err := d.prepRows(); err != nil {
		return err
	}
	for size := d.o.allocMin; size <= d.o.allocMax; size *= 2 {
		if err := d.allocSize(size, cu[size]); err != nil {
			return fmt.Errorf("%d bytes: %w", size, err)
		}
	}
	return nil
}

// allocSize takes the AllocDevice rows of one size and emits them with
// its cuMemAlloc samples cu.
func (d *dev) allocSize(size int, cu []int64) error {
	reps := allocRepsFor(d.o.allocReps, size)
	var grow, fit []int64
	var keep []shmem.Array[byte]
	defer func() {
		for _, a := range keep {
			_ = a.Free()
		}
	}()
	h, err := heapMapped()
	if err != nil {
		return err
	}
	// A growth maps at least GOSHMEM_DEVICE_HEAP_CHUNK, so the calls after
	// one fit until that is used: the series rows are the mean of each
	// period from one growth (excluded) to the next (included), from the
	// first growth on; reps+1 growths give reps periods. The heap's limit
	// ends a runaway loop (AllocDevice fails); limit only bounds a heap
	// that never grows.
	var series []int64
	var period, periodN, seriesCalls int64
	limit := 1 << 16
	for tries := 0; len(grow) <= reps; tries++ {
		if tries == limit {
			return fmt.Errorf("%d AllocDevice calls, %d of them grew the heap (mapped at first: %d bytes): want %d", tries, len(grow), h, reps+1)
		}
		a, t, grew, err := d.allocSample(size)
		if err != nil {
			return err
		}
		keep = append(keep, a)
		if len(grow) > 0 {
			period += t
			periodN++
		}
		if grew {
			if len(grow) > 0 {
				series = append(series, period/periodN)
				seriesCalls += periodN
			}
			period, periodN = 0, 0
			grow = append(grow, t)
		}
	}
	for len(fit) < reps {
		last := keep[len(keep)-1]
		keep = keep[:len(keep)-1]
		if err := last.Free(); err != nil {
			return err
		}
		a, t, grew, err := d.allocSample(size)
		if err != nil {
			return err
		}
		keep = append(keep, a)
		if grew {
			return fmt.Errorf("AllocDevice of %d bytes into the block just freed grew the heap", size)
		}
		fit = append(fit, t)
	}
	if err := d.allocCheck(keep[len(keep)-1], size); err != nil {
		return err
	}
	if d.me == 0 {
		c, g, f, sr := Summarize(cu), Summarize(grow), Summarize(fit), Summarize(series)
		ratio := func(s Summary) float64 { // s against cuMemAlloc
			if c.Median > 0 {
				return s.Median / c.Median
			}
			return 0
		}
		d.emit(Row{Name: "cumemalloc", Size: int64(size), Iters: int64(len(cu)), MedianUS: c.Median / 1000, P99US: c.P99 / 1000,
			Scope: "-", NPEs: d.npes, Timing: "host clock per cuMemAlloc, every PE at once after a barrier (no zeroing), before the job's first AllocDevice; the block written and read back, then freed"})
		d.emit(Row{Name: "alloc_grow", Size: int64(size), Iters: int64(len(grow)), MedianUS: g.Median / 1000, P99US: g.P99 / 1000,
			Scope: "-", NPEs: d.npes, Timing: fmt.Sprintf("host clock per AllocDevice that grew the heap (adopting the chunk prepared in the background, or mapping one on every PE; clearing what was used before; closing barrier), after %v and a barrier; %.2fx cuMemAlloc of this size (target <= 2x)", d.o.allocSettle, ratio(g))})
		d.emit(Row{Name: "alloc_fit", Size: int64(size), Iters: int64(len(fit)), MedianUS: f.Median / 1000, P99US: f.P99 / 1000,
			Scope: "-", NPEs: d.npes, Timing: "host clock per AllocDevice into a freed block of the mapped heap (zeroed, closing barrier), after a barrier"})
		d.emit(Row{Name: "alloc_series", Size: int64(size), Iters: int64(len(series)), MedianUS: sr.Median / 1000, P99US: sr.P99 / 1000,
			Scope: "-", NPEs: d.npes, Timing: fmt.Sprintf("median over growth periods of the mean host clock per AllocDevice of one period: the calls "+
				"after a growth that fit in what it mapped (GOSHMEM_DEVICE_HEAP_CHUNK), then the next growth; %d calls in all; %.2fx cuMemAlloc of this size", seriesCalls, ratio(sr))})
	}
	return shmem.BarrierAll()
}

// cuAllocSample times one cuMemAlloc of size on every PE at once and
// checks the memory takes a write.
func (d *dev) cuAllocSample(ctx *cuda.Context, size int) (int64, error) {
	if err := shmem.BarrierAll(); err != nil {
		return 0, err
	}
	t0 := nanotime()
	p, err := ctx.MemAlloc(size)
	t := nanotime() - t0
	if err != nil {
		return 0, err
	}
	w, r := uint64(0x9e3779b97f4a7c15)^uint64(size), uint64(0)
	err = ctx.MemcpyHtoD(p+cuda.DevicePtr(size-8), unsafe.Pointer(&w), 8)
	if err == nil {
		err = ctx.MemcpyDtoH(unsafe.Pointer(&r), p+cuda.DevicePtr(size-8), 8)
	}
	if err == nil && r != w {
		err = fmt.Errorf("cuMemAlloc'd block: last word read back %#x, wrote %#x", r, w)
	}
	if ferr := ctx.MemFree(p); err == nil {
		err = ferr
	}
	return t, err
}

// allocSample times one AllocDevice of size (collective) and reports
// whether it grew the heap (after -alloc-settle).
func (d *dev) allocSample(size int) (shmem.Array[byte], int64, bool, error) {
	time.Sleep(d.o.allocSettle)
	if err := shmem.BarrierAll(); err != nil {
		return shmem.Array[byte]{}, 0, false, err
	}
	before, err := heapMapped()
	if err != nil {
		return shmem.Array[byte]{}, 0, false, err
	}
	t0 := nanotime()
	a, err := shmem.AllocDevice[byte](size)
	t := nanotime() - t0
	if err != nil {
		return a, 0, false, fmt.Errorf("AllocDevice (the heap maps %d bytes): %w; the GPU heap grows only with CUDA VMM (GOSHMEM_INFO=1 says which heap is used)", before, err)
	}
	after, err := heapMapped()
	return a, t, after > before, err
}

// allocCheck checks the last block of a size: zeroed here, and its last
// 4 KiB written by the left PE (host Put into a new chunk of the peer's
// heap) arrive.
func (d *dev) allocCheck(a shmem.Array[byte], size int) error {
	const n = 4096
	right, left := (d.me+1)%d.npes, (d.me+d.npes-1)%d.npes
	got := make([]byte, n)
	if err := shmem.Get(got, a, size-n, d.me); err != nil {
		return err
	}
	for i, b := range got {
		if b != 0 {
			return fmt.Errorf("AllocDevice block of %d bytes: byte %d = %d, want 0 (zeroed)", size, size-n+i, b)
		}
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	mine := make([]byte, n)
	for i := range mine {
		mine[i] = byte(d.me*31 + i*7 + 1)
	}
	if err := shmem.Put(a, size-n, mine, right); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := shmem.Get(got, a, size-n, d.me); err != nil {
		return err
	}
	for i, b := range got {
		if want := byte(left*31 + i*7 + 1); b != want {
			return fmt.Errorf("AllocDevice block of %d bytes: byte %d = %d after a host Put from PE %d, want %d", size, size-n+i, b, left, want)
		}
	}
	return shmem.BarrierAll()
}
