package quiet_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/quiet"
)

// policy is a quick waiting policy for tests: a few spins, then sleeps.
var policy = spin.Policy{Spins: 64, Yields: 16, MaxSleep: 200 * time.Microsecond}

// asyncTransport is a fake transport whose operations complete later, on a
// goroutine, after a configurable delay, the way a NIC or a proxy thread
// completes them: Issue when posted, Complete (or Fail) when done.
type asyncTransport struct {
	wg sync.WaitGroup
}

// op is one posted operation; done is set just before the queue counts it.
type op struct {
	done atomic.Bool
}

// post issues one operation on q that completes after delay (with Fail(err)
// when err is non-nil).
func (f *asyncTransport) post(q *quiet.Queue, delay time.Duration, err error) *op {
	o := &op{}
	q.Issue(1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		time.Sleep(delay)
		o.done.Store(true)
		if err != nil {
			q.Fail(err)
			return
		}
		q.Complete(1)
	}()
	return o
}

func (f *asyncTransport) wait() { f.wg.Wait() }

// pe is one PE's completion model: two contexts with one queue each, and the
// PE-wide scope over both.
type pe struct {
	qa, qb         *quiet.Queue
	ctxA, ctxB, pw *quiet.Scope
}

func newPE() *pe {
	p := &pe{
		qa:   quiet.NewQueue("ctx A -> PE 1", nil),
		qb:   quiet.NewQueue("ctx B -> PE 1", nil),
		ctxA: quiet.NewScope("ctx A"),
		ctxB: quiet.NewScope("ctx B"),
		pw:   quiet.NewScope("PE-wide quiet"),
	}
	p.ctxA.Add(p.qa)
	p.ctxB.Add(p.qb)
	p.pw.Add(p.qa)
	p.pw.Add(p.qb)
	return p
}

func TestQueueCounts(t *testing.T) {
	q := quiet.NewQueue("q", nil)
	assert.Equal(t, "q", q.Name())
	assert.Equal(t, uint64(3), q.Issue(3), "Issue returns the new issued count")
	assert.Equal(t, uint64(5), q.Issue(2))
	assert.Equal(t, uint64(5), q.Pending())
	q.Complete(4)
	i, c := q.Counts()
	assert.Equal(t, uint64(5), i)
	assert.Equal(t, uint64(4), c)
	assert.Equal(t, uint64(1), q.Pending())
	q.Fail(errors.New("boom"))
	assert.Equal(t, uint64(0), q.Pending(), "Fail counts the operation as completed")
}

func TestScopeAddRemoveQueues(t *testing.T) {
	s := quiet.NewScope("s")
	a, b, c := quiet.NewQueue("a", nil), quiet.NewQueue("b", nil), quiet.NewQueue("c", nil)
	s.Add(a)
	s.Add(b)
	s.Add(c)
	snap := s.Queues()
	s.Remove(b)
	assert.Equal(t, []*quiet.Queue{a, b, c}, snap, "an earlier snapshot is not changed by Remove")
	assert.Equal(t, []*quiet.Queue{a, c}, s.Queues())
	s.Remove(quiet.NewQueue("not in scope", nil))
	assert.Equal(t, []*quiet.Queue{a, c}, s.Queues())
	s.Remove(a)
	s.Remove(c)
	assert.Empty(t, s.Queues())
	require.NoError(t, s.Quiet(policy, nil), "an empty scope is quiet at once")
}

// TestCtxQuietDoesNotWaitForOtherContext is the acceptance test of the
// completion model: a context's quiet covers its own queues only, the
// PE-wide quiet covers every context's.
func TestCtxQuietDoesNotWaitForOtherContext(t *testing.T) {
	const slow = 200 * time.Millisecond
	const fast = 2 * time.Millisecond
	var f asyncTransport
	defer f.wait()
	p := newPE()

	slowOp := f.post(p.qa, slow, nil)
	fastOp := f.post(p.qb, fast, nil)
	start := time.Now()

	require.NoError(t, p.ctxB.Quiet(policy, nil))
	ctxElapsed := time.Since(start)
	assert.True(t, fastOp.done.Load(), "ctx B's own operation completed by its quiet")
	assert.False(t, slowOp.done.Load(), "ctx B's quiet returned before ctx A's slow operation")
	assert.Less(t, ctxElapsed, slow/2, "ctx B's quiet must not wait for ctx A")

	require.NoError(t, p.pw.Quiet(policy, nil))
	peElapsed := time.Since(start)
	assert.True(t, slowOp.done.Load(), "PE-wide quiet waited for ctx A's operation")
	assert.GreaterOrEqual(t, peElapsed, slow)
	assert.Equal(t, uint64(0), p.qa.Pending())
	assert.Equal(t, uint64(0), p.qb.Pending())
}

