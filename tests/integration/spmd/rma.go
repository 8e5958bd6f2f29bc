package main

import (
	"fmt"
	"sync"

	"github.com/goshmem/goshmem/shmem"
)

// val is the value sender s writes to receiver r at index i: distinct
// per (s, r, i) modulo 97, small enough for int8, with a fraction for
// floating-point types.
func val[V shmem.Elem](s, r, i int) V {
	x := (s*37+r*11+i*3)%97 + 1
	frac := 0.25
	return V(x) + V(frac)
}

func vals[V shmem.Elem](s, r, from, n int) []V {
	out := make([]V, n)
	for i := range out {
		out[i] = val[V](s, r, from+i)
	}
	return out
}

func typeName[V shmem.Elem]() string {
	var z V
	return fmt.Sprintf("%T", z)
}

// typed registers one check per element type.
func typed(prefix string, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64 func(*T)) {
	for _, x := range []struct {
		n string
		f func(*T)
	}{{"int8", i8}, {"int16", i16}, {"int32", i32}, {"int64", i64}, {"uint8", u8},
		{"uint16", u16}, {"uint32", u32}, {"uint64", u64}, {"float32", f32}, {"float64", f64}} {
		if x.f != nil {
			register(prefix+"/"+x.n, x.f)
		}
	}
}

// segLen is the elements each sender owns in a receiver's array: odd, so
// segments start at unaligned offsets for every element size.
const segLen = 37

