// Package errs holds goshmem's sentinel errors so that every layer (the
// public shmem package, collectives, quiet, transports) returns the same
// values; shmem re-exports them. Match with errors.Is.
package errs

import (
	"fmt"
	"strings"

	errors "github.com/goshmem/goshmem/internal/xerrors"
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
// sentinel under errors.Is.
// pe < 0 leaves the PE out. The sentinel's own "goshmem: " is not repeated.
// A nil sentinel makes an error that matches none (a failure no caller
// tells apart: a worker that panicked). The result wraps an *Error.
func New(sentinel error, pe int, op string, format string, args ...any) error {
	return errors.WithStackDepth(build(pe, op, fmt.Sprintf(format, args...), sentinel), 1)
}

// Wrap is New for an error that is not a sentinel: "goshmem: PE <pe>:
// <op>: <detail>: <err>", matching whatever err matches. nil stays nil.
// err's own leading "goshmem: " (and "PE <pe>: " of the same PE) is not
// repeated.
func Wrap(err error, pe int, op string, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return errors.WithStackDepth(build(pe, op, fmt.Sprintf(format, args...), err), 1)
}

// build is the *Error of New and Wrap: the detail and the cause go in Err.
func build(pe int, op, msg string, cause error) *Error {
	if msg == "" && cause != nil {
		return &Error{PE: pe, Op: op, Err: cause}
	}
	return &Error{PE: pe, Op: op, Err: &detail{pe: pe, msg: msg, cause: cause}}
}

// Error is the one shape of goshmem's errors: the PE, the operation, and
// Err, which says what was wrong and wraps the cause (a sentinel or
// another error). Its text is "goshmem: PE <PE>: <Op>: <Err>". PE is -1
// when no PE applies (before Init, after Finalize); the text then leaves
// it out, as it leaves out an empty Op. Err's own leading "goshmem: " and
// "PE <PE>: " are not repeated.
type Error struct {
	// PE is the PE that returned the error (-1: none, e.g. before Init).
	PE int
	// Op is the operation: the API call ("Put", "BarrierAll", "Init") or
	// the internal step that failed.
	Op string
	// Err is what was wrong; it wraps the sentinel it matches.
	Err error
}

func (e *Error) Error() string {
	if v, ok := e.Err.(*verbatim); ok {
		return v.err.Error()
	}
	var b strings.Builder
	b.WriteString("goshmem")
	if e.PE >= 0 {
		fmt.Fprintf(&b, ": PE %d", e.PE)
	}
	if e.Op != "" {
		b.WriteString(": ")
		b.WriteString(e.Op)
	}
	if e.Err != nil {
		var c string
		if d, ok := e.Err.(*detail); ok {
			c = d.Error() // New's detail: not trimmed
		} else {
			c = trimCause(e.Err, e.PE)
		}
		if c != "" {
			b.WriteString(": ")
			b.WriteString(c)
		}
	}
	return b.String()
}

// Unwrap reaches Err, and through it the sentinel or the wrapped error
// (and its hints).
func (e *Error) Unwrap() error { return e.Err }

// trimCause is err's text without its leading "goshmem: " and, for pe >=
// 0, "PE <pe>: ".
func trimCause(err error, pe int) string {
	c := strings.TrimPrefix(err.Error(), "goshmem: ")
	if pe >= 0 {
		c = strings.TrimPrefix(c, fmt.Sprintf("PE %d: ", pe))
	}
	return c
}

// detail is an Error's Err from New and Wrap: what was wrong, then the
// cause (nil: none).
type detail struct {
	pe    int
	msg   string
	cause error
}

func (d *detail) Error() string {
	if d.cause == nil {
		return d.msg
	}
	c := trimCause(d.cause, d.pe)
	if d.msg == "" {
		return c
	}
	return d.msg + ": " + c
}

func (d *detail) Unwrap() error { return d.cause }

// At makes err reachable as an *Error of pe and op with errors.As, for
// the API's boundary. nil stays nil; err comes back as it is when the
// first *Error in its chain already has this PE and op and reaches err's
// sentinel (it is not inside errs.Mark's wrapper). Otherwise err is
// wrapped: an error that already holds an *Error keeps its text, any
// other reads "goshmem: PE <pe>: <op>: <err>".
func At(err error, pe int, op string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.PE == pe && e.Op == op && Code(e) == Code(err) {
			return err // e names the call and reaches err's sentinel
		}
		return &Error{PE: pe, Op: op, Err: &verbatim{err: err}}
	}
	return &Error{PE: pe, Op: op, Err: err}
}

// verbatim is the Err of an *Error that At put around an error that
// already names its PE and step: its text is err's, unchanged.
type verbatim struct{ err error }

func (v *verbatim) Error() string { return v.err.Error() }
func (v *verbatim) Unwrap() error { return v.err }

// Hint is New plus a user-facing hint (errors.WithHint).
func Hint(sentinel error, hint string, pe int, op string, format string, args ...any) error {
	return errors.WithHint(New(sentinel, pe, op, format, args...), hint)
}

// Mark makes err match sentinel under errors.Is. The message, chain and
// hints of err are kept.
func Mark(err, sentinel error) error {
	return &marked{err: err, sentinel: sentinel}
}

type marked struct {
	err      error
	sentinel error
}

func (e *marked) Error() string { return e.err.Error() }

// Unwrap keeps every error in err's chain reachable (and its hints).
func (e *marked) Unwrap() error { return e.err }

// Is makes errors.Is match the sentinel.
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
