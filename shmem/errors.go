package shmem

import "github.com/goshmem/goshmem/internal/errs"

// Sentinel errors. Every error goshmem returns matches one of them under
// errors.Is, and its message names the PE, the argument and the valid range.
var (
	// ErrNotInitialized: a call before Init, or after Finalize (whose
	// errors match ErrFinalized too).
	ErrNotInitialized = errs.ErrNotInitialized
	// ErrPEOutOfRange: a target PE outside [0, NPEs()).
	ErrPEOutOfRange = errs.ErrPEOutOfRange
	// ErrOutOfBounds: an index or length outside an array.
	ErrOutOfBounds = errs.ErrOutOfBounds
	// ErrHeapExhausted: the symmetric heap has no room (GOSHMEM_SYMMETRIC_SIZE).
	ErrHeapExhausted = errs.ErrHeapExhausted
	// ErrNotSymmetric: PEs passed different arguments to a collective
	// (Alloc sizes, Free targets, team splits).
	ErrNotSymmetric = errs.ErrNotSymmetric
	// ErrInvalidArgument: any other bad argument (a freed array, an
	// operation the element type does not support, Init twice, ...).
	ErrInvalidArgument = errs.ErrInvalidArgument
	// ErrNotSupported: a feature this build or machine lacks (no GPU, ...).
	ErrNotSupported = errs.ErrNotSupported
	// ErrTimeout: a wait, quiet or barrier exceeded GOSHMEM_TIMEOUT.
	ErrTimeout = errs.ErrTimeout
	// ErrFinalized: a call after Finalize (it matches ErrNotInitialized
	// too), or one that Finalize, called by another goroutine, refused or
	// ended while it waited.
	ErrFinalized = errs.ErrFinalized
)

// Error is the error every goshmem call returns, possibly inside other
// wrappers: reach it with errors.As. PE is the PE whose call failed, or -1
// when no PE applies (a call before Init or after Finalize). Op is the
// call ("Put", "BarrierAll", "Init", ...). Err says what was wrong and
// wraps the cause: errors.Is matches the sentinels below through it.
// Its text is "goshmem: PE <PE>: <Op>: <Err>"; an error that a call
// passes on from a deeper step keeps that step's text.
//
//	var e *shmem.Error
//	if errors.As(err, &e) {
//		log.Printf("PE %d failed in %s", e.PE, e.Op)
//	}
type Error = errs.Error

// apiErr is err as a call returns it: reachable as an *Error of this PE
// and op with errors.As (errs.At). nil stays nil.
func (r *runtime) apiErr(err error, op string) error {
	if err == nil {
		return nil
	}
	return errs.At(err, r.me, op)
}

// markErr makes err match sentinel under both errors.Is implementations.
func markErr(err, sentinel error) error { return errs.Mark(err, sentinel) }
