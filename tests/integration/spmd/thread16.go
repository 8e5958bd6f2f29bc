package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// ThreadMultiple for collectives (OpenSHMEM 1.6 §9.2): goroutines of one
// PE run collectives on different teams at once, and the PEs start them in
// different orders. Each goroutine keeps to one team (collectives on one
// team must be serialized by the program); one of them runs TeamWorld's
// collectives and heap calls meanwhile. With a PE's collectives serialized
// across teams, a PE that entered team A's collective first and a peer that
// entered team B's first would wait for each other until the -guard
// timeout.

func init() { moreChecks = append(moreChecks, registerThread16) }

func registerThread16() {
	register("thread16/coll-teams", threadCollTeams)
	register("thread16/splits", threadSplits)
}

// failures gathers the failures of one goroutine (T is not safe for
// concurrent use); the check's goroutine reports them.
type failures struct {
	mu   sync.Mutex
	msgs []string
}

func (f *failures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *failures) ok(what string, err error) bool {
	if err != nil {
		f.add("%s: unexpected error: %v", what, err)
		return false
	}
	return true
}

func (f *failures) report(t *T) {
	for _, m := range f.msgs {
		t.Errorf("%s", m)
	}
}

// stagger delays goroutine i of this PE on every other PE, so that
// neighbouring PEs enter the teams' collectives in different orders.
func stagger(me, i int) {
	if (me+i)%2 == 1 {
		time.Sleep(3 * time.Millisecond)
	}
}

// threadRounds is n rounds, halved above 4 PEs (each round of every team
// costs a turn of every PE on the CPUs; the checks are about overlap, which
// a few rounds show).
func threadRounds(t *T, n int) int {
	if t.n > 4 {
		return max(n/2, 2)
	}
	return n
}

// threadVal is member m's element j of round r on team k.
func threadVal(k, r, m, j int) int64 { return int64(k*1000000 + r*1000 + m*10 + j) }

// teamArrays are the arrays of one team's goroutine, allocated before the
// goroutines start (Alloc is a TeamWorld collective: goroutines that
// allocated for themselves would make it in different orders on
// different PEs).
type teamArrays struct{ src, dst shmem.Array[int64] }

const threadN = 3 // elements per member of each collective

func allocTeamArrays(t *T, gs []group) []teamArrays {
	var out []teamArrays
	for range gs {
		src, err := shmem.Alloc[int64](threadN * t.n)
		t.Must("Alloc", err)
		dst, err := shmem.Alloc[int64](threadN*t.n + 1)
		t.Must("Alloc", err)
		out = append(out, teamArrays{src, dst})
	}
	return out
}

func freeTeamArrays(t *T, as []teamArrays) {
	for _, a := range as {
		t.OK("Free", a.src.Free())
		t.OK("Free", a.dst.Free())
	}
}

// teamRounds runs rounds of Reduce, Broadcast, FCollect, AllToAll, Collect
// and Sync on g (team number k) over a, checking every value.
func teamRounds(f *failures, g group, k int, a teamArrays, rounds int) {
	if !g.in() {
		return
	}
	const n = threadN
	size, me := len(g.members), g.idx
	src, dst := a.src, a.dst
	for r := range rounds {
		what := fmt.Sprintf("%s (team %d), round %d", g.name, k, r)
		s, d := src.Local(), dst.Local()
		for i := range s {
			s[i] = threadVal(k, r, me, i)
		}
		if f.ok(what+": Reduce", shmem.Reduce(g.team, shmem.OpSum, dst, src, n)) {
			for j := range n {
				var want int64
				for m := range size {
					want += threadVal(k, r, m, j)
				}
				if d[j] != want {
					f.add("%s: Reduce [%d]: got %d, want %d", what, j, d[j], want)
				}
			}
		}
		root := r % size
		if f.ok(what+": Broadcast", shmem.Broadcast(g.team, dst, src, n, root)) {
			for j := range n {
				if want := threadVal(k, r, root, j); d[j] != want {
					f.add("%s: Broadcast from %d [%d]: got %d, want %d", what, root, j, d[j], want)
				}
			}
		}
		if f.ok(what+": FCollect", shmem.FCollect(g.team, dst, src, n)) {
			for m := range size {
				for j := range n {
					if want := threadVal(k, r, m, j); d[m*n+j] != want {
						f.add("%s: FCollect block %d [%d]: got %d, want %d", what, m, j, d[m*n+j], want)
					}
				}
			}
		}
		if f.ok(what+": AllToAll", shmem.AllToAll(g.team, dst, src, n)) {
			for m := range size {
				for j := range n {
					if want := threadVal(k, r, m, me*n+j); d[m*n+j] != want {
						f.add("%s: AllToAll block from %d [%d]: got %d, want %d", what, m, j, d[m*n+j], want)
					}
				}
			}
		}
		cnt := func(m int) int { return (m + r) % (n + 1) }
		if f.ok(what+": Collect", shmem.Collect(g.team, dst, src, cnt(me))) {
			at := 0
			for m := range size {
				for j := range cnt(m) {
					if want := threadVal(k, r, m, j); d[at+j] != want {
						f.add("%s: Collect block %d [%d]: got %d, want %d", what, m, j, d[at+j], want)
					}
				}
				at += cnt(m)
			}
		}
		f.ok(what+": Sync", g.team.Sync())
	}
}

