package cuda

// #include "shim.h"
import "C"

import (
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Stream is a CUDA stream of one context. The zero Stream stands for the
// NULL (legacy default) stream of whatever context the call uses.
type Stream struct {
	ctx *Context
	h   C.CUstream
}

// Event is a CUDA event of one context.
type Event struct {
	ctx *Context
	h   C.CUevent
}

// StreamCreate creates a stream in c (cuStreamCreate) with StreamDefault or
// StreamNonBlocking (no implicit sync with the NULL stream).
func (c *Context) StreamCreate(flags uint) (Stream, error) {
	h, err := c.live("cuStreamCreate")
	if err != nil {
		return Stream{}, err
	}
	var s C.CUstream
	if err := check(C.goshmemi_cuStreamCreate(h, &s, C.uint(flags)), "cuStreamCreate"); err != nil {
		return Stream{}, err
	}
	return Stream{ctx: c, h: s}, nil
}

// StreamCreateWithPriority is StreamCreate with a scheduling priority
// (cuStreamCreateWithPriority): lower numbers are higher priorities, and the
// driver clamps values outside cuCtxGetStreamPriorityRange's range, so
// StreamPriorityHighest asks for the highest there is.
func (c *Context) StreamCreateWithPriority(flags uint, priority int) (Stream, error) {
	h, err := c.live("cuStreamCreateWithPriority")
	if err != nil {
		return Stream{}, err
	}
	var s C.CUstream
	if err := check(C.goshmemi_cuStreamCreateWithPriority(h, &s, C.uint(flags), C.int(priority)), "cuStreamCreateWithPriority"); err != nil {
		return Stream{}, err
	}
	return Stream{ctx: c, h: s}, nil
}

// StreamPriorityHighest is a priority at or above the device's highest
// (the driver clamps it).
const StreamPriorityHighest = -1000

// Synchronize waits for the stream's work (cuStreamSynchronize); a kernel
// fault in it is reported here (IsStickyFault). The zero Stream cannot say
// which context to wait for: use Context.Synchronize.
func (s Stream) Synchronize() error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamSynchronize: the zero Stream has no context; use Context.Synchronize")
	}
	h, err := s.ctx.live("cuStreamSynchronize")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuStreamSynchronize(h, s.h), "cuStreamSynchronize")
}

// Capturing reports whether work queued on the stream is being captured
// into a CUDA graph (cuStreamIsCapturing: active, or a capture that was
// invalidated and not yet ended), instead of running.
func (s Stream) Capturing() (bool, error) {
	if s.ctx == nil {
		return false, errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamIsCapturing: the zero Stream has no context")
	}
	h, err := s.ctx.live("cuStreamIsCapturing")
	if err != nil {
		return false, err
	}
	var st C.int
	if err := check(C.goshmemi_cuStreamIsCapturing(h, s.h, &st), "cuStreamIsCapturing"); err != nil {
		return false, err
	}
	return st != 0, nil
}

// Destroy destroys the stream once its work is done (cuStreamDestroy_v2).
// Destroying the zero Stream is a no-op.
func (s Stream) Destroy() error {
	if s.ctx == nil {
		return nil
	}
	h, err := s.ctx.live("cuStreamDestroy")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuStreamDestroy(h, s.h), "cuStreamDestroy_v2")
}

// EventCreate creates an event in c (cuEventCreate) with Event* flags.
func (c *Context) EventCreate(flags uint) (Event, error) {
	h, err := c.live("cuEventCreate")
	if err != nil {
		return Event{}, err
	}
	var e C.CUevent
	if err := check(C.goshmemi_cuEventCreate(h, &e, C.uint(flags)), "cuEventCreate"); err != nil {
		return Event{}, err
	}
	return Event{ctx: c, h: e}, nil
}

func (e Event) live(call string) (C.CUcontext, error) {
	if e.ctx == nil {
		return nil, errors.Wrapf(errs.ErrInvalidArgument, "cuda: %s: zero Event (use Context.EventCreate)", call)
	}
	return e.ctx.live(call)
}

