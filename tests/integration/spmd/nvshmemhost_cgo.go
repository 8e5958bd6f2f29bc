package main

// The gpu-stream step "nvshmemx_buffer_register": C code of the program
// (this file's preamble, compiled against include/goshmem/nvshmem_host.h
// as C) registers and unregisters a cuMemAlloc'd buffer through the
// entry points that package shmem exports. The one file of spmd that
// says import "C".

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include -Wall -Werror
#include <stdint.h>
#include <goshmem/nvshmem_host.h>

static int reg(uintptr_t p, size_t n) { return nvshmemx_buffer_register((void *)p, n); }
static int unreg(uintptr_t p) { return nvshmemx_buffer_unregister((void *)p); }
static void unreg_all(void) { nvshmemx_buffer_unregister_all(); }
*/
import "C"

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// stRegisterC: a buffer registered from C is in this PE's table of
// registered buffers (RegisterDevice over it overlaps) until
// nvshmemx_buffer_unregister or _unregister_all; bad input returns
// NVSHMEMX_ERROR_INVALID_VALUE (1) and changes nothing.
func stRegisterC(me, n int) error {
	const half = 4096
	_, p, free, err := foreignBuffer(2 * half)
	if err != nil {
		return err
	}
	defer free()
	q := p + half
	heap, err := shmem.AllocDevice[byte](64)
	if err != nil {
		return err
	}
	defer heap.Free()
	var bad []error
	want := func(what string, got C.int, w int) {
		if int(got) != w {
			bad = append(bad, fmt.Errorf("%s returned %d, want %d", what, int(got), w))
		}
	}
	// registered (or not) as RegisterDevice over the range finds it
	registered := func(what string, addr uintptr, size int, w bool) {
		a, err := shmem.RegisterDevice[byte](addr, size)
		switch {
		case w && !errors.Is(err, shmem.ErrInvalidArgument):
			bad = append(bad, fmt.Errorf("%s: RegisterDevice over it: %v, want ErrInvalidArgument (it is registered)", what, err))
		case !w && err != nil:
			bad = append(bad, fmt.Errorf("%s: RegisterDevice over it: %v, want nil (it is not registered)", what, err))
		}
		if err == nil {
			if ferr := a.Free(); ferr != nil {
				bad = append(bad, ferr)
			}
		}
	}
	want("nvshmemx_buffer_register(p, 4096)", C.reg(C.uintptr_t(p), half), 0)
	registered("after nvshmemx_buffer_register", uintptr(p), half, true)
	registered("the buffer after it", uintptr(q), half, false)
	want("nvshmemx_buffer_register(p, 4096) again", C.reg(C.uintptr_t(p), half), 1)
	want("nvshmemx_buffer_register(NULL, 16)", C.reg(0, 16), 1)
	want("nvshmemx_buffer_register(q, 0)", C.reg(C.uintptr_t(q), 0), 1)
	want("nvshmemx_buffer_register(a symmetric GPU array, 64)", C.reg(C.uintptr_t(heap.DevicePtr()), 64), 1)
	want("nvshmemx_buffer_unregister(p + 8)", C.unreg(C.uintptr_t(p+8)), 1)
	want("nvshmemx_buffer_unregister(p)", C.unreg(C.uintptr_t(p)), 0)
	registered("after nvshmemx_buffer_unregister", uintptr(p), 2*half, false)
	want("nvshmemx_buffer_unregister(p) again", C.unreg(C.uintptr_t(p)), 1)
	want("nvshmemx_buffer_register(p, 4096)", C.reg(C.uintptr_t(p), half), 0)
	want("nvshmemx_buffer_register(q, 4096)", C.reg(C.uintptr_t(q), half), 0)
	C.unreg_all()
	registered("after nvshmemx_buffer_unregister_all", uintptr(p), 2*half, false)
	if len(bad) > 0 {
		return fmt.Errorf("PE %d: %w", me, errors.Join(bad...))
	}
	return shmem.BarrierAll()
}
