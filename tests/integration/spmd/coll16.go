package main

import (
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// The collectives of OpenSHMEM 1.6 that issue 16 adds (Collect,
// AllToAllStrided, SumInScan, SumExScan), on TeamWorld and on split
// teams, at sizes that take the one-sync path through the team scratch
// and sizes past it; and the large paths of the older collectives.

func init() { moreChecks = append(moreChecks, registerColl16) }

func registerColl16() {
	typed("coll16/collect", collectCheck[int8], collectCheck[int16], collectCheck[int32], collectCheck[int64],
		collectCheck[uint8], collectCheck[uint16], collectCheck[uint32], collectCheck[uint64],
		collectCheck[float32], collectCheck[float64])
	typed("coll16/alltoalls", alltoallsCheck[int8], nil, alltoallsCheck[int32], alltoallsCheck[int64],
		nil, alltoallsCheck[uint16], nil, alltoallsCheck[uint64], alltoallsCheck[float32], alltoallsCheck[float64])
	typed("coll16/scan", scanCheck[int8], scanCheck[int16], scanCheck[int32], scanCheck[int64],
		scanCheck[uint8], scanCheck[uint16], scanCheck[uint32], scanCheck[uint64],
		scanCheck[float32], scanCheck[float64])
	register("coll16/teams", coll16Teams)
	register("coll16/large", coll16Large)
	register("coll16/errors", coll16Errors)
}

// scratchElems is more elements of V than one member's contribution in
// the team scratch can hold (8 KiB): counts past it take the large paths.
func scratchElems[V shmem.Elem]() int { return 8192/int(sizeOf[V]()) + 3 }

// collectCounts are the per-member counts of Collect runs on a team of
// size members: all different (and some zero), small; one member past the
// team scratch; every member past it.
func collectCounts[V shmem.Elem](size int) [][]int {
	big := scratchElems[V]()
	var small, oneBig, allBig []int
	for i := range size {
		small = append(small, (i*7+3)%11)
		c := i % 3
		if i == size/2 {
			c = big
		}
		oneBig = append(oneBig, c)
		allBig = append(allBig, big+i)
	}
	return [][]int{small, oneBig, allBig, make([]int, size)}
}

// collectOn: Collect with a different n on every member of g; dst's tail
// beyond the blocks is untouched.
func collectOn[V shmem.Elem](t *T, g group) {
	size := len(g.members)
	maxN := scratchElems[V]() + t.n
	src, err := shmem.Alloc[V](maxN)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](t.n*maxN + 2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	for ci, counts := range collectCounts[V](size) {
		what := fmt.Sprintf("Collect %s on %s, counts #%d %v", typeName[V](), g.name, ci, counts)
		copy(src.Local(), vals[V](me, ci, 0, maxN))
		d := dst.Local()
		for i := range d {
			d[i] = V(66)
		}
		if !t.OK(what, shmem.Collect(g.team, dst, src, counts[g.idx])) {
			continue
		}
		at := 0
		for j, p := range g.members {
			EqSlice(t, fmt.Sprintf("%s: block of member %d (PE %d)", what, j, p), d[at:at+counts[j]], vals[V](p, ci, 0, counts[j]))
			at += counts[j]
		}
		EqSlice(t, what+": after the blocks", d[at:at+2], []V{66, 66})
		EqSlice(t, what+": src unchanged", src.Local(), vals[V](me, ci, 0, maxN))
	}
}

func collectCheck[V shmem.Elem](t *T) { collectOn[V](t, worldGroup(t.n, t.me)) }

// stridePairs are the (dstStride, srcStride) pairs alltoallsOn runs.
var stridePairs = [][2]int{{1, 1}, {2, 1}, {1, 3}, {3, 2}}

// alltoallsOn: AllToAllStrided for every stride pair and several n; the
// elements between the strided ones are untouched.
func alltoallsOn[V shmem.Elem](t *T, g group) {
	size := len(g.members)
	big := scratchElems[V]()/t.n + 2 // past the team scratch on every team of 2 or more
	counts := []int{0, 1, 7, big}
	maxLen := (t.n*big-1)*3 + 1
	src, err := shmem.Alloc[V](maxLen)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](maxLen + 1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	for _, sp := range stridePairs {
		ds, ss := sp[0], sp[1]
		for _, n := range counts {
			what := fmt.Sprintf("AllToAllStrided %s on %s, dst stride %d, src stride %d, n %d", typeName[V](), g.name, ds, ss, n)
			s := src.Local()
			for i := range s {
				s[i] = V(99) // between the strided elements: never sent
			}
			for j, p := range g.members {
				for k := 0; k < n; k++ {
					s[(j*n+k)*ss] = val[V](me, p, k)
				}
			}
			d := dst.Local()
			for i := range d {
				d[i] = V(55)
			}
			if !t.OK(what, shmem.AllToAllStrided(g.team, dst, src, ds, ss, n)) {
				continue
			}
			bad := 0
			for i := range d {
				want := V(55)
				if i%ds == 0 && i/ds < size*n {
					blk, k := (i/ds)/max(n, 1), (i/ds)%max(n, 1)
					want = val[V](g.members[blk], me, k)
				}
				if d[i] != want {
					if bad < 3 {
						t.Errorf("%s: dst[%d] = %v, want %v", what, i, d[i], want)
					}
					bad++
				}
			}
			t.OK("Sync", g.team.Sync()) // nobody rewrites src before all have read it
		}
	}
}

func alltoallsCheck[V shmem.Elem](t *T) { alltoallsOn[V](t, worldGroup(t.n, t.me)) }

// scanOn: SumInScan and SumExScan for several n, out of place (dst's tail
// untouched) and in place; sums in team order with V's arithmetic, as the
// library takes them.
func scanOn[V shmem.Elem](t *T, g group) {
	big := scratchElems[V]()
	src, err := shmem.Alloc[V](big + 1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[V](big + 2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	for _, exclusive := range []bool{false, true} {
		scan, name := shmem.SumInScan[V], "SumInScan"
		if exclusive {
			scan, name = shmem.SumExScan[V], "SumExScan"
		}
		for _, n := range []int{0, 1, 13, big} {
			what := fmt.Sprintf("%s %s n=%d on %s", name, typeName[V](), n, g.name)
			want := make([]V, n)
			last := g.idx
			if exclusive {
				last--
			}
			for k := range want {
				for j := 0; j <= last; j++ {
					want[k] += val[V](g.members[j], 5, k)
				}
			}
			s := src.Local()
			copy(s, vals[V](me, 5, 0, big+1))
			d := dst.Local()
			for i := range d {
				d[i] = V(33)
			}
			if t.OK(what, scan(g.team, dst, src, n)) {
				EqSlice(t, what, d[:n], want)
				EqSlice(t, what+": tail", d[n:n+2], []V{33, 33})
				EqSlice(t, what+": src unchanged", s, vals[V](me, 5, 0, big+1))
			}
			t.OK("Sync", g.team.Sync())
			if t.OK(what+" in place", scan(g.team, src, src, n)) {
				EqSlice(t, what+" in place", s[:n], want)
				EqSlice(t, what+" in place: tail", s[n:], vals[V](me, 5, n, big+1-n))
			}
			t.OK("Sync", g.team.Sync())
		}
	}
}

func scanCheck[V shmem.Elem](t *T) { scanOn[V](t, worldGroup(t.n, t.me)) }

// coll16Teams: the new collectives on every split of TeamWorld (strided,
// reversed, single-member teams), with non-members allocating alongside.
func coll16Teams(t *T) {
	world := worldGroup(t.n, t.me)
	for _, sp := range splitsFor(t.n) {
		g := makeGroup(t, world, sp)
		collectOn[int32](t, g)
		collectOn[float64](t, g)
		alltoallsOn[int64](t, g)
		alltoallsOn[uint16](t, g)
		scanOn[int64](t, g)
		scanOn[float32](t, g)
		largeOn(t, g)
		if g.in() {
			t.OK(g.name+": Destroy", g.team.Destroy())
		}
		t.Must("BarrierAll", shmem.BarrierAll())
	}
}

// largeOn: Broadcast, FCollect, AllToAll and Reduce past the team scratch
// (their two-sync paths), on g.
func largeOn(t *T, g group) {
	const cnt = 1100 // int64: 8800 bytes per member
	size := len(g.members)
	blocks := max(t.n, 3) // AllToAll needs n blocks, Reduce runs over 3
	src, err := shmem.Alloc[int64](cnt * blocks)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[int64](cnt*blocks + 1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	if !g.in() {
		return
	}
	me := g.members[g.idx]
	s, d := src.Local(), dst.Local()
	reset := func() {
		for i := range s {
			s[i] = int64(val[int32](me, i/cnt, i%cnt))
		}
		for i := range d {
			d[i] = 77
		}
	}
	for root := range size {
		reset()
		what := fmt.Sprintf("Broadcast %d int64 from root %d of %s", cnt, root, g.name)
		if t.OK(what, shmem.Broadcast(g.team, dst, src, cnt, root)) {
			want := make([]int64, cnt)
			for i := range want {
				want[i] = int64(val[int32](g.members[root], 0, i))
			}
			EqSlice(t, what, d[:cnt], want)
			Eq(t, what+": tail", d[cnt], 77)
		}
		t.OK("Sync", g.team.Sync())
	}
	reset()
	what := fmt.Sprintf("FCollect %d int64 on %s", cnt, g.name)
	if t.OK(what, shmem.FCollect(g.team, dst, src, cnt)) {
		for j, p := range g.members {
			want := make([]int64, cnt)
			for i := range want {
				want[i] = int64(val[int32](p, 0, i))
			}
			EqSlice(t, fmt.Sprintf("%s: block %d", what, j), d[j*cnt:(j+1)*cnt], want)
		}
		Eq(t, what+": tail", d[size*cnt], 77)
	}
	t.OK("Sync", g.team.Sync())
	reset()
	what = fmt.Sprintf("AllToAll %d int64 on %s", cnt, g.name)
	if t.OK(what, shmem.AllToAll(g.team, dst, src, cnt)) {
		for j, p := range g.members {
			want := make([]int64, cnt)
			for i := range want {
				want[i] = int64(val[int32](p, g.idx, i))
			}
			EqSlice(t, fmt.Sprintf("%s: block from %d", what, j), d[j*cnt:(j+1)*cnt], want)
		}
	}
	t.OK("Sync", g.team.Sync())
	for _, op := range []shmem.Op{shmem.OpSum, shmem.OpMax, shmem.OpXor} {
		reset()
		what := fmt.Sprintf("Reduce %v %d int64 on %s", op, 3*cnt, g.name)
		if t.OK(what, shmem.Reduce(g.team, op, dst, src, 3*cnt)) {
			want := make([]int64, 3*cnt)
			for i := range want {
				for j, p := range g.members {
					x := int64(val[int32](p, i/cnt, i%cnt))
					if j == 0 {
						want[i] = x
						continue
					}
					want[i] = combInt(op, want[i], x)
				}
			}
			EqSlice(t, what, d[:3*cnt], want)
		}
		t.OK("Sync", g.team.Sync())
	}
}

func coll16Large(t *T) { largeOn(t, worldGroup(t.n, t.me)) }

// coll16Errors: bad arguments of the new collectives fail on every member
// (naming the PE, the argument and its range) and leave the team usable.
func coll16Errors(t *T) {
	n := t.n
	src, err := shmem.Alloc[int32](10)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", src.Free()) }()
	dst, err := shmem.Alloc[int32](8*n + 1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", dst.Free()) }()
	w := shmem.TeamWorld
	oob, ia := shmem.ErrOutOfBounds, shmem.ErrInvalidArgument

	// One PE passes n beyond its src: it names its own n, every other PE
	// names it.
	bad := n - 1
	cnt := 2
	if t.me == bad {
		cnt = 11
	}
	err = shmem.Collect(w, dst, src, cnt)
	if t.me == bad {
		t.Is("Collect with n past src", err, oob, pe(t), "n = 11", "[0, 10]")
	} else {
		t.Is("Collect where another PE passed a bad n", err, ia, pe(t), fmt.Sprintf("PE %d passed an invalid n", bad))
	}
	if t.me == bad {
		cnt = -3
	}
	err = shmem.Collect(w, dst, src, cnt)
	if t.me == bad {
		t.Is("Collect with n < 0", err, ia, pe(t), "n = -3", ">= 0")
	} else {
		t.Is("Collect where another PE passed n < 0", err, ia, fmt.Sprintf("PE %d passed an invalid n", bad))
	}
	// The counts add up past dst on every PE.
	t.Is("Collect past dst", shmem.Collect(w, dst, src, 10), oob, pe(t), "dst needs", fmt.Sprintf("has %d", 8*n+1))
	t.OK("Collect that fits, after the failures", shmem.Collect(w, dst, src, 8))

	for _, c := range []struct {
		what       string
		ds, ss, n  int
		sentinel   error
		containing []string
	}{
		{"dstStride 0", 0, 1, 1, ia, []string{"dstStride = 0", ">= 1"}},
		{"srcStride -1", 1, -1, 1, ia, []string{"srcStride = -1", ">= 1"}},
		{"n < 0", 1, 1, -1, ia, []string{"n = -1", ">= 0"}},
		{"src too short", 1, 2, 6, oob, []string{"src needs", "has 10"}},
		{"dst too short", 2, 1, 8, oob, []string{"dst needs", fmt.Sprintf("has %d", 8*n+1)}},
		{"overflowing strides", 1 << 62, 1, 8, oob, []string{"dst needs more than 2^64 elements"}},
	} {
		t.Is("AllToAllStrided with "+c.what, shmem.AllToAllStrided(w, dst, src, c.ds, c.ss, c.n), c.sentinel,
			append([]string{pe(t)}, c.containing...)...)
	}
	t.Is("SumInScan past dst", shmem.SumInScan(w, src, dst, 11), oob, pe(t), "dst needs 11 elements, has 10")
	t.Is("SumExScan with n < 0", shmem.SumExScan(w, dst, src, -1), ia, pe(t))
	inv := shmem.TeamInvalid
	t.Is("Collect on TeamInvalid", shmem.Collect(inv, dst, src, 1), ia, pe(t))
	t.Is("AllToAllStrided on TeamInvalid", shmem.AllToAllStrided(inv, dst, src, 1, 1, 1), ia)
	t.Is("SumInScan on TeamInvalid", shmem.SumInScan(inv, dst, src, 1), ia)
	t.Is("Collect of the zero Array", shmem.Collect(w, shmem.Array[int32]{}, src, 1), ia, pe(t), "dst")
	usable(t, "bad arguments of the new collectives")
}
