//go:build !nostream

package main

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/shmem"
)

// Register rows: PutOnStream bandwidth from PE 0 to its peer with a
// RegisterDevice'd source (GPU memory cuMemAlloc'd outside goshmem, as a
// framework's tensor is) against the same from an AllocDevice source
// (target >= 0.95x) and against a driver copy of the same bytes from the
// registered buffer: cuMemcpyDtoD into another cuMemAlloc when every PE
// shares this GPU, else cuMemcpyPeer into memory on the peer's GPU. Sizes
// -reg-minsize to -reg-maxsize. Timing as the on-stream rows: host clock
// around N enqueues on one stream (N copies) and one synchronize, after
// two warm-up calls; three trials per row, interleaved, the median
// reported and the slowest as p99. After every timed loop the destination
// is read back and compared with the source's pattern.

const regTrials = 3

// regIters: calls per timed loop, 256 MiB moved or 1000 calls, at least 20.
func regIters(size int) int { return max(20, min(1000, (256<<20)/size)) }

// regPattern is byte i of the registered source (k 1) or the AllocDevice
// source (k 2): they differ at every byte.
func regPattern(k, i int) byte { return byte(i*7 + k) }

func (d *dev) registerRows() error {
	top := d.o.regMax
	src, err := shmem.AllocDevice[byte](top)
	if err != nil {
		return err
	}
	defer src.Free()
	dst, err := shmem.AllocDevice[byte](top)
	if err != nil {
		return err
	}
	defer dst.Free()
	devs, err := shmem.Alloc[int64](1)
	if err != nil {
		return err
	}
	defer devs.Free()
	info, err := shmem.DeviceInfo()
	if err != nil {
		return err
	}
	devs.Local()[0] = int64(info.Device)
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if d.me == 0 {
		peerDev, err := shmem.G(devs, 0, d.peer)
		if err != nil {
			return err
		}
		if err := d.registerPE0(src, dst, int(peerDev)); err != nil {
			return err
		}
	}
	return shmem.BarrierAll()
}

