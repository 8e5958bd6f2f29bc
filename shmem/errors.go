package shmem

import "github.com/goshmem/goshmem/internal/errs"

// Sentinel errors. Every error goshmem returns matches one of them under
// errors.Is (github.com/cockroachdb/errors or the standard errors package),
// and its message names the PE, the argument and the valid range.
var (
	// ErrNotInitialized: a call before Init or after Finalize.
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
)

// markErr makes err match sentinel under both errors.Is implementations.
func markErr(err, sentinel error) error { return errs.Mark(err, sentinel) }
