package main

import (
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// group is a team as the checks see it: the handle, its members' world
// numbers, and this PE's index in it (-1 when not a member). Helpers that
// allocate are called by every PE (Alloc is collective over the world);
// only members run the team's collectives.
type group struct {
	name    string
	team    shmem.Team
	members []int
	idx     int
}

func (g group) in() bool { return g.idx >= 0 }

func worldGroup(n, me int) group {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return group{name: "world", team: shmem.TeamWorld, members: m, idx: me}
}

var opsAll = []shmem.Op{shmem.OpSum, shmem.OpProd, shmem.OpMin, shmem.OpMax, shmem.OpAnd, shmem.OpOr, shmem.OpXor}
var opsArith = opsAll[:4]

// redVal is PE p's element i for op: small integers, so float sums and
// products are exact; negatives for min/max; hashed bits for and/or/xor.
func redVal[V shmem.Elem](op shmem.Op, p, i int) V {
	switch op {
	case shmem.OpSum:
		return V((p*3+i)%11 + 1)
	case shmem.OpProd:
		return V((p+i)%3 + 1)
	case shmem.OpMin, shmem.OpMax:
		x := int64((p*7+i*5)%13) - 6
		return V(x)
	}
	u := uint64(0x9E3779B97F4A7C15) * uint64(p*131+i+1)
	u ^= u >> 29
	return V(u)
}

func combArith[V shmem.Elem](op shmem.Op, a, b V) V {
	switch op {
	case shmem.OpSum:
		return a + b
	case shmem.OpProd:
		return a * b
	case shmem.OpMin:
		return min(a, b)
	case shmem.OpMax:
		return max(a, b)
	}
	panic("combArith: " + op.String())
}

func combInt[V interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}](op shmem.Op, a, b V) V {
	switch op {
	case shmem.OpAnd:
		return a & b
	case shmem.OpOr:
		return a | b
	case shmem.OpXor:
		return a ^ b
	}
	return combArith(op, a, b)
}

// reduceOn runs Reduce for every op in ops over g, out of place (with a
// sentinel tail in dst) and in place, for several lengths, and checks the
// exact result on every element.
func reduceOn[V shmem.Elem](t *T, g group, ops []shmem.Op, comb func(shmem.Op, V, V) V) {
	const maxN = 45
	src, err := shmem.Alloc[V](maxN)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](maxN + 3)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	for _, op := range ops {
		for _, cnt := range []int{maxN, 1, 0, 17} {
			what := fmt.Sprintf("Reduce %v %s n=%d on %s", op, typeName[V](), cnt, g.name)
			want := make([]V, maxN)
			for i := range want {
				want[i] = redVal[V](op, g.members[0], i)
				for _, p := range g.members[1:] {
					want[i] = comb(op, want[i], redVal[V](op, p, i))
				}
			}
			s, d := src.Local(), dst.Local()
			for i := range s {
				s[i] = redVal[V](op, me, i)
			}
			for i := range d {
				d[i] = V(77)
			}
			t.OK(what, shmem.Reduce(g.team, op, dst, src, cnt))
			for i := 0; i < maxN+3; i++ {
				w := V(77)
				if i < cnt {
					w = want[i]
				}
				if d[i] != w {
					t.Errorf("%s: dst[%d] = %v, want %v", what, i, d[i], w)
					break
				}
			}
			for i := range s {
				if s[i] != redVal[V](op, me, i) {
					t.Errorf("%s: src[%d] changed to %v", what, i, s[i])
					break
				}
			}
			// In place: dst == src.
			t.OK(what+" in place", shmem.Reduce(g.team, op, src, src, cnt))
			for i := 0; i < maxN; i++ {
				w := redVal[V](op, me, i)
				if i < cnt {
					w = want[i]
				}
				if s[i] != w {
					t.Errorf("%s in place: [%d] = %v, want %v", what, i, s[i], w)
					break
				}
			}
			// Nobody rewrites src for the next op before all have read it.
			t.OK("Sync", g.team.Sync())
		}
	}
}

func reduceInt[V interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}](t *T) {
	reduceOn(t, worldGroup(t.n, t.me), opsAll, combInt[V])
}