// registerPE0 is PE 0's part: the buffers, then each size's trials.
func (d *dev) registerPE0(src, dst shmem.Array[byte], peerDev int) error {
	top := d.o.regMax
	ctx, err := primaryCtx()
	if err != nil {
		return err
	}
	defer ctx.Release()
	rp, err := ctx.MemAlloc(top)
	if err != nil {
		return err
	}
	defer ctx.MemFree(rp)
	host := make([]byte, top)
	for i := range host {
		host[i] = regPattern(1, i)
	}
	if err := ctx.MemcpyHtoD(rp, unsafe.Pointer(&host[0]), top); err != nil {
		return err
	}
	reg, err := shmem.RegisterDevice[byte](uintptr(rp), top)
	if err != nil {
		return err
	}
	defer reg.Free()
	for i := range host {
		host[i] = regPattern(2, i)
	}
	if err := shmem.Put(src, 0, host, d.me); err != nil {
		return err
	}
	// the copy's destination: this GPU, or the peer's GPU in this process
	copyName, cctx := "memcpy_dtod", ctx
	info, err := shmem.DeviceInfo()
	if err != nil {
		return err
	}
	if peerDev != info.Device {
		copyName = "memcpy_peer"
		if cctx, err = cuda.Device(peerDev).RetainPrimary(); err != nil {
			return err
		}
		defer cctx.Release()
	}
	cp, err := cctx.MemAlloc(top)
	if err != nil {
		return err
	}
	defer cctx.MemFree(cp)
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()

	put := func(a shmem.Array[byte], k, size, it int) (float64, error) {
		for i := 0; i < 2; i++ {
			if err := shmem.PutOnStream(s, dst, 0, a, 0, size, d.peer); err != nil {
				return 0, err
			}
		}
		if err := s.Synchronize(); err != nil {
			return 0, err
		}
		t0 := nanotime()
		for i := 0; i < it; i++ {
			if err := shmem.PutOnStream(s, dst, 0, a, 0, size, d.peer); err != nil {
				return 0, err
			}
		}
		if err := s.Synchronize(); err != nil {
			return 0, err
		}
		per := float64(nanotime()-t0) / float64(it)
		got := host[:size]
		if err := shmem.Get(got, dst, 0, d.peer); err != nil {
			return 0, err
		}
		return per, regCheck(fmt.Sprintf("PE %d's dst after PutOnStream", d.peer), got, k)
	}
	copyOnce := func(size int) error {
		if copyName == "memcpy_dtod" {
			return ctx.MemcpyDtoD(cp, rp, size)
		}
		return ctx.MemcpyPeer(cp, cctx, rp, ctx, size)
	}
	copyTime := func(size, it int) (float64, error) {
		for i := 0; i < 2; i++ {
			if err := copyOnce(size); err != nil {
				return 0, err
			}
		}
		if err := ctx.Synchronize(); err != nil {
			return 0, err
		}
		t0 := nanotime()
		for i := 0; i < it; i++ {
			if err := copyOnce(size); err != nil {
				return 0, err
			}
		}
		if err := ctx.Synchronize(); err != nil {
			return 0, err
		}
		if cctx != ctx {
			if err := cctx.Synchronize(); err != nil {
				return 0, err
			}
		}
		per := float64(nanotime()-t0) / float64(it)
		got := host[:size]
		if err := cctx.MemcpyDtoH(unsafe.Pointer(&got[0]), cp, size); err != nil {
			return 0, err
		}
		return per, regCheck(copyName+" destination", got, 1)
	}

	// each row name's sizes together (one table block each)
	var rows [3][]Row
	for _, size := range sizes(d.o.regMin, top) {
		it := regIters(size)
		var tr, th, tc []float64
		for trial := 0; trial < regTrials; trial++ {
			t, err := put(reg, 1, size, it)
			if err != nil {
				return fmt.Errorf("PutOnStream of %d bytes from the registered buffer: %w", size, err)
			}
			tr = append(tr, t)
			if t, err = put(src, 2, size, it); err != nil {
				return fmt.Errorf("PutOnStream of %d bytes from the AllocDevice array: %w", size, err)
			}
			th = append(th, t)
			if t, err = copyTime(size, it); err != nil {
				return fmt.Errorf("%s of %d bytes: %w", copyName, size, err)
			}
			tc = append(tc, t)
		}
		mr, mh, mc := medianOf(slices.Clone(tr)), medianOf(slices.Clone(th)), medianOf(slices.Clone(tc))
		where := "this GPU"
		if copyName == "memcpy_peer" {
			where = fmt.Sprintf("GPU %d", peerDev)
		}
		rows[0] = append(rows[0], Row{Name: "put_on_stream_reg", Size: int64(size), Iters: int64(it), MedianUS: mr / 1000, P99US: slices.Max(tr) / 1000,
			BWGBs: float64(size) / mr, Scope: "-", NPEs: d.npes,
			Timing: fmt.Sprintf("host clock around %d PutOnStream to PE %d from a RegisterDevice'd cuMemAlloc + one Stream.Synchronize, median of %d trials; %.3fx the bandwidth from an AllocDevice source (target >= 0.95x), %.3fx %s's",
				it, d.peer, regTrials, mh/mr, mc/mr, copyName)})
		rows[1] = append(rows[1], Row{Name: "put_on_stream_heap", Size: int64(size), Iters: int64(it), MedianUS: mh / 1000, P99US: slices.Max(th) / 1000,
			BWGBs: float64(size) / mh, Scope: "-", NPEs: d.npes,
			Timing: fmt.Sprintf("host clock around %d PutOnStream to PE %d from an AllocDevice array + one Stream.Synchronize, median of %d trials", it, d.peer, regTrials)})
		rows[2] = append(rows[2], Row{Name: copyName, Size: int64(size), Iters: int64(it), MedianUS: mc / 1000, P99US: slices.Max(tc) / 1000,
			BWGBs: float64(size) / mc, Scope: "-", NPEs: d.npes,
			Timing: fmt.Sprintf("host clock around %d driver copies of the registered buffer into a cuMemAlloc on %s + cuCtxSynchronize, median of %d trials", it, where, regTrials)})
	}
	for _, rs := range rows {
		for _, r := range rs {
			d.emit(r)
		}
	}
	return nil
}

// regCheck compares got with pattern k and names the first wrong byte.
func regCheck(what string, got []byte, k int) error {
	for i, b := range got {
		if want := regPattern(k, i); b != want {
			return fmt.Errorf("%s: byte %d of %d = %d, want %d", what, i, len(got), b, want)
		}
	}
	return nil
}