// Record records the event on stream (cuEventRecord): it completes when the
// work queued on stream before it has completed.
func (e Event) Record(stream Stream) error {
	h, err := e.live("cuEventRecord")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuEventRecord(h, e.h, stream.h), "cuEventRecord")
}

// Synchronize waits for the event (cuEventSynchronize).
func (e Event) Synchronize() error {
	h, err := e.live("cuEventSynchronize")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuEventSynchronize(h, e.h), "cuEventSynchronize")
}

// Destroy destroys the event (cuEventDestroy_v2).
func (e Event) Destroy() error {
	h, err := e.live("cuEventDestroy")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuEventDestroy(h, e.h), "cuEventDestroy_v2")
}

// EventElapsedTime returns the time between two recorded, completed events
// (cuEventElapsedTime; resolution about 0.5 µs). Neither may have been
// created with EventDisableTiming.
func EventElapsedTime(start, end Event) (time.Duration, error) {
	h, err := start.live("cuEventElapsedTime")
	if err != nil {
		return 0, err
	}
	if _, err := end.live("cuEventElapsedTime"); err != nil {
		return 0, err
	}
	var ms C.float
	if err := check(C.goshmemi_cuEventElapsedTime(h, &ms, start.h, end.h), "cuEventElapsedTime"); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// MemcpyHtoDAsync queues a copy of n bytes from host memory src to dst on
// the stream (cuMemcpyHtoDAsync_v2). src must be page-locked
// (MemHostAlloc) and stay unchanged until the copy has run.
func (s Stream) MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n int) error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuMemcpyHtoDAsync: the zero Stream has no context")
	}
	h, err := s.ctx.live("cuMemcpyHtoDAsync")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemcpyHtoDAsync", "n", n)
	}
	return check(C.goshmemi_cuMemcpyHtoDAsync(h, C.CUdeviceptr(dst), src, C.size_t(n), s.h), "cuMemcpyHtoDAsync_v2")
}

// MemsetD8Async queues setting n bytes at p to v on the stream
// (cuMemsetD8Async); Synchronize waits for it.
func (s Stream) MemsetD8Async(p DevicePtr, v byte, n int) error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuMemsetD8Async: the zero Stream has no context")
	}
	h, err := s.ctx.live("cuMemsetD8Async")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemsetD8Async", "n", n)
	}
	return check(C.goshmemi_cuMemsetD8Async(h, C.CUdeviceptr(p), C.uchar(v), C.size_t(n), s.h), "cuMemsetD8Async")
}

// MemcpyDtoDAsync queues a copy of n bytes between device addresses (local,
// peer-mapped or mapped host memory) on the stream (cuMemcpyDtoDAsync_v2).
func (s Stream) MemcpyDtoDAsync(dst, src DevicePtr, n int) error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuMemcpyDtoDAsync: the zero Stream has no context")
	}
	h, err := s.ctx.live("cuMemcpyDtoDAsync")
	if err != nil {
		return err
	}
	if n < 0 {
		return badSize("cuMemcpyDtoDAsync", "n", n)
	}
	return check(C.goshmemi_cuMemcpyDtoDAsync(h, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s.h), "cuMemcpyDtoDAsync_v2")
}

// WriteValue64 queues a write of v to the 8-byte word at addr (device or
// mapped host memory) on the stream: it happens after all the stream's
// earlier work has completed, behind a memory barrier, so a GPU or CPU
// thread that sees v also sees that work's results
// (cuStreamWriteValue64_v2, CU_STREAM_WRITE_VALUE_DEFAULT).
// Ref: CUDA Driver API, Stream Memory Operations.
func (s Stream) WriteValue64(addr DevicePtr, v uint64) error {
	return s.WriteValue64Flags(addr, v, 0)
}

// MaxBatchWrites is the most writes one WriteValues64 call takes.
const MaxBatchWrites = C.GOSHMEMI_MAX_BATCH_WRITES

