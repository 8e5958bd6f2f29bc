package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/goshmem/goshmem/shmem"
)

const amoK = 200 // atomics per PE per target

// gatherAll concatenates every PE's local slice (k elements) in PE order
// with FCollect.
func gatherAll[V shmem.Elem](t *T, mine []V) []V {
	k := len(mine)
	src, err := shmem.Alloc[V](k)
	t.Must("Alloc", err)
	dst, err := shmem.Alloc[V](k * t.n)
	t.Must("Alloc", err)
	copy(src.Local(), mine)
	t.Must("FCollect", shmem.FCollect(shmem.TeamWorld, dst, src, k))
	out := slices.Clone(dst.Local())
	t.OK("Free", dst.Free())
	t.OK("Free", src.Free())
	return out
}

// isPermutation asserts that olds holds every value of [0, m) once.
func isPermutation[V shmem.Elem](t *T, what string, olds []V, m int) {
	seen := make([]int, m)
	for i, v := range olds {
		x := int(v)
		if x < 0 || x >= m {
			t.Errorf("%s: old value #%d = %v is outside [0, %d)", what, i, v, m)
			return
		}
		seen[x]++
	}
	for x, c := range seen {
		if c != 1 {
			t.Errorf("%s: old value %d returned %d times, want once", what, x, c)
			return
		}
	}
}

