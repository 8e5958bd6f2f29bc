package shmem

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
)

// Lock is a distributed mutual-exclusion lock (Ref: OpenSHMEM 1.6 §9.11
// shmem_set_lock, shmem_test_lock, shmem_clear_lock): a symmetric object,
// created collectively by NewLock, that one PE at a time holds. The PE
// holds it, not the goroutine: any goroutine of the holding PE may Clear
// it, and while one goroutine of a PE holds it (or waits for it) the
// PE's other goroutines calling Set wait behind it.
//
// It is a queue lock (MCS): a PE that finds the lock taken appends
// itself to a queue with one remote swap and then waits on a word in its
// own symmetric memory, which the PE ahead of it sets when it clears the
// lock. PEs get the lock in the order they joined the queue, so no PE
// starves, and a hand-over costs one remote store from the releasing PE
// to the next one; waiting PEs poll only their own memory (with the
// spin, yield, sleep policy of every wait, bounded by GOSHMEM_TIMEOUT).
// The lock uses the transports' atomics only, so it works on shm and on
// ofi alike.
//
// Ordering: Clear completes every operation this PE issued before it
// (a Quiet, on every context) before it releases the lock, so the next
// holder sees the data this PE put while it held it; Set and a
// successful Test have acquire order.
type Lock struct {
	a    Array[uint64]
	home int // the PE that holds the queue's tail word
	// state is this PE's relation to the lock, which its goroutines share.
	state atomic.Uint32
	// pred is the PE ahead of this one in the queue while it waits (for
	// the timeout message).
	pred atomic.Int32
}

// A lock's symmetric words, each on its own cache line (word indexes into
// Lock.a, which is 64-byte aligned).
const (
	// lockTail, on the home PE: PE+1 of the last PE in the queue, 0 when
	// the lock is free. Every Set swaps itself in here.
	lockTail = 0
	// lockNext: PE+1 of the PE queued right behind this one, written
	// by that PE; 0 while there is none.
	lockNext = 8
	// lockGranted: nonzero (PE+1 of the releasing PE) once the PE ahead
	// handed the lock to this one.
	lockGranted = 16
	lockWords   = 24
)

// The lock's fetching atomics (the swap and compare-and-swap on the tail
// word, the fetch of a timeout message) go on no queue (nil): a fetching
// atomic returns once it has its result, so no queue has to
// count it; on a queue, ofi would first wait for the delivery of every
// write this PE issued on it (its read-after-write rule: a fetch must see
// this PE's earlier writes), which for the lock is the hand-over just sent
// to the next PE, one round trip on every Clear-then-Set. The lock never
// reads a word it wrote with a non-fetching atomic (its writes go to the
// next and granted words, read only by their owner), so it needs no such
// wait. The non-fetching stores (link, grant) stay on the default queue,
// so Quiet completes them.

// Lock.state values.
const (
	lockFree   = iota // this PE neither holds nor waits for the lock
	lockBusy          // a goroutine of this PE is in Set, Test or Clear
	lockHeld          // this PE holds the lock
	lockQueued        // a Set timed out: this PE is still in the queue
)

var lockStateNames = [...]string{"free", "being acquired or released", "held", "queued (a Set timed out)"}

// NewLock creates a lock, free, on every PE. It is collective like Alloc
// (every PE calls it in the same order as its other heap calls) and ends
// with a barrier, so any PE may Set the lock as soon as NewLock returns
// there. It takes a few cache lines of symmetric heap per PE.
func NewLock() (*Lock, error) {
	r, err := enter("NewLock")
	if err != nil {
		return nil, err
	}
	defer r.leave()
	a, err := hostAlloc[uint64](r, opNewLock, lockWords, heapAlign, lockWords*8, lockWords, nil)
	if err != nil {
		return nil, err
	}
	// Every PE derives the same home from the symmetric offset; spreading
	// homes spreads the swaps of many locks over the PEs.
	home := int(((a.b.off - heapOff) / heapAlign) % uint64(r.npes))
	return &Lock{a: a, home: home}, nil
}

// use resolves the runtime for a lock operation. Like the atomics it is
// made of, the call is in flight (enterData) until the caller's leaveData,
// unless use fails.
func (l *Lock) use(op string) (*runtime, error) {
	r, err := enterData(op, dataHost)
	if err != nil {
		return nil, err
	}
	if err := l.check(r, op); err != nil {
		r.leaveData(dataHost)
		return nil, err
	}
	return r, nil
}

