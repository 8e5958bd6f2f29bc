package shmem_test

import (
	stderrors "errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// Teams and contexts of issue 16 on one PE: the predefined node teams,
// TeamSplit2D, team configurations, team contexts.

func TestTeamSharedNode(t *testing.T) {
	start(t)
	a := alloc[int64](t, 2)
	for _, tm := range []shmem.Team{shmem.TeamShared, shmem.TeamNode} {
		require.True(t, tm.Valid())
		assert.Equal(t, 0, tm.MyPE())
		assert.Equal(t, 1, tm.NPEs())
		assert.Equal(t, 0, tm.TranslatePE(0, shmem.TeamWorld))
		assert.Equal(t, 0, shmem.TeamWorld.TranslatePE(0, tm))
		assert.Equal(t, -1, tm.TranslatePE(1, shmem.TeamWorld))
		assert.Equal(t, shmem.TeamConfig{}, tm.Config())
		require.NoError(t, tm.Barrier())
		require.NoError(t, tm.Sync())
		a.Local()[0] = 5
		require.NoError(t, shmem.Reduce(tm, shmem.OpSum, a, a, 1))
		assert.Equal(t, int64(5), a.Local()[0])
		err := tm.Destroy()
		require.ErrorIs(t, err, shmem.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "cannot be destroyed (a predefined team)")
		assert.True(t, tm.Valid(), "still there")
		// A split of it.
		sub, err := shmem.TeamSplitStrided(tm, 0, 1, 1)
		require.NoError(t, err)
		assert.Equal(t, 1, sub.NPEs())
		require.NoError(t, sub.Destroy())
	}
	assert.Equal(t, 0, shmem.TeamShared.TranslatePE(0, shmem.TeamNode))
	assert.NotEqual(t, shmem.TeamInvalid, shmem.TeamShared)
	assert.NotEqual(t, shmem.TeamWorld, shmem.TeamNode)
}

func TestTeamSplit2DOnePE(t *testing.T) {
	t.Setenv("GOSHMEM_MAX_TEAMS", "64") // fewer slots than the splits below make over time
	start(t)
	a := alloc[int32](t, 1)
	for _, xrange := range []int{1, 2, 7} {
		x, y, err := shmem.TeamSplit2D(shmem.TeamWorld, xrange)
		require.NoError(t, err, "xrange %d", xrange)
		for _, tm := range []shmem.Team{x, y} {
			require.True(t, tm.Valid())
			assert.Equal(t, 0, tm.MyPE())
			assert.Equal(t, 1, tm.NPEs())
			assert.Equal(t, 0, tm.TranslatePE(0, shmem.TeamWorld))
			assert.Equal(t, shmem.TeamConfig{}, tm.Config(), "made without WithTeamConfig")
			require.NoError(t, tm.Barrier())
			a.Local()[0] = 3
			require.NoError(t, shmem.Reduce(tm, shmem.OpMax, a, a, 1))
			assert.Equal(t, int32(3), a.Local()[0])
		}
		assert.NotEqual(t, x, y)
		require.NoError(t, x.Destroy())
		require.NoError(t, y.Destroy())
		assert.False(t, x.Valid())
		assert.False(t, y.Valid())
	}
	// Of a split team, with a configuration for both.
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	x, y, err := shmem.TeamSplit2D(tm, 1, shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: 3}))
	require.NoError(t, err)
	assert.Equal(t, shmem.TeamConfig{NumContexts: 3}, x.Config())
	assert.Equal(t, shmem.TeamConfig{NumContexts: 3}, y.Config())
	require.NoError(t, tm.Destroy(), "the parent goes first; its children stay")
	assert.True(t, x.Valid())
	require.NoError(t, x.Destroy())
	require.NoError(t, y.Destroy())
	assert.Equal(t, shmem.TeamConfig{}, x.Config(), "a destroyed team's Config is zero")
	// Slots come back: many more 2D splits than there are team slots (64).
	for range 80 {
		x, y, err := shmem.TeamSplit2D(shmem.TeamWorld, 1)
		require.NoError(t, err)
		require.NoError(t, x.Destroy())
		require.NoError(t, y.Destroy())
	}
}

