package xerrors

import (
	stderrors "errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errBase = New("fabric: no provider")

// TestMessages: Error() of every constructor, and %v, %s and %q print it.
func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"New", New("x failed"), "x failed"},
		{"Newf", Newf("pe %d of %d", 3, 4), "pe 3 of 4"},
		{"Newf %w", Newf("open: %w", errBase), "open: fabric: no provider"},
		{"Wrap", Wrap(errBase, "Init"), "Init: fabric: no provider"},
		{"Wrap empty", Wrap(errBase, ""), "fabric: no provider"},
		{"Wrapf", Wrapf(errBase, "PE %d: %s", 1, "Init"), "PE 1: Init: fabric: no provider"},
		{"Wrapf of Wrapf", Wrapf(Wrapf(errBase, "b%d", 2), "a%d", 1), "a1: b2: fabric: no provider"},
		{"WithHint", WithHint(errBase, "set X"), "fabric: no provider"},
		{"WithHintf", WithHintf(errBase, "set %s", "X"), "fabric: no provider"},
		{"WithDetail", WithDetail(errBase, "d"), "fabric: no provider"},
		{"WithDetailf", WithDetailf(errBase, "d%d", 1), "fabric: no provider"},
		{"Mark", Mark(errBase, fs.ErrNotExist), "fabric: no provider"},
		{"Join", Join(New("a"), nil, New("b")), "a\nb"},
		{"CombineErrors", CombineErrors(New("first"), New("second")), "first"},
		{"AssertionFailedf", AssertionFailedf("QP %#x: %d", 0x12, 3), "QP 0x12: 3"},
		{"WithStackDepth", WithStackDepth(errBase, 0), "fabric: no provider"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
			assert.Equal(t, tc.want, fmt.Sprintf("%v", tc.err))
			assert.Equal(t, tc.want, fmt.Sprintf("%s", tc.err))
			assert.Equal(t, fmt.Sprintf("%q", tc.want), fmt.Sprintf("%q", tc.err))
			assert.Contains(t, fmt.Sprintf("%+v", tc.err), tc.want)
		})
	}
}

// TestNil: every wrapper of nil is nil; Join and CombineErrors of nils
// are nil; CombineErrors with one nil is the other.
func TestNil(t *testing.T) {
	for name, err := range map[string]error{
		"Wrap":           Wrap(nil, "x"),
		"Wrapf":          Wrapf(nil, "x%d", 1),
		"WithHint":       WithHint(nil, "x"),
		"WithHintf":      WithHintf(nil, "x%d", 1),
		"WithDetail":     WithDetail(nil, "x"),
		"WithDetailf":    WithDetailf(nil, "x%d", 1),
		"Mark":           Mark(nil, errBase),
		"WithStackDepth": WithStackDepth(nil, 0),
		"Join":           Join(nil, nil),
		"CombineErrors":  CombineErrors(nil, nil),
	} {
		assert.NoError(t, err, name)
	}
	assert.Same(t, errBase, CombineErrors(nil, errBase))
	assert.Same(t, errBase, CombineErrors(errBase, nil))
	assert.Empty(t, GetAllHints(nil))
	assert.Empty(t, FlattenDetails(nil))
}

// target is an error type for errors.As.
type target struct{ code int }

func (e *target) Error() string { return fmt.Sprintf("code %d", e.code) }