// reduceLarge: a long Reduce (many chunks per member), in place and not.
func reduceLarge(t *T) {
	const cnt = 100003
	src, err := shmem.Alloc[int64](cnt)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[float64](cnt)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	s, d := src.Local(), dst.Local()
	for i := range s {
		s[i] = int64(i)*int64(t.me+1) - 5
		d[i] = float64(i%1000) * float64(t.me+1)
	}
	t.OK("Reduce int64 sum", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, src, src, cnt))
	t.OK("Reduce float64 max", shmem.Reduce(shmem.TeamWorld, shmem.OpMax, dst, dst, cnt))
	tri := int64(t.n * (t.n + 1) / 2)
	for i := range s {
		if want := int64(i)*tri - 5*int64(t.n); s[i] != want {
			t.Errorf("int64 sum [%d] = %d, want %d", i, s[i], want)
			break
		}
	}
	for i := range d {
		if want := float64(i%1000) * float64(t.n); d[i] != want {
			t.Errorf("float64 max [%d] = %v, want %v", i, d[i], want)
			break
		}
	}
}

func reduceFloat[V ~float32 | ~float64](t *T) {
	reduceOn(t, worldGroup(t.n, t.me), opsArith, combArith[V])
}

// broadcastOn: Broadcast from every root of g; dst beyond n is untouched.
func broadcastOn[V shmem.Elem](t *T, g group) {
	const cnt = 33
	src, err := shmem.Alloc[V](cnt + 2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](cnt + 2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	for root := range g.members {
		what := fmt.Sprintf("Broadcast %s from root %d of %s", typeName[V](), root, g.name)
		copy(src.Local(), vals[V](me, root, 0, cnt+2))
		d := dst.Local()
		for i := range d {
			d[i] = V(99)
		}
		t.OK(what, shmem.Broadcast(g.team, dst, src, cnt, root))
		want := vals[V](g.members[root], root, 0, cnt)
		EqSlice(t, what, d[:cnt], want)
		EqSlice(t, what+": tail beyond n", d[cnt:], []V{99, 99})
		EqSlice(t, what+": src unchanged", src.Local(), vals[V](me, root, 0, cnt+2))
	}
	// Broadcast of 0 elements is a no-op.
	t.OK("Broadcast of 0 elements", shmem.Broadcast(g.team, dst, src, 0, 0))
}

// fcollectOn: FCollect into a dst with a sentinel tail.
func fcollectOn[V shmem.Elem](t *T, g group) {
	const cnt = 13
	size := len(g.members)
	src, err := shmem.Alloc[V](cnt)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](cnt*t.n + 1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	copy(src.Local(), vals[V](me, 1, 0, cnt))
	d := dst.Local()
	for i := range d {
		d[i] = V(55)
	}
	what := fmt.Sprintf("FCollect %s on %s", typeName[V](), g.name)
	t.OK(what, shmem.FCollect(g.team, dst, src, cnt))
	for j, p := range g.members {
		EqSlice(t, fmt.Sprintf("%s: block %d (PE %d)", what, j, p), d[j*cnt:(j+1)*cnt], vals[V](p, 1, 0, cnt))
	}
	Eq(t, what+": element after the blocks", d[size*cnt], V(55))
}

// alltoallOn: block j of each member goes to member j.
func alltoallOn[V shmem.Elem](t *T, g group) {
	const cnt = 11
	size := len(g.members)
	src, err := shmem.Alloc[V](cnt * t.n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](cnt*t.n + 1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	s := src.Local()
	for j, p := range g.members {
		copy(s[j*cnt:], vals[V](me, p, 0, cnt))
	}
	d := dst.Local()
	for i := range d {
		d[i] = V(44)
	}
	what := fmt.Sprintf("AllToAll %s on %s", typeName[V](), g.name)
	t.OK(what, shmem.AllToAll(g.team, dst, src, cnt))
	for j, p := range g.members {
		EqSlice(t, fmt.Sprintf("%s: block from member %d (PE %d)", what, j, p), d[j*cnt:(j+1)*cnt], vals[V](p, me, 0, cnt))
	}
	Eq(t, what+": element after the blocks", d[size*cnt], V(44))
}

func collTyped[V shmem.Elem](t *T) {
	g := worldGroup(t.n, t.me)
	broadcastOn[V](t, g)
	fcollectOn[V](t, g)
	alltoallOn[V](t, g)
}

// split describes TeamSplitStrided(TeamWorld, start, stride, size).
type split struct {
	name                string
	start, stride, size int
}

func splitsFor(n int) []split {
	s := []split{
		{"even", 0, 2, (n + 1) / 2},
		{"single(last)", n - 1, 1, 1},
		{"all", 0, 1, n},
	}
	if n >= 2 {
		s = append(s, split{"odd", 1, 2, n / 2})
		s = append(s, split{"reverse", n - 1, -1, n}) // negative stride
	}
	if n >= 4 {
		s = append(s, split{"stride3-from1", 1, 3, (n-2)/3 + 1})
		s = append(s, split{"upper-half", n / 2, 1, n - n/2})
	}
	return s
}

func makeGroup(t *T, parent group, sp split) group {
	tm, err := shmem.TeamSplitStrided(parent.team, sp.start, sp.stride, sp.size)
	name := parent.name + "/" + sp.name
	if !parent.in() {
		return group{name: name, team: shmem.TeamInvalid, idx: -1}
	}
	t.Must("TeamSplitStrided "+name, err)
	g := group{name: name, team: tm, idx: -1}
	for i := 0; i < sp.size; i++ {
		g.members = append(g.members, parent.members[sp.start+i*sp.stride])
	}
	for i, p := range g.members {
		if p == t.me {
			g.idx = i
		}
	}
	return g
}

// checkGroup asserts membership, numbering and translation.
func checkGroup(t *T, g group) {
	if !g.in() {
		Eq(t, g.name+": non-member gets TeamInvalid", g.team, shmem.TeamInvalid)
		Eq(t, g.name+": non-member Valid()", g.team.Valid(), false)
		Eq(t, g.name+": non-member MyPE()", g.team.MyPE(), -1)
		Eq(t, g.name+": non-member NPEs()", g.team.NPEs(), -1)
		Eq(t, g.name+": non-member TranslatePE", g.team.TranslatePE(0, shmem.TeamWorld), -1)
		t.Is(g.name+": Barrier on TeamInvalid", g.team.Barrier(), shmem.ErrInvalidArgument, fmt.Sprintf("PE %d", t.me))
		return
	}
	Eq(t, g.name+": Valid()", g.team.Valid(), true)
	Eq(t, g.name+": MyPE()", g.team.MyPE(), g.idx)
	Eq(t, g.name+": NPEs()", g.team.NPEs(), len(g.members))
	for i, p := range g.members {
		Eq(t, fmt.Sprintf("%s: TranslatePE(%d, TeamWorld)", g.name, i), g.team.TranslatePE(i, shmem.TeamWorld), p)
		Eq(t, fmt.Sprintf("%s: TeamWorld.TranslatePE(%d, team)", g.name, p), shmem.TeamWorld.TranslatePE(p, g.team), i)
	}
	Eq(t, g.name+": TranslatePE(size, world)", g.team.TranslatePE(len(g.members), shmem.TeamWorld), -1)
	Eq(t, g.name+": TranslatePE(-1, world)", g.team.TranslatePE(-1, shmem.TeamWorld), -1)
	isMember := map[int]bool{}
	for _, p := range g.members {
		isMember[p] = true
	}
	for p := 0; p < t.n; p++ {
		if !isMember[p] {
			Eq(t, fmt.Sprintf("%s: TeamWorld.TranslatePE(non-member %d)", g.name, p), shmem.TeamWorld.TranslatePE(p, g.team), -1)
		}
	}
}

// collOnGroup runs every data collective on g (called by every PE).
func collOnGroup(t *T, g group) {
	if g.in() {
		t.OK(g.name+": Barrier", g.team.Barrier())
		t.OK(g.name+": Sync", g.team.Sync())
	}
	broadcastOn[int32](t, g)
	broadcastOn[float64](t, g)
	reduceOn(t, g, []shmem.Op{shmem.OpSum, shmem.OpMax, shmem.OpXor}, combInt[int64])
	reduceOn(t, g, []shmem.Op{shmem.OpMin, shmem.OpProd}, combArith[float32])
	fcollectOn[int16](t, g)
	alltoallOn[uint64](t, g)
}

// teams: split TeamWorld every way, check each team, run every collective
// on it, split again inside it, destroy.
func teams(t *T) {
	me, n := t.me, t.n
	Eq(t, "TeamWorld.MyPE()", shmem.TeamWorld.MyPE(), me)
	Eq(t, "TeamWorld.NPEs()", shmem.TeamWorld.NPEs(), n)
	Eq(t, "TeamWorld.Valid()", shmem.TeamWorld.Valid(), true)
	for i := 0; i < n; i++ {
		Eq(t, "TeamWorld.TranslatePE to itself", shmem.TeamWorld.TranslatePE(i, shmem.TeamWorld), i)
	}
	world := worldGroup(n, me)
	for _, sp := range splitsFor(n) {
		g := makeGroup(t, world, sp)
		checkGroup(t, g)
		collOnGroup(t, g)
		// A team inside the team: its members 0, 2, 4, ...
		var sub group
		if g.in() {
			sub = makeGroup(t, g, split{"every-other", 0, 2, (len(g.members) + 1) / 2})
			checkGroup(t, sub)
			if sub.in() {
				reduceOnNoAlloc(t, sub)
				t.OK(sub.name+": Destroy", sub.team.Destroy())
			}
			t.OK(g.name+": Barrier", g.team.Barrier())
			t.OK(g.name+": Destroy", g.team.Destroy())
			t.Is(g.name+": Barrier after Destroy", g.team.Barrier(), shmem.ErrInvalidArgument)
			Eq(t, g.name+": Valid() after Destroy", g.team.Valid(), false)
		}
		t.Must("BarrierAll", shmem.BarrierAll())
	}
	t.Is("Destroy of TeamWorld", shmem.TeamWorld.Destroy(), shmem.ErrInvalidArgument)
}

// reduceOnNoAlloc reduces over a team nested in another without calling
// Alloc (only the nested team's members get here): it uses the runner's
// words through a world-allocated array made up front.
func reduceOnNoAlloc(t *T, g group) {
	// Team collectives need symmetric arrays; nestedBuf is allocated by
	// every PE in teamsNested before the splits.
	if nestedBuf.Len() == 0 {
		return
	}
	me := g.members[g.idx]
	nestedBuf.Local()[0] = int64(me + 1)
	t.OK(g.name+": Reduce", shmem.Reduce(g.team, shmem.OpSum, nestedBuf, nestedBuf, 1))
	want := int64(0)
	for _, p := range g.members {
		want += int64(p + 1)
	}
	Eq(t, g.name+": Reduce sum of PE+1 over the nested team", nestedBuf.Local()[0], want)
}

var nestedBuf shmem.Array[int64]

func teamsWithNested(t *T) {
	var err error
	nestedBuf, err = shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", nestedBuf.Free()); nestedBuf = shmem.Array[int64]{} }()
	teams(t)
}

// teamChurn: create and destroy many more teams than there are team slots
// under GOSHMEM_MAX_TEAMS=64 (TestTeams runs it so); each one must still
// synchronise correctly. Where GOSHMEM_MAX_TEAMS leaves at most 128 slots
// it also fills every slot: at the default that takes 1,086 splits, which
// -mode teams-many makes (TestTeams).
func teamChurn(t *T) {
	me, n := t.me, t.n
	a, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	for i := 0; i < 150; i++ {
		start := i % n
		size := (n - start + 1) / 2
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, start, 2, size)
		t.Must(fmt.Sprintf("TeamSplitStrided #%d", i), err)
		member := me >= start && (me-start)%2 == 0
		if member != tm.Valid() {
			t.Fatalf("split #%d (start %d): member %v but Valid() %v", i, start, member, tm.Valid())
		}
		if member {
			a.Local()[0] = int64(i + me)
			t.OK("Reduce", shmem.Reduce(tm, shmem.OpSum, a, a, 1))
			want := int64(0)
			for p := start; p < n; p += 2 {
				want += int64(i + p)
			}
			Eq(t, fmt.Sprintf("split #%d: Reduce sum", i), a.Local()[0], want)
			t.OK("Destroy", tm.Destroy())
		}
	}
	slots := teamSlots()
	if slots > 128 {
		return
	}
	// Without Destroy the slots run out with a clear error (not a hang),
	// and destroying them makes room again.
	var kept []shmem.Team
	var last error
	for i := 0; i <= slots; i++ {
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, n)
		if err != nil {
			last = err
			break
		}
		kept = append(kept, tm)
	}
	t.Is("TeamSplitStrided with every team slot in use", last, shmem.ErrInvalidArgument,
		fmt.Sprintf("all %d team slots (GOSHMEM_MAX_TEAMS) are in use", slots))
	for _, tm := range kept {
		t.OK("Destroy", tm.Destroy())
	}
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, n)
	t.OK("TeamSplitStrided after destroying the kept teams", err)
	if err == nil {
		t.OK("Barrier", tm.Barrier())
		t.OK("Destroy", tm.Destroy())
	}
}