func TestTeamSplit2DErrors(t *testing.T) {
	start(t)
	dead, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	require.NoError(t, dead.Destroy())
	tests := []struct {
		name     string
		parent   shmem.Team
		xrange   int
		opts     []shmem.TeamOption
		sentinel error
		want     []string
	}{
		{"TeamInvalid", shmem.TeamInvalid, 1, nil, shmem.ErrInvalidArgument, []string{"PE 0: TeamSplit2D", "TeamInvalid"}},
		{"destroyed parent", dead, 1, nil, shmem.ErrInvalidArgument, []string{"not valid on this PE"}},
		{"xrange 0", shmem.TeamWorld, 0, nil, shmem.ErrInvalidArgument, []string{"xrange = 0; must be >= 1"}},
		{"xrange -1", shmem.TeamWorld, -1, nil, shmem.ErrInvalidArgument, []string{"xrange = -1"}},
		{"negative NumContexts", shmem.TeamWorld, 1, []shmem.TeamOption{shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: -2})},
			shmem.ErrInvalidArgument, []string{"NumContexts = -2; must be >= 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, y, err := shmem.TeamSplit2D(tc.parent, tc.xrange, tc.opts...)
			assert.Equal(t, shmem.TeamInvalid, x)
			assert.Equal(t, shmem.TeamInvalid, y)
			require.ErrorIs(t, err, tc.sentinel)
			require.True(t, stderrors.Is(err, tc.sentinel), "standard errors.Is")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, err = shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1, shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: -1}))
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "TeamSplitStrided")
	usable(t)
}

func TestTeamConfig(t *testing.T) {
	start(t)
	plain, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	assert.Equal(t, shmem.TeamConfig{}, plain.Config())
	cfg := shmem.TeamConfig{NumContexts: 4}
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1, shmem.WithTeamConfig(cfg))
	require.NoError(t, err)
	assert.Equal(t, cfg, tm.Config())
	// The last option wins; a nil option is ignored.
	tm2, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1, shmem.WithTeamConfig(cfg), nil,
		shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: 1}))
	require.NoError(t, err)
	assert.Equal(t, shmem.TeamConfig{NumContexts: 1}, tm2.Config())
	// NumContexts is a hint: more contexts than it says may be made.
	var ctxs []*shmem.Ctx
	for range 3 {
		c, err := shmem.NewTeamCtx(tm2)
		require.NoError(t, err)
		ctxs = append(ctxs, c)
	}
	assert.Equal(t, shmem.TeamConfig{}, shmem.TeamInvalid.Config())
	assert.Equal(t, shmem.TeamConfig{}, shmem.TeamWorld.Config())
	for _, x := range []shmem.Team{plain, tm, tm2} {
		require.NoError(t, x.Destroy())
	}
	for _, c := range ctxs {
		assert.Equal(t, shmem.TeamInvalid, c.Team())
	}
}

func TestTeamInvalidDestroy(t *testing.T) {
	require.NoError(t, shmem.TeamInvalid.Destroy(), "before Init: a no-op")
	start(t)
	require.NoError(t, shmem.TeamInvalid.Destroy())
	usable(t)
}

func TestCtxTeam(t *testing.T) {
	var dflt *shmem.Ctx
	assert.Equal(t, shmem.TeamWorld, dflt.Team(), "before Init too")
	start(t)
	assert.Equal(t, shmem.TeamWorld, dflt.Team())
	c, err := shmem.NewCtx(shmem.CtxPrivate, shmem.CtxSerialized, shmem.CtxNoStore)
	require.NoError(t, err)
	assert.Equal(t, shmem.TeamWorld, c.Team())
	require.NoError(t, c.Destroy())
	assert.Equal(t, shmem.TeamInvalid, c.Team(), "a destroyed context")

	for _, tm := range []shmem.Team{shmem.TeamWorld, shmem.TeamShared, shmem.TeamNode} {
		c, err := shmem.NewTeamCtx(tm, shmem.CtxPrivate)
		require.NoError(t, err)
		assert.Equal(t, tm, c.Team())
		require.NoError(t, c.Destroy())
		assert.Equal(t, shmem.TeamInvalid, c.Team())
	}

	// A context from an earlier Init.
	old, err := shmem.NewTeamCtx(shmem.TeamNode)
	require.NoError(t, err)
	require.NoError(t, shmem.Finalize())
	assert.Equal(t, shmem.TeamInvalid, old.Team())
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
	assert.Equal(t, shmem.TeamInvalid, old.Team())
	require.ErrorIs(t, old.Quiet(), shmem.ErrInvalidArgument)
}

