package errs

import (
	stderrors "errors"
	"fmt"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allSentinels = []error{
	ErrNotInitialized, ErrPEOutOfRange, ErrOutOfBounds, ErrHeapExhausted,
	ErrNotSymmetric, ErrInvalidArgument, ErrNotSupported, ErrTimeout,
}

// TestStdlibIs: the standard library's errors.Is (and the errors
// package's) finds the sentinel of every constructor, also through
// fmt.Errorf("%w"), errors.Join and the errors package's wrappers; and no
// other sentinel.
func TestStdlibIs(t *testing.T) {
	cause := errors.New("fabric: fi_read: connection refused")
	foreign := errors.New("symmetric: heap exhausted")
	ctors := map[string]func(sentinel error) error{
		"New":  func(s error) error { return New(s, 3, "Put", "offset %d", 8) },
		"Hint": func(s error) error { return Hint(s, "raise it", 3, "Put", "offset %d", 8) },
		"Mark": func(s error) error { return Mark(cause, s) },
		"Mark of Wrap": func(s error) error {
			return Mark(Wrap(cause, 3, "Init", "ofi"), s)
		},
		"Wrap of New": func(s error) error { return Wrap(New(s, 3, "Get", "x"), 3, "Init", "ofi") },
		"Mark of errors.Mark": func(s error) error {
			return Mark(errors.Mark(foreign, s), s)
		},
	}
	wraps := map[string]func(error) error{
		"bare":              func(e error) error { return e },
		"fmt %w":            func(e error) error { return fmt.Errorf("outer: %w", e) },
		"fmt %w twice":      func(e error) error { return fmt.Errorf("a: %w", fmt.Errorf("b: %w", e)) },
		"errors.Join first": func(e error) error { return stderrors.Join(e, cause) },
		"errors.Join last":  func(e error) error { return stderrors.Join(cause, e) },
		"errors.Wrap":       func(e error) error { return errors.Wrap(e, "goshmem: Init") },
		"errors.WithHint": func(e error) error {
			return errors.WithHint(e, "hint")
		},
		"Join inside %w": func(e error) error { return fmt.Errorf("x: %w", stderrors.Join(cause, e)) },
	}
	for cn, ctor := range ctors {
		for wn, wrap := range wraps {
			for _, s := range allSentinels {
				t.Run(cn+"/"+wn+"/"+s.Error(), func(t *testing.T) {
					err := wrap(ctor(s))
					require.True(t, stderrors.Is(err, s), "standard errors.Is: %v", err)
					require.True(t, errors.Is(err, s), "errors package Is: %v", err)
					for _, other := range allSentinels {
						if other != s {
							assert.False(t, stderrors.Is(err, other), "%v matches %v", err, other)
						}
					}
				})
			}
		}
	}
}

// TestXerrorsMark: the errors package's own Mark is seen by the standard
// library's errors.Is too.
func TestXerrorsMark(t *testing.T) {
	err := errors.Mark(errors.New("x"), ErrTimeout)
	assert.True(t, errors.Is(err, ErrTimeout))
	assert.True(t, stderrors.Is(err, ErrTimeout))
}

func TestMessages(t *testing.T) {
	cause := errors.New("cuda: cuMemcpy: CUDA_ERROR_ILLEGAL_ADDRESS (700)")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"New", New(ErrPEOutOfRange, 2, "Put", "pe %d not in [0, %d)", 7, 4),
			"goshmem: PE 2: Put: pe 7 not in [0, 4): PE out of range"},
		{"New without a PE", New(ErrInvalidArgument, -1, "Init", "GOSHMEM_BOOTSTRAP=%q", "x"),
			`goshmem: Init: GOSHMEM_BOOTSTRAP="x": invalid argument`},
		{"New without a detail", New(ErrNotInitialized, 0, "Barrier", ""),
			"goshmem: PE 0: Barrier: not initialized"},
		{"Wrap", Wrap(cause, 1, "Get", "from the GPU heap of PE %d", 0),
			"goshmem: PE 1: Get: from the GPU heap of PE 0: cuda: cuMemcpy: CUDA_ERROR_ILLEGAL_ADDRESS (700)"},
		{"Wrap of the same PE's error", Wrap(New(ErrTimeout, 1, "Get", "PE 0 did not answer"), 1, "Init", "ofi"),
			"goshmem: PE 1: Init: ofi: Get: PE 0 did not answer: timed out"},
		{"Wrap of another PE's error", Wrap(New(ErrTimeout, 0, "Get", "late"), 1, "Init", "ofi"),
			"goshmem: PE 1: Init: ofi: PE 0: Get: late: timed out"},
		{"New without a sentinel", New(nil, 4, "proxy", "worker %d panicked: %v", 1, "boom"),
			"goshmem: PE 4: proxy: worker 1 panicked: boom"},
		{"Mark keeps the message", Mark(cause, ErrNotSupported), cause.Error()},
		{"Hint keeps the message", Hint(ErrTimeout, "raise GOSHMEM_TIMEOUT", 0, "Quiet", "2 operations"),
			"goshmem: PE 0: Quiet: 2 operations: timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
		})
	}
	assert.NoError(t, Wrap(nil, 0, "Init", "x"), "Wrap(nil) is nil")
	for _, s := range allSentinels {
		assert.False(t, stderrors.Is(New(nil, 0, "proxy", "closed"), s), "a nil sentinel matches none")
	}
}

