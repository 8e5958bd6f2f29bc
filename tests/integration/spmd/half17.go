package main

import (
	"fmt"
	"math"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// Float16 and BFloat16 across PEs (issue 17): the data-movement checks of
// the other element types (bits in, the same bits out), and checks of the
// calls that treat them as numbers: waits and tests on values, Reduce
// accumulated in float32 and rounded once per element, the scans, on the
// world and on split teams, at sizes on both sides of the team scratch.

func init() { moreChecks = append(moreChecks, registerHalf) }

// halfTyped registers one check per half type.
func halfTyped(prefix string, f16, bf16 func(*T)) {
	register(prefix+"/Float16", f16)
	register(prefix+"/BFloat16", bf16)
}

func registerHalf() {
	halfTyped("half/put-get", putGet[shmem.Float16](false), putGet[shmem.BFloat16](false))
	halfTyped("half/nbi", putGet[shmem.Float16](true), putGet[shmem.BFloat16](true))
	halfTyped("half/p-g", pg[shmem.Float16], pg[shmem.BFloat16])
	halfTyped("half/swap", swapCheck[shmem.Float16], swapCheck[shmem.BFloat16])
	halfTyped("half/fetch-set", fetchSet[shmem.Float16], fetchSet[shmem.BFloat16])
	halfTyped("half/bcast-fcollect-alltoall", collTyped[shmem.Float16], collTyped[shmem.BFloat16])
	halfTyped("half/collect", collectCheck[shmem.Float16], collectCheck[shmem.BFloat16])
	halfTyped("half/alltoalls", alltoallsCheck[shmem.Float16], alltoallsCheck[shmem.BFloat16])
	halfTyped("half/wait-until", halfWait(shmem.Float16FromFloat32), halfWait(shmem.BFloat16FromFloat32))
	halfTyped("half/reduce", halfReduce(shmem.Float16FromFloat32), halfReduce(shmem.BFloat16FromFloat32))
	halfTyped("half/scan", halfScan(shmem.Float16FromFloat32), halfScan(shmem.BFloat16FromFloat32))
	halfTyped("half/refused", halfRefused(shmem.Float16FromFloat32), halfRefused(shmem.BFloat16FromFloat32))
}

type half interface {
	shmem.Float16 | shmem.BFloat16
	Float32() float32
}

// halfWaitCases compare values where the bit patterns order differently:
// negative numbers (sign bit set) and zeros of both signs.
var halfWaitCases = []struct {
	cmp               shmem.Cmp
	init, v, mid, fin float32
}{
	{shmem.CmpLT, 1, 0, 0.5, -2},    // -2 < 0 although its bits are larger
	{shmem.CmpGT, -4, -3, -3.5, -1}, // -1 > -3: bits smaller
	{shmem.CmpEQ, 1, 0, 2, 0},       // fin is -0 (set below): -0 == +0
	{shmem.CmpLE, 3, -1, 2, -1.5},
	{shmem.CmpGE, -10, -2, -5, -2},
	{shmem.CmpNE, 7, 7, 7, -7},
}

// halfWait: each PE waits on its word while the previous PE writes it
// (first a value that does not satisfy the comparison, then one that
// does); TestCmp agrees before and after.
func halfWait[V half](of func(float32) V) func(*T) {
	return func(t *T) {
		me, n := t.me, t.n
		w, err := shmem.Alloc[V](len(halfWaitCases))
		t.Must("Alloc", err)
		defer func() { t.OK("Free", w.Free()) }()
		next := (me + 1) % n
		negZero := of(float32(math.Copysign(0, -1)))
		for i, c := range halfWaitCases {
			fin := of(c.fin)
			if c.cmp == shmem.CmpEQ {
				fin = negZero
			}
			what := fmt.Sprintf("%s: word %v %v %v", typeName[V](), c.init, c.cmp, c.v)
			w.Local()[i] = of(c.init)
			t.Must("BarrierAll", shmem.BarrierAll())
			ok, err := shmem.TestCmp(w, i, c.cmp, of(c.v))
			t.OK("TestCmp", err)
			Eq(t, "TestCmp before the write: "+what, ok, false)
			t.Must("BarrierAll", shmem.BarrierAll())
			var done chan error
			if n == 1 {
				t.OK("P", shmem.P(w, i, fin, next))
			} else {
				done = make(chan error, 1)
				go func() {
					if err := shmem.P(w, i, of(c.mid), next); err != nil {
						done <- err
						return
					}
					time.Sleep(2 * time.Millisecond)
					done <- shmem.AtomicSet(w, i, fin, next)
				}()
			}
			t.OK("WaitUntil "+what, shmem.WaitUntil(w, i, c.cmp, of(c.v)))
			if done != nil {
				t.OK("writer", <-done)
			}
			Eq(t, "value after WaitUntil "+what, w.Local()[i], fin)
			ok, err = shmem.TestCmp(w, i, c.cmp, of(c.v))
			t.OK("TestCmp", err)
			Eq(t, "TestCmp after the wait: "+what, ok, true)
		}
		t.Must("BarrierAll", shmem.BarrierAll())
	}
}

// halfValue is member m's element k: at every 4th element member 0 adds
// 2048 and the others small integers, so rounding every partial sum would
// give other bits than the float32 sum rounded once.
func halfValue(op shmem.Op, m, k int) float32 {
	switch op {
	case shmem.OpProd:
		return float32((m+k)%3+1) * 1.125
	case shmem.OpMin, shmem.OpMax:
		return float32((m*37+k*11)%251-100) / 8
	}
	if m == 0 && k%4 == 0 {
		return 2048
	}
	return float32(1 + (m+k)%3)
}

// halfFold is the expected result: members 0..last's values (as V) folded
// in float32 in team order, rounded once.
func halfFold[V half](of func(float32) V, op shmem.Op, last, k int) V {
	acc := of(halfValue(op, 0, k)).Float32()
	for m := 1; m <= last; m++ {
		v := of(halfValue(op, m, k)).Float32()
		switch op {
		case shmem.OpSum:
			acc += v
		case shmem.OpProd:
			acc *= v
		case shmem.OpMin:
			acc = min(acc, v)
		case shmem.OpMax:
			acc = max(acc, v)
		}
	}
	return of(acc)
}

// halfCounts: small, odd, and past the team scratch (8 KiB per member;
// on small teams more than one 2048-element block per member).
var halfCounts = []int{0, 1, 13, 8192/2 + 7}

// halfGroups: the world and three splits (strided, reversed, single).
func halfGroups(t *T) []group {
	world := worldGroup(t.n, t.me)
	gs := []group{world}
	for _, sp := range splitsFor(t.n) {
		switch sp.name {
		case "even", "reverse", "single(last)":
			gs = append(gs, makeGroup(t, world, sp))
		}
	}
	return gs
}

func halfReduce[V half](of func(float32) V) func(*T) {
	return func(t *T) {
		cnt := halfCounts[len(halfCounts)-1]
		src, err := shmem.Alloc[V](cnt + 1)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", src.Free()) }()
		dst, err := shmem.Alloc[V](cnt + 1)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", dst.Free()) }()
		for _, g := range halfGroups(t) {
			if g.in() {
				size := len(g.members)
				for _, op := range []shmem.Op{shmem.OpSum, shmem.OpProd, shmem.OpMin, shmem.OpMax} {
					for _, n := range halfCounts {
						for _, inPlace := range []bool{false, true} {
							what := fmt.Sprintf("Reduce %s %v on %s, n %d, in place %v", typeName[V](), op, g.name, n, inPlace)
							s, d := src.Local(), dst.Local()
							for k := range s {
								s[k] = of(halfValue(op, g.idx, k))
								d[k] = of(99)
							}
							out := dst
							if inPlace {
								out = src
							}
							t.OK(what, shmem.Reduce(g.team, op, out, src, n))
							got := out.Local()
							for k := 0; k < n; k++ {
								if want := halfFold(of, op, size-1, k); got[k] != want {
									t.Errorf("%s: element %d = %v, want %v", what, k, got[k], want)
									break
								}
							}
							past := of(99)
							if inPlace {
								past = of(halfValue(op, g.idx, n))
							}
							Eq(t, what+": past the end", got[n], past)
							t.OK("Barrier", g.team.Barrier())
						}
					}
				}
			}
			if g.team != shmem.TeamWorld && g.in() {
				t.OK(g.name+": Destroy", g.team.Destroy())
			}
			t.Must("BarrierAll", shmem.BarrierAll())
		}
	}
}

func halfScan[V half](of func(float32) V) func(*T) {
	return func(t *T) {
		cnt := halfCounts[len(halfCounts)-1]
		src, err := shmem.Alloc[V](cnt + 1)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", src.Free()) }()
		dst, err := shmem.Alloc[V](cnt + 1)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", dst.Free()) }()
		for _, g := range halfGroups(t) {
			if g.in() {
				for _, exclusive := range []bool{false, true} {
					for _, n := range halfCounts {
						what := fmt.Sprintf("scan %s on %s, n %d, exclusive %v", typeName[V](), g.name, n, exclusive)
						s, d := src.Local(), dst.Local()
						for k := range s {
							s[k] = of(halfValue(shmem.OpSum, g.idx, k))
							d[k] = of(99)
						}
						scan := shmem.SumInScan[V]
						last := g.idx
						if exclusive {
							scan, last = shmem.SumExScan[V], last-1
						}
						t.OK(what, scan(g.team, dst, src, n))
						for k := 0; k < n; k++ {
							want := of(0)
							if last >= 0 {
								want = halfFold(of, shmem.OpSum, last, k)
							}
							if d[k] != want {
								t.Errorf("%s: element %d = %v, want %v", what, k, d[k], want)
								break
							}
						}
						Eq(t, what+": past the end", d[n], of(99))
						t.OK("Barrier", g.team.Barrier())
					}
				}
			}
			if g.team != shmem.TeamWorld && g.in() {
				t.OK(g.name+": Destroy", g.team.Destroy())
			}
			t.Must("BarrierAll", shmem.BarrierAll())
		}
	}
}

// halfRefused: bitwise reductions and the integer-only atomics refuse the
// half types on every PE, as they refuse float32, and change nothing.
func halfRefused[V half](of func(float32) V) func(*T) {
	return func(t *T) {
		a, err := shmem.Alloc[V](4)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", a.Free()) }()
		a.Local()[0] = of(1.5)
		t.Must("BarrierAll", shmem.BarrierAll())
		next := (t.me + 1) % t.n
		for _, op := range []shmem.Op{shmem.OpAnd, shmem.OpOr, shmem.OpXor} {
			t.Is(fmt.Sprintf("Reduce %v on %s", op, typeName[V]()), shmem.Reduce(shmem.TeamWorld, op, a, a, 1),
				shmem.ErrInvalidArgument, "floating point")
		}
		_, err = shmem.AtomicFetchAdd(a, 0, of(1), next)
		t.Is("AtomicFetchAdd on "+typeName[V](), err, shmem.ErrInvalidArgument, "integer types only")
		t.Is("AtomicInc on "+typeName[V](), shmem.AtomicInc(a, 0, next), shmem.ErrInvalidArgument)
		t.Must("BarrierAll", shmem.BarrierAll())
		Eq(t, "unchanged after refused calls", a.Local()[0], of(1.5))
		t.Must("BarrierAll", shmem.BarrierAll())
	}
}
