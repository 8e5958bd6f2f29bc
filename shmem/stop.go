package shmem

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
)

// This file is how a PE's calls stop: Finalize called while other
// goroutines are inside goshmem calls, the PE's context (WithContext)
// done, and the per-call contexts of the ...Context forms.
//
// Every API call counts itself in flight (enter, leave). Finalize first
// refuses new calls (shut), then ends the blocked ones (halt: every wait
// loop of the PE reads it on each look) and waits until none is in
// flight. Only then does it quiet, synchronize and close anything.

// finalized says that the latest Init was finalized: calls then return
// ErrFinalized, not ErrNotInitialized.
var finalized atomic.Bool

// notInitialized is the error of a call op made with no runtime. After
// Finalize it matches ErrFinalized and, as before Init, ErrNotInitialized.
func notInitialized(op string) error {
	if finalized.Load() {
		return errs.Mark(errs.Hint(errs.ErrFinalized, "call shmem.Init to start again", -1, op, "goshmem is not initialized (Finalize was called)"),
			errs.ErrNotInitialized)
	}
	return errs.Hint(errs.ErrNotInitialized, "call shmem.Init first", -1, op, "goshmem is not initialized")
}

// enter is rt for a call that Finalize must wait for: it counts the call
// in flight until leave. A call refused (Finalize began, or this PE's
// context is done) is not counted.
func enter(op string) (*runtime, error) {
	r := current.Load()
	if r == nil {
		return nil, notInitialized(op)
	}
	r.calls.Add(1)
	// Finalize stores shut, then loads calls; a call adds to calls, then
	// loads shut: one of the two sees the other (sequentially consistent
	// atomics), so Finalize never closes under a call it did not count.
	if r.shut.Err() != nil {
		r.calls.Add(-1)
		return nil, r.shutErr(op)
	}
	return r, nil
}

// leave ends what enter counted.
func (r *runtime) leave() { r.calls.Add(-1) }

// enterData is enter for the calls that move data and complete it (RMA,
// atomics, signals, locks, Quiet, Fence): a call is counted only when the
// backend it reaches holds native resources (r.counted). Over shm alone
// such calls touch Go state and the mapped heaps, which Finalize retires
// to zero pages instead of unmapping, so one that runs on past Finalize
// never faults; not counting them keeps two locked instructions off the
// fastest calls. dk says what the call reaches (dataHost, dataDev,
// dataQuiet); leaveData must be given the same.
func enterData(op string, dk dataKind) (*runtime, error) {
	r := current.Load()
	if r == nil || r.gated(dk) {
		return enterDataSlow(op, r, dk)
	}
	return r, nil
}

// enterDataSlow is enterData's other cases, apart from its one-load
// common case: no runtime, a counted call, or a PE that is shut.
func enterDataSlow(op string, r *runtime, dk dataKind) (*runtime, error) {
	if r == nil {
		return nil, notInitialized(op)
	}
	if r.counted(dk) {
		return enter(op)
	}
	if r.shut.Stopped() {
		return nil, r.shutErr(op)
	}
	return r, nil
}

// gated says whether a data call of kind dk must take enterDataSlow: it is
// counted, or this PE is shut. One load of r.gate, whose bit dk is set
// for a counted kind at Init and every bit once stopPE ran.
func (r *runtime) gated(dk dataKind) bool { return r.gate.Load()>>dk&1 != 0 }

// leaveData ends what enterData counted.
func (r *runtime) leaveData(dk dataKind) {
	if r.counted(dk) {
		r.calls.Add(-1)
	}
}

// dataKind is what a data call reaches (enterData).
type dataKind uint8

const (
	dataHost  dataKind = iota // host arrays only
	dataDev                   // a GPU array (AllocDevice or registered)
	dataQuiet                 // every context's operations (Quiet, Fence)
)

// dataOf is dataDev for a GPU array, else dataHost.
func dataOf(b *block) dataKind {
	if b != nil && b.dev {
		return dataDev
	}
	return dataHost
}

// counted says whether a data call of kind dk is counted in flight: when
// the backend it may reach holds native resources that Finalize releases
// (set at Init, indexed by dataKind).
func (r *runtime) counted(dk dataKind) bool { return r.native[dk] }

