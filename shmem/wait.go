package shmem

import (
	"context"
	"math/rand/v2"
	"strings"
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// The multi-element waits and tests: WaitUntilAll's comment states what
// they share (the wait set, skip, ordering, progress, timeout).

// WaitUntilAll blocks until every element of the wait set has satisfied
// (a[idx+i] cmp v), each element waited for in turn and not looked at
// again once it satisfied; an empty wait set returns at once.
//
// What every multi-element wait and test shares: the wait set is this
// PE's a[idx : idx+n]; its element i is a[idx+i], skip[i] true excludes
// it (skip nil excludes none; otherwise len(skip) must be n), and every
// index the calls return is such an i, in [0, n). The plain forms compare
// with one value v, the Vector forms element i with vals[i] (len(vals)
// must be n). Each element is read with an acquire load, as by WaitUntil:
// data a peer wrote before the element (ordered by Fence, Quiet or
// PutSignal) is visible once the call saw the element satisfy. The waits
// spin, yield, then sleep, drive the ofi transport while they spin, end
// with the error when a peer has failed, and with ErrTimeout after
// GOSHMEM_TIMEOUT naming the call, the range, the comparison and the
// values still unsatisfied. GPU arrays (AllocDevice) are polled element by
// element with device-to-host copies. The calls are safe from several
// goroutines at once. Ref: OpenSHMEM 1.6 §9.10 shmem_wait_until_all.
func WaitUntilAll[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, v T) error {
	return WaitUntilAllContext(context.Background(), a, idx, n, skip, cmp, v)
}

// WaitUntilAllContext is WaitUntilAll that also ends when ctx is done, with an
// error that matches ctx.Err() (errors.Is). A ctx already done ends it at
// once. The runtime stays usable: the next calls work.
func WaitUntilAllContext[T Elem](ctx context.Context, a Array[T], idx, n int, skip []bool, cmp Cmp, v T) error {
	s, err := newWaitSet(ctx, a, "WaitUntilAll", idx, n, skip, cmp, v, nil, false)
	if err != nil {
		return err
	}
	defer s.r.leave()
	return s.waitAll()
}

// WaitUntilAllVector is WaitUntilAll with one comparison value per element:
// it waits until (a[idx+i] cmp vals[i]) has held for every element i of
// the wait set (see WaitUntilAll for what the calls share).
// Ref: OpenSHMEM 1.6 §9.10 shmem_wait_until_all_vector.
func WaitUntilAllVector[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) error {
	return WaitUntilAllVectorContext(context.Background(), a, idx, n, skip, cmp, vals)
}

// WaitUntilAllVectorContext is WaitUntilAllVector that also ends when ctx
// is done, as WaitUntilAllContext does.
func WaitUntilAllVectorContext[T Elem](ctx context.Context, a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) error {
	s, err := newWaitSet(ctx, a, "WaitUntilAllVector", idx, n, skip, cmp, 0, vals, true)
	if err != nil {
		return err
	}
	defer s.r.leave()
	return s.waitAll()
}

// WaitUntilAny blocks until some element i of the wait set a[idx : idx+n]
// (see WaitUntilAll for the wait set, skip, ordering and timeout) satisfies (a[idx+i] cmp v) and returns i. With several satisfied, which
// one is returned is unspecified and not always the lowest: each call
// starts looking at a random element, so a caller that loops over
// WaitUntilAny is handed every satisfied element eventually. An empty
// wait set returns -1 at once. Ref: OpenSHMEM 1.6 §9.10
// shmem_wait_until_any (SIZE_MAX there is -1 here).
func WaitUntilAny[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, v T) (int, error) {
	return WaitUntilAnyContext(context.Background(), a, idx, n, skip, cmp, v)
}

// WaitUntilAnyContext is WaitUntilAny that also ends when ctx is done, with an
// error that matches ctx.Err() (errors.Is). A ctx already done ends it at
// once. The runtime stays usable: the next calls work.
func WaitUntilAnyContext[T Elem](ctx context.Context, a Array[T], idx, n int, skip []bool, cmp Cmp, v T) (int, error) {
	s, err := newWaitSet(ctx, a, "WaitUntilAny", idx, n, skip, cmp, v, nil, false)
	if err != nil {
		return -1, err
	}
	defer s.r.leave()
	return s.waitAny()
}

// WaitUntilAnyVector is WaitUntilAny with one comparison value per
// element: it returns an i with (a[idx+i] cmp vals[i]).
// Ref: OpenSHMEM 1.6 §9.10 shmem_wait_until_any_vector.
func WaitUntilAnyVector[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) (int, error) {
	return WaitUntilAnyVectorContext(context.Background(), a, idx, n, skip, cmp, vals)
}

// WaitUntilAnyVectorContext is WaitUntilAnyVector that also ends when ctx
// is done, as WaitUntilAllContext does (returning -1).
func WaitUntilAnyVectorContext[T Elem](ctx context.Context, a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) (int, error) {
	s, err := newWaitSet(ctx, a, "WaitUntilAnyVector", idx, n, skip, cmp, 0, vals, true)
	if err != nil {
		return -1, err
	}
	defer s.r.leave()
	return s.waitAny()
}

// WaitUntilSome blocks until at least one element of the wait set
// a[idx : idx+n] satisfies (a[idx+i] cmp v) and returns, in increasing
// order, every i that satisfied it in the look that ended the wait
// (possibly all of them). An empty wait set returns an empty slice at
// once. The result is the call's only allocation.
// Ref: OpenSHMEM 1.6 §9.10 shmem_wait_until_some.
func WaitUntilSome[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, v T) ([]int, error) {
	return WaitUntilSomeContext(context.Background(), a, idx, n, skip, cmp, v)
}

// WaitUntilSomeContext is WaitUntilSome that also ends when ctx is done, with an
// error that matches ctx.Err() (errors.Is). A ctx already done ends it at
// once. The runtime stays usable: the next calls work.
func WaitUntilSomeContext[T Elem](ctx context.Context, a Array[T], idx, n int, skip []bool, cmp Cmp, v T) ([]int, error) {
	s, err := newWaitSet(ctx, a, "WaitUntilSome", idx, n, skip, cmp, v, nil, false)
	if err != nil {
		return nil, err
	}
	defer s.r.leave()
	return s.waitSome()
}

// WaitUntilSomeVector is WaitUntilSome with one comparison value per
// element. Ref: OpenSHMEM 1.6 §9.10 shmem_wait_until_some_vector.
func WaitUntilSomeVector[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) ([]int, error) {
	return WaitUntilSomeVectorContext(context.Background(), a, idx, n, skip, cmp, vals)
}

// WaitUntilSomeVectorContext is WaitUntilSomeVector that also ends when
// ctx is done, as WaitUntilAllContext does (returning nil).
func WaitUntilSomeVectorContext[T Elem](ctx context.Context, a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) ([]int, error) {
	s, err := newWaitSet(ctx, a, "WaitUntilSomeVector", idx, n, skip, cmp, 0, vals, true)
	if err != nil {
		return nil, err
	}
	defer s.r.leave()
	return s.waitSome()
}

// TestAll reports whether every element of the wait set a[idx : idx+n]
// satisfies (a[idx+i] cmp v) now, without waiting; true for an empty
// wait set. Ref: OpenSHMEM 1.6 §9.10 shmem_test_all.
func TestAll[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, v T) (bool, error) {
	s, err := newWaitSet(context.Background(), a, "TestAll", idx, n, skip, cmp, v, nil, false)
	if err != nil {
		return false, err
	}
	defer s.r.leave()
	from := 0
	return s.allFrom(&from)
}

// TestAllVector is TestAll with one comparison value per element.
// Ref: OpenSHMEM 1.6 §9.10 shmem_test_all_vector.
func TestAllVector[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) (bool, error) {
	s, err := newWaitSet(context.Background(), a, "TestAllVector", idx, n, skip, cmp, 0, vals, true)
	if err != nil {
		return false, err
	}
	defer s.r.leave()
	from := 0
	return s.allFrom(&from)
}

// TestAny looks once over the wait set a[idx : idx+n], without waiting,
// and returns (i, true) for an element i that satisfies (a[idx+i] cmp v),
// or (-1, false) when none does (or the wait set is empty). Like
// WaitUntilAny, each call starts looking at a random element, so a caller
// polling TestAny is handed every satisfied element eventually.
// Ref: OpenSHMEM 1.6 §9.10 shmem_test_any.
func TestAny[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, v T) (int, bool, error) {
	s, err := newWaitSet(context.Background(), a, "TestAny", idx, n, skip, cmp, v, nil, false)
	if err != nil {
		return -1, false, err
	}
	defer s.r.leave()
	return s.testAny()
}

// TestAnyVector is TestAny with one comparison value per element.
// Ref: OpenSHMEM 1.6 §9.10 shmem_test_any_vector.
func TestAnyVector[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) (int, bool, error) {
	s, err := newWaitSet(context.Background(), a, "TestAnyVector", idx, n, skip, cmp, 0, vals, true)
	if err != nil {
		return -1, false, err
	}
	defer s.r.leave()
	return s.testAny()
}

// TestSome looks once over the wait set a[idx : idx+n], without waiting,
// and returns, in increasing order, every i with (a[idx+i] cmp v); an
// empty slice when none does (or the wait set is empty).
// Ref: OpenSHMEM 1.6 §9.10 shmem_test_some.
func TestSome[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, v T) ([]int, error) {
	s, err := newWaitSet(context.Background(), a, "TestSome", idx, n, skip, cmp, v, nil, false)
	if err != nil {
		return nil, err
	}
	defer s.r.leave()
	return s.testSome()
}

// TestSomeVector is TestSome with one comparison value per element.
// Ref: OpenSHMEM 1.6 §9.10 shmem_test_some_vector.
func TestSomeVector[T Elem](a Array[T], idx, n int, skip []bool, cmp Cmp, vals []T) ([]int, error) {
	s, err := newWaitSet(context.Background(), a, "TestSomeVector", idx, n, skip, cmp, 0, vals, true)
	if err != nil {
		return nil, err
	}
	defer s.r.leave()
	return s.testSome()
}

// waitSet is one multi-element wait or test after its arguments were
// checked: this PE's a[idx : idx+n], the skip mask and the comparison.
type waitSet[T Elem] struct {
	r      *runtime
	ctx    context.Context // nil: none
	op     string
	idx, n int
	live   int            // elements not skipped
	base   unsafe.Pointer // this PE's a[idx], for host arrays
	off    uint64         // a[idx]'s region offset, for GPU arrays
	dev    bool
	skip   []bool
	cmp    Cmp
	v      T
	vals   []T // the Vector forms' values, else nil
	vector bool
}

// newWaitSet checks the arguments of op. vector says vals (not v) holds
// the comparison values; ctx (nil: none) ends the waits when done. The
// call is in flight (enter) until the caller's leave, unless it fails.
func newWaitSet[T Elem](ctx context.Context, a Array[T], op string, idx, n int, skip []bool, cmp Cmp, v T, vals []T, vector bool) (ws waitSet[T], err error) {
	r, err := enter(op)
	if err != nil {
		return waitSet[T]{}, err
	}
	defer func() {
		if err != nil {
			r.leave()
		}
	}()
	if err := r.ctxErr(ctx, op); err != nil {
		return waitSet[T]{}, err
	}
	// The array itself (zero, freed, of an earlier Init): span's checks.
	off, err := span(r, a, op, 0, 0, r.me)
	if err != nil {
		return waitSet[T]{}, err
	}
	switch l := a.Len(); {
	case idx < 0 || idx > l:
		return waitSet[T]{}, errs.New(errs.ErrOutOfBounds, r.me, op,
			"idx = %d; must be in [0, %d] (the array has %d elements)", idx, l, l)
	case n < 0 || n > l-idx:
		return waitSet[T]{}, errs.New(errs.ErrOutOfBounds, r.me, op,
			"n = %d; must be in [0, %d] for idx = %d: elements [%d, %s) of an array of %d", n, l-idx, idx, idx, exactSum(idx, n), l)
	}
	if skip != nil && len(skip) != n {
		return waitSet[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op,
			"len(skip) = %d; must be n = %d (or skip nil: no element skipped)", len(skip), n)
	}
	if vector && len(vals) != n {
		return waitSet[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op,
			"len(vals) = %d; must be n = %d (one comparison value per element)", len(vals), n)
	}
	if !cmp.valid() {
		return waitSet[T]{}, errs.New(errs.ErrInvalidArgument, r.me, op, "cmp = %d; must be one of CmpEQ..CmpGE (0..5)", int(cmp))
	}
	s := waitSet[T]{r: r, ctx: ctx, op: op, idx: idx, n: n, live: n, dev: a.OnDevice(), skip: skip, cmp: cmp, v: v, vals: vals, vector: vector}
	s.off = off + uint64(idx)*uint64(elem.Size[T]())
	if !s.dev && n > 0 {
		s.base = r.localPtr(s.off)
	}
	for _, x := range skip {
		if x {
			s.live--
		}
	}
	return s, nil
}

func (s *waitSet[T]) in(i int) bool { return s.skip == nil || !s.skip[i] }

func (s *waitSet[T]) want(i int) T {
	if s.vector {
		return s.vals[i]
	}
	return s.v
}

// read is this PE's a[idx+i], by sync.go's acquire load (host) or a
// device-to-host copy (GPU).
func (s *waitSet[T]) read(i int) (T, error) {
	if s.dev {
		return loadDevice[T](s.r, s.off+uint64(i)*uint64(elem.Size[T]()))
	}
	return load[T](unsafe.Add(s.base, i*elem.Size[T]())), nil
}

func (s *waitSet[T]) holds(i int) (bool, error) {
	x, err := s.read(i)
	return err == nil && compare(x, s.cmp, s.want(i)), err
}

// allFrom looks at the elements from *from on and advances *from past
// each one that is skipped or satisfied: true when it reached the end.
func (s *waitSet[T]) allFrom(from *int) (bool, error) {
	for ; *from < s.n; *from++ {
		if !s.in(*from) {
			continue
		}
		ok, err := s.holds(*from)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// anyFrom looks once over the elements, starting at start and wrapping
// around, and returns the first satisfied one, or -1.
func (s *waitSet[T]) anyFrom(start int) (int, error) {
	for k := 0; k < s.n; k++ {
		i := start + k
		if i >= s.n {
			i -= s.n
		}
		if !s.in(i) {
			continue
		}
		ok, err := s.holds(i)
		if err != nil {
			return -1, err
		}
		if ok {
			return i, nil
		}
	}
	return -1, nil
}

// someInto looks once over the elements and collects the satisfied ones
// into got[:0] (made, once, when the first one is found).
func (s *waitSet[T]) someInto(got []int) ([]int, error) {
	got = got[:0]
	for i := 0; i < s.n; i++ {
		if !s.in(i) {
			continue
		}
		ok, err := s.holds(i)
		if err != nil {
			return got, err
		}
		if ok {
			if got == nil {
				got = make([]int, 0, s.n-i)
			}
			got = append(got, i)
		}
	}
	return got, nil
}

// start is where this call of WaitUntilAny or TestAny starts looking: a
// random element, drawn per call on this PE as SOS does (its rand_r start
// index), so that a loop over the calls is handed every satisfied element
// eventually, also when it interleaves calls on other wait sets (a start
// that merely rotated per call could then fall on the same element every
// time). Ref: OpenSHMEM 1.6 §9.10 shmem_test_any: "a series of calls ...
// must eventually return i".
func (s *waitSet[T]) start() int { return rand.IntN(s.n) }

func (s *waitSet[T]) waitAll() error {
	from := 0
	return s.until(func() (bool, error) { return s.allFrom(&from) }, "all of", &from)
}

func (s *waitSet[T]) waitAny() (int, error) {
	if s.live == 0 {
		return -1, nil
	}
	start, found := s.start(), -1
	err := s.until(func() (bool, error) {
		var err error
		found, err = s.anyFrom(start)
		return found >= 0, err
	}, "any of", nil)
	if err != nil {
		return -1, err
	}
	return found, nil
}

func (s *waitSet[T]) waitSome() ([]int, error) {
	if s.live == 0 {
		return []int{}, nil
	}
	var got []int
	err := s.until(func() (bool, error) {
		var err error
		got, err = s.someInto(got)
		return len(got) > 0, err
	}, "some of", nil)
	if err != nil {
		return nil, err
	}
	return got, nil
}

func (s *waitSet[T]) testAny() (int, bool, error) {
	if s.live == 0 {
		return -1, false, nil
	}
	i, err := s.anyFrom(s.start())
	if err != nil {
		return -1, false, err
	}
	return i, i >= 0, nil
}

func (s *waitSet[T]) testSome() ([]int, error) {
	got, err := s.someInto(nil)
	if err != nil {
		return nil, err
	}
	if got == nil {
		got = []int{}
	}
	return got, nil
}

// until runs look until it reports the wait over, as waitFor does for
// one element: a first look, then the policy's spin, yield and sleep with
// the peers' liveness check; host arrays drive the ofi transport before
// each look (runtime.spinLook), so data put over ofi lands while this
// thread waits. A failed read ends the wait and is returned. what and from
// describe the wait for a timeout (from: the first element still waited
// for, nil for all of them).
func (s *waitSet[T]) until(look func() (bool, error), what string, from *int) error {
	var lerr error
	done := func() bool {
		ok, err := look()
		if err != nil {
			lerr = err
			return true
		}
		return ok
	}
	if done() {
		return lerr
	}
	var looks waitLooks
	ok, err := waitPolicy(s.r.policy, s.ctx).Until(func() bool {
		if !s.dev {
			s.r.spinLook(&looks)
		}
		return done()
	}, s.r.checkPeers)
	s.r.endSpin(&looks)
	switch {
	case err != nil:
		return errs.Wrap(err, s.r.me, s.op, "waiting for %s a[%d:%d]", what, s.idx, s.idx+s.n)
	case lerr != nil:
		return lerr
	case !ok:
		first := 0
		if from != nil {
			first = *from
		}
		return s.timeout(what, first)
	}
	return nil
}

// timeout is the ErrTimeout of a wait: the call, the range and the
// comparison, and the elements (from first on) still unsatisfied with
// their values, the first few of them.
func (s *waitSet[T]) timeout(what string, first int) error {
	const show = 8
	var b strings.Builder
	shown, more := 0, 0
	for i := first; i < s.n; i++ {
		if !s.in(i) {
			continue
		}
		x, err := s.read(i)
		if err != nil || compare(x, s.cmp, s.want(i)) {
			continue
		}
		if shown == show {
			more++
			continue
		}
		if shown > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sprintf("a[%d] = %v", s.idx+i, x))
		if s.vector {
			b.WriteString(sprintf(" (vals[%d] = %v)", i, s.vals[i]))
		}
		shown++
	}
	if more > 0 {
		b.WriteString(sprintf(" and %d more", more))
	}
	if shown == 0 {
		b.WriteString("none (satisfied as the wait timed out)")
	}
	where, cond, skipped := "", sprintf("%v %v", s.cmp, s.v), ""
	if s.dev {
		where = "GPU array "
	}
	if s.vector {
		cond = sprintf("%v vals[i]", s.cmp)
	}
	if s.live < s.n {
		skipped = sprintf(", %d of %d skipped", s.n-s.live, s.n)
	}
	return errs.New(errs.ErrTimeout, s.r.me, s.op,
		"waited GOSHMEM_TIMEOUT=%v for %s %sa[%d:%d] %s (%s%s); still unsatisfied: %s",
		s.r.policy.Timeout, what, where, s.idx, s.idx+s.n, cond, elem.Name[T](), skipped, b.String())
}