// check says what makes l unusable by op, or nil.
func (l *Lock) check(r *runtime, op string) error {
	switch {
	case l == nil || l.a.b == nil:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "a nil or zero Lock: create locks with shmem.NewLock")
	case l.a.b.gen != r.gen:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "the lock belongs to an earlier Init")
	case l.a.b.freed.Load():
		return errs.Hint(errs.ErrInvalidArgument, "do not use a lock after Free", r.me, op,
			"the lock at heap offset %d was freed", l.a.b.off-heapOff)
	}
	return nil
}

func (l *Lock) off(word int) uint64 { return l.a.b.off + uint64(word)*8 }

func (l *Lock) word(r *runtime, word int) *uint64 {
	return (*uint64)(unsafe.Pointer(r.localPtr(l.off(word))))
}

// Set waits until this PE holds the lock (shmem_set_lock). PEs get it in
// the order they asked for it. If this PE already holds it, Set waits for
// a Clear by another of its goroutines. The data other PEs put while they
// held the lock, before their Clear, is visible once Set returns.
//
// With GOSHMEM_TIMEOUT set, a wait longer than that fails with ErrTimeout
// naming the lock and the PE ahead in the queue; this PE then stays in
// the queue, and a later Set (or Test) takes up the wait where it ended.
func (l *Lock) Set() error { return l.SetContext(context.Background()) }

// SetContext is Set that also ends when ctx is done, with an error that
// matches ctx.Err() (errors.Is). As after a timeout, this PE then stays in
// the lock's queue if it had joined it: a later Set (or Test) takes up the
// wait, and the other PEs' Set and Clear keep working.
func (l *Lock) SetContext(ctx context.Context) (err error) {
	r, err := l.use("Lock.Set")
	if err != nil {
		return err
	}
	defer func() { err = r.apiErr(err, "Lock.Set"); r.leaveData(dataHost) }()
	pol := &r.policy
	if ctx.Done() != nil {
		if err := r.ctxErr(ctx, "Lock.Set"); err != nil {
			return err
		}
		p := waitPolicy(r.policy, ctx)
		pol = &p
	}
	queued, err := l.enter(r, "Lock.Set", pol)
	if err != nil {
		return err
	}
	if !queued {
		var pred int
		if pred, err = l.join(r); err != nil {
			l.state.Store(lockFree)
			return err
		}
		if pred < 0 { // the lock was free
			l.state.Store(lockHeld)
			return nil
		}
		l.pred.Store(int32(pred))
		// Link behind pred; it hands the lock over when it clears it.
		if _, err := r.tr[pred].Atomic(r.dflt.q, transport.AMOSet, 8, pred, l.off(lockNext), uint64(r.me+1), 0); err != nil {
			l.state.Store(lockQueued)
			return errs.Wrap(err, r.me, "Lock.Set", "linking behind PE %d in the queue of the lock at heap offset %d", pred, l.a.b.off-heapOff)
		}
	}
	if _, err := l.await(r, lockGranted, "Lock.Set", pol); err != nil {
		l.state.Store(lockQueued)
		return err
	}
	l.take(r)
	return nil
}

// enter claims the lock's local state for one goroutine: from free
// (queued = false) or from a Set that timed out (queued = true). It waits
// while another goroutine of this PE holds the lock or is inside Set,
// Test or Clear.
func (l *Lock) enter(r *runtime, op string, pol *spin.Policy) (queued bool, err error) {
	claim := func() bool {
		switch l.state.Load() {
		case lockFree:
			if l.state.CompareAndSwap(lockFree, lockBusy) {
				queued = false
				return true
			}
		case lockQueued:
			if l.state.CompareAndSwap(lockQueued, lockBusy) {
				queued = true
				return true
			}
		}
		return false
	}
	if claim() {
		return queued, nil
	}
	ok, err := pol.Until(claim, r.checkPeers)
	if err != nil {
		return false, errs.Wrap(err, r.me, op, "waiting for this PE's other goroutine to clear the lock")
	}
	if !ok {
		return false, errs.New(errs.ErrTimeout, r.me, op,
			"the lock at heap offset %d is %s by this PE (another goroutine) after GOSHMEM_TIMEOUT=%v",
			l.a.b.off-heapOff, l.stateName(), r.policy.Timeout)
	}
	return queued, nil
}

func (l *Lock) stateName() string {
	if s := l.state.Load(); int(s) < len(lockStateNames) {
		return lockStateNames[s]
	}
	return "unknown"
}

// join appends this PE to the queue: pred is the PE that was last, or -1
// when the lock was free (this PE now holds it).
func (l *Lock) join(r *runtime) (int, error) {
	prev, err := r.tr[l.home].Atomic(nil, transport.AMOSwap, 8, l.home, l.off(lockTail), uint64(r.me+1), 0)
	if err != nil {
		return 0, errs.Wrap(err, r.me, "Lock.Set", "joining the queue of the lock at heap offset %d (home PE %d)", l.a.b.off-heapOff, l.home)
	}
	if prev > uint64(r.npes) {
		return 0, l.corrupt(r, "Lock.Set", "tail", prev)
	}
	return int(prev) - 1, nil
}