// fetchAddOnPE0: every PE does amoK AtomicFetchAdd(1) on a counter on PE 0
// at once; the final value is exact and the old values are a permutation.
func fetchAddOnPE0[V shmem.Integer](t *T) {
	me, n := t.me, t.n
	c, err := shmem.Alloc[V](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", c.Free()) }()
	olds := make([]V, amoK)
	for i := range olds {
		var err error
		olds[i], err = shmem.AtomicFetchAdd(c, 0, 1, 0)
		t.OK("AtomicFetchAdd", err)
	}
	// This PE's own olds increase strictly (its adds are ordered).
	for i := 1; i < amoK; i++ {
		if !(olds[i] > olds[i-1]) {
			t.Errorf("this PE's fetched values not increasing at %d: %v then %v", i, olds[i-1], olds[i])
			break
		}
	}
	all := gatherAll(t, olds)
	isPermutation(t, "old values of AtomicFetchAdd on PE 0 from all PEs", all, n*amoK)
	v, err := shmem.AtomicFetch(c, 0, 0)
	t.OK("AtomicFetch", err)
	Eq(t, "final counter on PE 0", v, V(n*amoK))
	_ = me
}

// incEverywhere: every PE does amoK AtomicFetchInc on a counter on every
// PE (staggered), and amoK AtomicInc on a second counter.
func incEverywhere(t *T) {
	me, n := t.me, t.n
	c, err := shmem.Alloc[int64](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", c.Free()) }()
	olds := make([]int64, n*amoK) // [target*amoK + i]
	for i := 0; i < amoK; i++ {
		for k := 0; k < n; k++ {
			r := (me + k) % n
			o, err := shmem.AtomicFetchInc(c, 0, r)
			t.OK("AtomicFetchInc", err)
			olds[r*amoK+i] = o
			t.OK("AtomicInc", shmem.AtomicInc(c, 1, r))
		}
	}
	all := gatherAll(t, olds) // [sender][target][i]
	for r := 0; r < n; r++ {
		var toR []int64
		for s := 0; s < n; s++ {
			toR = append(toR, all[s*n*amoK+r*amoK:s*n*amoK+(r+1)*amoK]...)
		}
		isPermutation(t, fmt.Sprintf("old values of AtomicFetchInc on PE %d", r), toR, n*amoK)
	}
	Eq(t, "AtomicFetchInc counter on this PE", c.Local()[0], int64(n*amoK))
	Eq(t, "AtomicInc counter on this PE", c.Local()[1], int64(n*amoK))
	t.Must("BarrierAll", shmem.BarrierAll())
	for k := 0; k < amoK; k++ {
		for j := 0; j < n; j++ {
			t.OK("AtomicAdd", shmem.AtomicAdd(c, 1, int64(-1), (me+j)%n))
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "counter after every PE's AtomicAdd(-1) x amoK", c.Local()[1], int64(0))
}

// casLock: a lock word on PE 0 taken with AtomicCompareSwap; under the lock
// each PE increments a plain (non-atomic) counter on PE 0 with G/P. The
// counter is exact only if the lock excludes.
func casLock[L interface {
	~int32 | ~int64 | ~uint32 | ~uint64
}](t *T) {
	me, n := t.me, t.n
	const rounds = 60
	lock, err := shmem.Alloc[L](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", lock.Free()) }()
	ctr, err := shmem.Alloc[int64](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", ctr.Free()) }()
	for i := 0; i < rounds; i++ {
		for spins := 0; ; spins++ {
			old, err := shmem.AtomicCompareSwap(lock, 0, 0, L(me+1), 0)
			if !t.OK("AtomicCompareSwap", err) {
				return
			}
			if old == 0 {
				break
			}
			if old < 1 || int(old) > n {
				t.Fatalf("lock word holds %v, not a PE+1 in [1, %d]", old, n)
			}
		}
		// Critical section: read-modify-write with plain G and P, plus a
		// second word updated with Get/Put of a block.
		v, err := shmem.G(ctr, 0, 0)
		t.OK("G", err)
		t.OK("P", shmem.P(ctr, 0, v+1, 0))
		buf := make([]int64, 1)
		t.OK("Get", shmem.Get(buf, ctr, 1, 0))
		buf[0] += 2
		t.OK("Put", shmem.Put(ctr, 1, buf, 0))
		t.OK("Quiet", shmem.Quiet()) // the counter lands before the unlock
		old, err := shmem.AtomicCompareSwap(lock, 0, L(me+1), 0, 0)
		t.OK("AtomicCompareSwap unlock", err)
		Eq(t, "lock word at unlock", old, L(me+1))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	g0, err := shmem.G(ctr, 0, 0)
	t.OK("G", err)
	Eq(t, "counter incremented under the CAS lock", g0, int64(n*rounds))
	g1, err := shmem.G(ctr, 1, 0)
	t.OK("G", err)
	Eq(t, "second counter (Get/Put under the lock)", g1, int64(2*n*rounds))
	lv, err := shmem.AtomicFetch(lock, 0, 0)
	t.OK("AtomicFetch", err)
	Eq(t, "lock word at the end", lv, L(0))
	// A failing compare leaves the word alone and returns it.
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		t.OK("AtomicSet", shmem.AtomicSet(lock, 0, 7, 0))
		old, err := shmem.AtomicCompareSwap(lock, 0, 3, 9, 0)
		t.OK("AtomicCompareSwap", err)
		Eq(t, "failed CAS returns the current value", old, L(7))
		now, _ := shmem.AtomicFetch(lock, 0, 0)
		Eq(t, "failed CAS leaves the word", now, L(7))
	}
}

// swapCheck: every PE swaps me+1 into one word on PE 0; the returned old
// values plus the final value are exactly {0, 1, ..., n}.
func swapCheck[V shmem.Elem](t *T) {
	me, n := t.me, t.n
	w, err := shmem.Alloc[V](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	old, err := shmem.AtomicSwap(w, 0, V(me+1), 0)
	t.OK("AtomicSwap", err)
	all := gatherAll(t, []V{old})
	final, err := shmem.AtomicFetch(w, 0, 0)
	t.OK("AtomicFetch", err)
	all = append(all, final)
	isPermutation(t, "AtomicSwap old values plus the final value", all, n+1)
}

// fetchSetFloat: AtomicFetch/AtomicSet/AtomicSwap on floating point and
// integer types, to every PE, with exact values (NaN payload and -0 too).
func fetchSet[V shmem.Elem](t *T) {
	me, n := t.me, t.n
	w, err := shmem.Alloc[V](n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	for r := 0; r < n; r++ {
		t.OK("AtomicSet", shmem.AtomicSet(w, me, val[V](me, r, 1), r))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	for r := 0; r < n; r++ {
		for s := 0; s < n; s++ {
			got, err := shmem.AtomicFetch(w, s, r)
			t.OK("AtomicFetch", err)
			Eq(t, fmt.Sprintf("AtomicFetch w[%d] on PE %d", s, r), got, val[V](s, r, 1))
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	for r := 0; r < n; r++ {
		old, err := shmem.AtomicSwap(w, me, val[V](me, r, 2), r)
		t.OK("AtomicSwap", err)
		Eq(t, fmt.Sprintf("AtomicSwap old w[%d] on PE %d", me, r), old, val[V](me, r, 1))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	for s := 0; s < n; s++ {
		Eq(t, fmt.Sprintf("w[%d] after the swaps", s), w.Local()[s], val[V](s, me, 2))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// floatBits: AtomicSet/Fetch/Swap move float bits exactly (-0, NaN payload, Inf).
func floatBits(t *T) {
	me, n := t.me, t.n
	next := (me + 1) % n
	f64, err := shmem.Alloc[float64](3)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", f64.Free()) }()
	f32, err := shmem.Alloc[float32](3)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", f32.Free()) }()
	nan64 := math.Float64frombits(0x7ff8_0000_dead_beef)
	nan32 := math.Float32frombits(0x7fc0_beef)
	t.OK("AtomicSet", shmem.AtomicSet(f64, 0, math.Copysign(0, -1), next))
	t.OK("AtomicSet", shmem.AtomicSet(f64, 1, nan64, next))
	t.OK("AtomicSet", shmem.AtomicSet(f64, 2, math.Inf(-1), next))
	t.OK("AtomicSet", shmem.AtomicSet(f32, 0, float32(math.Copysign(0, -1)), next))
	t.OK("AtomicSet", shmem.AtomicSet(f32, 1, nan32, next))
	t.OK("AtomicSet", shmem.AtomicSet(f32, 2, float32(1e38), next))
	t.Must("BarrierAll", shmem.BarrierAll())
	l64, l32 := f64.Local(), f32.Local()
	Eq(t, "float64 -0 bits", math.Float64bits(l64[0]), math.Float64bits(math.Copysign(0, -1)))
	Eq(t, "float64 NaN payload", math.Float64bits(l64[1]), uint64(0x7ff8_0000_dead_beef))
	Eq(t, "float64 -Inf", l64[2], math.Inf(-1))
	Eq(t, "float32 -0 bits", math.Float32bits(l32[0]), uint32(0x8000_0000))
	Eq(t, "float32 NaN payload", math.Float32bits(l32[1]), uint32(0x7fc0_beef))
	Eq(t, "float32 1e38", l32[2], float32(1e38))
	old, err := shmem.AtomicSwap(f64, 1, 2.5, me)
	t.OK("AtomicSwap", err)
	Eq(t, "float64 AtomicSwap returns the NaN's bits", math.Float64bits(old), uint64(0x7ff8_0000_dead_beef))
	o32, err := shmem.AtomicSwap(f32, 2, -3.25, me)
	t.OK("AtomicSwap", err)
	Eq(t, "float32 AtomicSwap old", o32, float32(1e38))
	t.Must("BarrierAll", shmem.BarrierAll())
	prev := (me - 1 + n) % n
	g, err := shmem.AtomicFetch(f64, 1, prev)
	t.OK("AtomicFetch", err)
	Eq(t, "float64 AtomicFetch of the swapped value", g, 2.5)
	g32, err := shmem.AtomicFetch(f32, 2, prev)
	t.OK("AtomicFetch", err)
	Eq(t, "float32 AtomicFetch of the swapped value", g32, float32(-3.25))
}

// bitwise: each PE sets, then clears, then toggles its own bit of a word
// on PE 0 and on every PE, with the fetching and non-fetching forms.
func bitwise[V interface {
	~int32 | ~uint32 | ~uint64 | ~int64 | ~uint16 | ~int8
}](t *T) {
	me, n := t.me, t.n
	w, err := shmem.Alloc[V](2)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	bits := 8 * int(sizeOf[V]())
	bit := V(1) << (me % bits)
	all := V(0)
	for p := 0; p < n; p++ {
		all |= V(1) << (p % bits)
	}
	// word 1 on every PE starts all ones: AND clears.
	w.Local()[1] = ^V(0)
	t.Must("BarrierAll", shmem.BarrierAll())
	for r := 0; r < n; r++ {
		old, err := shmem.AtomicFetchOr(w, 0, bit, r)
		t.OK("AtomicFetchOr", err)
		if n <= bits && old&bit != 0 {
			t.Errorf("AtomicFetchOr on PE %d: my bit already set in old %#x", r, old)
		}
		old, err = shmem.AtomicFetchAnd(w, 1, ^bit, r)
		t.OK("AtomicFetchAnd", err)
		if n <= bits && old&bit == 0 {
			t.Errorf("AtomicFetchAnd on PE %d: my bit already clear in old %#x", r, old)
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "word 0 after every PE's Or", w.Local()[0], all)
	Eq(t, "word 1 after every PE's And", w.Local()[1], ^all)
	t.Must("BarrierAll", shmem.BarrierAll())
	for r := 0; r < n; r++ {
		t.OK("AtomicXor", shmem.AtomicXor(w, 0, bit, r)) // clears my bit
		t.OK("AtomicOr", shmem.AtomicOr(w, 1, bit, r))   // sets it back
		_, err := shmem.AtomicFetchXor(w, 1, V(0), r)    // no-op
		t.OK("AtomicFetchXor 0", err)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	if n <= bits {
		Eq(t, "word 0 after every PE's Xor", w.Local()[0], V(0))
	}
	Eq(t, "word 1 after every PE's Or", w.Local()[1], ^V(0))
	t.Must("BarrierAll", shmem.BarrierAll())
	for r := 0; r < n; r++ {
		t.OK("AtomicAnd", shmem.AtomicAnd(w, 1, ^bit, r))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "word 1 after every PE's AtomicAnd", w.Local()[1], ^all)
}

func sizeOf[V shmem.Elem]() uintptr {
	var z V
	switch any(z).(type) {
	case int8, uint8:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32, float32:
		return 4
	}
	return 8
}

// narrow: 8- and 16-bit atomics on adjacent lanes, from every PE at once.
// The array is two 32-bit words; elements 1..lanes (crossing the word
// boundary) are hammered, element 0 and the rest of word 1 are sentinels:
// each hammered lane's result is exact, and the sentinels keep their values.
func narrow[V interface {
	~int8 | ~uint8 | ~int16 | ~uint16
}](t *T) {
	me, n := t.me, t.n
	lanes := int(4 / sizeOf[V]()) // lanes per 32-bit word
	a, err := shmem.Alloc[V](2 * lanes)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	sent := func(i int) V { return V(0x5a + i) }
	isHot := func(i int) bool { return i >= 1 && i <= lanes }
	if me == 0 {
		for i := 0; i < 2*lanes; i++ {
			if !isHot(i) {
				a.Local()[i] = sent(i)
			}
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	const k = 150
	olds := make([]V, 0, k)
	for i := 0; i < k; i++ {
		for l := 0; l < lanes; l++ {
			idx := 1 + (l+me)%lanes
			if idx == 1 {
				o, err := shmem.AtomicFetchAdd(a, idx, 1, 0)
				t.OK("AtomicFetchAdd", err)
				olds = append(olds, o)
			} else {
				t.OK("AtomicAdd", shmem.AtomicAdd(a, idx, V(idx), 0))
			}
		}
	}
	all := gatherAll(t, olds)
	if me == 0 {
		loc := a.Local()
		Eq(t, "element 1 after n*k FetchAdd(1) (wrapping)", loc[1], V(n*k))
		for i := 2; i <= lanes; i++ {
			Eq(t, fmt.Sprintf("element %d after n*k Add(%d) (wrapping)", i, i), loc[i], V(n*k*i))
		}
		for i := 0; i < 2*lanes; i++ {
			if !isHot(i) {
				Eq(t, fmt.Sprintf("sentinel element %d untouched", i), loc[i], sent(i))
			}
		}
		// Fetched values of element 1: each value v mod 2^bits appears as
		// often as the numbers in [0, n*k) congruent to it.
		mod := 1 << (8 * sizeOf[V]())
		want := map[V]int{}
		for x := 0; x < n*k; x++ {
			want[V(x%mod)]++
		}
		got := map[V]int{}
		for _, v := range all {
			got[v]++
		}
		Eq(t, "distinct fetched values", len(got), len(want))
		for v, c := range want {
			if got[v] != c {
				t.Errorf("element 1: fetched value %v seen %d times, want %d", v, got[v], c)
				break
			}
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	// Swap and compare-swap on the sentinel element 0 (shares a word with
	// hot lanes), from the last PE.
	if me == n-1 {
		old, err := shmem.AtomicSwap(a, 0, V(7), 0)
		t.OK("AtomicSwap", err)
		Eq(t, "narrow AtomicSwap old", old, sent(0))
		old, err = shmem.AtomicCompareSwap(a, 0, V(7), V(9), 0)
		t.OK("AtomicCompareSwap", err)
		Eq(t, "narrow AtomicCompareSwap old", old, V(7))
		old, err = shmem.AtomicCompareSwap(a, 0, V(99), V(100), 0)
		t.OK("AtomicCompareSwap (failing)", err)
		Eq(t, "narrow failing AtomicCompareSwap old", old, V(9))
		old, err = shmem.AtomicFetchXor(a, 0, V(0x0f), 0)
		t.OK("AtomicFetchXor", err)
		Eq(t, "narrow AtomicFetchXor old", old, V(9))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		loc := a.Local()
		Eq(t, "element 0 after swap/CAS/xor", loc[0], V(9)^V(0x0f))
		Eq(t, "element 1 unchanged by the swaps on element 0", loc[1], V(n*k))
		for i := lanes + 1; i < 2*lanes; i++ {
			Eq(t, fmt.Sprintf("sentinel element %d untouched", i), loc[i], sent(i))
		}
	}
}
