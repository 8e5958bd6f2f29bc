package cuda

// #include "shim.h"
import "C"

import "unsafe"

// WrapStream is the Stream for a CUstream handle h of context c that
// another library made (cuBLAS, a framework); 0 is the NULL (legacy
// default) stream. The Stream borrows h: Destroy would destroy it, so the
// caller that wraps a handle must not call Destroy on it.
func (c *Context) WrapStream(h uintptr) Stream {
	return Stream{ctx: c, h: *(*C.CUstream)(unsafe.Pointer(&h))}
}

// Handle is the stream's CUstream handle (for another library).
func (s Stream) Handle() uintptr { return uintptr(unsafe.Pointer(s.h)) }
