package shmem

import (
	"github.com/goshmem/goshmem/internal/errs"
)

// ctxOpts are the options a context was made with.
type ctxOpts uint8

const (
	ctxPrivate ctxOpts = 1 << iota
	ctxSerialized
	ctxNoStore
)

// The context options (Ref: OpenSHMEM 1.6 §9.5.1 SHMEM_CTX_PRIVATE,
// SHMEM_CTX_SERIALIZED, SHMEM_CTX_NOSTORE). goshmem accepts them as hints:
// a context behaves the same with or without them (no locking is skipped
// for Private or Serialized, and NoStore is not enforced), so a program
// that keeps the promises they make is correct either way.
var (
	// CtxPrivate: the context is used only by the goroutine that made it.
	CtxPrivate CtxOption = func(c *Ctx) { c.opts |= ctxPrivate }
	// CtxSerialized: the program never calls the context from two
	// goroutines at once.
	CtxSerialized CtxOption = func(c *Ctx) { c.opts |= ctxSerialized }
	// CtxNoStore: the program issues no puts, atomics or signals on the
	// context (gets and fetches only).
	CtxNoStore CtxOption = func(c *Ctx) { c.opts |= ctxNoStore }
)

// NewTeamCtx creates a context on team t (not collective; Ref: OpenSHMEM
// 1.6 §9.5.2 shmem_team_create_ctx). Every PE number passed to a ...Ctx
// call on it (PutCtx, GetCtx, the atomics, PutSignalCtx, ...) is a number
// in t: PE i is t's member i, and a number outside [0, t.NPEs()) is
// ErrPEOutOfRange naming that range. Otherwise the context is as NewCtx's:
// its own completion scope (Ctx.Quiet), covered by the PE-wide Quiet,
// Fence and barriers. Destroying t destroys the context (Team.Destroy). t
// must be valid on this PE: TeamInvalid, a destroyed team and a team this
// PE is not in are ErrInvalidArgument.
func NewTeamCtx(t Team, opts ...CtxOption) (*Ctx, error) {
	const op = "NewTeamCtx"
	r, err := enter(op)
	if err != nil {
		return nil, err
	}
	defer r.leave()
	if t == TeamInvalid {
		return nil, errs.New(errs.ErrInvalidArgument, r.me, op, "TeamInvalid has no contexts")
	}
	if _, err := r.team(t, op); err != nil {
		return nil, err
	}
	c, err := r.newCtx(sprintf("context on %s", t.name()))
	if err != nil {
		return nil, err
	}
	c.team = t
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	// Join the team's list under teamsMu, so a Team.Destroy that got there
	// first (another goroutine) is seen, and one that comes later finds c.
	r.teamsMu.Lock()
	e := r.teams[t.id]
	if e != nil && t != TeamWorld {
		c.ct = e.ct // TeamWorld's numbers are world numbers: no translation
		if t.id >= firstTeamID {
			if e.ctxs == nil {
				e.ctxs = map[*Ctx]struct{}{}
			}
			e.ctxs[c] = struct{}{}
		}
	}
	r.teamsMu.Unlock()
	if e == nil {
		r.closeCtx(c)
		return nil, errs.New(errs.ErrInvalidArgument, r.me, op, "%s was destroyed while its context was made", t.name())
	}
	return c, nil
}

// Team returns the team c was made on (Ref: OpenSHMEM 1.6 §9.5.4
// shmem_ctx_get_team): TeamWorld for the default context (a nil *Ctx) and
// for NewCtx's contexts; TeamInvalid once c is destroyed (by Ctx.Destroy,
// or by destroying its team) or after the Init it belongs to has ended.
func (c *Ctx) Team() Team {
	if c == nil {
		return TeamWorld
	}
	if c.destroyed.Load() || c.r != current.Load() {
		return TeamInvalid
	}
	return c.team
}

// teamPE checks *pe, a number in c's team, and rewrites it to the world
// number (the one translation every ...Ctx call goes through, from use).
func (c *Ctx) teamPE(r *runtime, op string, pe *int) error {
	if uint(*pe) >= uint(c.ct.Size) {
		return errs.New(errs.ErrPEOutOfRange, r.me, op, "pe = %d; must be in [0, %d) (a number in %s, the context's team)",
			*pe, c.ct.Size, c.team.name())
	}
	*pe = c.ct.PE(*pe)
	return nil
}

// closeCtx releases c (once: false if it already was) and drops it from
// its team's list.
func (r *runtime) closeCtx(c *Ctx) bool {
	if c.destroyed.Swap(true) {
		return false
	}
	r.all.Remove(c.q)
	r.c.CloseQueue(c.q)
	if c.team.id >= firstTeamID {
		r.teamsMu.Lock()
		if e := r.teams[c.team.id]; e != nil {
			delete(e.ctxs, c)
		}
		r.teamsMu.Unlock()
	}
	return true
}

// teamCtxs is a snapshot of e's contexts.
func (r *runtime) teamCtxs(e *teamEntry) []*Ctx {
	r.teamsMu.RLock()
	defer r.teamsMu.RUnlock()
	list := make([]*Ctx, 0, len(e.ctxs))
	for c := range e.ctxs {
		list = append(list, c)
	}
	return list
}

// quietTeamCtxs completes the operations of e's contexts (before the
// team's destroying sync, so members see them once Destroy returns).
func (r *runtime) quietTeamCtxs(e *teamEntry) error {
	var errList []error
	for _, c := range r.teamCtxs(e) {
		if !c.destroyed.Load() {
			errList = append(errList, c.scope.Quiet(r.policy, r.checkPeers))
		}
	}
	return joinErrors(errList...)
}

// closeTeamCtxs destroys e's contexts (its team is gone).
func (r *runtime) closeTeamCtxs(e *teamEntry) {
	for _, c := range r.teamCtxs(e) {
		r.closeCtx(c)
	}
}
