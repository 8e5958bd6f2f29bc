package shmem

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
)

var sprintf = fmt.Sprintf

// Ctx is a communication context (Ref: OpenSHMEM 1.6 §9.5): an independent
// stream of RMA, atomic and signal operations with its own completion scope.
// Ctx.Quiet waits only for this context's operations, so a thread's latency-
// sensitive traffic need not wait behind another context's bulk transfers;
// the PE-wide Quiet and Fence cover every context. A nil *Ctx in the ...Ctx
// calls means the default context. A context belongs to a team (Team):
// NewCtx's and the default context's is TeamWorld; on a context made by
// NewTeamCtx every PE number passed to a ...Ctx call is a number in that
// team.
type Ctx struct {
	r         *runtime
	id        int
	q         *quiet.Queue
	scope     *quiet.Scope
	destroyed atomic.Bool
	// team is the context's team; ct its members when PE numbers are
	// team-relative (nil: world numbers, no translation).
	team Team
	ct   *collectives.Team
	opts ctxOpts
}

// CtxOption configures NewCtx and NewTeamCtx: CtxPrivate, CtxSerialized,
// CtxNoStore.
type CtxOption func(*Ctx)

// NewCtx creates a context on this PE (not collective), on TeamWorld
// (Ref: OpenSHMEM 1.6 §9.5.1 shmem_ctx_create).
func NewCtx(opts ...CtxOption) (*Ctx, error) {
	r, err := enter("NewCtx")
	if err != nil {
		return nil, err
	}
	defer r.leave()
	c, err := r.newCtx("")
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func (r *runtime) newCtx(name string) (*Ctx, error) {
	r.ctxMu.Lock()
	id := r.nextID
	r.nextID++
	r.ctxMu.Unlock()
	if name == "" {
		name = sprintf("context %d", id)
	}
	q, err := r.c.NewQueue(name)
	if err != nil {
		return nil, err
	}
	c := &Ctx{r: r, id: id, q: q, scope: quiet.NewScope(name), team: TeamWorld}
	c.scope.Add(c.q)
	r.all.Add(c.q)
	return c, nil
}

// use resolves c (nil = default) against the live runtime. Every ...Ctx
// call that targets a PE passes its PE argument as pe: on a team context
// use checks it against the team and rewrites it to the world number, so
// the rest of the call (span, trFor, the transport) sees world numbers
// only. Calls without a target PE (Quiet, Fence) pass nil.
//
// The call is in flight (enterData) until the caller's leaveData, unless use
// fails. The fastest calls (rma.go, amo.go) call leaveData on each return
// path: a deferred call is measurable on them.
func (c *Ctx) use(op string, pe *int, dk dataKind) (*runtime, *Ctx, error) {
	r := current.Load()
	if c != nil || r == nil || r.gated(dk) {
		return c.useSlow(op, pe, dk)
	}
	return r, r.dflt, nil
}

// useSlow is use's other cases, apart from its one-load common case: a
// context, no runtime, a counted call, or a PE that is shut.
func (c *Ctx) useSlow(op string, pe *int, dk dataKind) (*runtime, *Ctx, error) {
	r, err := enterData(op, dk)
	if err != nil {
		return nil, nil, err
	}
	if c == nil {
		return r, r.dflt, nil
	}
	if err := c.check(r, op, pe); err != nil {
		r.leaveData(dk)
		return nil, nil, err
	}
	return r, c, nil
}

// check is use's checks of a context that is not the default one.
func (c *Ctx) check(r *runtime, op string, pe *int) error {
	if c.r != r {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "context %d belongs to an earlier Init", c.id)
	}
	if c.destroyed.Load() {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "context %d was destroyed", c.id)
	}
	if c.ct != nil && pe != nil {
		return c.teamPE(r, op, pe)
	}
	return nil
}

// Quiet waits until every operation issued on this context before the call
// is complete: puts and atomics are visible at their targets, non-blocking
// gets have filled their buffers, and buffers passed to PutNBI may be
// reused (Ref: OpenSHMEM 1.6 §9.8.2 shmem_ctx_quiet). Other contexts'
// operations are not waited for. Asynchronous failures of this context are
// returned here.
func (c *Ctx) Quiet() error {
	r, c, err := c.use("Ctx.Quiet", nil, dataQuiet)
	if err != nil {
		return err
	}
	defer r.leaveData(dataQuiet)
	qerr := c.scope.Quiet(r.policy, r.checkPeers)
	r.c.StoreLoadBarrier()
	return r.apiErr(qerr, "Ctx.Quiet")
}

// Fence orders this context's puts, atomics and signals to each PE: those
// issued before the fence are delivered to a PE before those issued after
// it (Ref: OpenSHMEM 1.6 §9.8.1 shmem_ctx_fence). It does not wait for
// completion.
func (c *Ctx) Fence() error {
	r, c, err := c.use("Ctx.Fence", nil, dataQuiet)
	if err != nil {
		return err
	}
	defer r.leaveData(dataQuiet)
	return r.fence(c.q)
}

// Destroy quiets the context and releases it; using it afterwards is an
// error. The default context cannot be destroyed.
func (c *Ctx) Destroy() error {
	r, c, err := c.use("Ctx.Destroy", nil, dataQuiet)
	if err != nil {
		return err
	}
	defer r.leaveData(dataQuiet)
	if c == r.dflt {
		return errs.New(errs.ErrInvalidArgument, r.me, "Ctx.Destroy", "the default context cannot be destroyed")
	}
	qerr := c.scope.Quiet(r.policy, r.checkPeers)
	if !r.closeCtx(c) {
		return errs.New(errs.ErrInvalidArgument, r.me, "Ctx.Destroy", "context %d was already destroyed", c.id)
	}
	return qerr
}

// Quiet waits for completion of every operation this PE issued before the
// call, on every context (Ref: OpenSHMEM 1.6 §9.8.2 shmem_quiet): puts and
// atomics are visible at their targets, non-blocking gets have filled their
// buffers, PutNBI sources may be reused. On the shm transport operations
// complete as they are issued, so this costs one store-load barrier.
func Quiet() error {
	r, err := enterData("Quiet", dataQuiet)
	if err != nil {
		return err
	}
	defer r.leaveData(dataQuiet)
	return r.apiErr(r.quietAll(), "Quiet")
}

// Fence orders this PE's puts, atomics and signals to each target PE, on
// every context: those issued before it are delivered to a PE before those
// issued after it (Ref: OpenSHMEM 1.6 §9.8.1 shmem_fence). It does not wait
// for completion (that is Quiet).
func Fence() error {
	r, err := enterData("Fence", dataQuiet)
	if err != nil {
		return err
	}
	defer r.leaveData(dataQuiet)
	for _, q := range r.all.Queues() {
		if err := r.fence(q); err != nil {
			return r.apiErr(err, "Fence")
		}
	}
	return nil
}