// threadTeams splits TeamWorld into two teams of every PE and one of the
// even PEs (the other PEs get TeamInvalid).
func threadTeams(t *T) []group {
	all := worldGroup(t.n, t.me)
	var gs []group
	for i := range 2 {
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, t.n)
		t.Must("TeamSplitStrided", err)
		gs = append(gs, group{name: fmt.Sprintf("copy %d of the world", i), team: tm, members: all.members, idx: t.me})
	}
	evens := (t.n + 1) / 2
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 2, evens)
	t.Must("TeamSplitStrided (evens)", err)
	g := group{name: "the even PEs", team: tm, idx: -1}
	for i := range evens {
		g.members = append(g.members, 2*i)
	}
	if t.me%2 == 0 {
		g.idx = t.me / 2
	}
	return append(gs, g)
}

func destroyTeams(t *T, gs []group) {
	for _, g := range gs {
		t.OK("Destroy "+g.name, g.team.Destroy())
	}
}

// worldRounds runs TeamWorld collectives and heap calls: Alloc, a put to
// the next PE, BarrierAll, a sum Reduce, Free.
func worldRounds(f *failures, me, npes, rounds int) {
	for r := range rounds {
		what := fmt.Sprintf("TeamWorld, round %d", r)
		a, err := shmem.Alloc[int64](2 + r%3)
		if !f.ok(what+": Alloc", err) {
			return
		}
		next, prev := (me+1)%npes, (me+npes-1)%npes
		f.ok(what+": Put", shmem.Put(a, 1, []int64{int64(r*100 + me)}, next))
		a.Local()[0] = int64(r + me)
		if f.ok(what+": BarrierAll", shmem.BarrierAll()) {
			if got, want := a.Local()[1], int64(r*100+prev); got != want {
				f.add("%s: value put by PE %d: got %d, want %d", what, prev, got, want)
			}
		}
		if f.ok(what+": Reduce", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, 1)) {
			if got, want := a.Local()[0], int64(npes*r+npes*(npes-1)/2); got != want {
				f.add("%s: Reduce: got %d, want %d", what, got, want)
			}
		}
		f.ok(what+": Free", a.Free())
	}
}

// threadCollTeams: one goroutine per team, plus one on TeamWorld doing
// collectives and heap calls, all at once, started in different orders on
// neighbouring PEs.
func threadCollTeams(t *T) {
	gs := threadTeams(t)
	defer destroyTeams(t, gs)
	as := allocTeamArrays(t, gs)
	defer freeTeamArrays(t, as)
	var f failures
	var wg sync.WaitGroup
	rounds := threadRounds(t, 12)
	for i, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stagger(t.me, i)
			teamRounds(&f, g, i, as[i], rounds)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		stagger(t.me, len(gs))
		worldRounds(&f, t.me, t.n, rounds)
	}()
	wg.Wait()
	f.report(t)
	t.OK("BarrierAll", shmem.BarrierAll())
}

// threadSplits: goroutines split their teams at once (TeamSplitStrided of
// one, TeamSplit2D of another, TeamSplitStrided of the even PEs' team),
// use the new teams and destroy them, while TeamWorld's goroutine runs
// its collectives and heap calls.
func threadSplits(t *T) {
	gs := threadTeams(t)
	defer destroyTeams(t, gs)
	as := allocTeamArrays(t, gs)
	defer freeTeamArrays(t, as)
	var f failures
	var wg sync.WaitGroup
	rounds := threadRounds(t, 4)
	for i, g := range gs {
		if !g.in() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stagger(t.me, i)
			size := len(g.members)
			for r := range rounds {
				what := fmt.Sprintf("split %d of %s", r, g.name)
				if i == 1 {
					x, y, err := shmem.TeamSplit2D(g.team, 2)
					if !f.ok(what+": TeamSplit2D", err) {
						return
					}
					for _, tm := range []shmem.Team{x, y} {
						f.ok(what+": Barrier", tm.Barrier())
					}
					if want := min(2, size-g.idx/2*2); x.NPEs() != want {
						f.add("%s: x team of %d PEs, want %d", what, x.NPEs(), want)
					}
					f.ok(what+": Destroy x", x.Destroy())
					f.ok(what+": Destroy y", y.Destroy())
					continue
				}
				sub, err := shmem.TeamSplitStrided(g.team, 0, 1, size)
				if !f.ok(what+": TeamSplitStrided", err) {
					return
				}
				sg := group{name: what, team: sub, members: g.members, idx: g.idx}
				teamRounds(&f, sg, i, as[i], 2)
				f.ok(what+": Destroy", sub.Destroy())
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		worldRounds(&f, t.me, t.n, 3*rounds)
	}()
	wg.Wait()
	f.report(t)
	t.OK("BarrierAll", shmem.BarrierAll())
}
