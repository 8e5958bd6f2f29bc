package shmem

import (
	"context"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/gpulib"
)

// Team is a set of PEs that run collectives together (Ref: OpenSHMEM 1.6
// §9.4 teams). A Team value is a handle local to this PE. TeamWorld,
// TeamShared and TeamNode are predefined; TeamSplitStrided and TeamSplit2D
// make others. The zero Team is TeamInvalid.
type Team struct{ id int32 }

var (
	// TeamWorld is every PE of the job, numbered as MyPE.
	TeamWorld = Team{id: 1}
	// TeamShared is the PEs whose symmetric heaps this PE can load and
	// store (SHMEM_TEAM_SHARED): the PEs of its node, numbered in world
	// order. Every node peer's heap is mapped at Init whichever transport
	// carries RMA (GOSHMEM_TRANSPORT=ofi included), so TeamShared has the
	// members of TeamNode; the two handles name one team (collectives on
	// either are collectives on the same team). Each node has its own.
	TeamShared = Team{id: 2}
	// TeamNode is the PEs of this PE's node, numbered in world order
	// (NVSHMEM's NVSHMEMX_TEAM_NODE). When the node's PEs are not evenly
	// strided in the world the team is held as a list of its members;
	// host collectives work alike, but it has no DeviceID.
	TeamNode = Team{id: 3}
	// TeamInvalid is returned to PEs that are not members of a new team.
	TeamInvalid = Team{}
)

// firstTeamID is the id of the first team a split makes (after the
// predefined ones).
const firstTeamID = 4

// Device team handles of the predefined teams: the header's
// GOSHMEM_TEAM_WORLD, GOSHMEM_TEAM_SHARED and GOSHMEM_TEAM_NODE (defs.h;
// consts_test.go checks). predefinedTeams makes TeamShared/TeamNode first
// after the world, so collectives.Predefined gives it this slot.
const (
	deviceTeamWorld  = 0
	deviceTeamShared = 1
	deviceTeamNode   = deviceTeamShared
)

// Valid reports whether t is a team this PE belongs to.
func (t Team) Valid() bool {
	r := current.Load()
	return r != nil && r.teamOf(t) != nil // under teamsMu: splits may run concurrently
}

// MyPE is this PE's number in t, or -1 when t is not valid here.
func (t Team) MyPE() int {
	if r := current.Load(); r != nil {
		if ct := r.teamOf(t); ct != nil {
			return ct.Me
		}
	}
	return -1
}

// DeviceID is the value kernels pass as goshmem_team_t for this team (its
// slot, the row of the device team table; below GOSHMEM_MAX_TEAMS), or -1
// when t is not valid here, there is no GPU heap, or t is not strided in
// the world (a listed TeamNode and the teams split from it: kernels take
// strided teams).
func (t Team) DeviceID() int {
	if r := current.Load(); r != nil && r.c.GPU != nil {
		if ct := r.teamOf(t); ct != nil && ct.Strided() {
			return ct.Slot()
		}
	}
	return -1
}

// NPEs is the number of PEs in t, or -1 when t is not valid here.
func (t Team) NPEs() int {
	if r := current.Load(); r != nil {
		if ct := r.teamOf(t); ct != nil {
			return ct.Size
		}
	}
	return -1
}

// TranslatePE returns the number in team dest of the PE numbered pe in t,
// or -1 if that PE is not in dest (shmem_team_translate_pe).
func (t Team) TranslatePE(pe int, dest Team) int {
	r := current.Load()
	if r == nil {
		return -1
	}
	src, dst := r.teamOf(t), r.teamOf(dest)
	if src == nil || dst == nil || pe < 0 || pe >= src.Size {
		return -1
	}
	return dst.Index(src.PE(pe))
}

