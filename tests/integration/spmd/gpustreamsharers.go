package main

import (
	"fmt"

	"github.com/goshmem/goshmem/internal/gpulib"
	"github.com/goshmem/goshmem/shmem"
)

// gpuStreamSharers is -mode gpu-stream-sharers
// (tests/integration/gpu_stream_test.go, TestGPUStreamSharers): 3 PEs on
// the fake's 2 GPUs (PEs 0 and 2 share GPU 0, PE 1 has GPU 1 to itself),
// and a team of PEs 0 and 1 that runs a large FCollectOnStream: its grid
// (one block per 256 KiB) fits the SMs PE 1 has to itself but not PE 0's
// half of GPU 0. Every member must still run the collective the same way
// (fused, or between team syncs on the stream), else the two wait on
// different words forever.
func gpuStreamSharers() int {
	gpulib.Register(gpulib.ABI, []byte{0x50, 0xed, 0x55, 0xba, 0, 0, 0, 0})
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Printf("gpu-stream-sharers: Init failed: %v\n", err)
		return 1
	}
	me := shmem.MyPE()
	err := func() error {
		t, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 2)
		if err != nil {
			return err
		}
		const per = 10 << 20 / 8 // 10 MiB a member: 20 MiB delivered to each, 80 blocks
		src, err1 := shmem.AllocDevice[int64](per)
		dst, err2 := shmem.AllocDevice[int64](2 * per)
		if err := all(err1, err2); err != nil {
			return err
		}
		if me < 2 {
			if err := all(fill(src, per, func(i int) int64 { return int64(me<<32 + i) }),
				shmem.FCollectOnStream(nil, t, dst, src, per), shmem.Synchronize()); err != nil {
				return err
			}
			if err := expect("dst", dst, 2*per, func(i int) int64 { return int64((i/per)<<32 + i%per) }); err != nil {
				return err
			}
			if err := t.Destroy(); err != nil {
				return err
			}
		}
		return all(shmem.BarrierAll(), src.Free(), dst.Free())
	}()
	code := 0
	if err != nil {
		fmt.Printf("gpu-stream-sharers: PE %d: FAIL: %v\n", me, err)
		code = 1
	} else {
		fmt.Printf("gpu-stream-sharers: PE %d: FCollectOnStream: ok\n", me)
	}
	if err := shmem.Finalize(); err != nil {
		fmt.Printf("gpu-stream-sharers: PE %d: Finalize: FAIL: %v\n", me, err)
		code = 1
	}
	return code
}