// take makes this PE the holder after the PE ahead granted the lock.
// Nobody writes the granted word again until this PE queues anew (its
// predecessor wrote it once, and this PE read it), so a plain store resets
// it, ordered before that next queueing by program order.
func (l *Lock) take(r *runtime) {
	atomic.StoreUint64(l.word(r, lockGranted), 0)
	l.state.Store(lockHeld)
}

// await waits until this PE's word of the lock is nonzero and returns it.
// Peers write it with the transports' atomics; on ofi each look drives
// the transport's progress so the write lands while this thread waits.
func (l *Lock) await(r *runtime, word int, op string, pol *spin.Policy) (uint64, error) {
	p := l.word(r, word)
	if v := atomic.LoadUint64(p); v != 0 {
		return v, nil
	}
	var looks waitLooks
	var v uint64
	ok, err := pol.Until(func() bool {
		r.spinLook(&looks)
		v = atomic.LoadUint64(p)
		return v != 0
	}, r.checkPeers)
	r.endSpin(&looks)
	if err != nil {
		return 0, errs.Wrap(err, r.me, op, "waiting on the lock at heap offset %d", l.a.b.off-heapOff)
	}
	if !ok {
		last := "unknown"
		if t, err := r.tr[l.home].Atomic(nil, transport.AMOFetch, 8, l.home, l.off(lockTail), 0, 0); err == nil && t != 0 {
			last = sprintf("PE %d", int(t)-1)
			if int(t)-1 == r.me {
				last += " (this PE)"
			}
		}
		if word == lockGranted {
			return 0, errs.Hint(errs.ErrTimeout, "the holder must call Clear; this PE stays queued: Set again to keep waiting", r.me, op,
				"waited GOSHMEM_TIMEOUT=%v for the lock at heap offset %d (home PE %d): PE %d, ahead of this PE in its queue, has not handed it over; the last PE queued is %s",
				r.policy.Timeout, l.a.b.off-heapOff, l.home, l.pred.Load(), last)
		}
		return 0, errs.Hint(errs.ErrTimeout, "this PE still holds the lock: call Clear again", r.me, op,
			"waited GOSHMEM_TIMEOUT=%v for the PE queued behind this one on the lock at heap offset %d (home PE %d) to link itself; the last PE queued is %s",
			r.policy.Timeout, l.a.b.off-heapOff, l.home, last)
	}
	if v > uint64(r.npes) {
		return 0, l.corrupt(r, op, "own", v)
	}
	return v, nil
}

func (l *Lock) corrupt(r *runtime, op, which string, v uint64) error {
	return errs.Hint(errs.ErrInvalidArgument, "only Set, Test and Clear may write a lock's memory", r.me, op,
		"the lock at heap offset %d is corrupt: its %s word holds %d, not a PE number + 1 in [1, %d]",
		l.a.b.off-heapOff, which, v, r.npes)
}

// Test takes the lock if that needs no waiting and reports whether it did
// (shmem_test_lock, which returns 0 when it took the lock). It returns
// false, without waiting, when another PE holds the lock or PEs are
// queued for it, and when this PE already holds it or another of its
// goroutines is in Set, Test or Clear. After a Set that timed out, Test
// takes the lock if it has been handed over meanwhile. A true result has
// Set's acquire order.
func (l *Lock) Test() (acquired bool, err error) {
	r, err := l.use("Lock.Test")
	if err != nil {
		return false, err
	}
	defer func() { err = r.apiErr(err, "Lock.Test"); r.leaveData(dataHost) }()
	switch l.state.Load() {
	case lockFree:
		if !l.state.CompareAndSwap(lockFree, lockBusy) {
			return false, nil
		}
		me1 := uint64(r.me + 1)
		old, err := r.tr[l.home].Atomic(nil, transport.AMOCompareSwap, 8, l.home, l.off(lockTail), me1, 0)
		if err != nil || old != 0 {
			l.state.Store(lockFree)
			if err != nil {
				return false, errs.Wrap(err, r.me, "Lock.Test", "the lock at heap offset %d (home PE %d)", l.a.b.off-heapOff, l.home)
			}
			return false, nil
		}
		l.state.Store(lockHeld)
		return true, nil
	case lockQueued:
		if !l.state.CompareAndSwap(lockQueued, lockBusy) {
			return false, nil
		}
		var looks waitLooks
		r.spinLook(&looks) // on ofi: let a hand-over that arrived land
		r.endSpin(&looks)
		if atomic.LoadUint64(l.word(r, lockGranted)) == 0 {
			l.state.Store(lockQueued)
			return false, nil
		}
		l.take(r)
		return true, nil
	}
	return false, nil
}