// enterWorld is enter for BarrierAll and SyncAll: it takes the world
// team's lock instead of counting the call. Finalize takes that lock once
// it has halted this PE's calls, so it waits for such a call
// to leave, and one that takes the lock later sees shut and is refused.
// This keeps enter's and leave's two locked instructions off the barrier.
// The caller unlocks r.world when it is done.
func enterWorld(op string) (*runtime, error) {
	r := current.Load()
	if r == nil {
		return nil, notInitialized(op)
	}
	r.world.Lock()
	if r.shut.Err() != nil {
		r.world.Unlock()
		return nil, r.shutErr(op)
	}
	return r, nil
}

// shutErr is the error of a call op refused because Finalize began or this
// PE's context is done (it matches ErrFinalized or the context's Err).
func (r *runtime) shutErr(op string) error {
	return errs.Wrap(r.shut.Err(), r.me, op, "")
}

// stopPE ends this PE's calls with cause: new calls are refused, blocked
// ones return. The first cause stays.
func (r *runtime) stopPE(cause error) {
	r.shut.Stop(cause)
	r.gate.Store(^uint32(0))
	r.halt.Stop(r.shut.Err())
}

// drain waits until no call of this PE is in flight (those blocked have
// been halted; the others are short).
func (r *runtime) drain() {
	p := spin.Policy{Spins: 64, Yields: 64, MaxSleep: time.Millisecond}
	p.Until(func() bool { return r.calls.Load() == 0 }, nil)
}

// watchContext makes ctx's end stop this PE's calls (WithContext).
func (r *runtime) watchContext(ctx context.Context) {
	if ctx == nil || ctx.Done() == nil {
		return
	}
	r.unwatch = context.AfterFunc(ctx, func() {
		r.stopPE(errs.Wrap(ctx.Err(), r.me, "WithContext", "this PE's context is done"))
	})
}

// WithContext binds this PE to ctx. When ctx is done, every call of this
// PE that is blocked (a wait, a quiet, a barrier or another collective, a
// lock, an allocation's synchronization) returns an error that matches
// ctx.Err() with errors.Is, and so does every later call except Finalize.
// Finalize then releases what this PE holds and returns without waiting
// for the other PEs; they see a PE that left, named in their errors, as
// for a PE that exited.
func WithContext(ctx context.Context) Option { return func(c *config) { c.ctx = ctx } }

// waitPolicy is p for a call with ctx: p's waits then also end when ctx
// is done. A context that can never be done (context.Background) changes
// nothing.
func waitPolicy(p spin.Policy, ctx context.Context) spin.Policy {
	if ctx != nil && ctx.Done() != nil {
		p.Ctx = ctx
	}
	return p
}

// ctxErr is the error of op called with a ctx that is already done, or nil.
func (r *runtime) ctxErr(ctx context.Context, op string) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return errs.Wrap(err, r.me, op, "the call's context is done")
	}
	return nil
}

// comm is the runtime as the collectives' Comm for a call with ctx: its
// waits and quiets also end when ctx is done. A ctxComm comes from a pool
// (no allocation per call); the caller hands it back with done once the
// collective has returned.
func (r *runtime) comm(ctx context.Context) (c collectives.Comm, done func(collectives.Comm)) {
	if ctx == nil || ctx.Done() == nil {
		return r, noComm
	}
	cc := ctxComms.Get().(*ctxComm)
	*cc = ctxComm{runtime: r, wait: waitPolicy(r.collWait, ctx), pol: waitPolicy(r.policy, ctx)}
	return cc, putComm
}

var ctxComms = sync.Pool{New: func() any { return new(ctxComm) }}

func noComm(collectives.Comm) {}

func putComm(c collectives.Comm) {
	cc := c.(*ctxComm)
	*cc = ctxComm{}
	ctxComms.Put(cc)
}

// ctxComm is the runtime with a call's context (runtime.comm). Direct and
// CrowdedNode come from the embedded runtime.
type ctxComm struct {
	*runtime
	wait, pol spin.Policy
}

func (c *ctxComm) WaitGE(off uint64, v uint64, why collectives.Wait) error {
	return c.runtime.waitGE(c.wait, off, v, why)
}

func (c *ctxComm) Quiet() error { return c.all.Quiet(c.pol, c.checkPeers) }