func TestHintsSurvive(t *testing.T) {
	inner := errors.WithHint(errors.New("fabric: no provider"), "set GOSHMEM_OFI_PROVIDER")
	err := Mark(Wrap(inner, 0, "Init", "ofi"), ErrNotSupported)
	err = Hint(ErrInvalidArgument, "outer hint", 0, "Init", "%v", err)
	assert.Equal(t, []string{"outer hint"}, errors.GetAllHints(err))
	err2 := errors.WithHint(Mark(Wrap(inner, 0, "Init", "ofi"), ErrNotSupported), "second")
	assert.Equal(t, []string{"set GOSHMEM_OFI_PROVIDER", "second"}, errors.GetAllHints(err2))
	assert.Contains(t, fmt.Sprintf("%+v", New(ErrTimeout, 0, "Quiet", "x")), "errs_test.go", "the stack points at the caller")
}

// Every sentinel survives a trip through its code (a failure another PE
// reports in a bootstrap exchange keeps its sentinel).
func TestCode(t *testing.T) {
	for _, s := range allSentinels {
		err := Wrap(New(s, 3, "Init", "x"), 3, "Init", "y")
		assert.Same(t, s, Sentinel(Code(err)), "%v", s)
	}
	assert.Zero(t, Code(New(nil, 0, "op", "no sentinel")))
	assert.Nil(t, Sentinel(0))
	assert.Nil(t, Sentinel(200))
}

// TestErrorAs: errors.As reaches the *Error of every constructor through
// the errors package's and the standard library's wrappers, with its PE
// and Op, while errors.Is still matches the sentinel and the hints still print.
func TestErrorAs(t *testing.T) {
	cause := errors.New("fabric: fi_write: connection refused")
	tests := []struct {
		name     string
		err      error
		pe       int
		op       string
		sentinel error
	}{
		{"New", New(ErrPEOutOfRange, 2, "Put", "pe %d", 7), 2, "Put", ErrPEOutOfRange},
		{"New without a PE", New(ErrNotInitialized, -1, "BarrierAll", ""), -1, "BarrierAll", ErrNotInitialized},
		{"Hint", Hint(ErrTimeout, "raise it", 1, "Quiet", "x"), 1, "Quiet", ErrTimeout},
		{"Wrap keeps the outer op", Wrap(New(ErrTimeout, 1, "wait", "x"), 1, "Init", "ofi"), 1, "Init", ErrTimeout},
		{"Mark of Wrap", Mark(Wrap(cause, 3, "Get", "ofi"), ErrNotSupported), 3, "Get", ErrNotSupported},
		{"fmt %w", fmt.Errorf("outer: %w", New(ErrOutOfBounds, 0, "Get", "x")), 0, "Get", ErrOutOfBounds},
		{"errors.Join", stderrors.Join(cause, New(ErrTimeout, 5, "Finalize", "x")), 5, "Finalize", ErrTimeout},
		{"WithDetail", errors.WithDetail(New(ErrInvalidArgument, 0, "Free", "x"), "detail"), 0, "Free", ErrInvalidArgument},
		{"At of a foreign error", At(Mark(cause, ErrTimeout), 1, "Put"), 1, "Put", ErrTimeout},
		{"At of another op", At(New(ErrTimeout, 1, "wait", "barrier"), 1, "BarrierAll"), 1, "BarrierAll", ErrTimeout},
		{"At of the same op", At(New(ErrTimeout, 1, "Quiet", "x"), 1, "Quiet"), 1, "Quiet", ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e *Error
			require.True(t, stderrors.As(tc.err, &e), "standard errors.As: %v", tc.err)
			assert.Equal(t, tc.pe, e.PE)
			assert.Equal(t, tc.op, e.Op)
			var e2 *Error
			require.True(t, errors.As(tc.err, &e2), "errors package As: %v", tc.err)
			assert.Same(t, e, e2)
			assert.True(t, stderrors.Is(tc.err, tc.sentinel))
			assert.True(t, errors.Is(tc.err, tc.sentinel))
		})
	}
	assert.Equal(t, []string{"raise it"}, errors.GetAllHints(At(Hint(ErrTimeout, "raise it", 1, "wait", "x"), 1, "Quiet")))
	assert.NoError(t, At(nil, 0, "Put"))
}

// TestErrorText: an *Error reads "goshmem: PE <PE>: <Op>: <Err>"; At keeps
// the text of an error that already holds an *Error and prefixes any other.
func TestErrorText(t *testing.T) {
	cause := errors.New("fabric: fi_write: connection refused")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"literal", &Error{PE: 1, Op: "Put", Err: ErrOutOfBounds}, "goshmem: PE 1: Put: index out of bounds"},
		{"literal without PE", &Error{PE: -1, Op: "Init", Err: ErrNotInitialized}, "goshmem: Init: not initialized"},
		{"literal without Err", &Error{PE: 0, Op: "Put"}, "goshmem: PE 0: Put"},
		{"At of a foreign error", At(cause, 2, "Get"), "goshmem: PE 2: Get: fabric: fi_write: connection refused"},
		{"At keeps an error's text", At(New(ErrTimeout, 1, "wait", "barrier"), 1, "BarrierAll"),
			"goshmem: PE 1: wait: barrier: timed out"},
		{"detail is not trimmed", New(ErrTimeout, 1, "Quiet", "goshmem: x"), "goshmem: PE 1: Quiet: goshmem: x: timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
		})
	}
}