// Clear releases the lock (shmem_clear_lock). It first completes every
// operation this PE issued before it, on every context (Quiet), so the
// next holder sees them; then it hands the lock to the PE queued next,
// if any, with one remote store. Any goroutine of the holding PE may call
// it. If that Quiet reports a failure, Clear returns it and this PE keeps
// the lock (call Clear again). Clear when this PE does not hold the lock
// is ErrInvalidArgument.
func (l *Lock) Clear() (err error) {
	r, err := l.use("Lock.Clear")
	if err != nil {
		return err
	}
	defer func() { err = r.apiErr(err, "Lock.Clear"); r.leaveData(dataHost) }()
	if !l.state.CompareAndSwap(lockHeld, lockBusy) {
		return errs.Hint(errs.ErrInvalidArgument, "Clear a lock once per Set or successful Test", r.me, "Lock.Clear",
			"the lock at heap offset %d is not held by this PE (it is %s here)", l.a.b.off-heapOff, l.stateName())
	}
	if err := r.quietAll(); err != nil {
		l.state.Store(lockHeld)
		return errs.Wrap(err, r.me, "Lock.Clear", "completing this PE's operations before releasing the lock (still held)")
	}
	me1 := uint64(r.me + 1)
	next := atomic.LoadUint64(l.word(r, lockNext))
	if next == 0 {
		// Nobody linked behind this PE yet: if it is still the tail, the
		// lock becomes free; else a PE swapped itself in and is about to
		// link, so wait for it.
		old, err := r.tr[l.home].Atomic(nil, transport.AMOCompareSwap, 8, l.home, l.off(lockTail), 0, me1)
		if err != nil {
			l.state.Store(lockHeld)
			return errs.Wrap(err, r.me, "Lock.Clear", "the lock at heap offset %d (home PE %d; still held)", l.a.b.off-heapOff, l.home)
		}
		if old == me1 {
			l.state.Store(lockFree)
			return nil
		}
		if next, err = l.await(r, lockNext, "Lock.Clear", &r.policy); err != nil {
			l.state.Store(lockHeld)
			return err
		}
	}
	if next > uint64(r.npes) {
		l.state.Store(lockHeld)
		return l.corrupt(r, "Lock.Clear", "next", next)
	}
	// The successor wrote the next word once, and this PE read it; no one
	// writes it again before this PE queues anew.
	atomic.StoreUint64(l.word(r, lockNext), 0)
	succ := int(next) - 1
	_, err = r.tr[succ].Atomic(r.dflt.q, transport.AMOSet, 8, succ, l.off(lockGranted), me1, 0)
	l.state.Store(lockFree)
	if err != nil {
		return errs.Wrap(err, r.me, "Lock.Clear", "handing the lock at heap offset %d to PE %d", l.a.b.off-heapOff, succ)
	}
	return nil
}

// Free releases the lock's memory on every PE. It is collective like
// Array.Free (it begins with a barrier) and fails with ErrInvalidArgument
// on every PE (nothing freed) when a PE holds the lock or is queued for it
// (ErrNotSymmetric when only some PEs do). Freeing twice is
// ErrInvalidArgument.
func (l *Lock) Free() error {
	r, err := enter("Lock.Free")
	if err != nil {
		return err
	}
	defer r.leave()
	var off, status uint64
	switch {
	case l == nil || l.a.b == nil:
		status = 1
	case l.a.b.gen != r.gen:
		status = 2
	case l.a.b.freed.Load():
		status = 3
	case l.state.Load() != lockFree:
		status = lockFreeBusy
		off = l.a.b.off
	default:
		off = l.a.b.off
	}
	r.world.Lock()
	defer r.world.Unlock()
	return r.heapCollective(opLockFree, off, status, func() (uint64, error) {
		switch status {
		case 1:
			return 0, errs.New(errs.ErrInvalidArgument, r.me, "Lock.Free", "a nil or zero Lock: create locks with shmem.NewLock")
		case lockFreeBusy:
			return 0, errs.Hint(errs.ErrInvalidArgument, "Clear the lock (every PE) before freeing it", r.me, "Lock.Free",
				"the lock at heap offset %d is %s on this PE", off-heapOff, l.stateName())
		}
		var b *block
		if l != nil {
			b = l.a.b
		}
		return off, r.free(b, status, "uint64 (lock words)")
	}, nil)
}

// lockFreeBusy is Lock.Free's status for a lock this PE holds or waits for.
const lockFreeBusy = 4
