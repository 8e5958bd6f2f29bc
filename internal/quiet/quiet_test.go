package quiet_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
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

// gated is a fake operation that completes only when released: by the test,
// or by its queue's progress function, which quiet calls only while it
// waits on that queue. So a test sees which queues a quiet waited on from
// what happened, with no clock involved.
type gated struct {
	q    *quiet.Queue
	done atomic.Bool
	once sync.Once
}

// release completes the operation (once).
func (g *gated) release() {
	g.once.Do(func() {
		g.done.Store(true)
		g.q.Complete(1)
	})
}

// gatedQueue is a queue whose progress function counts its calls and
// releases every operation posted on it so far: its operations complete
// only when a quiet waits on it.
type gatedQueue struct {
	*quiet.Queue
	polls atomic.Int32
	mu    sync.Mutex
	ops   []*gated
}

func newGatedQueue(name string) *gatedQueue {
	g := &gatedQueue{}
	g.Queue = quiet.NewQueue(name, func() {
		g.polls.Add(1)
		g.mu.Lock()
		ops := g.ops
		g.mu.Unlock()
		for _, o := range ops {
			o.release()
		}
	})
	return g
}

// post issues one operation that completes when a quiet polls the queue.
func (g *gatedQueue) post() *gated {
	o := &gated{q: g.Queue}
	g.Issue(1)
	g.mu.Lock()
	g.ops = append(g.ops, o)
	g.mu.Unlock()
	return o
}

// gatedPE is pe with gated queues.
type gatedPE struct {
	qa, qb         *gatedQueue
	ctxA, ctxB, pw *quiet.Scope
}

func newGatedPE() *gatedPE {
	p := &gatedPE{
		qa:   newGatedQueue("ctx A -> PE 1"),
		qb:   newGatedQueue("ctx B -> PE 1"),
		ctxA: quiet.NewScope("ctx A"),
		ctxB: quiet.NewScope("ctx B"),
		pw:   quiet.NewScope("PE-wide quiet"),
	}
	p.ctxA.Add(p.qa.Queue)
	p.ctxB.Add(p.qb.Queue)
	p.pw.Add(p.qa.Queue)
	p.pw.Add(p.qb.Queue)
	return p
}

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
// PE-wide quiet covers every context's. Each queue's operation completes
// only when a quiet polls that queue, so what completed, and which queues
// were polled, say which ones each quiet waited on.
func TestCtxQuietDoesNotWaitForOtherContext(t *testing.T) {
	p := newGatedPE()
	slowOp := p.qa.post()
	fastOp := p.qb.post()

	require.NoError(t, p.ctxB.Quiet(policy, nil))
	assert.True(t, fastOp.done.Load(), "ctx B's own operation completed by its quiet")
	assert.False(t, slowOp.done.Load(), "ctx B's quiet returned with ctx A's operation still pending")
	assert.Zero(t, p.qa.polls.Load(), "ctx B's quiet never waited on ctx A's queue")

	require.NoError(t, p.pw.Quiet(policy, nil))
	assert.True(t, slowOp.done.Load(), "PE-wide quiet waited for ctx A's operation")
	assert.Positive(t, p.qa.polls.Load())
	assert.Equal(t, uint64(0), p.qa.Pending())
	assert.Equal(t, uint64(0), p.qb.Pending())
}

func TestQuietScopes(t *testing.T) {
	tests := []struct {
		name     string
		scope    func(p *gatedPE) *quiet.Scope
		waitsOnA bool
	}{
		{"ctx A (has A's op)", func(p *gatedPE) *quiet.Scope { return p.ctxA }, true},
		{"ctx B (B's ops only)", func(p *gatedPE) *quiet.Scope { return p.ctxB }, false},
		{"PE-wide", func(p *gatedPE) *quiet.Scope { return p.pw }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newGatedPE()
			aOp := p.qa.post()
			for range 10 {
				p.qb.post()
			}
			require.NoError(t, tc.scope(p).Quiet(policy, nil))
			assert.Equal(t, tc.waitsOnA, aOp.done.Load(), "A's operation completed")
			assert.Equal(t, tc.waitsOnA, p.qa.polls.Load() > 0, "the quiet waited on A's queue")
			if tc.scope(p) != p.ctxA {
				assert.Equal(t, uint64(0), p.qb.Pending(), "B's operations completed")
			} else {
				assert.Zero(t, p.qb.polls.Load(), "ctx A's quiet never waited on B's queue")
			}
		})
	}
}

// TestQuietSnapshot: operations issued after quiet took its snapshot are not
// waited for, on the queue it is waiting on nor on a queue it has not
// reached yet. The late operation is issued from A's progress function,
// which quiet calls only once it waits on A, after its snapshot.
func TestQuietSnapshot(t *testing.T) {
	const giveUp = 30 * time.Second // a guard against a hang, not a measurement
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
			var late, qb *quiet.Queue
			var early atomic.Bool
			var issued atomic.Bool
			var qa *quiet.Queue
			qa = quiet.NewQueue("ctx A -> PE 1", func() {
				if issued.CompareAndSwap(false, true) {
					late.Issue(1) // never completes
					return
				}
				if !early.Swap(true) {
					qa.Complete(1)
				}
			})
			qb = quiet.NewQueue("ctx B -> PE 1", nil)
			late = qb
			if tc.lateOnQA {
				late = qa
			}
			pw := quiet.NewScope("PE-wide quiet")
			pw.Add(qa)
			pw.Add(qb)
			qa.Issue(1)
			done := make(chan error, 1)
			go func() { done <- pw.Quiet(policy, nil) }()
			select {
			case err := <-done:
				require.NoError(t, err)
				assert.True(t, issued.Load(), "the late operation was issued while quiet waited")
				assert.True(t, early.Load(), "the early operation completed")
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
	pol.Timeout = 30 * time.Millisecond // when the wait gives up is spin's (tested there with a fake clock)
	err := p.pw.Quiet(pol, nil)
	require.Error(t, err)
	require.ErrorIs(t, err, errs.ErrTimeout)
	assert.Equal(t, uint64(2), p.qa.Pending(), "the timed-out operations are still pending")
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