// TestIsAs: errors.Is and errors.As (this package's and the standard
// library's) reach the cause through every wrapper, alone, stacked, and
// inside Join and fmt's %w.
func TestIsAs(t *testing.T) {
	wraps := map[string]func(error) error{
		"Newf %w":        func(e error) error { return Newf("x: %w", e) },
		"Wrap":           func(e error) error { return Wrap(e, "x") },
		"Wrapf":          func(e error) error { return Wrapf(e, "x%d", 1) },
		"WithHint":       func(e error) error { return WithHint(e, "h") },
		"WithHintf":      func(e error) error { return WithHintf(e, "h%d", 1) },
		"WithDetail":     func(e error) error { return WithDetail(e, "d") },
		"WithDetailf":    func(e error) error { return WithDetailf(e, "d%d", 1) },
		"Mark":           func(e error) error { return Mark(e, fs.ErrClosed) },
		"Join first":     func(e error) error { return Join(e, New("other")) },
		"Join last":      func(e error) error { return Join(New("other"), e) },
		"CombineErrors":  func(e error) error { return CombineErrors(e, New("other")) },
		"WithStackDepth": func(e error) error { return WithStackDepth(e, 0) },
		"fmt %w":         func(e error) error { return fmt.Errorf("y: %w", e) },
	}
	for name, wrap := range wraps {
		for name2, wrap2 := range wraps {
			t.Run(name+"/"+name2, func(t *testing.T) {
				cause := &target{code: 7}
				err := wrap2(wrap(cause))
				assert.True(t, Is(err, cause))
				assert.True(t, stderrors.Is(err, cause))
				assert.False(t, Is(err, errBase))
				assert.False(t, Is(err, &target{code: 7}), "a distinct error with the same text does not match")
				var got *target
				require.True(t, As(err, &got))
				assert.Same(t, cause, got)
				got = nil
				require.True(t, stderrors.As(err, &got))
				assert.Same(t, cause, got)
			})
		}
	}
}

// TestMark: a marked error matches its mark and what its cause matches,
// under both Is; the mark is not the cause (As does not find it).
func TestMark(t *testing.T) {
	_, cause := os.Open("/nonexistent/xerrors-test")
	require.Error(t, cause)
	err := Wrap(Mark(cause, errBase), "Init")
	assert.True(t, Is(err, errBase))
	assert.True(t, stderrors.Is(err, errBase))
	assert.True(t, Is(err, fs.ErrNotExist), "the cause's own matches stay")
	assert.False(t, Is(err, fs.ErrClosed))
	assert.False(t, Is(Mark(cause, nil), errBase), "a nil mark matches nothing more")
	var pe *fs.PathError
	assert.True(t, As(err, &pe))
	assert.False(t, Is(Mark(New("x"), New("y")), New("y")), "marks match by identity")
}

// TestCombineErrors: the secondary error is kept for %+v but matched by
// neither Is nor the hint and detail readers.
func TestCombineErrors(t *testing.T) {
	other := WithDetail(WithHint(&target{code: 2}, "other hint"), "other detail")
	err := CombineErrors(WithHint(errBase, "first hint"), other)
	assert.Equal(t, errBase.Error(), err.Error())
	assert.True(t, Is(err, errBase))
	assert.False(t, Is(err, other))
	var tg *target
	assert.False(t, As(err, &tg))
	assert.Equal(t, []string{"first hint"}, GetAllHints(err))
	assert.Empty(t, FlattenDetails(err))
	assert.Contains(t, fmt.Sprintf("%+v", err), "secondary error: code 2")
	assert.Contains(t, fmt.Sprintf("%+v", err), "other hint")
}

// TestHints: hints innermost first, each once, from every wrapper and
// every joined error; FlattenHints separates them with "\n--\n".
func TestHints(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"none", Wrap(errBase, "x"), nil},
		{"one", WithHint(errBase, "a"), []string{"a"}},
		{"innermost first", WithHint(Wrap(WithHint(errBase, "inner"), "x"), "outer"), []string{"inner", "outer"}},
		{"each once", WithHint(WithHint(WithHint(errBase, "a"), "b"), "a"), []string{"a", "b"}},
		{"empty hint", WithHint(errBase, ""), nil},
		{"through Mark, detail, stack", WithStackDepth(WithDetail(Mark(WithHint(errBase, "a"), errBase), "d"), 0), []string{"a"}},
		{"through fmt %w", fmt.Errorf("x: %w", WithHintf(errBase, "a%d", 1)), []string{"a1"}},
		{"through Newf %w", Newf("x: %w", WithHint(errBase, "a")), []string{"a"}},
		{"Join", WithHint(Join(WithHint(New("x"), "a"), New("y"), WithHint(New("z"), "b")), "c"), []string{"a", "b", "c"}},
		{"Join twice", Join(WithHint(New("x"), "a"), Join(WithHint(New("y"), "a"), WithHint(New("z"), "b"))), []string{"a", "b"}},
		{"not through %v", Newf("x: %v", WithHint(errBase, "a")), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, GetAllHints(tc.err))
			assert.Equal(t, joinLines(tc.want), FlattenHints(tc.err))
		})
	}
}

