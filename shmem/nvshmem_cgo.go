package shmem

// NVSHMEM's buffer registration for C and C++ code linked into a goshmem
// program (cgo, or a library cgo links): include/goshmem/nvshmem_host.h
// declares these functions and every goshmem program defines them, here.
// This is the package's one file that says import "C".

/*
#include <stddef.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"unsafe"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
)

// The values of NVSHMEM's enum nvshmemx_status that these functions
// return (Ref: NVSHMEM 3.x non_abi/nvshmemx_error.h).
const (
	nvshmemxSuccess         = 0
	nvshmemxInvalidValue    = 1
	nvshmemxOutOfMemory     = 2
	nvshmemxNotSupported    = 3
	nvshmemxInternal        = 7
	nvshmemxRegisterOp      = "nvshmemx_buffer_register"
	nvshmemxUnregisterOp    = "nvshmemx_buffer_unregister"
	nvshmemxUnregisterAllOp = "nvshmemx_buffer_unregister_all"
)

// cRegistered holds the arrays that nvshmemx_buffer_register made, by
// address, for nvshmemx_buffer_unregister (C has no Array to Free).
// Arrays of an earlier Init are dropped when found: Finalize ended them.
var cRegistered struct {
	sync.Mutex
	m map[uintptr]Array[byte]
}

// nvshmemx_buffer_register is RegisterDevice[byte](addr, length): the
// buffer becomes the local side of this PE's GPU calls and of its kernels'
// puts and gets, on every transport. It returns 0, or an nvshmemx_status
// value after logging the reason (stderr, or WithLogger's logger).
//
//export nvshmemx_buffer_register
func nvshmemx_buffer_register(addr unsafe.Pointer, length C.size_t) C.int {
	p := uintptr(addr)
	r, err := rt(nvshmemxRegisterOp)
	if err != nil {
		return cFail(nvshmemxRegisterOp, err)
	}
	if length == 0 || uint64(length) > math.MaxInt64 {
		return cFail(nvshmemxRegisterOp, errs.New(errs.ErrInvalidArgument, r.me, nvshmemxRegisterOp,
			"length = %d bytes; must be in [1, %d]", uint64(length), int64(math.MaxInt64)))
	}
	a, err := registerDevice[byte](p, int(length), nvshmemxRegisterOp)
	if err != nil {
		return cFail(nvshmemxRegisterOp, err)
	}
	cRegistered.Lock()
	defer cRegistered.Unlock()
	cDropStale()
	if cRegistered.m == nil {
		cRegistered.m = map[uintptr]Array[byte]{}
	}
	cRegistered.m[p] = a
	return nvshmemxSuccess
}

// nvshmemx_buffer_unregister unregisters the buffer that
// nvshmemx_buffer_register registered at addr, leaving the memory to its
// owner. It returns 0, or an nvshmemx_status value after logging why (addr
// is not the start of such a buffer, no live Init).
//
//export nvshmemx_buffer_unregister
func nvshmemx_buffer_unregister(addr unsafe.Pointer) C.int {
	p := uintptr(addr)
	cRegistered.Lock()
	defer cRegistered.Unlock()
	cDropStale()
	a, ok := cRegistered.m[p]
	if !ok {
		r, err := rt(nvshmemxUnregisterOp)
		if err != nil {
			return cFail(nvshmemxUnregisterOp, err)
		}
		return cFail(nvshmemxUnregisterOp, errs.New(errs.ErrInvalidArgument, r.me, nvshmemxUnregisterOp,
			"%#x is not the address of a buffer that nvshmemx_buffer_register registered (%d are)", p, len(cRegistered.m)))
	}
	delete(cRegistered.m, p)
	if err := a.Free(); err != nil {
		return cFail(nvshmemxUnregisterOp, err)
	}
	return nvshmemxSuccess
}

// nvshmemx_buffer_unregister_all unregisters every buffer that
// nvshmemx_buffer_register registered (RegisterDevice's arrays stay),
// logging any that fails.
//
//export nvshmemx_buffer_unregister_all
func nvshmemx_buffer_unregister_all() {
	cRegistered.Lock()
	defer cRegistered.Unlock()
	cDropStale()
	for p, a := range cRegistered.m {
		delete(cRegistered.m, p)
		if err := a.Free(); err != nil {
			cFail(nvshmemxUnregisterAllOp, err)
		}
	}
}

// cDropStale forgets the arrays of an earlier Init (under cRegistered).
func cDropStale() {
	r := current.Load()
	for p, a := range cRegistered.m {
		if r == nil || a.b.gen != r.gen {
			delete(cRegistered.m, p)
		}
	}
}

// cFail logs err for C, which gets only the status, and returns the
// status that err's kind maps to.
func cFail(op string, err error) C.int {
	var lg *logx.Logger // stderr
	if r := current.Load(); r != nil {
		lg = r.c.Log
	}
	msg := err.Error()
	lg.Log(slog.LevelError, fmt.Sprintf("goshmem: error: %s\n", strings.TrimPrefix(msg, "goshmem: ")), msg, logx.PE(MyPE()), slog.String("op", op))
	switch {
	case errors.Is(err, ErrNotSupported):
		return nvshmemxNotSupported
	case errors.Is(err, ErrHeapExhausted):
		return nvshmemxOutOfMemory
	case errors.Is(err, ErrInvalidArgument):
		return nvshmemxInvalidValue
	}
	return nvshmemxInternal // not initialized, finalized, a driver failure
}
