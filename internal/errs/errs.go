// Package errs holds goshmem's sentinel errors so that every layer (the
// public shmem package, collectives, quiet, transports) returns the same
// values; shmem re-exports them. Match with errors.Is.
package errs

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// The sentinels. Messages are package-prefixed; wrap them with the PE and
// the argument at each boundary (see New).
var (
	ErrNotInitialized  = errors.New("goshmem: not initialized")
	ErrPEOutOfRange    = errors.New("goshmem: PE out of range")
	ErrOutOfBounds     = errors.New("goshmem: index out of bounds")
	ErrHeapExhausted   = errors.New("goshmem: symmetric heap exhausted")
	ErrNotSymmetric    = errors.New("goshmem: collective arguments differ across PEs")
	ErrInvalidArgument = errors.New("goshmem: invalid argument")
	ErrNotSupported    = errors.New("goshmem: not supported")
	ErrTimeout         = errors.New("goshmem: timed out")
)

// New returns sentinel wrapped with "PE <pe>: <op>: <detail>"; the result
// matches sentinel under errors.Is. pe < 0 leaves the PE out.
func New(sentinel error, pe int, op string, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if pe >= 0 {
		return errors.Wrapf(sentinel, "PE %d: %s: %s", pe, op, msg)
	}
	return errors.Wrapf(sentinel, "%s: %s", op, msg)
}

// Hint is New plus a user-facing hint (errors.WithHint).
func Hint(sentinel error, hint string, pe int, op string, format string, args ...any) error {
	return errors.WithHint(New(sentinel, pe, op, format, args...), hint)
}

// Mark makes err match sentinel under errors.Is, both the standard
// library's and cockroachdb's (cockroachdb's errors.Mark alone is seen only
// by the latter). The message, chain and hints of err are kept.
func Mark(err, sentinel error) error {
	return &marked{err: errors.Mark(err, sentinel), sentinel: sentinel}
}

type marked struct {
	err      error
	sentinel error
}

func (e *marked) Error() string { return e.err.Error() }

// Unwrap keeps every error in err's chain reachable (and its hints).
func (e *marked) Unwrap() error { return e.err }

// Is is consulted by both errors.Is implementations.
func (e *marked) Is(target error) bool { return target == e.sentinel }

// Wrap wraps err with "PE <pe>: <op>: <detail>" (pe < 0 leaves the PE
// out), keeping err's chain, sentinels and hints; nil stays nil.
func Wrap(err error, pe int, op string, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf(format, args...)
	if pe >= 0 {
		return errors.Wrapf(err, "PE %d: %s: %s", pe, op, msg)
	}
	return errors.Wrapf(err, "%s: %s", op, msg)
}

// sentinels lists the sentinels by their code (Code, Sentinel): a failure
// carried to other PEs in a bootstrap exchange keeps its sentinel.
var sentinels = []error{nil, ErrNotInitialized, ErrPEOutOfRange, ErrOutOfBounds, ErrHeapExhausted,
	ErrNotSymmetric, ErrInvalidArgument, ErrNotSupported, ErrTimeout}

// Code is the code of the first sentinel err matches (0: none).
func Code(err error) byte {
	for i, s := range sentinels[1:] {
		if errors.Is(err, s) {
			return byte(i + 1)
		}
	}
	return 0
}

// Sentinel is the sentinel of code (nil for 0 or an unknown code).
func Sentinel(code byte) error {
	if int(code) < len(sentinels) {
		return sentinels[code]
	}
	return nil
}