func TestQuietScopes(t *testing.T) {
	const slow = 150 * time.Millisecond
	tests := []struct {
		name      string
		scope     func(p *pe) *quiet.Scope
		waitsSlow bool
	}{
		{"ctx A (has the slow op)", func(p *pe) *quiet.Scope { return p.ctxA }, true},
		{"ctx B (fast only)", func(p *pe) *quiet.Scope { return p.ctxB }, false},
		{"PE-wide", func(p *pe) *quiet.Scope { return p.pw }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f asyncTransport
			defer f.wait()
			p := newPE()
			slowOp := f.post(p.qa, slow, nil)
			for range 10 {
				f.post(p.qb, time.Millisecond, nil)
			}
			start := time.Now()
			require.NoError(t, tc.scope(p).Quiet(policy, nil))
			el := time.Since(start)
			assert.Equal(t, tc.waitsSlow, slowOp.done.Load())
			if tc.waitsSlow {
				assert.GreaterOrEqual(t, el, slow)
			} else {
				assert.Less(t, el, slow/2)
			}
			assert.Equal(t, uint64(0), p.qb.Pending(), "every scope here covers or does not need B")
		})
	}
}

// TestQuietSnapshot: operations issued after quiet took its snapshot are not
// waited for, on the queue it is waiting on nor on a queue it has not
// reached yet.
func TestQuietSnapshot(t *testing.T) {
	const first = 100 * time.Millisecond
	const giveUp = 3 * time.Second
	tests := []struct {
		name     string
		lateOnQA bool
	}{
		{"late op on the queue being drained", true},
		{"late op on a queue not reached yet", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPE()
			var f asyncTransport // not waited for: the late op sleeps "forever"
			early := f.post(p.qa, first, nil)
			done := make(chan error, 1)
			go func() { done <- p.pw.Quiet(policy, nil) }()
			// Let quiet snapshot, then issue an operation that never completes.
			time.Sleep(first / 4)
			late := p.qb
			if tc.lateOnQA {
				late = p.qa
			}
			late.Issue(1)
			select {
			case err := <-done:
				require.NoError(t, err)
				assert.True(t, early.done.Load())
			case <-time.After(giveUp):
				t.Fatal("quiet waited for an operation issued after its snapshot")
			}
			assert.Equal(t, uint64(1), late.Pending())
			late.Complete(1) // leave the model consistent
		})
	}
}

// TestQuietFailure: an asynchronous failure is returned once, by the next
// quiet of any scope covering the queue, then cleared. The scopes do not
// each get a copy: whichever quiet covering the queue runs first (a
// context's or the PE-wide one) reports it, later ones return nil.
func TestQuietFailure(t *testing.T) {
	boom := errors.New("remote access error (syndrome 0x22)")
	tests := []struct {
		name   string
		first  func(p *pe) *quiet.Scope
		second func(p *pe) *quiet.Scope
	}{
		{"ctx quiet first, then PE-wide", func(p *pe) *quiet.Scope { return p.ctxA }, func(p *pe) *quiet.Scope { return p.pw }},
		{"PE-wide first, then ctx quiet", func(p *pe) *quiet.Scope { return p.pw }, func(p *pe) *quiet.Scope { return p.ctxA }},
		{"ctx quiet twice", func(p *pe) *quiet.Scope { return p.ctxA }, func(p *pe) *quiet.Scope { return p.ctxA }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f asyncTransport
			defer f.wait()
			p := newPE()
			f.post(p.qa, 5*time.Millisecond, boom)
			f.post(p.qa, 1*time.Millisecond, nil)

			require.NoError(t, p.ctxB.Quiet(policy, nil), "the other context does not see A's failure")

			err := tc.first(p).Quiet(policy, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, boom)
			assert.Contains(t, err.Error(), `queue "ctx A -> PE 1"`)
			assert.Contains(t, err.Error(), "syndrome 0x22")
			assert.Equal(t, uint64(0), p.qa.Pending(), "a failed op counts as completed")

			assert.NoError(t, tc.second(p).Quiet(policy, nil), "the failure is reported once, then cleared")
		})
	}
}

// TestQuietFailuresCombine: several failures on one queue before a quiet
// are combined: the first is the error (errors.Is, message), later ones ride
// along as secondary errors (shown by %+v) rather than being dropped.
// Failures on other queues of the scope are reported by the same quiet the
// same way (secondary errors) and cleared.
func TestQuietFailuresCombine(t *testing.T) {
	e1, e2 := errors.New("first failure"), errors.New("second failure")
	p := newPE()
	p.qa.Issue(2)
	p.qb.Issue(1)
	p.qa.Fail(e1)
	p.qa.Fail(e2)
	p.qb.Fail(errors.New("B failure"))
	err := p.pw.Quiet(policy, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, e1)
	assert.Contains(t, err.Error(), "first failure")
	assert.Contains(t, fmt.Sprintf("%+v", err), "second failure", "the second failure is kept as a secondary error")
	assert.NotContains(t, err.Error(), "B failure")
	assert.Contains(t, fmt.Sprintf("%+v", err), "B failure", "another queue's failure is not dropped")
	require.NoError(t, p.ctxA.Quiet(policy, nil))
	require.NoError(t, p.ctxB.Quiet(policy, nil), "B's failure was reported by the PE-wide quiet, then cleared")
}

