package shmem

import (
	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/errs"
)

// teamEntry is what this PE holds for one team handle.
type teamEntry struct {
	ct  *collectives.Team
	cfg TeamConfig
	// ctxs are the live contexts NewTeamCtx made on the team (teams made
	// by a split only: predefined teams are never destroyed). Under
	// runtime.teamsMu.
	ctxs map[*Ctx]struct{}
}

// TeamConfig is a team's configuration (Ref: OpenSHMEM 1.6 §9.4.3
// shmem_team_config_t), set when the team is made (WithTeamConfig) and
// read back with Team.Config.
type TeamConfig struct {
	// NumContexts is how many contexts the program means to create on the
	// team with NewTeamCtx (SHMEM_TEAM_NUM_CONTEXTS); >= 0. goshmem has no
	// per-team limit on contexts, so it is a hint: more may be created.
	NumContexts int
}

// word is the configuration as the split's members compare it.
func (c TeamConfig) word() uint64 { return uint64(int64(c.NumContexts)) }

// TeamOption configures a team made by TeamSplitStrided or TeamSplit2D.
type TeamOption func(*teamOptions)

type teamOptions struct{ cfg TeamConfig }

// WithTeamConfig makes the new team with configuration c (for TeamSplit2D:
// both the x and the y team). Every member of one new team must pass the
// same configuration; parent PEs outside the team may pass another. A
// negative NumContexts on any parent member fails the split on every one
// with ErrInvalidArgument naming that PE.
func WithTeamConfig(c TeamConfig) TeamOption {
	return func(o *teamOptions) { o.cfg = c }
}

// teamConfig applies a split's options. A bad configuration (a negative
// NumContexts) is checked in the split's exchange, like the split's own
// arguments, so that it fails the split on every parent member instead of
// leaving the others waiting.
func teamConfig(opts []TeamOption) TeamConfig {
	var o teamOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o.cfg
}

// Config returns the configuration t was made with (Ref: OpenSHMEM 1.6
// §9.4.4 shmem_team_get_config): the zero TeamConfig for TeamInvalid, a
// team not valid on this PE, the predefined teams, and a team made without
// WithTeamConfig.
func (t Team) Config() TeamConfig {
	r := current.Load()
	if r == nil {
		return TeamConfig{}
	}
	r.teamsMu.RLock()
	defer r.teamsMu.RUnlock()
	if e := r.teams[t.id]; e != nil {
		return e.cfg
	}
	return TeamConfig{}
}

// name is how errors name the team.
func (t Team) name() string {
	switch t {
	case TeamInvalid:
		return "TeamInvalid"
	case TeamWorld:
		return "TeamWorld"
	case TeamShared:
		return "TeamShared"
	case TeamNode:
		return "TeamNode"
	}
	return sprintf("team #%d", t.id)
}

// TeamSplit2D splits parent into the rows and columns of a 2D grid xrange
// wide (Ref: OpenSHMEM 1.6 §9.4.7 shmem_team_split_2d). Parent member p
// sits at x = p mod xrange, y = p div xrange; x is its row, the xrange
// consecutive parent members with its y (the last row is shorter when
// xrange does not divide parent's size), numbered by x (x.MyPE() is this
// PE's x); y is its column, the parent members with its x, numbered by y
// (y.MyPE() is this PE's y; columns differ in size by at most one). An
// xrange above parent's size acts as parent's size. Every parent member
// gets both teams.
//
// It is collective over parent: every member calls it with the same
// xrange, else every member gets ErrNotSymmetric; xrange < 1 is
// ErrInvalidArgument on every member. WithTeamConfig configures both new
// teams. On any error no team is made on any member and both handles are
// TeamInvalid. TeamSplit2D(TeamInvalid, ...) fails with ErrInvalidArgument
// without communicating. The split costs one exchange over parent (all
// rows share one team slot, all columns another) and takes two of the
// GOSHMEM_MAX_TEAMS team slots per PE.
func TeamSplit2D(parent Team, xrange int, opts ...TeamOption) (x, y Team, err error) {
	const op = "TeamSplit2D"
	r, err := enter(op)
	if err != nil {
		return TeamInvalid, TeamInvalid, err
	}
	defer r.leave()
	if parent == TeamInvalid {
		return TeamInvalid, TeamInvalid, errs.New(errs.ErrInvalidArgument, r.me, op, "the parent is TeamInvalid: no teams are made")
	}
	cfg := teamConfig(opts)
	pt, err := r.lockTeam(parent, op)
	if err != nil {
		return TeamInvalid, TeamInvalid, err
	}
	defer pt.Unlock()
	xt, yt, err := collectives.Split2D(r, r.world, pt, xrange, cfg.word(), cfg.word())
	if err != nil {
		return TeamInvalid, TeamInvalid, err
	}
	for _, ct := range []*collectives.Team{xt, yt} {
		if err := r.publishTeam(ct, collectives.KindSplit2D); err != nil {
			return TeamInvalid, TeamInvalid, err
		}
	}
	return r.registerTeam(xt, cfg), r.registerTeam(yt, cfg), nil
}

// predefinedTeams makes TeamShared and TeamNode at Init (every PE, before
// any split, so every node's team gets the same slot): the PEs of this
// PE's node in world order. When they are not evenly strided in the world
// (an irregular placement) the team holds their list.
func (r *runtime) predefinedTeams() error {
	node := r.c.Node
	pes := []int{r.me} // without a node map: the PE alone
	if len(node) == r.npes {
		pes = pes[:0]
		for pe := range r.npes {
			if node[pe] == node[r.me] {
				pes = append(pes, pe)
			}
		}
	}
	ct, err := collectives.Predefined(r, r.world, pes)
	if err != nil {
		return err
	}
	if ct.Slot() != deviceTeamShared { // kernels name it GOSHMEM_TEAM_SHARED / GOSHMEM_TEAM_NODE
		return errs.New(errs.ErrNotSupported, r.me, "Init", "TeamShared got team slot %d; the device header fixes it at %d",
			ct.Slot(), deviceTeamShared)
	}
	if r.c.GPU != nil && ct.Strided() {
		// Init's closing sync orders this before any kernel's use.
		if err := r.c.SetDeviceTeam(ct.Slot(), ct.Start, ct.Stride, ct.Size, ct.Me); err != nil {
			return err
		}
	}
	e := &teamEntry{ct: ct}
	r.teams[TeamShared.id] = e
	r.teams[TeamNode.id] = e
	return nil
}
