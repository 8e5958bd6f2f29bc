package main

import (
	"fmt"
	"hash/fnv"
	"os"

	"github.com/goshmem/goshmem/shmem"
)

// Teams and contexts of issue 16: the node teams, TeamSplit2D, team
// configurations, and team contexts (team-relative PE numbers).

func init() { moreChecks = append(moreChecks, registerTeams16) }

func registerTeams16() {
	register("teams16/shared-node", sharedNode)
	register("teams16/split2d", split2D)
	registerMin("teams16/split2d-errors", 2, split2DErrors)
	register("teams16/team-ctx", teamCtx)
}

// oneHost reports whether every PE runs on this PE's host (by a hash of
// the host name, reduced over the world).
func oneHost(t *T) bool {
	a, err := shmem.Alloc[int64](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	host, _ := os.Hostname()
	h := fnv.New64a()
	h.Write([]byte(host))
	v := int64(h.Sum64() >> 1)
	a.Local()[0], a.Local()[1] = v, -v
	t.Must("Reduce max", shmem.Reduce(shmem.TeamWorld, shmem.OpMax, a, a, 2))
	return a.Local()[0] == v && -a.Local()[1] == v
}

// nodeGroup reads TeamNode's members from the team itself (an FCollect of
// world numbers over it) and checks they are in world order.
func nodeGroup(t *T, tm shmem.Team, name string, buf, all shmem.Array[int64]) group {
	size := tm.NPEs()
	if size < 1 || size > t.n {
		t.Fatalf("%s.NPEs() = %d, want in [1, %d]", name, size, t.n)
	}
	buf.Local()[0] = int64(t.me)
	t.Must(name+": FCollect", shmem.FCollect(tm, all, buf, 1))
	g := group{name: name, team: tm, idx: tm.MyPE()}
	for i := range size {
		g.members = append(g.members, int(all.Local()[i]))
		if i > 0 && g.members[i] <= g.members[i-1] {
			t.Errorf("%s: members %v are not in world order", name, g.members[:i+1])
		}
	}
	if g.idx < 0 || g.idx >= size || g.members[g.idx] != t.me {
		t.Fatalf("%s: MyPE() = %d, members %v", name, g.idx, g.members)
	}
	return g
}

// sharedNode: TeamShared and TeamNode: the node's PEs (every PE when the
// job runs on one host), numbering, translation both ways, collectives on
// them, splits of them, and that they cannot be destroyed.
func sharedNode(t *T) {
	n := t.n
	single := oneHost(t)
	buf, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", buf.Free()) }()
	all, err := shmem.Alloc[int64](n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", all.Free()) }()

	shared := nodeGroup(t, shmem.TeamShared, "TeamShared", buf, all)
	node := nodeGroup(t, shmem.TeamNode, "TeamNode", buf, all)
	EqSlice(t, "TeamShared and TeamNode have the same members", shared.members, node.members)
	if single {
		Eq(t, "TeamNode.NPEs() on one host", shmem.TeamNode.NPEs(), n)
		Eq(t, "TeamShared.NPEs() on one host", shmem.TeamShared.NPEs(), n)
	}
	for _, g := range []group{shared, node} {
		checkGroup(t, g)
		Eq(t, g.name+": Config()", g.team.Config(), shmem.TeamConfig{})
		Eq(t, g.name+": Valid()", g.team.Valid(), true)
		for i := range g.members {
			Eq(t, fmt.Sprintf("%s.TranslatePE(%d, TeamShared)", g.name, i), g.team.TranslatePE(i, shmem.TeamShared), i)
			Eq(t, fmt.Sprintf("%s.TranslatePE(%d, TeamNode)", g.name, i), g.team.TranslatePE(i, shmem.TeamNode), i)
		}
		t.OK(g.name+": Barrier", g.team.Barrier())
		t.OK(g.name+": Sync", g.team.Sync())
		reduceOnNoAllocIn(t, g, buf)
		// A broadcast from the team's last member.
		root := len(g.members) - 1
		buf.Local()[0] = int64(100 + t.me)
		t.OK(g.name+": Broadcast", shmem.Broadcast(g.team, buf, buf, 1, root))
		Eq(t, g.name+": Broadcast from its last member", buf.Local()[0], int64(100+g.members[root]))
		t.Is(g.name+": Destroy", g.team.Destroy(), shmem.ErrInvalidArgument, pe(t), "predefined")
		Eq(t, g.name+": still Valid() after a refused Destroy", g.team.Valid(), true)
	}
	// The two handles name one team: collectives on either, interleaved.
	t.OK("TeamShared.Barrier", shmem.TeamShared.Barrier())
	t.OK("TeamNode.Barrier", shmem.TeamNode.Barrier())
	// A split of TeamNode: its even-numbered members.
	sub := makeGroup(t, node, split{"evens", 0, 2, (len(node.members) + 1) / 2})
	checkGroup(t, sub)
	if sub.in() {
		reduceOnNoAllocIn(t, sub, buf)
		t.OK(sub.name+": Destroy", sub.team.Destroy())
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// reduceOnNoAllocIn sums PE+1 over g's members through a (i, world-
// allocated) and checks the sum.
func reduceOnNoAllocIn(t *T, g group, a shmem.Array[int64]) {
	a.Local()[0] = int64(t.me + 1)
	t.OK(g.name+": Reduce", shmem.Reduce(g.team, shmem.OpSum, a, a, 1))
	want := int64(0)
	for _, p := range g.members {
		want += int64(p + 1)
	}
	Eq(t, g.name+": Reduce sum of PE+1", a.Local()[0], want)
}

// xranges is the widths to split n PEs with: 1, 2, 3, n-1, n and n+1.
func xranges(n int) []int {
	var out []int
	seen := map[int]bool{}
	for _, x := range []int{1, 2, 3, n - 1, n, n + 1} {
		if x >= 1 && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// split2DOf splits parent (every parent member calls it) and returns this
// PE's row and column as groups, with the members computed here from the
// parent's.
func split2DOf(t *T, parent group, xrange int, opts ...shmem.TeamOption) (group, group) {
	x, y, err := shmem.TeamSplit2D(parent.team, xrange, opts...)
	name := fmt.Sprintf("%s/2d(%d)", parent.name, xrange)
	t.Must("TeamSplit2D "+name, err)
	np := len(parent.members)
	xr := min(xrange, np)
	p := parent.idx
	row := group{name: name + "/x", team: x, idx: p % xr}
	for q := p / xr * xr; q < np && q < (p/xr+1)*xr; q++ {
		row.members = append(row.members, parent.members[q])
	}
	col := group{name: name + "/y", team: y, idx: p / xr}
	for q := p % xr; q < np; q += xr {
		col.members = append(col.members, parent.members[q])
	}
	return row, col
}

// split2D: TeamSplit2D of TeamWorld, of a reversed team, of the odd PEs
// and of TeamNode, with several widths: every row's and column's MyPE,
// NPEs and TranslatePE, a Barrier and a Reduce on each (all rows at once,
// then all columns), a configuration, and Destroy.
func split2D(t *T) {
	n, me := t.n, t.me
	buf, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", buf.Free()) }()
	world := worldGroup(n, me)
	parents := []group{world}
	rev := makeGroup(t, world, split{"reverse", n - 1, -1, n})
	parents = append(parents, rev)
	var odd group
	if n >= 2 {
		odd = makeGroup(t, world, split{"odd", 1, 2, n / 2})
		parents = append(parents, odd)
	}
	nodeMembers := make([]int, shmem.TeamNode.NPEs())
	for i := range nodeMembers {
		nodeMembers[i] = shmem.TeamNode.TranslatePE(i, shmem.TeamWorld)
	}
	parents = append(parents, group{name: "TeamNode", team: shmem.TeamNode, members: nodeMembers, idx: shmem.TeamNode.MyPE()})
	for _, parent := range parents {
		if !parent.in() {
			continue
		}
		for _, xr := range xranges(len(parent.members)) {
			cfg := shmem.TeamConfig{NumContexts: xr}
			row, col := split2DOf(t, parent, xr, shmem.WithTeamConfig(cfg))
			for _, g := range []group{row, col} {
				checkGroup(t, g)
				Eq(t, g.name+": Config()", g.team.Config(), cfg)
				t.OK(g.name+": Barrier", g.team.Barrier())
				reduceOnNoAllocIn(t, g, buf)
			}
			Eq(t, row.name+": MyPE() is the x coordinate", row.team.MyPE(), parent.idx%min(xr, len(parent.members)))
			Eq(t, col.name+": MyPE() is the y coordinate", col.team.MyPE(), parent.idx/min(xr, len(parent.members)))
			// Both teams' collectives interleaved, then a sync of the parent.
			t.OK(row.name+": Sync", row.team.Sync())
			t.OK(col.name+": Sync", col.team.Sync())
			t.OK(parent.name+": Barrier", parent.team.Barrier())
			t.OK(row.name+": Destroy", row.team.Destroy())
			t.OK(col.name+": Destroy", col.team.Destroy())
			Eq(t, row.name+": Valid() after Destroy", row.team.Valid(), false)
		}
		// Without a configuration: the zero TeamConfig.
		row, col := split2DOf(t, parent, 2)
		Eq(t, row.name+": Config() without WithTeamConfig", row.team.Config(), shmem.TeamConfig{})
		Eq(t, col.name+": Config() without WithTeamConfig", col.team.Config(), shmem.TeamConfig{})
		t.OK("Destroy", row.team.Destroy())
		t.OK("Destroy", col.team.Destroy())
	}
	for _, g := range []group{rev, odd} {
		if g.in() {
			t.OK(g.name+": Destroy", g.team.Destroy())
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	// Many more 2D splits than there are team slots under
	// GOSHMEM_MAX_TEAMS=64 (TestTeams): the slots come back.
	for i := range 40 {
		x, y, err := shmem.TeamSplit2D(shmem.TeamWorld, 1+i%n)
		t.Must(fmt.Sprintf("TeamSplit2D #%d", i), err)
		t.OK("Destroy", x.Destroy())
		t.OK("Destroy", y.Destroy())
	}
}

// split2DErrors: TeamSplit2D of TeamInvalid fails without communicating
// (called by one PE only), xranges that differ or are < 1 fail on every PE
// alike, and configurations that differ within a row fail on every PE;
// the world stays usable.
func split2DErrors(t *T) {
	n, me := t.n, t.me
	if me == 0 {
		x, y, err := shmem.TeamSplit2D(shmem.TeamInvalid, 2)
		t.Is("TeamSplit2D(TeamInvalid)", err, shmem.ErrInvalidArgument, pe(t), "TeamInvalid")
		Eq(t, "x of TeamSplit2D(TeamInvalid)", x, shmem.TeamInvalid)
		Eq(t, "y of TeamSplit2D(TeamInvalid)", y, shmem.TeamInvalid)
	}
	t.OK("BarrierAll", shmem.BarrierAll())
	for _, tc := range []struct {
		name     string
		xrange   int
		sentinel error
		want     string
	}{
		{"xrange 0 everywhere", 0, shmem.ErrInvalidArgument, "xrange = 0; must be >= 1"},
		{"xrange 1 or 2", 1 + me%2, shmem.ErrNotSymmetric, "passed xrange"},
		{"xrange 0 on the last PE only", map[bool]int{true: 0, false: 2}[me == n-1], shmem.ErrNotSymmetric, "passed xrange"},
	} {
		x, y, err := shmem.TeamSplit2D(shmem.TeamWorld, tc.xrange)
		t.Is("TeamSplit2D "+tc.name, err, tc.sentinel, pe(t), tc.want)
		Eq(t, tc.name+": x", x, shmem.TeamInvalid)
		Eq(t, tc.name+": y", y, shmem.TeamInvalid)
	}
	// Rows of 2 whose members pass different configurations.
	x, y, err := shmem.TeamSplit2D(shmem.TeamWorld, 2, shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: me}))
	t.Is("TeamSplit2D with configurations differing in a row", err, shmem.ErrNotSymmetric, pe(t), "different team configurations")
	Eq(t, "x", x, shmem.TeamInvalid)
	Eq(t, "y", y, shmem.TeamInvalid)
	// TeamSplitStrided: the members must agree, the others need not.
	cfg := shmem.TeamConfig{NumContexts: 2}
	if me%2 == 1 {
		cfg.NumContexts = 10 + me
	}
	evens, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 2, (n+1)/2, shmem.WithTeamConfig(cfg))
	t.OK("TeamSplitStrided of the evens, the odds passing other configurations", err)
	if me%2 == 0 {
		Eq(t, "evens: Config()", evens.Config(), shmem.TeamConfig{NumContexts: 2})
		t.OK("evens: Destroy", evens.Destroy())
	} else {
		Eq(t, "odd PE: evens", evens, shmem.TeamInvalid)
	}
	_, err = shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, n, shmem.WithTeamConfig(shmem.TeamConfig{NumContexts: me}))
	t.Is("TeamSplitStrided with differing configurations", err, shmem.ErrNotSymmetric, pe(t), "different team configurations")
	usable(t, "failed 2D splits")
}

// teamCtxOn runs team-relative RMA, atomics and signals on a context of
// g (every PE calls it; members only act): each member puts its world
// number to team PE (i+1) mod size, gets from team PE (i+size-1) mod size,
// adds to a counter on team PE 0, and signals team PE (i+1) mod size.
// Every outcome is checked against world numbers computed here.
func teamCtxOn(t *T, g group, data shmem.Array[int64], sig shmem.Array[uint64]) {
	if !g.in() {
		return
	}
	size, i := len(g.members), g.idx
	c, err := shmem.NewTeamCtx(g.team, shmem.CtxSerialized)
	t.Must(g.name+": NewTeamCtx", err)
	Eq(t, g.name+": ctx.Team()", c.Team(), g.team)
	next, prev := (i+1)%size, (i+size-1)%size
	clear(data.Local())
	sig.Local()[0] = 0
	t.OK(g.name+": Barrier", g.team.Barrier())

	// Put my world number into slot 0 of team PE next; the value that
	// lands here is prev's world number.
	t.OK(g.name+": PutCtx", shmem.PutCtx(c, data, 0, []int64{int64(t.me)}, next))
	// A counter on team PE 0.
	t.OK(g.name+": AtomicAddCtx", shmem.AtomicAddCtx(c, data, 1, 1, 0))
	// P to team PE next, slot 2: its world number + 1000 (as I see it).
	t.OK(g.name+": PCtx", shmem.PCtx(c, data, 2, int64(1000+g.members[next]), next))
	t.OK(g.name+": ctx.Quiet", c.Quiet())
	t.OK(g.name+": Barrier", g.team.Barrier())
	Eq(t, g.name+": value put by team PE prev", data.Local()[0], int64(g.members[prev]))
	Eq(t, g.name+": P landed on the PE it named", data.Local()[2], int64(1000+t.me))
	if i == 0 {
		Eq(t, g.name+": counter on team PE 0", data.Local()[1], int64(size))
	} else {
		Eq(t, g.name+": no counter off team PE 0", data.Local()[1], int64(0))
	}
	// Get team PE prev's slot 0 (= prev's own prev) and G its slot 2.
	got := make([]int64, 1)
	t.OK(g.name+": GetCtx", shmem.GetCtx(c, got, data, 0, prev))
	Eq(t, g.name+": GetCtx from team PE prev", got[0], int64(g.members[(prev+size-1)%size]))
	v, err := shmem.GCtx(c, data, 2, prev)
	t.OK(g.name+": GCtx", err)
	Eq(t, g.name+": GCtx from team PE prev", v, int64(1000+g.members[prev]))
	t.OK(g.name+": Barrier", g.team.Barrier())
	// PutSignal to team PE next; wait for prev's here.
	t.OK(g.name+": PutSignalCtx", shmem.PutSignalCtx(c, data, 3, []int64{int64(-t.me)}, sig, 0, uint64(t.me+1), shmem.SignalSet, next))
	sv, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpNE, 0)
	t.OK(g.name+": SignalWaitUntil", err)
	Eq(t, g.name+": signal from team PE prev", sv, uint64(g.members[prev]+1))
	Eq(t, g.name+": data with the signal", data.Local()[3], int64(-g.members[prev]))
	// Team numbers beyond the team are out of range, named in the team.
	want := []string{pe(t), fmt.Sprintf("must be in [0, %d)", size)}
	if g.team != shmem.TeamWorld {
		want = append(want, "context's team")
	}
	for _, bad := range []int{size, -1} {
		t.Is(fmt.Sprintf("%s: PutCtx to team PE %d", g.name, bad), shmem.PutCtx(c, data, 0, got, bad),
			shmem.ErrPEOutOfRange, want...)
	}
	t.OK(g.name+": Barrier", g.team.Barrier())
	t.OK(g.name+": ctx.Destroy", c.Destroy())
	Eq(t, g.name+": ctx.Team() after Destroy", c.Team(), shmem.TeamInvalid)
}

// teamCtx: team contexts on strided teams (a put to team PE 1 lands on the
// team's second member), a reversed team, TeamNode, the columns of a 2D
// split, and the default and NewCtx contexts (TeamWorld); destroying a
// team destroys its contexts.
func teamCtx(t *T) {
	n, me := t.n, t.me
	data, err := shmem.Alloc[int64](4)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", data.Free()) }()
	sig, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()

	var dflt *shmem.Ctx
	Eq(t, "nil ctx Team()", dflt.Team(), shmem.TeamWorld)
	wc, err := shmem.NewCtx(shmem.CtxPrivate)
	t.Must("NewCtx", err)
	Eq(t, "NewCtx Team()", wc.Team(), shmem.TeamWorld)
	t.OK("Destroy", wc.Destroy())

	world := worldGroup(n, me)
	groups := []group{world}
	for _, sp := range splitsFor(n) {
		if sp.name == "all" {
			continue
		}
		groups = append(groups, makeGroup(t, world, sp))
	}
	nodeMembers := make([]int, shmem.TeamNode.NPEs())
	for i := range nodeMembers {
		nodeMembers[i] = shmem.TeamNode.TranslatePE(i, shmem.TeamWorld)
	}
	groups = append(groups, group{name: "TeamNode", team: shmem.TeamNode, members: nodeMembers, idx: shmem.TeamNode.MyPE()})
	for _, g := range groups {
		teamCtxOn(t, g, data, sig)
		t.Must("BarrierAll", shmem.BarrierAll())
	}
	// On a team with stride 2 from PE 1 (the odd PEs), team PE 1 is world
	// PE 3: a put there through the team's context lands on PE 3 only.
	if n >= 4 {
		clear(data.Local())
		t.Must("BarrierAll", shmem.BarrierAll())
		odd := makeGroup(t, world, split{"odd", 1, 2, n / 2})
		if me == 1 {
			c, err := shmem.NewTeamCtx(odd.team)
			t.Must("NewTeamCtx(odd)", err)
			t.OK("PutCtx to team PE 1", shmem.PutCtx(c, data, 0, []int64{77}, 1))
			t.OK("ctx.Quiet", c.Quiet())
			t.OK("ctx.Destroy", c.Destroy())
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		want := int64(0)
		if me == 3 {
			want = 77
		}
		Eq(t, "a put to team PE 1 of the odd team lands on world PE 3 only", data.Local()[0], want)
		// Destroying the team destroys its contexts.
		if odd.in() {
			c, err := shmem.NewTeamCtx(odd.team)
			t.Must("NewTeamCtx(odd)", err)
			t.OK("odd: Destroy", odd.team.Destroy())
			Eq(t, "ctx of a destroyed team: Team()", c.Team(), shmem.TeamInvalid)
			t.Is("PutCtx on a ctx of a destroyed team", shmem.PutCtx(c, data, 0, []int64{1}, 0), shmem.ErrInvalidArgument, "destroyed")
			_, err = shmem.NewTeamCtx(odd.team)
			t.Is("NewTeamCtx of a destroyed team", err, shmem.ErrInvalidArgument, pe(t))
		}
		t.Must("BarrierAll", shmem.BarrierAll())
	}
	// The columns of a 2D split two wide: each column's team PE 0 is its
	// first row's member.
	row, col := split2DOf(t, world, 2)
	teamCtxOn(t, col, data, sig)
	t.Must("BarrierAll", shmem.BarrierAll())
	teamCtxOn(t, row, data, sig)
	t.OK("Destroy", row.team.Destroy())
	t.OK("Destroy", col.team.Destroy())
	for _, g := range groups[1:] {
		if g.in() && g.team != shmem.TeamNode {
			t.OK(g.name+": Destroy", g.team.Destroy())
		}
	}
	_, err = shmem.NewTeamCtx(shmem.TeamInvalid)
	t.Is("NewTeamCtx(TeamInvalid)", err, shmem.ErrInvalidArgument, pe(t))
	t.OK("TeamInvalid.Destroy() is a no-op", shmem.TeamInvalid.Destroy())
	t.Must("BarrierAll", shmem.BarrierAll())
}