// Destroy releases the team (collective over its members, after the team's
// last collective: it ends with a sync that checks every member destroys
// it). The team's contexts (NewTeamCtx) are quieted and destroyed first,
// private ones included: afterwards they report TeamInvalid and every call
// on them fails (Ref: OpenSHMEM 1.6 §9.4.8 shmem_team_destroy: it destroys
// the team's shareable contexts); as with Ctx.Destroy, no goroutine may be
// using them at the time. TeamInvalid.Destroy() does nothing and returns
// nil, even before Init (ibid.). The predefined teams (TeamWorld,
// TeamShared, TeamNode) cannot be destroyed. A team out of step (see
// BarrierAll) is not released: Destroy returns the error, and the handle
// and its contexts stay valid so later calls on it keep saying why.
func (t Team) Destroy() error {
	if t == TeamInvalid {
		return nil
	}
	r, err := enter("Team.Destroy")
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, "Team.Destroy")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if t.id < firstTeamID {
		return errs.New(errs.ErrInvalidArgument, r.me, "Team.Destroy", "%s cannot be destroyed (a predefined team)", t.name())
	}
	r.teamsMu.RLock()
	e := r.teams[t.id]
	r.teamsMu.RUnlock()
	qerr := r.quietTeamCtxs(e)
	var uerr error
	if err := ct.DestroyAnd(r, r.world, func(slot int) { uerr = r.unpublishTeam(ct, slot) }); err != nil {
		return joinErrors(qerr, err)
	}
	r.teamsMu.Lock()
	delete(r.teams, t.id)
	r.teamsMu.Unlock()
	r.closeTeamCtxs(e)
	return joinErrors(qerr, uerr)
}

// unpublishTeam marks a destroyed team's row of the device team table
// unused again (the team's Destroy calls it before its slot is free on
// this PE): a kernel that still names the team's device id then traps
// instead of syncing the destroyed team's members on a slot the next team
// may own.
func (r *runtime) unpublishTeam(ct *collectives.Team, slot int) error {
	if r.c.GPU == nil || !ct.Strided() {
		return nil
	}
	r.devTeamMu.Lock()
	defer r.devTeamMu.Unlock()
	return r.c.ClearDeviceTeam(slot)
}

func (r *runtime) teamOf(t Team) *collectives.Team {
	r.teamsMu.RLock()
	defer r.teamsMu.RUnlock()
	if e := r.teams[t.id]; e != nil {
		return e.ct
	}
	return nil
}

// lockTeam is team(t, op) with the team's collective lock held (the caller
// unlocks it): a PE runs one collective at a time per team, and collectives
// on different teams run concurrently. A team that Destroy released while
// this caller waited for the lock is reported as not valid.
func (r *runtime) lockTeam(t Team, op string) (*collectives.Team, error) {
	ct, err := r.team(t, op)
	if err != nil {
		return nil, err
	}
	ct.Lock()
	if ct.Destroyed() {
		ct.Unlock()
		return nil, r.invalidTeam(t, op)
	}
	return ct, nil
}

func (r *runtime) team(t Team, op string) (*collectives.Team, error) {
	if ct := r.teamOf(t); ct != nil {
		return ct, nil
	}
	return nil, r.invalidTeam(t, op)
}

func (r *runtime) invalidTeam(t Team, op string) error {
	return errs.New(errs.ErrInvalidArgument, r.me, op,
		"team %d is not valid on this PE (TeamInvalid, destroyed, or this PE is not a member)", t.id)
}

// TeamSplitStrided makes a new team of the parent's PEs numbered start,
// start+stride, ..., start+(size-1)*stride (numbers in parent). It is
// collective over parent: every parent member calls it with the same
// arguments. Members get the new team; other parent PEs get TeamInvalid and
// a nil error (Ref: OpenSHMEM 1.6 §9.4.6 shmem_team_split_strided).
// WithTeamConfig sets the new team's Config; the new team's members must
// pass the same configuration (else every parent member gets
// ErrNotSymmetric).
func TeamSplitStrided(parent Team, start, stride, size int, opts ...TeamOption) (Team, error) {
	r, err := enter("TeamSplitStrided")
	if err != nil {
		return TeamInvalid, err
	}
	defer r.leave()
	cfg := teamConfig(opts)
	pt, err := r.lockTeam(parent, "TeamSplitStrided")
	if err != nil {
		return TeamInvalid, err
	}
	defer pt.Unlock()
	ct, err := collectives.SplitConfig(r, r.world, pt, start, stride, size, cfg.word())
	if err != nil || ct == nil {
		return TeamInvalid, err
	}
	if err := r.publishTeam(ct, collectives.KindSplit); err != nil {
		return TeamInvalid, err
	}
	return r.registerTeam(ct, cfg), nil
}

