package cuda

// #include "shim.h"
import "C"

import (
	"fmt"

	errors "github.com/goshmem/goshmem/internal/xerrors"
)

// Error is a failed driver call.
type Error struct {
	Code int    // the CUresult
	Name string // cuGetErrorName: "CUDA_ERROR_ILLEGAL_ADDRESS"
	Msg  string // cuGetErrorString: "an illegal memory access was encountered"
	Call string // the driver function: "cuCtxSynchronize"
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Call, e.Name, e.Code, e.Msg)
}

// Is makes errors.Is(err, ErrStickyFault), errors.Is(err, ErrNoDevice) and
// errors.Is(err, ErrNoDriver) hold for the matching codes, and matches
// another *Error with the same Code.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrStickyFault:
		return stickyCode(e.Code)
	case ErrNoDevice:
		return e.Code == CodeNoDevice
	case ErrNoDriver:
		return e.Code == CodeStubLibrary || e.Code == CodeSystemDriverMismatch
	}
	if t, ok := target.(*Error); ok {
		return t.Code == e.Code
	}
	return false
}

// stickyCode reports the codes the driver API reference documents as
// leaving "the process in an inconsistent state and any further CUDA work
// will return the same error": the context must be destroyed (for the
// primary context: the process restarted).
// Ref: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html
// (CUDA_ERROR_ILLEGAL_ADDRESS, _LAUNCH_TIMEOUT, _ASSERT, _HARDWARE_STACK_ERROR,
// _ILLEGAL_INSTRUCTION, _MISALIGNED_ADDRESS, _INVALID_ADDRESS_SPACE,
// _INVALID_PC, _LAUNCH_FAILED).
func stickyCode(code int) bool {
	switch code {
	case CodeIllegalAddress, CodeLaunchTimeout, CodeAssert, CodeHardwareStackError,
		CodeIllegalInstruction, CodeMisalignedAddress, CodeInvalidAddressSpace,
		CodeInvalidPC, CodeLaunchFailed:
		return true
	}
	return false
}

// IsStickyFault reports whether err carries a kernel fault that poisoned
// its context (see stickyCode): every later call on that context fails too.
func IsStickyFault(err error) bool {
	return errors.Is(err, ErrStickyFault)
}

// newError builds the *Error for code returned by call, asking the driver
// for the name and text when it is loaded.
func newError(code int, call string) *Error {
	e := &Error{Code: code, Call: call}
	// The wrappers answer GOSHMEMI_NOT_LOADED when the table is empty, and
	// the driver answers CUDA_ERROR_INVALID_VALUE for a code it does not know.
	{
		var s *C.char
		if C.goshmemi_cuGetErrorName(C.int(code), &s) == 0 && s != nil {
			e.Name = C.GoString(s)
		}
		s = nil
		if C.goshmemi_cuGetErrorString(C.int(code), &s) == 0 && s != nil {
			e.Msg = C.GoString(s)
		}
	}
	if e.Name == "" {
		if n, ok := codeNames[code]; ok {
			e.Name = n
		} else {
			e.Name = fmt.Sprintf("CUresult(%d)", code)
		}
	}
	if e.Msg == "" {
		e.Msg = "unrecognized error code"
	}
	return e
}
