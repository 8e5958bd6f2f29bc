package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/shmem"
)

// gpuDevice is -mode gpu-device: the GPU each PE chooses. With
// SPMD_CURRENT_DEVICE=d the PE first makes device d's primary context
// current on its (locked) thread, as a framework does before it
// initializes communication; with SPMD_WITH_DEVICE=d it passes
// shmem.WithDevice(d). It prints "gpu-device: PE k: device D" (or Init's
// error), whether the thread's context is still current after Init, runs
// the GPU heap's traffic and finalizes.
func gpuDevice() int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rank := worldRank()
	opts := initOpts()
	if v := os.Getenv("SPMD_WITH_DEVICE"); v != "" {
		d, _ := strconv.Atoi(v)
		opts = append(opts, shmem.WithDevice(d))
	}
	var before *cuda.Context
	if v := os.Getenv("SPMD_CURRENT_DEVICE"); v != "" {
		d, _ := strconv.Atoi(v)
		// the driver goshmem will load (GOSHMEM_LIBCUDA: the fake one in
		// CI, else its default), so that both share one loaded library
		settings, err := env.Read(nil)
		if err == nil {
			err = cuda.LoadLibrary(settings.String("GOSHMEM_LIBCUDA"))
		}
		if err == nil {
			if before, err = cuda.Device(d).RetainPrimary(); err == nil {
				err = before.SetCurrent()
			}
		}
		if err != nil {
			fmt.Printf("gpu-device: rank %d: FAIL: making device %d current: %v\n", rank, d, err)
			return 1
		}
		defer func() { _ = before.Release() }()
	}
	if err := shmem.Init(opts...); err != nil {
		fmt.Printf("gpu-device: rank %d: Init failed (ErrInvalidArgument=%v): %v\n", rank, errors.Is(err, shmem.ErrInvalidArgument), err)
		return 0
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	code := 0
	fail := func(format string, args ...any) {
		fmt.Printf("gpu-device: PE %d: FAIL: %s\n", me, fmt.Sprintf(format, args...))
		code = 1
	}
	g, err := shmem.DeviceInfo()
	if err != nil {
		fail("DeviceInfo: %v", err)
	} else {
		fmt.Printf("gpu-device: PE %d: device %d\n", me, g.Device)
	}
	if before != nil {
		if ok, err := before.IsCurrent(); err != nil || !ok {
			fail("the context current before Init is not current after it (%v)", err)
		}
	}
	if a, err := shmem.AllocDevice[int64](16); err != nil {
		fail("AllocDevice: %v", err)
	} else if gpuHeap(me, n, a, fail) {
		fmt.Printf("gpu-device: PE %d: GPU heap: ok\n", me)
	}
	if err := shmem.Finalize(); err != nil {
		fail("Finalize: %v", err)
	}
	return code
}
