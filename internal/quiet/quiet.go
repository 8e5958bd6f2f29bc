// Package quiet is goshmem's completion model: which operations have been
// issued and which have completed, per queue, per context, and PE-wide.
//
// A Queue is one ordered channel to the network or a peer (a QP, a libfabric
// endpoint, a proxy ring, a memory-copy stream). Each operation is counted
// when issued (Issue) and again when the transport learns it completed
// (Complete). Quiet on a scope snapshots every queue's issued count and waits
// until the completed count has reached the snapshot:
//
//	issued:    read once, with acquire order, before waiting
//	completed: read repeatedly until completed >= snapshot
//
// Operations issued after the snapshot (by other goroutines) are not waited
// for: quiet guarantees completion of what was issued before it was called
// (Ref: OpenSHMEM 1.6 §9.8.2 shmem_quiet). A failure reported by a transport
// (Fail) is returned once, by the next quiet of any scope that contains the
// queue (a context's or the PE-wide one, whichever comes first), and then
// cleared: asynchronous errors are never dropped, nor reported twice.
//
// Scopes: a Ctx holds its own queues (Ctx.Quiet = Scope.Quiet over those
// only); the Domain holds every queue of the PE (PE-wide Quiet).
// Programs use it through shmem.Quiet, shmem.Fence and their Ctx forms.
package quiet

import (
	"sync"
	"sync/atomic"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
)

// Queue counts the operations of one ordered channel.
type Queue struct {
	name      string
	issued    atomic.Uint64
	completed atomic.Uint64
	// progress, when set, is called while waiting: transports with manual
	// progress drive their completion queue from it.
	progress func()

	mu     sync.Mutex
	err    error
	hasErr atomic.Bool // err != nil; lets Quiet skip the mutex when clean
}

// NewQueue returns a queue named for diagnostics ("ctx 3 -> PE 1 (ofi)").
// progress may be nil.
func NewQueue(name string, progress func()) *Queue {
	return &Queue{name: name, progress: progress}
}

// Name is the diagnostic name.
func (q *Queue) Name() string { return q.name }

// Issue counts n operations as issued and returns the new issued count (the
// ticket the last of them completes at).
func (q *Queue) Issue(n uint64) uint64 { return q.issued.Add(n) }

// Complete counts n operations as completed.
func (q *Queue) Complete(n uint64) { q.completed.Add(n) }

// Fail records an asynchronous failure and counts the operation as
// completed (it will not complete otherwise). The error surfaces at the next
// quiet that covers this queue.
func (q *Queue) Fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	} else {
		q.err = errors.CombineErrors(q.err, err)
	}
	q.hasErr.Store(true)
	q.mu.Unlock()
	q.completed.Add(1)
}

// Pending is issued - completed, read in that order.
func (q *Queue) Pending() uint64 {
	i := q.issued.Load()
	return i - q.completed.Load()
}

// Counts returns (issued, completed).
func (q *Queue) Counts() (issued, completed uint64) {
	return q.issued.Load(), q.completed.Load()
}

func (q *Queue) takeErr() error {
	if !q.hasErr.Load() {
		return nil
	}
	q.mu.Lock()
	err := q.err
	q.err = nil
	q.hasErr.Store(false)
	q.mu.Unlock()
	return err
}

// Scope is a set of queues completed together: a context's queues, or every
// queue of the PE. It is safe for concurrent use.
type Scope struct {
	mu sync.Mutex // serializes Add and Remove
	// queues is replaced, never modified in place, so Quiet reads it with
	// one atomic load and no lock.
	queues atomic.Pointer[[]*Queue]
	name   string
}

// NewScope returns an empty scope named for diagnostics.
func NewScope(name string) *Scope { return &Scope{name: name} }

// Add puts q in the scope.
func (s *Scope) Add(q *Queue) {
	s.mu.Lock()
	qs := append(s.Queues(), q)
	s.queues.Store(&qs)
	s.mu.Unlock()
}

// Remove takes q out of the scope (a destroyed context).
func (s *Scope) Remove(q *Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.load()
	for i, x := range old {
		if x == q {
			qs := append(append([]*Queue(nil), old[:i]...), old[i+1:]...)
			s.queues.Store(&qs)
			return
		}
	}
}

func (s *Scope) load() []*Queue {
	if p := s.queues.Load(); p != nil {
		return *p
	}
	return nil
}

// Queues returns a snapshot of the scope's queues.
func (s *Scope) Queues() []*Queue {
	return append([]*Queue(nil), s.load()...)
}

// Quiet waits until every operation issued on the scope's queues before the
// call has completed, then returns the asynchronous failures recorded on
// them (the first as the error, the others attached as secondary errors,
// shown by %+v). With a timeout in p, a stuck queue gives ErrTimeout naming
// the queue and its counts. check (may be nil) is consulted on the slow path.
func (s *Scope) Quiet(p spin.Policy, check func() error) error {
	qs := s.load()
	// Snapshot every queue's issued count before waiting on any of them, so
	// operations issued on a later queue while an earlier one drains are not
	// waited for (the model in the package comment).
	var buf [16]uint64
	targets := buf[:0]
	for _, q := range qs {
		targets = append(targets, q.issued.Load())
	}
	var firstErr error
	for i, q := range qs {
		target := targets[i]
		if q.completed.Load() < target {
			done := func() bool {
				if q.progress != nil {
					q.progress()
				}
				return q.completed.Load() >= target
			}
			ok, err := p.Until(done, check)
			if err != nil {
				return err
			}
			if !ok {
				return errs.New(errs.ErrTimeout, -1, "quiet",
					"%s: queue %q completed %d of %d issued operations within GOSHMEM_TIMEOUT=%v",
					s.name, q.name, q.completed.Load(), target, p.Timeout)
			}
		}
		if err := q.takeErr(); err != nil {
			// takeErr cleared it: keep every queue's failure (the first as
			// the error, later ones as secondary errors), never drop one.
			firstErr = errors.CombineErrors(firstErr, errors.Wrapf(err, "%s: queue %q", s.name, q.name))
		}
	}
	return firstErr
}
