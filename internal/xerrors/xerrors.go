// Package xerrors is goshmem's small errors package: the constructors and
// wrappers the library uses (New, Newf, Wrap, Wrapf, WithHint,
// WithDetail, Mark, Join, CombineErrors, AssertionFailedf,
// WithStackDepth) and the readers of what they attach (GetAllHints,
// FlattenHints, FlattenDetails).
//
// The names and the text of Error() follow github.com/cockroachdb/errors,
// which goshmem used before, without its dependencies: every wrapper works
// with the standard library's errors.Is and errors.As, which this package
// re-exports. A hint is advice for the user, a detail is more about what
// happened; neither changes Error(). The errors that hold them have the
// methods ErrorHint() string and ErrorDetail() string, which other error
// packages read. Format's %+v adds them, and any stack
// WithStackDepth kept, after the message.
//
// Import it with the name errors where the standard library's errors
// package is not needed as well.
package xerrors

import (
	stderrors "errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

// Is reports whether any error in err's tree matches target (the standard
// library's errors.Is).
func Is(err, target error) bool { return stderrors.Is(err, target) }

// As finds the first error in err's tree that matches target and sets
// target to it (the standard library's errors.As).
func As(err error, target any) bool { return stderrors.As(err, target) }

// Join returns an error that wraps the errors that are not nil; nil when
// all are. Its text is theirs, one a line (the standard library's
// errors.Join). GetAllHints and FlattenDetails look into each.
func Join(errs ...error) error { return stderrors.Join(errs...) }

// New returns an error whose text is msg.
func New(msg string) error { return &leaf{msg: msg} }

// Newf returns an error whose text is fmt.Sprintf(format, args...). A %w
// verb wraps its argument, as in fmt.Errorf.
func Newf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Wrap returns "msg: <err>", matching what err matches; an empty msg
// leaves err's text as it is. Wrap(nil, ...) is nil.
func Wrap(err error, msg string) error {
	if err == nil {
		return nil
	}
	return &wrapped{msg: msg, cause: err}
}

// Wrapf is Wrap with a message formatted by fmt.Sprintf.
func Wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &wrapped{msg: fmt.Sprintf(format, args...), cause: err}
}

// WithHint attaches hint, advice the user can act on, to err; err's text
// is unchanged. WithHint(nil, ...) is nil.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &withHint{hint: hint, cause: err}
}

// WithHintf is WithHint with a hint formatted by fmt.Sprintf.
func WithHintf(err error, format string, args ...any) error {
	return WithHint(err, fmt.Sprintf(format, args...))
}

// WithDetail attaches detail, more about what happened, to err; err's
// text is unchanged. WithDetail(nil, ...) is nil.
func WithDetail(err error, detail string) error {
	if err == nil {
		return nil
	}
	return &withDetail{detail: detail, cause: err}
}

// WithDetailf is WithDetail with a detail formatted by fmt.Sprintf.
func WithDetailf(err error, format string, args ...any) error {
	return WithDetail(err, fmt.Sprintf(format, args...))
}

// GetAllHints returns the hints in err's tree, innermost first, each
// once (the first time it is seen). It looks into every error that Join
// joined.
func GetAllHints(err error) []string {
	var hints []string
	seen := map[string]bool{}
	walk(err, func(e error) {
		if h, ok := e.(*withHint); ok && h.hint != "" && !seen[h.hint] {
			seen[h.hint] = true
			hints = append(hints, h.hint)
		}
	})
	return hints
}

// FlattenHints returns GetAllHints(err) separated by "\n--\n".
func FlattenHints(err error) string { return strings.Join(GetAllHints(err), "\n--\n") }

// GetAllDetails returns the details in err's tree, innermost first.
func GetAllDetails(err error) []string {
	var details []string
	walk(err, func(e error) {
		if d, ok := e.(*withDetail); ok && d.detail != "" {
			details = append(details, d.detail)
		}
	})
	return details
}

// FlattenDetails returns GetAllDetails(err) separated by "\n--\n".
func FlattenDetails(err error) string { return strings.Join(GetAllDetails(err), "\n--\n") }

// Mark returns err, unchanged in text, hints and chain, that also matches
// mark under errors.Is. Mark(nil, ...) is nil.
func Mark(err, mark error) error {
	if err == nil {
		return nil
	}
	return &marked{mark: mark, cause: err}
}

// CombineErrors returns err with other kept as a secondary error: the
// text, errors.Is and the hints are err's alone, %+v shows other too. A
// nil err gives other; a nil other gives err.
func CombineErrors(err, other error) error {
	if err == nil {
		return other
	}
	if other == nil {
		return err
	}
	return &secondary{cause: err, other: other}
}

// errAssertion is what AssertionFailedf's errors match: IsAssertionFailure
// tells them apart from the errors a user can cause.
var errAssertion = New("assertion failure")

