package main

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/shmem"
)

// stRegister is the gpu-stream step "RegisterDevice": a buffer that
// goshmem did not allocate (cuMemAlloc'd in this PE's context, as a
// framework's cudaMalloc is) is the local side of PutOnStream,
// GetOnStream and PutSignalOnStream to the next PE, over whichever
// transport the job uses; as a remote side it is refused; Free leaves the
// memory to its owner.
func stRegister(me, n int) error {
	c, p, free, err := foreignBuffer(stN*8 + 4096)
	if err != nil {
		return err
	}
	defer free()
	next, prev := (me+1)%n, (me+n-1)%n
	v := func(pe, i int) int64 { return int64(pe*100000 + i) }
	host := make([]int64, stN)
	for i := range host {
		host[i] = v(me, i)
	}
	if err := c.MemcpyHtoD(p, unsafe.Pointer(&host[0]), stN*8); err != nil {
		return err
	}
	reg, err1 := shmem.RegisterDevice[int64](uintptr(p), stN)
	dst, err2 := shmem.AllocDevice[int64](stN)
	sig, err3 := shmem.AllocDevice[uint64](1)
	if err := all(err1, err2, err3); err != nil {
		return err
	}
	// put from it: dst on next = this PE's values
	if err := all(shmem.PutOnStream(nil, dst, 0, reg, 0, stN, next), shmem.BarrierAllOnStream(nil), shmem.Synchronize()); err != nil {
		return err
	}
	if err := expect("dst after PutOnStream", dst, stN, func(i int) int64 { return v(prev, i) }); err != nil {
		return err
	}
	// get into it: next's dst holds this PE's values, so fetch prev's
	// (prev's dst holds prev-1's; at 2 PEs this PE's own) from a
	// rewritten dst instead: every PE's dst = its own values + 7
	if err := all(fill(dst, stN, func(i int) int64 { return v(me, i) + 7 }), shmem.BarrierAll(),
		shmem.GetOnStream(nil, reg, 1, dst, 0, stN-1, next), shmem.Synchronize()); err != nil {
		return err
	}
	if err := c.MemcpyDtoH(unsafe.Pointer(&host[0]), p, stN*8); err != nil {
		return err
	}
	for i := 1; i < stN; i++ {
		if w := v(next, i-1) + 7; host[i] != w {
			return fmt.Errorf("registered buffer after GetOnStream: [%d] = %d, want %d", i, host[i], w)
		}
	}
	// put with signal from it: dst on next = reg's contents
	if err := all(shmem.BarrierAll(), shmem.PutSignalOnStream(nil, dst, 0, reg, 0, stN, sig, 0, 9, shmem.SignalSet, next),
		shmem.SignalWaitUntilOnStream(nil, sig, 0, shmem.CmpEQ, 9), shmem.Synchronize()); err != nil {
		return err
	}
	if err := expect("dst after PutSignalOnStream", dst, stN, func(i int) int64 {
		if i == 0 {
			return v(prev, 0) // reg[0] was never overwritten on prev
		}
		return v(me, i-1) + 7 // prev's reg[i] = this PE's dst[i-1] (this PE is prev's next)
	}); err != nil {
		return err
	}
	var bad []error
	for call, err := range map[string]error{
		"PutOnStream":    shmem.PutOnStream(nil, reg, 0, dst, 0, 1, next),
		"GetOnStream":    shmem.GetOnStream(nil, dst, 0, reg, 0, 1, next),
		"ReduceOnStream": shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, dst, reg, 1),
		"Put":            shmem.Put(reg, 0, []int64{1}, next),
	} {
		if !errors.Is(err, shmem.ErrInvalidArgument) || !strings.Contains(fmt.Sprint(err), call) {
			bad = append(bad, fmt.Errorf("%s with a registered remote side: %v, want ErrInvalidArgument naming the call", call, err))
		}
	}
	return all(append(bad, shmem.Synchronize(), reg.Free(), shmem.BarrierAll(), dst.Free(), sig.Free())...)
}

// foreignBuffer is n bytes that goshmem did not allocate: cuMemAlloc'd in
// this PE's GPU context (as a framework's cudaMalloc is), with the context
// for copies; free releases both.
func foreignBuffer(n int) (*cuda.Context, cuda.DevicePtr, func(), error) {
	g, err := shmem.DeviceInfo()
	if err != nil {
		return nil, 0, nil, err
	}
	c, err := cuda.Device(g.Device).RetainPrimary()
	if err != nil {
		return nil, 0, nil, err
	}
	p, err := c.MemAlloc(n)
	if err != nil {
		_ = c.Release()
		return nil, 0, nil, err
	}
	return c, p, func() { _ = c.MemFree(p); _ = c.Release() }, nil
}