// publishTeam gives kernels a team this PE just joined (under the parent
// team's lock): with a GPU heap, a strided team's device id is its psync
// slot. The members then sync (as part of collective k) so none runs a
// device barrier on the slot before every member has zeroed its psync
// words. Splits of different parents may publish at once: devTeamMu keeps
// their updates of the device team table apart.
func (r *runtime) publishTeam(ct *collectives.Team, k collectives.Kind) error {
	if r.c.GPU == nil || !ct.Strided() {
		return nil
	}
	r.devTeamMu.Lock()
	err := r.c.SetDeviceTeam(ct.Slot(), ct.Start, ct.Stride, ct.Size, ct.Me)
	r.devTeamMu.Unlock()
	if err != nil {
		return err
	}
	return ct.SyncAs(r, k)
}

// registerTeam returns a new handle for ct.
func (r *runtime) registerTeam(ct *collectives.Team, cfg TeamConfig) Team {
	r.teamsMu.Lock()
	defer r.teamsMu.Unlock()
	id := r.nextTID
	r.nextTID++
	r.teams[id] = &teamEntry{ct: ct, cfg: cfg}
	return Team{id: id}
}

// BarrierAll completes every outstanding operation of this PE (Quiet) and
// waits until every PE has entered the barrier: afterwards, every PE's puts
// issued before the barrier are visible everywhere (Ref: OpenSHMEM 1.6
// §9.9.3 shmem_barrier_all). A barrier over signal words: flat (every PE
// signals every PE) for 3 to 16 PEs, dissemination otherwise.
//
// Every collective's signals say which collective the PE called, so PEs
// that call different collectives at the same point (BarrierAll on one,
// Alloc on another) all get ErrNotSymmetric naming the calls. After such a
// failure, a timeout (ErrTimeout naming the PEs that did not arrive) or a
// transport error inside a collective, the team is out of step: every later
// collective on it returns ErrNotSymmetric saying so, with the first error
// (the job must end; Finalize still runs and reports it). A collective whose
// arguments differ across PEs (Alloc sizes, split arguments) fails the same
// way on every PE and leaves the team usable.
func BarrierAll() error { return BarrierAllContext(context.Background()) }

// BarrierAllContext is BarrierAll that also ends when ctx is done, with an
// error that matches ctx.Err() (errors.Is). A barrier ended part-way
// leaves the world team out of step, as a timed-out one does: every later
// collective on it says so (the job must end).
func BarrierAllContext(ctx context.Context) error {
	r, err := enterWorld("BarrierAll")
	if err != nil {
		return err
	}
	defer r.world.Unlock()
	if ctx.Done() == nil { // a context that is never done: nothing to watch
		return r.apiErr(r.world.Barrier(r), "BarrierAll")
	}
	if err := r.ctxErr(ctx, "BarrierAll"); err != nil {
		return err
	}
	c := &r.worldComm
	c.wait.Ctx, c.pol.Ctx = ctx, ctx
	err = r.world.Barrier(c)
	c.wait.Ctx, c.pol.Ctx = nil, nil // keeps no reference to ctx
	return r.apiErr(err, "BarrierAll")
}

// SyncAll waits until every PE has entered it, without completing
// outstanding operations (Ref: OpenSHMEM 1.6 §9.9.4 shmem_sync_all).
func SyncAll() error {
	r, err := enterWorld("SyncAll")
	if err != nil {
		return err
	}
	defer r.world.Unlock()
	return r.apiErr(r.world.Sync(r), "SyncAll")
}