// AssertionFailedf returns an error for a broken internal invariant (a
// bug, not bad input), with the text fmt.Sprintf(format, args...) and the
// caller's stack.
func AssertionFailedf(format string, args ...any) error {
	return WithStackDepth(Mark(fmt.Errorf(format, args...), errAssertion), 1)
}

// IsAssertionFailure reports whether err comes from AssertionFailedf.
func IsAssertionFailure(err error) bool { return stderrors.Is(err, errAssertion) }

// WithStackDepth keeps the stack of the caller depth frames above the
// caller of WithStackDepth (0: that caller itself); %+v prints it. err's
// text and chain are unchanged. WithStackDepth(nil, ...) is nil.
func WithStackDepth(err error, depth int) error {
	if err == nil {
		return nil
	}
	var pcs [32]uintptr
	n := runtime.Callers(2+depth, pcs[:])
	return &withStack{cause: err, pcs: pcs[:n]}
}

// walk calls f on every error in err's tree, innermost first: an error's
// causes before the error, the errors of a Join in order.
func walk(err error, f func(error)) {
	switch u := err.(type) {
	case nil:
		return
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	}
	f(err)
}

type leaf struct{ msg string }

func (e *leaf) Error() string { return e.msg }

type wrapped struct {
	msg   string
	cause error
}

func (e *wrapped) Error() string {
	if e.msg == "" {
		return e.cause.Error()
	}
	return e.msg + ": " + e.cause.Error()
}
func (e *wrapped) Unwrap() error                 { return e.cause }
func (e *wrapped) Format(s fmt.State, verb rune) { format(s, verb, e) }

type withHint struct {
	hint  string
	cause error
}

// ErrorHint returns the hint: the method other error packages (among
// them github.com/cockroachdb/errors' GetAllHints) read hints through.
func (e *withHint) ErrorHint() string { return e.hint }

func (e *withHint) Error() string                 { return e.cause.Error() }
func (e *withHint) Unwrap() error                 { return e.cause }
func (e *withHint) Format(s fmt.State, verb rune) { format(s, verb, e) }

type withDetail struct {
	detail string
	cause  error
}

// ErrorDetail returns the detail, as ErrorHint returns a hint.
func (e *withDetail) ErrorDetail() string { return e.detail }

func (e *withDetail) Error() string                 { return e.cause.Error() }
func (e *withDetail) Unwrap() error                 { return e.cause }
func (e *withDetail) Format(s fmt.State, verb rune) { format(s, verb, e) }

type marked struct {
	mark  error
	cause error
}

func (e *marked) Error() string                 { return e.cause.Error() }
func (e *marked) Unwrap() error                 { return e.cause }
func (e *marked) Format(s fmt.State, verb rune) { format(s, verb, e) }

// Is matches the mark itself; errors.Is goes on to the cause's chain
// through Unwrap.
func (e *marked) Is(target error) bool {
	if e.mark == nil || target == nil || !reflect.TypeOf(target).Comparable() ||
		reflect.TypeOf(e.mark) != reflect.TypeOf(target) {
		return false
	}
	return e.mark == target
}

type secondary struct {
	cause error
	other error
}

func (e *secondary) Error() string                 { return e.cause.Error() }
func (e *secondary) Unwrap() error                 { return e.cause }
func (e *secondary) Format(s fmt.State, verb rune) { format(s, verb, e) }

type withStack struct {
	cause error
	pcs   []uintptr
}

func (e *withStack) Error() string                 { return e.cause.Error() }
func (e *withStack) Unwrap() error                 { return e.cause }
func (e *withStack) Format(s fmt.State, verb rune) { format(s, verb, e) }

// format prints err for the fmt verbs: %s, %v and %q its text; %+v also
// its hints, details, secondary errors and stacks, innermost first.
func format(s fmt.State, verb rune, err error) {
	switch {
	case verb == 'v' && s.Flag('+'):
		io.WriteString(s, err.Error())
		walk(err, func(e error) {
			switch e := e.(type) {
			case *withHint:
				io.WriteString(s, "\nhint: "+e.hint)
			case *withDetail:
				io.WriteString(s, "\ndetail: "+e.detail)
			case *secondary:
				fmt.Fprintf(s, "\nsecondary error: %+v", e.other)
			case *withStack:
				io.WriteString(s, "\nstack:")
				frames := runtime.CallersFrames(e.pcs)
				for {
					f, more := frames.Next()
					io.WriteString(s, "\n  "+f.Function+"\n\t"+f.File+":"+strconv.Itoa(f.Line))
					if !more {
						break
					}
				}
			}
		})
	case verb == 'q':
		io.WriteString(s, strconv.Quote(err.Error()))
	default:
		io.WriteString(s, err.Error())
	}
}
