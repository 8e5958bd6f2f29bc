// Package errs holds goshmem's sentinel errors so that every layer (the
// public shmem package, collectives, quiet, transports) returns the same
// values; shmem re-exports them. Match with errors.Is.
package errs

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"
)

// The sentinels. Messages are package-prefixed; wrap them with the PE and
// the argument at each boundary (New; Wrap for other errors).
var (
	ErrNotInitialized  = errors.New("goshmem: not initialized")
	ErrPEOutOfRange    = errors.New("goshmem: PE out of range")
	ErrOutOfBounds     = errors.New("goshmem: index out of bounds")
	ErrHeapExhausted   = errors.New("goshmem: symmetric heap exhausted")
	ErrNotSymmetric    = errors.New("goshmem: collective arguments differ across PEs")
	ErrInvalidArgument = errors.New("goshmem: invalid argument")
	ErrNotSupported    = errors.New("goshmem: not supported")
	ErrTimeout         = errors.New("goshmem: timed out")
	ErrFinalized       = errors.New("goshmem: finalized")
)

// New returns "goshmem: PE <pe>: <op>: <detail>: <sentinel>", matching
// sentinel under errors.Is (the standard library's and cockroachdb's).
// pe < 0 leaves the PE out. The sentinel's own "goshmem: " is not repeated.
// A nil sentinel makes an error that matches none (a failure no caller
// tells apart: a worker that panicked).
func New(sentinel error, pe int, op string, format string, args ...any) error {
	return errors.WithStackDepth(&peError{pe: pe, op: op, msg: fmt.Sprintf(format, args...), cause: sentinel}, 1)
}

// Wrap is New for an error that is not a sentinel: "goshmem: PE <pe>:
// <op>: <detail>: <err>", matching whatever err matches. nil stays nil.
// err's own leading "goshmem: " (and "PE <pe>: " of the same PE) is not
// repeated.
func Wrap(err error, pe int, op string, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return errors.WithStackDepth(&peError{pe: pe, op: op, msg: fmt.Sprintf(format, args...), cause: err}, 1)
}

// peError is the one shape of goshmem's messages: the PE, the operation and
// what was wrong, then the cause.
type peError struct {
	pe      int
	op, msg string
	cause   error
}

func (e *peError) Error() string {
	parts := make([]string, 0, 5)
	parts = append(parts, "goshmem")
	if e.pe >= 0 {
		parts = append(parts, fmt.Sprintf("PE %d", e.pe))
	}
	if e.op != "" {
		parts = append(parts, e.op)
	}
	if e.msg != "" {
		parts = append(parts, e.msg)
	}
	if e.cause == nil {
		return strings.Join(parts, ": ")
	}
	c := strings.TrimPrefix(e.cause.Error(), "goshmem: ")
	if e.pe >= 0 {
		c = strings.TrimPrefix(c, fmt.Sprintf("PE %d: ", e.pe))
	}
	return strings.Join(append(parts, c), ": ")
}

// Unwrap reaches the sentinel or the wrapped error (and its hints).
func (e *peError) Unwrap() error { return e.cause }

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