// TestDetails: details innermost first, through every wrapper and Join
// (repeats kept); FlattenDetails separates them with "\n--\n".
func TestDetails(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"none", WithHint(errBase, "h"), nil},
		{"one", WithDetail(errBase, "a"), []string{"a"}},
		{"innermost first", WithDetailf(Wrap(WithDetail(errBase, "inner"), "x"), "outer %d", 1), []string{"inner", "outer 1"}},
		{"repeats kept", WithDetail(WithDetail(errBase, "a"), "a"), []string{"a", "a"}},
		{"through Mark and stack", WithStackDepth(Mark(WithDetail(errBase, "a"), errBase), 0), []string{"a"}},
		{"Join", Join(WithDetail(New("x"), "a"), WithDetail(New("y"), "b")), []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, GetAllDetails(tc.err))
			assert.Equal(t, joinLines(tc.want), FlattenDetails(tc.err))
		})
	}
}

// TestHinterInterfaces: hints and details are reachable through the
// ErrorHint and ErrorDetail methods other error packages read.
func TestHinterInterfaces(t *testing.T) {
	var h interface{ ErrorHint() string }
	require.True(t, As(Wrap(WithHint(errBase, "a"), "x"), &h))
	assert.Equal(t, "a", h.ErrorHint())
	var d interface{ ErrorDetail() string }
	require.True(t, As(Wrap(WithDetail(errBase, "b"), "x"), &d))
	assert.Equal(t, "b", d.ErrorDetail())
}

func joinLines(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "\n--\n"
		}
		out += x
	}
	return out
}

// TestAssertionFailedf: an assertion failure says so, keeps its %w cause,
// and its stack starts at the caller.
func TestAssertionFailedf(t *testing.T) {
	err := AssertionFailedf("layout of %d bytes: %w", 8, errBase)
	assert.True(t, IsAssertionFailure(err))
	assert.True(t, IsAssertionFailure(Wrap(err, "Init")))
	assert.False(t, IsAssertionFailure(errBase))
	assert.False(t, IsAssertionFailure(New("assertion failure")), "matched by identity, not text")
	assert.True(t, Is(err, errBase))
	assert.Contains(t, fmt.Sprintf("%+v", err), "xerrors_test.go")
}

// helper returns an error with the stack of its caller (depth 1).
func helper() error { return WithStackDepth(errBase, 1) }

// TestStack: %+v prints the stack from the frame depth asks for, under
// any wrapper; %v does not.
func TestStack(t *testing.T) {
	here := fmt.Sprintf("%+v", WithStackDepth(errBase, 0))
	assert.Contains(t, here, "xerrors.TestStack")
	assert.Contains(t, here, "xerrors_test.go:")
	up := fmt.Sprintf("%+v", WithHint(helper(), "h"))
	assert.Contains(t, up, "xerrors.TestStack", "depth 1 starts at the helper's caller")
	assert.NotContains(t, up, "xerrors.helper")
	assert.Contains(t, up, "hint: h")
	assert.NotContains(t, fmt.Sprintf("%v", helper()), "xerrors_test.go")
	assert.Contains(t, fmt.Sprintf("%+v", Wrap(WithDetail(errBase, "dd"), "w")), "detail: dd")
}
