package cudatr

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
)

// DeviceError is the first failure a device call of this PE reported
// before it trapped (goshmemi_error_record_t, written by goshmemi_fail).
type DeviceError struct {
	Code          uint64
	Info          uint64
	PE            int
	Block, Thread uint32
	What          string
}

// The error codes of the device API (GOSHMEMI_ERR_* of defs.h, proxy.h and
// ibgda/backend.h; deverr_test.go checks them against the headers).
var deviceErrNames = map[uint64]string{
	1:  "GOSHMEMI_ERR_PE_UNREACHABLE",
	2:  "GOSHMEMI_ERR_PE_OUT_OF_RANGE",
	3:  "GOSHMEMI_ERR_NOT_SYMMETRIC",
	4:  "GOSHMEMI_ERR_BAD_TEAM",
	5:  "GOSHMEMI_ERR_NO_STATE",
	6:  "GOSHMEMI_ERR_BAD_STATE",
	7:  "GOSHMEMI_ERR_INVALID_ARG",
	16: "GOSHMEMI_ERR_REMOTE_UNAVAILABLE",
	17: "GOSHMEMI_ERR_PROXY_DEAD",
	18: "GOSHMEMI_ERR_PROXY_TIMEOUT",
	19: "GOSHMEMI_ERR_PROXY_REJECTED",
	32: "GOSHMEMI_ERR_IBGDA_CQE",
	33: "GOSHMEMI_ERR_IBGDA_TIMEOUT",
	34: "GOSHMEMI_ERR_IBGDA_ORDER",
}

// Timeout reports whether the device call gave up waiting (a proxy or
// IBGDA wait past GOSHMEM_TIMEOUT) rather than seeing bad input.
func (e *DeviceError) Timeout() bool { return e.Code == 18 || e.Code == 33 }

// Error says what failed, where, and the two words of its info
// (GOSHMEMI_ERROR_INFO(hi, lo): their meaning is the code's, see defs.h).
func (e *DeviceError) Error() string {
	name, ok := deviceErrNames[e.Code]
	if !ok {
		name = "unknown code"
	}
	hi, lo := int32(e.Info>>32), int32(uint32(e.Info))
	return fmt.Sprintf("device call failed on PE %d (block %d, thread %d): %s [%s (%d), info %d, %d]",
		e.PE, e.Block, e.Thread, e.What, name, e.Code, hi, lo)
}

// newErrorRecord allocates the host-mapped error record (zeroed) and puts
// its device address in the state image (State.ErrorHost).
func (t *Transport) newErrorRecord() error {
	p, err := t.Ctx.MemHostAlloc(errRecSize, cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
	if err != nil {
		return err
	}
	clear(unsafe.Slice((*byte)(p), errRecSize))
	d, err := t.Ctx.MemHostGetDevicePointer(p)
	if err != nil {
		_ = t.Ctx.MemFreeHost(p)
		return err
	}
	t.errRec = p
	t.img.ErrorHost = uint64(d)
	return nil
}

// DeviceError is the record a trapped device call of this PE left, or nil
// when none did. It reads host memory only, so it works after a fault made
// the context unusable.
func (t *Transport) DeviceError() *DeviceError {
	if t == nil || t.errRec == nil {
		return nil
	}
	b := unsafe.Slice((*byte)(t.errRec), errRecSize)
	if atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[errRecCode]))) == 0 ||
		atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[errRecDone]))) == 0 {
		return nil
	}
	what := b[errRecWhat:errRecSize]
	if i := bytes.IndexByte(what, 0); i >= 0 {
		what = what[:i]
	}
	return &DeviceError{
		Code:   atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[errRecCode]))),
		Info:   atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[errRecInfo]))),
		PE:     int(int32(atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[errRecPE]))))),
		Block:  atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[errRecBlock]))),
		Thread: atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[errRecThread]))),
		What:   string(what),
	}
}