// WriteValues64 queues len(addr) WriteValue64Flags writes (addr[i] = v[i], in
// order, each behind the stream's earlier work) with one driver call,
// cuStreamBatchMemOp_v2: the driver queues one batch of memory operations
// instead of one submission per write. 1 <= len(addr) == len(v) <=
// MaxBatchWrites.
func (s Stream) WriteValues64(addr []DevicePtr, v []uint64, flags uint) error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamBatchMemOp: the zero Stream has no context")
	}
	if len(addr) != len(v) || len(addr) == 0 || len(addr) > MaxBatchWrites {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamBatchMemOp: %d addresses and %d values; want the same count in [1, %d]",
			len(addr), len(v), MaxBatchWrites)
	}
	h, err := s.ctx.live("cuStreamBatchMemOp")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuStreamWriteValues64(h, s.h, C.uint(len(addr)), (*C.CUdeviceptr)(unsafe.Pointer(&addr[0])),
		(*C.uint64_t)(unsafe.Pointer(&v[0])), C.uint(flags)), "cuStreamBatchMemOp_v2")
}

// MemOp is one stream memory operation of MemOps (the layout of shim.h's
// goshmemi_memop_t): a write of Value to the 8-byte word at Addr (Op
// MemOpWrite64, Flags 0 or WriteValueNoMemoryBarrier), or a wait until that
// word satisfies Flags' condition against Value (Op MemOpWait64, Flags one
// of WaitGEQ, WaitEQ, WaitAND, WaitNOR).
type MemOp struct {
	Op, Flags uint32
	Addr      DevicePtr
	Value     uint64
}

// Stream memory operations and wait conditions (Ref: cuda.h
// CUstreamBatchMemOpType, CUstreamWaitValue_flags).
const (
	MemOpWait64  = C.CU_STREAM_MEM_OP_WAIT_VALUE_64
	MemOpWrite64 = C.CU_STREAM_MEM_OP_WRITE_VALUE_64
	// WaitGEQ is a cyclic >=: (int64)(*addr - value) >= 0.
	WaitGEQ = C.CU_STREAM_WAIT_VALUE_GEQ
	WaitEQ  = C.CU_STREAM_WAIT_VALUE_EQ
	WaitAND = C.CU_STREAM_WAIT_VALUE_AND
	WaitNOR = C.CU_STREAM_WAIT_VALUE_NOR
)

// MemOps queues ops on the stream, in order, with one driver call
// (cuStreamBatchMemOp_v2): the GPU's front end performs each write after
// the stream's earlier work (behind a memory barrier unless its flags say
// otherwise), and holds the stream's later work until each wait's condition
// holds, without running a kernel. 1 <= len(ops) <= MaxBatchWrites.
// Ref: CUDA Driver API, Stream Memory Operations.
func (s Stream) MemOps(ops []MemOp) error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamBatchMemOp: the zero Stream has no context")
	}
	if len(ops) == 0 || len(ops) > MaxBatchWrites {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamBatchMemOp: %d operations; want [1, %d]", len(ops), MaxBatchWrites)
	}
	h, err := s.ctx.live("cuStreamBatchMemOp")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuStreamMemOps(h, s.h, C.uint(len(ops)), (*C.goshmemi_memop_t)(unsafe.Pointer(&ops[0]))),
		"cuStreamBatchMemOp_v2")
}

// WriteValueNoMemoryBarrier is CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: the
// write may be reordered with the stream's earlier writes (no fence before
// it).
const WriteValueNoMemoryBarrier = 0x1

// WriteValue64Flags is WriteValue64 with cuStreamWriteValue64's flags
// (0 or WriteValueNoMemoryBarrier).
func (s Stream) WriteValue64Flags(addr DevicePtr, v uint64, flags uint) error {
	if s.ctx == nil {
		return errors.Wrapf(errs.ErrInvalidArgument, "cuda: cuStreamWriteValue64: the zero Stream has no context")
	}
	h, err := s.ctx.live("cuStreamWriteValue64")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuStreamWriteValue64(h, s.h, C.CUdeviceptr(addr), C.uint64_t(v), C.uint(flags)), "cuStreamWriteValue64_v2")
}