// Barrier is BarrierAll over team t's members only.
func (t Team) Barrier() error { return t.BarrierContext(context.Background()) }

// BarrierContext is Barrier that also ends when ctx is done, with an error
// that matches ctx.Err() (errors.Is). A barrier ended part-way leaves team
// t out of step, as a timed-out one does: every later collective on t
// says so.
func (t Team) BarrierContext(ctx context.Context) error {
	r, err := enter("Team.Barrier")
	if err != nil {
		return err
	}
	defer r.leave()
	if err := r.ctxErr(ctx, "Team.Barrier"); err != nil {
		return err
	}
	ct, err := r.lockTeam(t, "Team.Barrier")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	c, done := r.comm(ctx)
	err = ct.Barrier(c)
	done(c)
	return r.apiErr(err, "Team.Barrier")
}

// Sync is SyncAll over team t's members only (shmem_team_sync).
func (t Team) Sync() error {
	r, err := enter("Team.Sync")
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, "Team.Sync")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	return r.apiErr(ct.Sync(r), "Team.Sync")
}

// collArgs validates a data collective's arrays: count elements from dst
// starting at 0 and srcN from src must fit.
func collArgs[T Elem](r *runtime, op string, dst, src Array[T], dstN, srcN int) error {
	if dstN < 0 || srcN < 0 {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "n must be >= 0")
	}
	args := []struct {
		a    Array[T]
		n    int
		name string
	}{{dst, dstN, "dst"}, {src, srcN, "src"}}
	for _, x := range args { // a registered buffer is no collective's argument
		if x.a.b != nil && x.a.b.reg != 0 && !x.a.b.freed.Load() && x.a.b.gen == r.gen {
			return notSymmetric(r, op, x.name)
		}
	}
	for _, x := range args {
		if x.a.b == nil || x.a.b.freed.Load() || x.a.b.gen != r.gen {
			return badArray(r, x.a, op+" ("+x.name+")")
		}
		if x.a.b.dev {
			return errs.Hint(errs.ErrNotSupported, "call the device collectives (goshmem_barrier_all, ...) from kernels, or use host arrays",
				r.me, op, "%s is a GPU array: host collectives work on host arrays", x.name)
		}
		if x.n > x.a.b.n {
			return errs.New(errs.ErrOutOfBounds, r.me, op, "%s needs %d elements, has %d", x.name, x.n, x.a.b.n)
		}
	}
	return nil
}

// Broadcast copies n elements of src on the team's root (a number in t)
// into dst on every member, root included (Ref: OpenSHMEM 1.6 §9.9.7).
// On return this PE's dst holds the data and the root's src may be reused;
// the call does not complete other outstanding operations (Quiet does).
// On GPU arrays (AllocDevice; then both must be) it runs goshmem's own
// kernel on the PE's default stream and waits for it and for the
// transports (Synchronize): the on-stream form followed by a sync.
func Broadcast[T Elem](t Team, dst, src Array[T], n, root int) error {
	if dst.OnDevice() || src.OnDevice() { // the library's kernel on the default stream (stream.go)
		return gpuColl("Broadcast", func() error { return BroadcastOnStream(nil, t, dst, src, n, root) })
	}
	r, err := enter("Broadcast")
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, "Broadcast")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := collArgs(r, "Broadcast", dst, src, n, n); err != nil {
		return err
	}
	if root < 0 || root >= ct.Size {
		return errs.New(errs.ErrPEOutOfRange, r.me, "Broadcast", "root = %d; must be in [0, %d) (a number in the team)", root, ct.Size)
	}
	return r.apiErr(collectives.Broadcast(r, ct, dst.b.off, src.b.off, n*elem.Size[T](), root), "Broadcast")
}

