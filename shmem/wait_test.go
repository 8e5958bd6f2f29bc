package shmem_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// The typed table's wait set is a[1:7] of an array of 8: waitX holds its
// values, waitV the Vector forms' comparison values; a[0] and a[7] (outside
// the set) hold waitOut, which satisfies some comparisons: a call that read
// past its range would report them.
var (
	waitX   = []int{3, 0, 5, 3, 7, 1}
	waitV   = []int{3, 1, 4, 3, 7, 2}
	waitOut = 5
)

var waitSkips = []struct {
	name string
	skip []bool
}{
	{"nil", nil},
	{"none", []bool{false, false, false, false, false, false}},
	{"odd", []bool{false, true, false, true, false, true}},
	{"even", []bool{true, false, true, false, true, false}},
	{"only-2", []bool{true, true, false, true, true, true}},
	{"all", []bool{true, true, true, true, true, true}},
}

var allCmps = []shmem.Cmp{shmem.CmpEQ, shmem.CmpNE, shmem.CmpGT, shmem.CmpGE, shmem.CmpLT, shmem.CmpLE}

// holdsModel is the comparison, written out independently of the package.
func holdsModel(x int, c shmem.Cmp, v int) bool {
	switch c {
	case shmem.CmpEQ:
		return x == v
	case shmem.CmpNE:
		return x != v
	case shmem.CmpGT:
		return x > v
	case shmem.CmpGE:
		return x >= v
	case shmem.CmpLT:
		return x < v
	case shmem.CmpLE:
		return x <= v
	}
	panic(c)
}

// TestWaitSetTyped: every call's result for every element type, every
// comparison and every skip pattern, against a model; the waits are
// called only where their condition holds already (they return at once).
func TestWaitSetTyped(t *testing.T) {
	t.Run("int8", waitSetTyped[int8])
	t.Run("int16", waitSetTyped[int16])
	t.Run("int32", waitSetTyped[int32])
	t.Run("int64", waitSetTyped[int64])
	t.Run("uint8", waitSetTyped[uint8])
	t.Run("uint16", waitSetTyped[uint16])
	t.Run("uint32", waitSetTyped[uint32])
	t.Run("uint64", waitSetTyped[uint64])
	t.Run("float32", waitSetTyped[float32])
	t.Run("float64", waitSetTyped[float64])
}

func waitSetTyped[T shmem.Elem](t *testing.T) {
	start(t, shmem.WithTimeout(20*time.Second)) // a wrong wait fails instead of hanging
	const idx, n = 1, 6
	a := alloc[T](t, idx+n+1)
	loc := a.Local()
	loc[0], loc[idx+n] = T(waitOut), T(waitOut)
	for i, x := range waitX {
		loc[idx+i] = T(x)
	}
	vals := make([]T, n)
	for i, v := range waitV {
		vals[i] = T(v)
	}
	for _, c := range allCmps {
		for _, v := range []int{-1, 0, 3, 7} { // -1: the Vector forms
			for _, sk := range waitSkips {
				vector := v < 0
				what := fmt.Sprintf("a[1:7] %v %d, skip %s", c, v, sk.name)
				if vector {
					what = fmt.Sprintf("a[1:7] %v vals, skip %s", c, sk.name)
				}
				var sat []int // the model's satisfied elements of the set
				live := 0
				for i := range n {
					if sk.skip != nil && sk.skip[i] {
						continue
					}
					live++
					w := v
					if vector {
						w = waitV[i]
					}
					if holdsModel(waitX[i], c, w) {
						sat = append(sat, i)
					}
				}
				checkWaitSet(t, what, a, idx, n, sk.skip, c, T(max(v, 0)), vals, vector, sat, live)
			}
		}
	}
	assert.Equal(t, T(waitOut), loc[0], "nothing written")
}