// TestTeamCtxCalls: on a team context every ...Ctx call takes team numbers:
// team PE 0 is this PE, team PE 1 does not exist (ErrPEOutOfRange naming
// the team's range), on every kind of call.
func TestTeamCtxCalls(t *testing.T) {
	start(t)
	a := alloc[int64](t, 4)
	sig := alloc[uint64](t, 1)
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	c, err := shmem.NewTeamCtx(tm, shmem.CtxSerialized)
	require.NoError(t, err)
	assert.Equal(t, tm, c.Team())

	require.NoError(t, shmem.PutCtx(c, a, 0, []int64{1, 2}, 0))
	require.NoError(t, shmem.PutNBICtx(c, a, 2, []int64{3}, 0))
	require.NoError(t, c.Quiet())
	require.NoError(t, shmem.PCtx(c, a, 3, 4, 0))
	got := make([]int64, 4)
	require.NoError(t, shmem.GetCtx(c, got, a, 0, 0))
	assert.Equal(t, []int64{1, 2, 3, 4}, got)
	g, err := shmem.GCtx(c, a, 3, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(4), g)
	old, err := shmem.AtomicFetchAddCtx(c, a, 0, 10, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), old)
	require.NoError(t, shmem.PutSignalCtx(c, a, 1, []int64{9}, sig, 0, 2, shmem.SignalAdd, 0))
	require.NoError(t, c.Fence())
	require.NoError(t, c.Quiet())
	assert.Equal(t, []int64{11, 9, 3, 4}, a.Local())
	assert.Equal(t, uint64(2), sig.Local()[0])

	buf := make([]int64, 1)
	for _, pe := range []int{1, -1, 5} {
		for name, call := range map[string]func() error{
			"Put":       func() error { return shmem.PutCtx(c, a, 0, buf, pe) },
			"PutNBI":    func() error { return shmem.PutNBICtx(c, a, 0, buf, pe) },
			"Get":       func() error { return shmem.GetCtx(c, buf, a, 0, pe) },
			"GetNBI":    func() error { return shmem.GetNBICtx(c, buf, a, 0, pe) },
			"P":         func() error { return shmem.PCtx(c, a, 0, 1, pe) },
			"G":         func() error { _, err := shmem.GCtx(c, a, 0, pe); return err },
			"AtomicAdd": func() error { return shmem.AtomicAddCtx(c, a, 0, 1, pe) },
			"AtomicCompareSwap": func() error {
				_, err := shmem.AtomicCompareSwapCtx(c, a, 0, 1, 2, pe)
				return err
			},
			"PutSignal": func() error { return shmem.PutSignalCtx(c, a, 0, buf, sig, 0, 1, shmem.SignalSet, pe) },
		} {
			err := call()
			require.ErrorIs(t, err, shmem.ErrPEOutOfRange, "%s to team PE %d", name, pe)
			assert.True(t, stderrors.Is(err, shmem.ErrPEOutOfRange))
			assert.Contains(t, err.Error(), "PE 0: "+name)
			assert.Contains(t, err.Error(), "must be in [0, 1) (a number in team #")
		}
	}
	assert.Equal(t, []int64{11, 9, 3, 4}, a.Local(), "no failed call wrote")

	// Destroying the team destroys its contexts.
	other, err := shmem.NewTeamCtx(tm, shmem.CtxPrivate)
	require.NoError(t, err)
	require.NoError(t, shmem.PutNBICtx(other, a, 0, []int64{21}, 0))
	require.NoError(t, tm.Destroy())
	assert.Equal(t, int64(21), a.Local()[0], "the team's contexts were quieted")
	for _, x := range []*shmem.Ctx{c, other} {
		assert.Equal(t, shmem.TeamInvalid, x.Team())
		err := shmem.PutCtx(x, a, 0, buf, 0)
		require.ErrorIs(t, err, shmem.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "was destroyed")
		require.ErrorIs(t, x.Destroy(), shmem.ErrInvalidArgument, "already destroyed with its team")
	}

	// Contexts of invalid teams.
	for name, bad := range map[string]shmem.Team{"TeamInvalid": shmem.TeamInvalid, "destroyed": tm} {
		x, err := shmem.NewTeamCtx(bad)
		assert.Nil(t, x, name)
		require.ErrorIs(t, err, shmem.ErrInvalidArgument, name)
		assert.Contains(t, err.Error(), "PE 0: NewTeamCtx")
	}
	// A TeamWorld context takes world numbers: PE 1 is outside [0, NPEs).
	w, err := shmem.NewTeamCtx(shmem.TeamWorld)
	require.NoError(t, err)
	err = shmem.PutCtx(w, a, 0, buf, 1)
	require.ErrorIs(t, err, shmem.ErrPEOutOfRange)
	assert.Contains(t, err.Error(), "[0, 1)")
	require.NoError(t, w.Destroy())
	usable(t)
}