// Reduce combines n elements of src from every member of t with op and
// leaves the result in dst on every member (an all-reduce; Ref: OpenSHMEM
// 1.6 §9.9.11). dst may be src. OpAnd, OpOr and OpXor on floating-point
// types return ErrInvalidArgument. Every member gets the same bits (each
// element is combined in one order for all). On return this PE's dst holds
// the result and src may be reused; the call does not complete other
// outstanding operations.
// On GPU arrays (AllocDevice; then both must be) it runs goshmem's own
// kernel on the PE's default stream and waits for it and for the
// transports (Synchronize): the on-stream form followed by a sync.
func Reduce[T Elem](t Team, op Op, dst, src Array[T], n int) error {
	if dst.OnDevice() || src.OnDevice() {
		return gpuColl("Reduce", func() error { return reduceOnStream(nil, t, op, dst, src, n, false, "Reduce") })
	}
	r, err := enter("Reduce")
	if err != nil {
		return err
	}
	defer r.leave()
	if op < OpSum || op > OpXor {
		return errs.New(errs.ErrInvalidArgument, r.me, "Reduce", "op = %d; must be one of OpSum..OpXor", int(op))
	}
	if op.Bitwise() && elem.IsFloat[T]() {
		return errs.Hint(errs.ErrInvalidArgument, "use OpSum, OpProd, OpMin or OpMax for floating point",
			r.me, "Reduce", "op %v is bitwise; element type %s is floating point", op, elem.Name[T]())
	}
	ct, err := r.lockTeam(t, "Reduce")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := collArgs(r, "Reduce", dst, src, n, n); err != nil {
		return err
	}
	return r.apiErr(collectives.Reduce[T](r, ct, op, dst.b.off, src.b.off, n), "Reduce")
}

// FCollect concatenates n elements of src from every member of t into dst
// on every member, in team order: dst needs n*t.NPEs() elements
// (Ref: OpenSHMEM 1.6 §9.9.9 shmem_fcollect). On return this PE's dst
// holds every block and src may be reused; the call does not complete
// other outstanding operations.
// On GPU arrays (AllocDevice; then both must be) it runs goshmem's own
// kernel on the PE's default stream and waits for it and for the
// transports (Synchronize): the on-stream form followed by a sync.
func FCollect[T Elem](t Team, dst, src Array[T], n int) error {
	if dst.OnDevice() || src.OnDevice() {
		return gpuColl("FCollect", func() error { return moveOnStream(nil, t, dst, src, n, gpulib.FCollect, "FCollect") })
	}
	r, err := enter("FCollect")
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, "FCollect")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := blocksFit(r, "FCollect", n, ct.Size); err != nil {
		return err
	}
	if err := collArgs(r, "FCollect", dst, src, n*ct.Size, n); err != nil {
		return err
	}
	return r.apiErr(collectives.FCollect(r, ct, dst.b.off, src.b.off, n*elem.Size[T]()), "FCollect")
}

// AllToAll sends block j (n elements) of src on every member to member j,
// where it lands at block MyPE of dst: src and dst need n*t.NPEs() elements
// (Ref: OpenSHMEM 1.6 §9.9.10 shmem_alltoall). On return this PE's dst
// holds every member's block for it and src may be reused; the call does
// not complete other outstanding operations.
// On GPU arrays (AllocDevice; then both must be) it runs goshmem's own
// kernel on the PE's default stream and waits for it and for the
// transports (Synchronize): the on-stream form followed by a sync.
func AllToAll[T Elem](t Team, dst, src Array[T], n int) error {
	if dst.OnDevice() || src.OnDevice() {
		return gpuColl("AllToAll", func() error { return moveOnStream(nil, t, dst, src, n, gpulib.AllToAll, "AllToAll") })
	}
	r, err := enter("AllToAll")
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, "AllToAll")
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := blocksFit(r, "AllToAll", n, ct.Size); err != nil {
		return err
	}
	if err := collArgs(r, "AllToAll", dst, src, n*ct.Size, n*ct.Size); err != nil {
		return err
	}
	return r.apiErr(collectives.AllToAll(r, ct, dst.b.off, src.b.off, n*elem.Size[T]()), "AllToAll")
}