func TestQuietTimeout(t *testing.T) {
	p := newPE()
	p.qa.Issue(3)
	p.qa.Complete(1)
	pol := policy
	pol.Timeout = 30 * time.Millisecond
	start := time.Now()
	err := p.pw.Quiet(pol, nil)
	require.Error(t, err)
	require.ErrorIs(t, err, errs.ErrTimeout)
	assert.GreaterOrEqual(t, time.Since(start), pol.Timeout)
	msg := err.Error()
	assert.Contains(t, msg, "PE-wide quiet")
	assert.Contains(t, msg, `queue "ctx A -> PE 1"`)
	assert.Contains(t, msg, "completed 1 of 3 issued operations")
	assert.Contains(t, msg, "GOSHMEM_TIMEOUT=30ms")
}

func TestQuietCheckEndsWait(t *testing.T) {
	dead := errors.New("PE 1 exited without calling Finalize")
	p := newPE()
	p.qa.Issue(1)
	var calls atomic.Int32
	err := p.ctxA.Quiet(policy, func() error {
		if calls.Add(1) >= 2 {
			return dead
		}
		return nil
	})
	require.ErrorIs(t, err, dead)
	assert.GreaterOrEqual(t, calls.Load(), int32(2))
}

// TestQuietDrivesProgress: a queue with manual progress (a completion queue
// nobody else polls) completes only because quiet calls its progress
// function while waiting.
func TestQuietDrivesProgress(t *testing.T) {
	var polls atomic.Int32
	var q *quiet.Queue
	q = quiet.NewQueue("manual progress", func() {
		if polls.Add(1) == 50 {
			q.Complete(2)
		}
	})
	s := quiet.NewScope("ctx")
	s.Add(q)
	require.NoError(t, s.Quiet(policy, nil), "nothing issued: no progress needed")
	assert.Equal(t, int32(0), polls.Load(), "no progress calls without pending operations")

	q.Issue(2)
	require.NoError(t, s.Quiet(policy, nil))
	assert.Equal(t, int32(50), polls.Load())
	assert.Equal(t, uint64(0), q.Pending())
}

// TestRemoveWhileQuiet destroys contexts (Remove) while other goroutines run
// PE-wide quiets over the same scope: race-detector clean, and every quiet
// still completes what it snapshotted.
func TestRemoveWhileQuiet(t *testing.T) {
	var f asyncTransport
	defer f.wait()
	pw := quiet.NewScope("PE-wide quiet")
	qs := make([]*quiet.Queue, 16)
	for i := range qs {
		qs[i] = quiet.NewQueue(fmt.Sprintf("ctx %d", i), nil)
		pw.Add(qs[i])
	}
	var wg sync.WaitGroup
	quietErrs := make(chan error, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				quietErrs <- pw.Quiet(policy, nil)
			}
		}()
	}
	for i, q := range qs {
		f.post(q, time.Duration(i%3)*time.Millisecond, nil)
		if i%2 == 0 {
			pw.Remove(q)
		}
	}
	wg.Wait()
	close(quietErrs)
	for err := range quietErrs {
		assert.NoError(t, err)
	}
	require.NoError(t, pw.Quiet(policy, nil))
	assert.Len(t, pw.Queues(), 8)
	for _, q := range pw.Queues() {
		assert.Equal(t, uint64(0), q.Pending(), q.Name())
	}
}

// TestConcurrentIssueAndQuiet: several goroutines post on one context while
// another quiets it repeatedly; every quiet returns and the counts balance.
func TestConcurrentIssueAndQuiet(t *testing.T) {
	var f asyncTransport
	p := newPE()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				f.post(p.qa, time.Duration(i%2)*time.Millisecond, nil)
			}
		}()
	}
	stop := make(chan struct{})
	quiets := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				quiets <- n
				return
			default:
			}
			assert.NoError(t, p.ctxA.Quiet(policy, nil))
			n++
		}
	}()
	wg.Wait()
	require.NoError(t, p.ctxA.Quiet(policy, nil))
	close(stop)
	assert.Positive(t, <-quiets)
	f.wait()
	i, c := p.qa.Counts()
	assert.Equal(t, uint64(200), i)
	assert.Equal(t, uint64(200), c)
}
