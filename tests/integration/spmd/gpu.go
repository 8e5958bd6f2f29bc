package main

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// gpuModes are the -mode values of the GPU lifecycle tests
// (tests/integration/gpu_fake_test.go, on the fake CUDA driver).
var gpuModes = map[string]func() int{
	"gpu-init":           gpuInit,
	"gpu-stream":         gpuStream,        // gpustream.go
	"gpu-stream-sharers": gpuStreamSharers, // gpustreamsharers.go
	"gpu-device":         gpuDevice,        // device.go
	"gpu-heap":           gpuHeapGrow,      // gpuheap.go
}

// gpuInit is -mode gpu-init: Init with the environment's GPU settings,
// then what a program sees of the GPU, one line per step and PE
// ("gpu-init: PE k: ..."; before Init succeeds, "gpu-init: rank r: ..."):
// Init's outcome, DeviceInfo, AllocDevice with a put to the next PE, an
// atomic on PE 0 and Synchronize (with a GPU heap), or AllocDevice's
// error (without), then Finalize. It exits 1 only when a step that should
// work given the others fails (the test decides which outcome is right).
func gpuInit() int {
	rank := worldRank() // SPMD_RANK_ENV (main) set this rank's own variables
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Printf("gpu-init: rank %d: Init failed (ErrNotSupported=%v): %v\n", rank, errors.Is(err, shmem.ErrNotSupported), err)
		return 0
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	fmt.Printf("gpu-init: PE %d: Init: ok\n", me)
	code := 0
	fail := func(format string, args ...any) {
		fmt.Printf("gpu-init: PE %d: FAIL: %s\n", me, fmt.Sprintf(format, args...))
		code = 1
	}
	g, derr := shmem.DeviceInfo()
	if derr == nil {
		fmt.Printf("gpu-init: PE %d: device %d %q PCI %s heap %d same-device %v\n", me, g.Device, g.Name, g.PCIBusID, g.HeapBytes, g.SameDevice)
		// the predefined teams' device handles are the header's fixed ones:
		// GOSHMEM_TEAM_WORLD 0, GOSHMEM_TEAM_SHARED = GOSHMEM_TEAM_NODE 1
		// (-1: a node not evenly strided in the world is not published)
		w, sh, nd := shmem.TeamWorld.DeviceID(), shmem.TeamShared.DeviceID(), shmem.TeamNode.DeviceID()
		if w != 0 || sh != nd || (sh != 1 && sh != -1) {
			fail("device team handles: world %d, shared %d, node %d; want 0, 1, 1", w, sh, nd)
		}
	} else {
		fmt.Printf("gpu-init: PE %d: no device (ErrNotSupported=%v): %v\n", me, errors.Is(derr, shmem.ErrNotSupported), derr)
	}
	a, err := shmem.AllocDevice[int64](16)
	switch {
	case err != nil && derr == nil:
		fail("AllocDevice with a device: %v", err)
	case err != nil:
		fmt.Printf("gpu-init: PE %d: AllocDevice (ErrNotSupported=%v): %v\n", me, errors.Is(err, shmem.ErrNotSupported), err)
	default:
		if derr != nil {
			fail("AllocDevice succeeded although DeviceInfo says %v", derr)
		}
		if gpuHeap(me, n, a, fail) {
			fmt.Printf("gpu-init: PE %d: GPU heap: ok\n", me)
		}
	}
	if err := shmem.Finalize(); err != nil {
		fail("Finalize: %v", err)
	} else {
		fmt.Printf("gpu-init: PE %d: Finalize: ok\n", me)
	}
	return code
}

// gpuHeap moves data through a GPU array (a put to the next PE, read back
// by its owner; a fetch-add by every PE on PE 0's element), then
// Synchronize and Free; false after the first failure.
func gpuHeap(me, n int, a shmem.Array[int64], fail func(string, ...any)) bool {
	next, prev := (me+1)%n, (me+n-1)%n
	steps := []struct {
		what string
		do   func() error
	}{
		{"Put to the next PE", func() error { return shmem.Put(a, 0, []int64{int64(1000 + me)}, next) }},
		{"AtomicAdd on PE 0", func() error { return shmem.AtomicAdd(a, 1, 1, 0) }},
		{"BarrierAll", shmem.BarrierAll},
		{"value put by the previous PE", func() error {
			got := make([]int64, 2)
			if err := shmem.Get(got, a, 0, me); err != nil {
				return err
			}
			if got[0] != int64(1000+prev) {
				return fmt.Errorf("element 0 is %d, want %d", got[0], 1000+prev)
			}
			if me == 0 && got[1] != int64(n) {
				return fmt.Errorf("element 1 is %d after %d PEs added 1", got[1], n)
			}
			return nil
		}},
		{"Synchronize", shmem.Synchronize},
		{"BarrierAll", shmem.BarrierAll},
		{"Free", a.Free},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			fail("%s: %v", s.what, err)
			return false
		}
	}
	return true
}