// putGet: every PE puts a segment into every PE (including itself), with
// 0-length puts at the edges; reads back locally and with Get, at offsets;
// then overwrites a middle part and checks the neighbours.
func putGet[V shmem.Elem](nbi bool) func(*T) {
	return func(t *T) {
		me, n := t.me, t.n
		L := n*segLen + 5
		a, err := shmem.Alloc[V](L)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", a.Free()) }()
		put, get := shmem.Put[V], shmem.Get[V]
		if nbi {
			put, get = shmem.PutNBI[V], shmem.GetNBI[V]
		}
		keep := make([][]V, n) // NBI sources must live until Quiet
		for k := 0; k < n; k++ {
			r := (me + k) % n
			keep[r] = vals[V](me, r, 0, segLen)
			t.OK(fmt.Sprintf("Put to PE %d", r), put(a, me*segLen, keep[r], r))
			t.OK("0-length Put at index 0", put(a, 0, nil, r))
			t.OK("0-length Put at index Len", put(a, L, []V{}, r))
		}
		if nbi {
			t.OK("Quiet", shmem.Quiet())
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		loc := a.Local()
		for s := 0; s < n; s++ {
			EqSlice(t, fmt.Sprintf("local segment from PE %d", s), loc[s*segLen:(s+1)*segLen], vals[V](s, me, 0, segLen))
		}
		EqSlice(t, "tail nobody wrote", loc[n*segLen:], make([]V, 5))

		// Get back what this PE put everywhere, whole and at an offset.
		bufs := make([][]V, n)
		parts := make([][]V, n)
		for k := 0; k < n; k++ {
			r := (me + k) % n
			bufs[r] = make([]V, segLen)
			parts[r] = make([]V, 5)
			t.OK("Get", get(bufs[r], a, me*segLen, r))
			t.OK("Get at an offset", get(parts[r], a, me*segLen+3, r))
			t.OK("0-length Get at index Len", get(nil, a, L, r))
		}
		if nbi {
			t.OK("Quiet", shmem.Quiet())
		}
		for r := 0; r < n; r++ {
			EqSlice(t, fmt.Sprintf("Get of my segment on PE %d", r), bufs[r], vals[V](me, r, 0, segLen))
			EqSlice(t, fmt.Sprintf("Get of my segment [3,8) on PE %d", r), parts[r], vals[V](me, r, 3, 5))
		}
		t.Must("BarrierAll", shmem.BarrierAll())

		// Overwrite elements [7, 16) of my segment everywhere with a second
		// pattern; elements 6 and 16 must keep the first one.
		for k := 0; k < n; k++ {
			r := (me + k) % n
			keep[r] = vals[V](me+50, r, 7, 9)
			t.OK("Put of a middle range", put(a, me*segLen+7, keep[r], r))
		}
		if nbi {
			t.OK("Quiet", shmem.Quiet())
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		for s := 0; s < n; s++ {
			want := vals[V](s, me, 0, segLen)
			copy(want[7:16], vals[V](s+50, me, 7, 9))
			EqSlice(t, fmt.Sprintf("segment from PE %d after the middle overwrite", s), loc[s*segLen:(s+1)*segLen], want)
		}
		t.Must("BarrierAll", shmem.BarrierAll())
	}
}

// pg: P and G of one element to and from every PE.
func pg[V shmem.Elem](t *T) {
	me, n := t.me, t.n
	a, err := shmem.Alloc[V](n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	for r := 0; r < n; r++ {
		t.OK("P", shmem.P(a, me, val[V](me, r, 0), r))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	for s := 0; s < n; s++ {
		Eq(t, fmt.Sprintf("a[%d] written by PE %d with P", s, s), a.Local()[s], val[V](s, me, 0))
	}
	for r := 0; r < n; r++ {
		for s := 0; s < n; s++ {
			got, err := shmem.G(a, s, r)
			t.OK("G", err)
			Eq(t, fmt.Sprintf("G a[%d] on PE %d", s, r), got, val[V](s, r, 0))
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// ctxCheck: contexts carry RMA and atomics, quiet their own scope, work
// from several goroutines, and are dead after Destroy.
func ctxCheck(t *T) {
	me, n := t.me, t.n
	const G = 4 // goroutines, one context each
	L := n * G * segLen
	a, err := shmem.Alloc[int64](L)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	cnt, err := shmem.Alloc[uint64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", cnt.Free()) }()
	f, err := shmem.Alloc[float32](n)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", f.Free()) }()

	var wg sync.WaitGroup
	var mu sync.Mutex
	errorf := func(format string, args ...any) { mu.Lock(); t.Errorf(format, args...); mu.Unlock() }
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c, err := shmem.NewCtx()
			if err != nil {
				errorf("NewCtx: %v", err)
				return
			}
			base := (me*G + g) * segLen
			for k := 0; k < n; k++ {
				r := (me + k) % n
				src := vals[int64](me*G+g, r, 0, segLen)
				half := segLen / 2
				if err := shmem.PutCtx(c, a, base, src[:half], r); err != nil {
					errorf("PutCtx: %v", err)
				}
				if err := shmem.PutNBICtx(c, a, base+half, src[half:], r); err != nil {
					errorf("PutNBICtx: %v", err)
				}
				if _, err := shmem.AtomicFetchAddCtx(c, cnt, 0, 1, r); err != nil {
					errorf("AtomicFetchAddCtx: %v", err)
				}
				if err := c.Fence(); err != nil {
					errorf("Ctx.Fence: %v", err)
				}
			}
			if err := c.Quiet(); err != nil {
				errorf("Ctx.Quiet: %v", err)
			}
			if err := c.Destroy(); err != nil {
				errorf("Ctx.Destroy: %v", err)
			}
		}(g)
	}
	wg.Wait()
	t.Must("BarrierAll", shmem.BarrierAll())
	loc := a.Local()
	for s := 0; s < n; s++ {
		for g := 0; g < G; g++ {
			base := (s*G + g) * segLen
			EqSlice(t, fmt.Sprintf("block of PE %d goroutine %d", s, g), loc[base:base+segLen], vals[int64](s*G+g, me, 0, segLen))
		}
	}
	Eq(t, "counter incremented by every context of every PE", cnt.Local()[0], uint64(n*G))

	c, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	next := (me + 1) % n
	t.OK("PCtx", shmem.PCtx(c, f, me, float32(me)+0.5, next))
	t.OK("Ctx.Quiet", c.Quiet())
	got := make([]int64, segLen)
	t.OK("GetCtx", shmem.GetCtx(c, got, a, 0, next))
	EqSlice(t, "GetCtx of PE 0 goroutine 0's block on the next PE", got, vals[int64](0, next, 0, segLen))
	got2 := make([]int64, segLen)
	t.OK("GetNBICtx", shmem.GetNBICtx(c, got2, a, segLen, next))
	t.OK("Ctx.Quiet", c.Quiet())
	EqSlice(t, "GetNBICtx", got2, vals[int64](0*G+1, next, 0, segLen))
	t.Must("BarrierAll", shmem.BarrierAll())
	prev := (me - 1 + n) % n
	v, err := shmem.GCtx(c, f, prev, me)
	t.OK("GCtx", err)
	Eq(t, "value the previous PE wrote with PCtx", v, float32(prev)+0.5)
	t.OK("Ctx.Destroy", c.Destroy())

	// A destroyed context is dead.
	ia := shmem.ErrInvalidArgument
	t.Is("PutCtx on a destroyed context", shmem.PutCtx(c, a, 0, []int64{1}, me), ia, "destroyed", fmt.Sprintf("PE %d", me))
	t.Is("GetCtx on a destroyed context", shmem.GetCtx(c, got, a, 0, me), ia, "destroyed")
	t.Is("PCtx on a destroyed context", shmem.PCtx(c, f, 0, 1, me), ia)
	_, err = shmem.AtomicFetchAddCtx(c, cnt, 0, 1, me)
	t.Is("AtomicFetchAddCtx on a destroyed context", err, ia)
	t.Is("Ctx.Quiet on a destroyed context", c.Quiet(), ia)
	t.Is("Ctx.Fence on a destroyed context", c.Fence(), ia)
	t.Is("Ctx.Destroy twice", c.Destroy(), ia)
	var dflt *shmem.Ctx
	t.Is("Destroy of the default context", dflt.Destroy(), ia, "default")
	t.OK("PutCtx on the default (nil) context", shmem.PutCtx(dflt, a, 0, []int64{42}, me))
	Eq(t, "value put on the default context", a.Local()[0], int64(42))
	usable(t, "a destroyed context")
}
