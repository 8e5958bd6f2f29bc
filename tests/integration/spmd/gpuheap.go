package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	crdb "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/gpulib"
	"github.com/goshmem/goshmem/shmem"
)

// gpuHeapGrow is -mode gpu-heap (tests/integration/gpu_heap_test.go): the GPU
// heap that grows, on the fake CUDA driver with GOSHMEM_DEVICE_HEAP_SIZE=4M
// and GOSHMEM_DEVICE_HEAP_MAX=64M. With CUDA VMM (the fake's default):
// an AllocDevice past the initial size grows every PE's heap, a host put
// and a put on stream from PE 0 into PE 1's new chunk reach PE 1, Free and
// a larger allocation grow it again, and an allocation past the maximum is
// ErrHeapExhausted naming GOSHMEM_DEVICE_HEAP_MAX. With FAKECUDA_VMM=0 the
// heap is fixed, and the first allocation past it is ErrHeapExhausted
// naming GOSHMEM_DEVICE_HEAP_SIZE. Each step prints "gpu-heap: PE k:
// <step>: ok" or a FAIL line; the exit code is 1 after a failure.
func gpuHeapGrow() int {
	gpulib.Register(gpulib.ABI, []byte{0x50, 0xed, 0x55, 0xba, 0, 0, 0, 0})
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Printf("gpu-heap: Init failed: %v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	code := 0
	step := func(name string, err error) {
		if err != nil {
			fmt.Printf("gpu-heap: PE %d: %s: FAIL: %v\n", me, name, err)
			code = 1
			return
		}
		fmt.Printf("gpu-heap: PE %d: %s: ok\n", me, name)
	}
	if os.Getenv("FAKECUDA_VMM") == "0" {
		step("fixed heap", heapFixed())
	} else {
		step("grow", heapGrow(me, n, 1<<20))       // 8 MiB of int64: past the 4 MiB mapped
		step("grow again", heapGrow(me, n, 3<<20)) // 24 MiB, after the Free
		step("past the maximum", heapPastMax())
	}
	step("Finalize", shmem.Finalize())
	return code
}

// heapBytes is DeviceInfo's heap size.
func heapBytes() (uint64, error) {
	g, err := shmem.DeviceInfo()
	return g.HeapBytes, err
}

// heapGrow allocates count int64 on the GPU (more than the heap has
// mapped), checks that the heap grew to hold it, has PE 0 put into the
// last elements of PE 1's array (a host put, then a put on stream) and PE
// 1 read them, and frees it.
func heapGrow(me, n, count int) error {
	before, err := heapBytes()
	if err != nil {
		return err
	}
	if uint64(count*8) <= before {
		return fmt.Errorf("%d bytes already fit in the heap's %d mapped bytes", count*8, before)
	}
	a, err := shmem.AllocDevice[int64](count)
	if err != nil {
		return err
	}
	src, err := shmem.AllocDevice[int64](64)
	if err != nil {
		return err
	}
	after, err := heapBytes()
	if err != nil {
		return err
	}
	if after < uint64(count*8) || after <= before {
		return fmt.Errorf("heap is %d bytes after AllocDevice of %d bytes (was %d)", after, count*8, before)
	}
	vals := make([]int64, 64)
	for i := range vals {
		vals[i] = int64(1000*me + i + 1)
	}
	peer := 1 % n
	if err := shmem.Put(src, 0, vals, me); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if me == 0 {
		// the host put into the last 64 elements, the put on stream just
		// before them: both in the chunk the growth mapped
		if err := shmem.Put(a, count-64, vals, peer); err != nil {
			return fmt.Errorf("host put into PE %d's new chunk: %w", peer, err)
		}
		if err := shmem.PutOnStream(nil, a, count-128, src, 0, 64, peer); err != nil {
			return fmt.Errorf("put on stream into PE %d's new chunk: %w", peer, err)
		}
		if err := shmem.QuietOnStream(nil); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if me == peer {
		got := make([]int64, 128)
		if err := shmem.Get(got, a, count-128, me); err != nil {
			return err
		}
		for i, v := range got {
			if want := int64(i%64 + 1); v != want {
				return fmt.Errorf("element %d of the new chunk is %d, want %d (put by PE 0)", count-128+i, v, want)
			}
		}
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	return errors.Join(src.Free(), a.Free())
}

// heapPastMax allocates more than GOSHMEM_DEVICE_HEAP_MAX (64M) holds.
func heapPastMax() error {
	_, err := shmem.AllocDevice[int64](10 << 20)
	return wantExhausted(err, "GOSHMEM_DEVICE_HEAP_MAX")
}

// heapFixed allocates past the fixed heap (GOSHMEM_DEVICE_HEAP_SIZE=4M).
func heapFixed() error {
	if b, err := heapBytes(); err != nil || b != 4<<20 {
		return fmt.Errorf("heap is %d bytes (%v), want the fixed 4 MiB", b, err)
	}
	_, err := shmem.AllocDevice[int64](1 << 20)
	return wantExhausted(err, "GOSHMEM_DEVICE_HEAP_SIZE")
}

func wantExhausted(err error, setting string) error {
	if !errors.Is(err, shmem.ErrHeapExhausted) {
		return fmt.Errorf("AllocDevice: %v, want ErrHeapExhausted", err)
	}
	if msg := err.Error() + " " + strings.Join(crdb.GetAllHints(err), "; "); !strings.Contains(msg, setting) {
		return fmt.Errorf("AllocDevice: %q does not name %s", msg, setting)
	}
	return nil
}