// checkWaitSet calls every form on the set and checks it against sat (the
// satisfied elements) and live (the elements not skipped).
func checkWaitSet[T shmem.Elem](t *testing.T, what string, a shmem.Array[T], idx, n int, skip []bool, c shmem.Cmp, v T, vals []T, vector bool, sat []int, live int) {
	t.Helper()
	all := len(sat) == live
	// Test*
	var ok bool
	var err error
	if vector {
		ok, err = shmem.TestAllVector(a, idx, n, skip, c, vals)
	} else {
		ok, err = shmem.TestAll(a, idx, n, skip, c, v)
	}
	require.NoError(t, err, what)
	assert.Equal(t, all, ok, "TestAll %s", what)

	var some []int
	if vector {
		some, err = shmem.TestSomeVector(a, idx, n, skip, c, vals)
	} else {
		some, err = shmem.TestSome(a, idx, n, skip, c, v)
	}
	require.NoError(t, err, what)
	assert.Equal(t, len(sat), len(some), "TestSome %s: %v", what, some)
	if len(sat) > 0 {
		assert.Equal(t, sat, some, "TestSome %s", what)
	}

	// TestAny and WaitUntilAny, called anyCalls times (interleaved): each
	// result satisfied, and every satisfied element returned by some call.
	seenT, seenW := map[int]bool{}, map[int]bool{}
	for range anyCalls {
		var i int
		if vector {
			i, ok, err = shmem.TestAnyVector(a, idx, n, skip, c, vals)
		} else {
			i, ok, err = shmem.TestAny(a, idx, n, skip, c, v)
		}
		require.NoError(t, err, what)
		if len(sat) == 0 {
			require.False(t, ok, "TestAny %s", what)
			require.Equal(t, -1, i, "TestAny %s", what)
			continue
		}
		require.True(t, ok, "TestAny %s", what)
		require.Contains(t, sat, i, "TestAny %s", what)
		seenT[i] = true
		if vector {
			i, err = shmem.WaitUntilAnyVector(a, idx, n, skip, c, vals)
		} else {
			i, err = shmem.WaitUntilAny(a, idx, n, skip, c, v)
		}
		require.NoError(t, err, what)
		require.Contains(t, sat, i, "WaitUntilAny %s", what)
		seenW[i] = true
	}
	if len(sat) > 0 {
		assert.Len(t, seenT, len(sat), "TestAny %s: calls in a row returned %v of %v", what, seenT, sat)
		assert.Len(t, seenW, len(sat), "WaitUntilAny %s: calls in a row returned %v of %v", what, seenW, sat)
	}

	// The waits, where they return at once: with the condition met, or
	// with an empty wait set.
	if live == 0 {
		var i int
		if vector {
			i, err = shmem.WaitUntilAnyVector(a, idx, n, skip, c, vals)
		} else {
			i, err = shmem.WaitUntilAny(a, idx, n, skip, c, v)
		}
		require.NoError(t, err, what)
		assert.Equal(t, -1, i, "WaitUntilAny of an empty wait set %s", what)
	}
	if all {
		if vector {
			err = shmem.WaitUntilAllVector(a, idx, n, skip, c, vals)
		} else {
			err = shmem.WaitUntilAll(a, idx, n, skip, c, v)
		}
		require.NoError(t, err, "WaitUntilAll %s", what)
	}
	if len(sat) > 0 || live == 0 {
		if vector {
			some, err = shmem.WaitUntilSomeVector(a, idx, n, skip, c, vals)
		} else {
			some, err = shmem.WaitUntilSome(a, idx, n, skip, c, v)
		}
		require.NoError(t, err, what)
		assert.Equal(t, len(sat), len(some), "WaitUntilSome %s: %v", what, some)
		if len(sat) > 0 {
			assert.Equal(t, sat, some, "WaitUntilSome %s", what)
		}
	}
}

// anyCalls is how often the tests call WaitUntilAny and TestAny to see
// every satisfied element: each call starts at a random element, so one
// that is returned only from its own start position (1 of 6 in the typed
// table) is missed by all calls with probability (5/6)^200 < 1e-15.
const anyCalls = 200