// TestTeamCtxNoAlloc: the translation on a team context's hot path
// allocates nothing.
func TestTeamCtxNoAlloc(t *testing.T) {
	start(t)
	a := alloc[int64](t, 1)
	c, err := shmem.NewTeamCtx(shmem.TeamNode)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Destroy()) }()
	src := []int64{7}
	allocs := testing.AllocsPerRun(100, func() {
		if err := shmem.PutCtx(c, a, 0, src, 0); err != nil {
			t.Fatal(err)
		}
		if err := shmem.AtomicAddCtx(c, a, 0, 1, 0); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestTeamCtxConcurrent: goroutines make contexts on a team while the team
// is destroyed (race-detector clean): each NewTeamCtx either fails saying
// the team is gone or makes a context that the Destroy then destroys; none
// outlives the team.
func TestTeamCtxConcurrent(t *testing.T) {
	start(t)
	for round := range 5 {
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		made := make(chan *shmem.Ctx, 8*20)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					c, err := shmem.NewTeamCtx(tm)
					if err != nil {
						assert.ErrorIs(t, err, shmem.ErrInvalidArgument)
						return
					}
					made <- c
					if got := c.Team(); got != tm && got != shmem.TeamInvalid {
						t.Errorf("goroutine %d: ctx.Team() = %v, want the team or TeamInvalid", g, got)
					}
				}
			}()
		}
		require.NoError(t, tm.Destroy(), "round %d", round)
		wg.Wait()
		close(made)
		for c := range made {
			assert.Equal(t, shmem.TeamInvalid, c.Team(), "round %d: no context outlives its team", round)
		}
	}
}

// TestTeams16NotInitialized: the new calls before Init (and after
// Finalize) fail with ErrNotInitialized, or answer as for no team.
func TestTeams16NotInitialized(t *testing.T) {
	check := func(t *testing.T) {
		_, _, err := shmem.TeamSplit2D(shmem.TeamWorld, 1)
		require.ErrorIs(t, err, shmem.ErrNotInitialized)
		assert.Contains(t, hints(err), "Init")
		_, err = shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1, shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: 1}))
		require.ErrorIs(t, err, shmem.ErrNotInitialized)
		_, err = shmem.NewTeamCtx(shmem.TeamNode)
		require.ErrorIs(t, err, shmem.ErrNotInitialized)
		for _, tm := range []shmem.Team{shmem.TeamShared, shmem.TeamNode} {
			assert.False(t, tm.Valid())
			assert.Equal(t, -1, tm.MyPE())
			assert.Equal(t, -1, tm.NPEs())
			assert.Equal(t, shmem.TeamConfig{}, tm.Config())
			require.ErrorIs(t, tm.Destroy(), shmem.ErrNotInitialized)
		}
	}
	t.Run("before Init", check)
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
	require.NoError(t, shmem.Finalize())
	t.Run("after Finalize", check)
}