// TestWaitAnyRotates: with two satisfied elements, a loop over
// WaitUntilAny (and TestAny) is handed both, not always the lowest; also
// when the loop interleaves calls on another wait set.
func TestWaitAnyRotates(t *testing.T) {
	start(t, shmem.WithTimeout(20*time.Second))
	a := alloc[uint64](t, 5)
	a.Local()[1], a.Local()[3] = 1, 1
	seen := map[int]int{}
	for range anyCalls {
		i, err := shmem.WaitUntilAny(a, 0, 5, nil, shmem.CmpEQ, 1)
		require.NoError(t, err)
		seen[i]++
	}
	assert.Equal(t, []int{1, 3}, sortedKeys(seen), "indices WaitUntilAny returned")
	seen = map[int]int{}
	for range anyCalls {
		i, ok, err := shmem.TestAny(a, 0, 5, nil, shmem.CmpEQ, 1)
		require.NoError(t, err)
		require.True(t, ok)
		seen[i]++
	}
	assert.Equal(t, []int{1, 3}, sortedKeys(seen), "indices TestAny returned")
	seen = map[int]int{}
	for range anyCalls {
		i, err := shmem.WaitUntilAnyVector(a, 1, 4, nil, shmem.CmpGE, []uint64{1, 0, 1, 2})
		require.NoError(t, err)
		seen[i]++
	}
	assert.Equal(t, []int{0, 1, 2}, sortedKeys(seen), "indices WaitUntilAnyVector returned (a[1:5] >= 1 0 1 2)")

	// Two loops interleaved, over a[0:2] and a[2:4] (all satisfied).
	b := alloc[int32](t, 4)
	seen, other := map[int]int{}, map[int]int{}
	for range anyCalls {
		i, ok, err := shmem.TestAny(b, 0, 2, nil, shmem.CmpEQ, 0)
		require.NoError(t, err)
		require.True(t, ok)
		seen[i]++
		i, err = shmem.WaitUntilAny(b, 2, 2, nil, shmem.CmpEQ, 0)
		require.NoError(t, err)
		other[i]++
	}
	assert.Equal(t, []int{0, 1}, sortedKeys(seen), "TestAny interleaved with WaitUntilAny")
	assert.Equal(t, []int{0, 1}, sortedKeys(other), "WaitUntilAny interleaved with TestAny")
}

func sortedKeys(m map[int]int) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestWaitSetEmpty: n == 0 (also at the array's end) and every element
// skipped return at once.
func TestWaitSetEmpty(t *testing.T) {
	start(t, shmem.WithTimeout(20*time.Second))
	a := alloc[int32](t, 4)
	for _, tc := range []struct {
		name   string
		idx, n int
		skip   []bool
	}{
		{"n 0", 1, 0, nil}, {"n 0 at the end", 4, 0, []bool{}}, {"all skipped", 0, 4, []bool{true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := make([]int32, tc.n)
			require.NoError(t, shmem.WaitUntilAll(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, 9))
			require.NoError(t, shmem.WaitUntilAllVector(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, vals))
			i, err := shmem.WaitUntilAny(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, 9)
			require.NoError(t, err)
			assert.Equal(t, -1, i)
			i, err = shmem.WaitUntilAnyVector(a, tc.idx, tc.n, tc.skip, shmem.CmpNE, vals)
			require.NoError(t, err)
			assert.Equal(t, -1, i)
			some, err := shmem.WaitUntilSome(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, 9)
			require.NoError(t, err)
			assert.Empty(t, some)
			some, err = shmem.WaitUntilSomeVector(a, tc.idx, tc.n, tc.skip, shmem.CmpNE, vals)
			require.NoError(t, err)
			assert.Empty(t, some)
			ok, err := shmem.TestAll(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, 9)
			require.NoError(t, err)
			assert.True(t, ok, "TestAll of an empty set")
			i, ok, err = shmem.TestAny(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, 0)
			require.NoError(t, err)
			assert.False(t, ok)
			assert.Equal(t, -1, i)
			some, err = shmem.TestSome(a, tc.idx, tc.n, tc.skip, shmem.CmpEQ, 0)
			require.NoError(t, err)
			assert.Empty(t, some)
		})
	}
}

// TestWaitSetWoken: another goroutine of the PE makes the elements true
// one by one (with data fenced before each); the waits see them.
func TestWaitSetWoken(t *testing.T) {
	start(t, shmem.WithTimeout(20*time.Second))
	flags := alloc[int16](t, 6)
	data := alloc[int64](t, 6)
	set := func(order ...int) chan error {
		done := make(chan error, 1)
		go func() {
			for _, i := range order {
				time.Sleep(time.Millisecond)
				if err := shmem.P(data, i, int64(100+i), 0); err != nil {
					done <- err
					return
				}
				if err := shmem.Fence(); err != nil {
					done <- err
					return
				}
				if err := shmem.AtomicSet(flags, i, 1, 0); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		return done
	}
	// WaitUntilAll over flags[1:5] set in reverse order; flags[0] and
	// flags[5] stay 0.
	done := set(4, 3, 2, 1)
	require.NoError(t, shmem.WaitUntilAll(flags, 1, 4, nil, shmem.CmpEQ, 1))
	assert.Equal(t, []int64{101, 102, 103, 104}, data.Local()[1:5], "data fenced before each flag")
	require.NoError(t, <-done)

	// A consumer loop with WaitUntilAny: every element once.
	clear(flags.Local())
	skip := make([]bool, 6)
	done = set(5, 0, 2, 4, 1, 3)
	var got []int
	for range 6 {
		i, err := shmem.WaitUntilAny(flags, 0, 6, skip, shmem.CmpNE, 0)
		require.NoError(t, err)
		require.False(t, skip[i], "index %d returned again", i)
		assert.Equal(t, int64(100+i), data.Local()[i], "data of element %d", i)
		skip[i] = true
		got = append(got, i)
	}
	require.NoError(t, <-done)
	slices.Sort(got)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, got)
	i, err := shmem.WaitUntilAny(flags, 0, 6, skip, shmem.CmpNE, 0)
	require.NoError(t, err)
	assert.Equal(t, -1, i, "all skipped")

	// The same with WaitUntilSome.
	clear(flags.Local())
	clear(skip)
	done = set(3, 1, 5, 0, 4, 2)
	got = got[:0]
	for len(got) < 6 {
		some, err := shmem.WaitUntilSomeVector(flags, 0, 6, skip, shmem.CmpGE, []int16{1, 1, 1, 1, 1, 1})
		require.NoError(t, err)
		require.NotEmpty(t, some)
		for _, i := range some {
			require.False(t, skip[i], "index %d returned again", i)
			skip[i] = true
			got = append(got, i)
		}
	}
	require.NoError(t, <-done)
	slices.Sort(got)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, got)
}

// TestWaitSetTimeout: with GOSHMEM_TIMEOUT small the waits fail with
// ErrTimeout naming the call, the range, the comparison and the values
// still unsatisfied; the runtime stays usable.
func TestWaitSetTimeout(t *testing.T) {
	start(t, shmem.WithTimeout(30*time.Millisecond))
	a := alloc[int64](t, 6)
	copy(a.Local(), []int64{7, 7, 2, 7, 3, 7})
	tests := []struct {
		name     string
		call     func() error
		contains []string
	}{
		{"WaitUntilAll", func() error { return shmem.WaitUntilAll(a, 1, 4, nil, shmem.CmpEQ, 7) },
			[]string{"PE 0: WaitUntilAll", "all of a[1:5] == 7 (int64)", "a[2] = 2, a[4] = 3", "GOSHMEM_TIMEOUT=30ms"}},
		{"WaitUntilAll skip", func() error {
			return shmem.WaitUntilAll(a, 0, 6, []bool{false, false, true, false, false, false}, shmem.CmpEQ, 7)
		},
			[]string{"all of a[0:6] == 7 (int64, 1 of 6 skipped)", "still unsatisfied: a[4] = 3"}},
		{"WaitUntilAllVector", func() error {
			return shmem.WaitUntilAllVector(a, 0, 3, nil, shmem.CmpGE, []int64{7, 8, 2})
		}, []string{"WaitUntilAllVector", "all of a[0:3] >= vals[i]", "a[1] = 7 (vals[1] = 8)"}},
		{"WaitUntilAny", func() error { _, err := shmem.WaitUntilAny(a, 2, 3, nil, shmem.CmpGT, 7); return err },
			[]string{"WaitUntilAny", "any of a[2:5] > 7", "a[2] = 2, a[3] = 7, a[4] = 3"}},
		{"WaitUntilAnyVector", func() error {
			_, err := shmem.WaitUntilAnyVector(a, 2, 2, []bool{false, true}, shmem.CmpEQ, []int64{0, 7})
			return err
		}, []string{"WaitUntilAnyVector", "1 of 2 skipped", "a[2] = 2 (vals[0] = 0)"}},
		{"WaitUntilSome", func() error { _, err := shmem.WaitUntilSome(a, 0, 6, nil, shmem.CmpLT, 2); return err },
			[]string{"WaitUntilSome", "some of a[0:6] < 2", "a[5] = 7"}},
		{"WaitUntilSomeVector", func() error {
			_, err := shmem.WaitUntilSomeVector(a, 4, 2, nil, shmem.CmpNE, []int64{3, 7})
			return err
		}, []string{"WaitUntilSomeVector", "some of a[4:6] != vals[i]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, shmem.ErrTimeout)
			for _, s := range tc.contains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
	// Many unsatisfied elements: the first few are listed.
	b := alloc[uint8](t, 40)
	err := shmem.WaitUntilAll(b, 0, 40, nil, shmem.CmpEQ, 1)
	require.ErrorIs(t, err, shmem.ErrTimeout)
	assert.Contains(t, err.Error(), "a[7] = 0 and 32 more")
	usable(t)
}

// TestWaitSetBadInput: bad arguments return their sentinel with the
// argument and its valid range, and wait for nothing.
func TestWaitSetBadInput(t *testing.T) {
	start(t)
	a := alloc[int32](t, 4)
	freed := alloc[int32](t, 4)
	require.NoError(t, freed.Free())
	var zero shmem.Array[int32]
	tests := []struct {
		name     string
		call     func() error
		sentinel error
		contains []string
	}{
		{"n past the end", func() error { return shmem.WaitUntilAll(a, 1, 4, nil, shmem.CmpEQ, 0) }, shmem.ErrOutOfBounds,
			[]string{"PE 0: WaitUntilAll", "n = 4; must be in [0, 3] for idx = 1", "[1, 5)"}},
		{"negative n", func() error { _, err := shmem.TestAll(a, 0, -1, nil, shmem.CmpEQ, 0); return err }, shmem.ErrOutOfBounds,
			[]string{"TestAll", "n = -1; must be in [0, 4]"}},
		{"idx past the end", func() error { _, err := shmem.WaitUntilAny(a, 5, 0, nil, shmem.CmpEQ, 0); return err }, shmem.ErrOutOfBounds,
			[]string{"WaitUntilAny", "idx = 5; must be in [0, 4]"}},
		{"negative idx", func() error { _, _, err := shmem.TestAny(a, -1, 1, nil, shmem.CmpEQ, 0); return err }, shmem.ErrOutOfBounds,
			[]string{"TestAny", "idx = -1"}},
		{"skip too short", func() error { _, err := shmem.WaitUntilSome(a, 0, 3, []bool{true}, shmem.CmpEQ, 0); return err }, shmem.ErrInvalidArgument,
			[]string{"WaitUntilSome", "len(skip) = 1; must be n = 3"}},
		{"skip too long", func() error { _, err := shmem.TestSome(a, 0, 0, []bool{false}, shmem.CmpEQ, 0); return err }, shmem.ErrInvalidArgument,
			[]string{"TestSome", "len(skip) = 1; must be n = 0"}},
		{"vals too short", func() error { return shmem.WaitUntilAllVector(a, 0, 2, nil, shmem.CmpEQ, []int32{0}) }, shmem.ErrInvalidArgument,
			[]string{"WaitUntilAllVector", "len(vals) = 1; must be n = 2"}},
		{"vals nil", func() error { _, err := shmem.WaitUntilAnyVector(a, 0, 1, nil, shmem.CmpEQ, nil); return err }, shmem.ErrInvalidArgument,
			[]string{"WaitUntilAnyVector", "len(vals) = 0; must be n = 1"}},
		{"vals too long", func() error { _, err := shmem.TestSomeVector(a, 0, 1, nil, shmem.CmpEQ, []int32{1, 2}); return err }, shmem.ErrInvalidArgument,
			[]string{"TestSomeVector", "len(vals) = 2"}},
		{"TestAllVector vals", func() error { _, err := shmem.TestAllVector(a, 0, 1, nil, shmem.CmpEQ, nil); return err }, shmem.ErrInvalidArgument, nil},
		{"TestAnyVector vals", func() error { _, _, err := shmem.TestAnyVector(a, 0, 1, nil, shmem.CmpEQ, nil); return err }, shmem.ErrInvalidArgument, nil},
		{"WaitUntilSomeVector vals", func() error { _, err := shmem.WaitUntilSomeVector(a, 0, 1, nil, shmem.CmpEQ, nil); return err }, shmem.ErrInvalidArgument, nil},
		{"bad cmp", func() error { return shmem.WaitUntilAll(a, 0, 1, nil, shmem.Cmp(9), 0) }, shmem.ErrInvalidArgument, []string{"cmp = 9"}},
		{"bad cmp on empty set", func() error { _, err := shmem.WaitUntilAny(a, 0, 0, nil, shmem.Cmp(-2), 0); return err }, shmem.ErrInvalidArgument, []string{"cmp = -2"}},
		{"zero Array", func() error { return shmem.WaitUntilAll(zero, 0, 1, nil, shmem.CmpEQ, 0) }, shmem.ErrOutOfBounds, []string{"of an array of 0"}},
		{"after Free", func() error { _, err := shmem.TestSome(freed, 0, 1, nil, shmem.CmpEQ, 0); return err }, shmem.ErrInvalidArgument, []string{"use after Free"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, tc.sentinel, "%v", err)
			for _, s := range tc.contains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
	usable(t)
}

// TestWaitSetNotInitialized: every call names itself.
func TestWaitSetNotInitialized(t *testing.T) {
	var a shmem.Array[int64]
	for name, call := range map[string]func() error{
		"WaitUntilAll":        func() error { return shmem.WaitUntilAll(a, 0, 0, nil, shmem.CmpEQ, 0) },
		"WaitUntilAllVector":  func() error { return shmem.WaitUntilAllVector(a, 0, 0, nil, shmem.CmpEQ, nil) },
		"WaitUntilAny":        func() error { _, err := shmem.WaitUntilAny(a, 0, 0, nil, shmem.CmpEQ, 0); return err },
		"WaitUntilAnyVector":  func() error { _, err := shmem.WaitUntilAnyVector(a, 0, 0, nil, shmem.CmpEQ, nil); return err },
		"WaitUntilSome":       func() error { _, err := shmem.WaitUntilSome(a, 0, 0, nil, shmem.CmpEQ, 0); return err },
		"WaitUntilSomeVector": func() error { _, err := shmem.WaitUntilSomeVector(a, 0, 0, nil, shmem.CmpEQ, nil); return err },
		"TestAll":             func() error { _, err := shmem.TestAll(a, 0, 0, nil, shmem.CmpEQ, 0); return err },
		"TestAllVector":       func() error { _, err := shmem.TestAllVector(a, 0, 0, nil, shmem.CmpEQ, nil); return err },
		"TestAny":             func() error { _, _, err := shmem.TestAny(a, 0, 0, nil, shmem.CmpEQ, 0); return err },
		"TestAnyVector":       func() error { _, _, err := shmem.TestAnyVector(a, 0, 0, nil, shmem.CmpEQ, nil); return err },
		"TestSome":            func() error { _, err := shmem.TestSome(a, 0, 0, nil, shmem.CmpEQ, 0); return err },
		"TestSomeVector":      func() error { _, err := shmem.TestSomeVector(a, 0, 0, nil, shmem.CmpEQ, nil); return err },
	} {
		err := call()
		require.ErrorIs(t, err, shmem.ErrNotInitialized, name)
		assert.True(t, strings.Contains(err.Error(), name), "%s: %v", name, err)
	}
}

// TestWaitSetAllocs: the calls allocate nothing, except WaitUntilSome's
// and TestSome's result.
func TestWaitSetAllocs(t *testing.T) {
	start(t)
	a := alloc[uint32](t, 16)
	copy(a.Local(), []uint32{0, 1, 0, 1})
	skip := make([]bool, 16)
	vals := make([]uint32, 16)
	for _, tc := range []struct {
		name string
		want float64
		call func()
	}{
		{"TestAll", 0, func() { _, _ = shmem.TestAll(a, 0, 16, skip, shmem.CmpLE, 1) }},
		{"TestAllVector", 0, func() { _, _ = shmem.TestAllVector(a, 0, 16, nil, shmem.CmpGE, vals) }},
		{"TestAny", 0, func() { _, _, _ = shmem.TestAny(a, 0, 16, nil, shmem.CmpEQ, 1) }},
		{"WaitUntilAll", 0, func() { _ = shmem.WaitUntilAll(a, 0, 16, skip, shmem.CmpLT, 2) }},
		{"WaitUntilAny", 0, func() { _, _ = shmem.WaitUntilAny(a, 0, 16, nil, shmem.CmpEQ, 1) }},
		{"WaitUntilAnyVector", 0, func() { _, _ = shmem.WaitUntilAnyVector(a, 0, 16, skip, shmem.CmpEQ, vals) }},
		{"WaitUntilSome", 1, func() { _, _ = shmem.WaitUntilSome(a, 0, 16, nil, shmem.CmpEQ, 1) }},
		{"TestSome", 1, func() { _, _ = shmem.TestSome(a, 0, 16, nil, shmem.CmpEQ, 1) }},
	} {
		assert.Equal(t, tc.want, testing.AllocsPerRun(100, tc.call), tc.name)
	}
}

// TestWaitSetDrivesOFIProgress: over ofi (manual progress) an element set
// through the provider lands only while this process drives the endpoint:
// WaitUntilAny and WaitUntilAll spinning on the set drive it themselves,
// as WaitUntil does, and hand it back to the progress thread on return.
func TestWaitSetDrivesOFIProgress(t *testing.T) {
	t.Setenv("GOSHMEM_TRANSPORT", "ofi")
	start(t, shmem.WithTimeout(20*time.Second))
	flags := alloc[uint64](t, 4)
	_, _, _, ok := shmem.OFIProgressStats()
	require.True(t, ok, "GOSHMEM_TRANSPORT=ofi")
	setWhenSpinning := func(idx []int, v uint64) chan error {
		done := make(chan error, 1)
		go func() {
			for _, i := range idx {
				// Set the element once the wait holds the endpoint, or
				// after a bound: the assertions then say what went wrong.
				for k := 0; k < 5000 && !shmem.OFISpinning(); k++ {
					time.Sleep(time.Millisecond)
				}
				if err := shmem.AtomicSet(flags, i, v, 0); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		return done
	}
	d0, _, _, _ := shmem.OFIProgressStats()
	done := setWhenSpinning([]int{2}, 7)
	i, err := shmem.WaitUntilAny(flags, 0, 4, []bool{true, false, false, false}, shmem.CmpEQ, 7)
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.Equal(t, 2, i)
	d1, _, _, _ := shmem.OFIProgressStats()
	assert.Greater(t, d1, d0, "the waiting thread drove the endpoint")
	assert.False(t, shmem.OFISpinning(), "WaitUntilAny released its claim when it returned")

	done = setWhenSpinning([]int{3, 1, 0}, 9)
	require.NoError(t, shmem.WaitUntilAllVector(flags, 0, 4, nil, shmem.CmpGE, []uint64{9, 9, 7, 9}))
	require.NoError(t, <-done)
	assert.Equal(t, []uint64{9, 9, 7, 9}, flags.Local())
	assert.False(t, shmem.OFISpinning(), "WaitUntilAllVector released its claim when it returned")
	usable(t)
}
