package main

import (
	"fmt"

	"github.com/goshmem/goshmem/shmem"
)

// OpenSHMEM 1.6 RMA, atomics and signals: strided puts and gets, the
// non-blocking fetching atomics, SignalUpdate and PutSignalNBI.

func init() { moreChecks = append(moreChecks, registerRMA16) }

func registerRMA16() {
	// One type per element size (and float64): the copies move bytes; the
	// per-type atomics are amo/'s.
	typed("rma16/strided", strided[int8], strided[int16], strided[int32], strided[int64], nil,
		nil, nil, nil, nil, strided[float64])
	register("rma16/strided-ctx", stridedCtx)
	typed("rma16/nbi-fetch-inc", nil, nil, nbiFetchInc[int32], nil, nil, nil, nil, nbiFetchInc[uint64], nil, nil)
	register("rma16/nbi-fetch-after-barrier", nbiAfterBarrier)
	register("rma16/nbi-cas-swap-bitwise", nbiCasSwapBitwise)
	register("rma16/signal-update", signalUpdate)
	register("rma16/put-signal-nbi", putSignalNBI)
}

// stridedShape is one strided transfer: nb blocks of bs elements, block k
// at sym + k*symStride in the owner's region of the symmetric array and at
// k*localStride in the local slice.
type stridedShape struct {
	name                   string
	symStride, localStride int
	bs, nb                 int
}

var stridedShapes = []stridedShape{
	{"stride 2", 2, 2, 1, 1000},
	{"stride 2, past the 64 KiB staging buffer", 2, 2, 1, 5000},
	{"array contiguous, local stride 3", 1, 3, 1, 500},
	{"array stride 5, local contiguous", 5, 1, 1, 300},
	{"wide gaps", 100, 120, 1, 20},
	{"negative array stride", -3, 2, 1, 50},
	{"array stride 0", 0, 1, 1, 10},
	{"local stride 0", 2, 0, 1, 10},
	{"blocks of 4", 7, 5, 4, 40},
	{"blocks contiguous at the array", 4, 9, 4, 30},
	{"blocks overlapping", 3, 3, 5, 10},
	{"blocks of 2048", 3000, 2500, 2048, 4},
	{"blocks negative array stride", -8, 6, 3, 12},
}

// extent is the elements nb blocks of bs span with the given stride, and
// the index of block 0 within that span (the last for negative strides).
func extent(stride, bs, nb int) (span, first int) {
	a := stride
	if a < 0 {
		a = -a
		first = (nb - 1) * a
	}
	return (nb-1)*a + bs, first
}

// stridedRef applies a strided copy in block order (the result the calls
// promise where blocks overlap).
func stridedRef[V shmem.Elem](dst []V, dIdx, dStride int, src []V, sIdx, sStride, bs, nb int) {
	for k := 0; k < nb; k++ {
		for j := 0; j < bs; j++ {
			dst[dIdx+k*dStride+j] = src[sIdx+k*sStride+j]
		}
	}
}

// strided: for every shape, every PE puts a strided pattern into its own
// region of every PE's array (itself included) with IPut/IBPut; each PE
// checks every sender's region against a reference copy; then every PE
// reads its pattern back from every PE with IGet/IBGet.
func strided[V shmem.Elem](t *T) {
	me, n := t.me, t.n
	for _, sh := range stridedShapes {
		seg, first := extent(sh.symStride, sh.bs, sh.nb)
		lspan, _ := extent(sh.localStride, sh.bs, sh.nb)
		a, err := shmem.Alloc[V](n * seg)
		t.Must("Alloc", err)
		what := func(s string, pe int) string { return fmt.Sprintf("%s: %s, PE %d", sh.name, s, pe) }
		srcOf := func(s, r int) []V { return vals[V](s, r, 0, lspan) }
		for k := 0; k < n; k++ {
			r := (me + k) % n
			src := srcOf(me, r)
			if sh.bs == 1 {
				t.OK(what("IPut to", r), shmem.IPut(a, me*seg+first, sh.symStride, src, sh.localStride, sh.nb, r))
			} else {
				t.OK(what("IBPut to", r), shmem.IBPut(a, me*seg+first, sh.symStride, src, sh.localStride, sh.bs, sh.nb, r))
			}
			clear(src) // reusable on return
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		for s := 0; s < n; s++ {
			want := make([]V, seg)
			stridedRef(want, first, sh.symStride, srcOf(s, me), 0, sh.localStride, sh.bs, sh.nb)
			EqSlice(t, what("region written by", s), a.Local()[s*seg:(s+1)*seg], want)
		}
		for k := 0; k < n; k++ {
			r := (me + n - k) % n
			got := make([]V, lspan)
			if sh.bs == 1 {
				t.OK(what("IGet from", r), shmem.IGet(got, sh.localStride, a, me*seg+first, sh.symStride, sh.nb, r))
			} else {
				t.OK(what("IBGet from", r), shmem.IBGet(got, sh.localStride, a, me*seg+first, sh.symStride, sh.bs, sh.nb, r))
			}
			// Read back what this PE put: the local positions it took
			// its data from, and zeros elsewhere.
			region := make([]V, seg)
			stridedRef(region, first, sh.symStride, srcOf(me, r), 0, sh.localStride, sh.bs, sh.nb)
			want := make([]V, lspan)
			stridedRef(want, 0, sh.localStride, region, first, sh.symStride, sh.bs, sh.nb)
			EqSlice(t, what("IGet/IBGet of this PE's region on", r), got, want)
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		t.OK("Free", a.Free())
	}
}

// stridedCtx: IPutCtx/IBPutCtx on a context complete with Ctx.Quiet (then a
// barrier publishes them); IGetCtx/IBGetCtx read them back; an out-of-range
// stride fails on every PE naming the PE.
func stridedCtx(t *T) {
	me, n := t.me, t.n
	next, prev := (me+1)%n, (me-1+n)%n
	ctx, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", ctx.Destroy()) }()
	a, err := shmem.Alloc[int64](64)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", a.Free()) }()
	src := make([]int64, 16)
	for i := range src {
		src[i] = int64(me*100 + i)
	}
	t.OK("IPutCtx", shmem.IPutCtx(ctx, a, 0, 4, src, 1, 8, next))
	t.OK("IBPutCtx", shmem.IBPutCtx(ctx, a, 33, 6, src, 4, 2, 4, next))
	t.OK("Ctx.Quiet", ctx.Quiet())
	t.Must("BarrierAll", shmem.BarrierAll())
	loc := a.Local()
	for k := 0; k < 8; k++ {
		Eq(t, fmt.Sprintf("IPutCtx element %d", k), loc[4*k], int64(prev*100+k))
	}
	for k := 0; k < 4; k++ {
		Eq(t, fmt.Sprintf("IBPutCtx block %d[0]", k), loc[33+6*k], int64(prev*100+4*k))
		Eq(t, fmt.Sprintf("IBPutCtx block %d[1]", k), loc[34+6*k], int64(prev*100+4*k+1))
	}
	got := make([]int64, 8)
	t.OK("IGetCtx", shmem.IGetCtx(ctx, got, 1, a, 0, 4, 8, next))
	EqSlice(t, "IGetCtx of what this PE put", got, src[:8])
	got2 := make([]int64, 16)
	t.OK("IBGetCtx", shmem.IBGetCtx(ctx, got2, 4, a, 33, 6, 2, 4, next))
	for k := 0; k < 4; k++ {
		Eq(t, fmt.Sprintf("IBGetCtx block %d", k), got2[4*k+1], src[4*k+1])
	}
	err = shmem.IPutCtx(ctx, a, 60, 2, src, 1, 3, next)
	t.Is("IPutCtx past the end", err, shmem.ErrOutOfBounds, pe(t), "dst indices 60..64", "[0, 64)")
	t.Must("BarrierAll", shmem.BarrierAll())
}

// nbiFetchInc: every PE does amoK AtomicFetchIncNBI on a counter on every
// PE (staggered; half on a context), the fetch targets valid after Quiet
// and Ctx.Quiet: the old values on each PE are a permutation.
func nbiFetchInc[V shmem.Integer](t *T) {
	me, n := t.me, t.n
	c, err := shmem.Alloc[V](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", c.Free()) }()
	ctx, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", ctx.Destroy()) }()
	olds := make([]V, n*amoK) // [target*amoK + i]
	for i := 0; i < amoK; i++ {
		for k := 0; k < n; k++ {
			r := (me + k) % n
			if i%2 == 0 {
				t.OK("AtomicFetchIncNBI", shmem.AtomicFetchIncNBI(&olds[r*amoK+i], c, 0, r))
			} else {
				t.OK("AtomicFetchAddNBICtx", shmem.AtomicFetchAddNBICtx(ctx, &olds[r*amoK+i], c, 0, 1, r))
			}
		}
	}
	t.OK("Quiet", shmem.Quiet())
	t.OK("Ctx.Quiet", ctx.Quiet())
	all := gatherAll(t, olds)
	for r := 0; r < n; r++ {
		var toR []V
		for s := 0; s < n; s++ {
			toR = append(toR, all[s*n*amoK+r*amoK:s*n*amoK+(r+1)*amoK]...)
		}
		isPermutation(t, fmt.Sprintf("old values of AtomicFetchIncNBI on PE %d", r), toR, n*amoK)
	}
	Eq(t, "counter on this PE", int(c.Local()[0]), n*amoK)
}

// nbiAfterBarrier: each PE sets a word on itself; after a barrier every PE
// fetches every word with AtomicFetchNBI (int64 and float64) and reads the
// results after the next BarrierAll (which completes the default context's
// NBI fetches).
func nbiAfterBarrier(t *T) {
	me, n := t.me, t.n
	w, err := shmem.Alloc[int64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	f, err := shmem.Alloc[float64](1)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", f.Free()) }()
	t.OK("AtomicSet", shmem.AtomicSet(w, 0, int64(1000+me), me))
	t.OK("AtomicSet", shmem.AtomicSet(f, 0, float64(me)+0.5, me))
	t.Must("BarrierAll", shmem.BarrierAll())
	gi := make([]int64, n)
	gf := make([]float64, n)
	for r := 0; r < n; r++ {
		t.OK("AtomicFetchNBI", shmem.AtomicFetchNBI(&gi[r], w, 0, r))
		t.OK("AtomicFetchNBI float64", shmem.AtomicFetchNBI(&gf[r], f, 0, r))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	for r := 0; r < n; r++ {
		Eq(t, fmt.Sprintf("AtomicFetchNBI of PE %d after BarrierAll", r), gi[r], int64(1000+r))
		Eq(t, fmt.Sprintf("AtomicFetchNBI float64 of PE %d after BarrierAll", r), gf[r], float64(r)+0.5)
	}
	var bad int64 = 5
	t.Is("AtomicFetchNBI nil fetch", shmem.AtomicFetchNBI[int64](nil, w, 0, 0), shmem.ErrInvalidArgument, pe(t), "fetch is nil")
	t.Is("AtomicFetchNBI pe", shmem.AtomicFetchNBI(&bad, w, 0, n), shmem.ErrPEOutOfRange, pe(t), fmt.Sprintf("[0, %d)", n))
	Eq(t, "fetch of a failed call untouched", bad, int64(5))
	t.Must("BarrierAll", shmem.BarrierAll())
}

// nbiCasSwapBitwise: every PE tries AtomicCompareSwapNBI(0 -> me+1) on a
// word on PE 0: exactly one wins; AtomicSwapNBI of me+1 into a second word:
// the fetched values plus the final one are {0, ..., n}; AtomicFetchOrNBI
// of bit me into a third word on every PE, AtomicFetchXorNBI and
// AtomicFetchAndNBI (on a context) afterwards: every fetched value is
// consistent with the bits set so far, the final words exact.
func nbiCasSwapBitwise(t *T) {
	me, n := t.me, t.n
	w, err := shmem.Alloc[uint64](4)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	ctx, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", ctx.Destroy()) }()
	all := uint64(1)<<uint(n) - 1
	var cas, swp uint64
	t.OK("AtomicCompareSwapNBI", shmem.AtomicCompareSwapNBI(&cas, w, 0, 0, uint64(me+1), 0))
	t.OK("AtomicSwapNBI", shmem.AtomicSwapNBI(&swp, w, 1, uint64(me+1), 0))
	ors := make([]uint64, n)
	for k := 0; k < n; k++ {
		r := (me + k) % n
		t.OK("AtomicFetchOrNBI", shmem.AtomicFetchOrNBI(&ors[r], w, 2, 1<<uint(me), r))
	}
	t.OK("Quiet", shmem.Quiet())
	for r, o := range ors {
		if o&(1<<uint(me)) != 0 || o&^all != 0 {
			t.Errorf("AtomicFetchOrNBI on PE %d fetched %#x: has this PE's bit %d or bits outside %#x", r, o, me, all)
		}
	}
	res := gatherAll(t, []uint64{cas, swp})
	winners := 0
	swaps := []uint64{}
	for s := 0; s < n; s++ {
		if res[2*s] == 0 {
			winners++
		}
		swaps = append(swaps, res[2*s+1])
	}
	Eq(t, "PEs whose AtomicCompareSwapNBI found 0", winners, 1)
	final, err := shmem.AtomicFetch(w, 1, 0)
	t.OK("AtomicFetch", err)
	isPermutation(t, "AtomicSwapNBI old values and the final value", append(swaps, final), n+1)
	Eq(t, "bits ored into this PE's word", w.Local()[2], all)
	t.Must("BarrierAll", shmem.BarrierAll())
	// Xor bit me out of every PE's word, then and with 0 on a context.
	for k := 0; k < n; k++ {
		r := (me + k) % n
		var x uint64
		t.OK("AtomicFetchXorNBI", shmem.AtomicFetchXorNBI(&x, w, 2, 1<<uint(me), r))
		t.OK("Quiet", shmem.Quiet())
		if x&(1<<uint(me)) == 0 {
			t.Errorf("AtomicFetchXorNBI on PE %d fetched %#x without this PE's bit %d", r, x, me)
		}
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	Eq(t, "word after every PE xored its bit out", w.Local()[2], uint64(0))
	t.Must("BarrierAll", shmem.BarrierAll())
	var a uint64
	t.OK("AtomicOr", shmem.AtomicOr(w, 3, 1<<uint(me), 0))
	t.Must("BarrierAll", shmem.BarrierAll())
	t.OK("AtomicFetchAndNBICtx", shmem.AtomicFetchAndNBICtx(ctx, &a, w, 3, ^uint64(1<<uint(me)), 0))
	t.OK("Ctx.Quiet", ctx.Quiet())
	if a&(1<<uint(me)) == 0 {
		t.Errorf("AtomicFetchAndNBICtx fetched %#x without this PE's bit %d", a, me)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	if me == 0 {
		Eq(t, "word after every PE anded its bit out", w.Local()[3], uint64(0))
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// signalUpdate: every PE adds 1 to a signal on every PE (SignalUpdate and
// SignalUpdateCtx); each waits for n with SignalWaitUntil. Then each PE
// sets a second signal on the next PE to rounds r (SignalSet); the next PE
// waits for each and acknowledges.
func signalUpdate(t *T) {
	me, n := t.me, t.n
	next, prev := (me+1)%n, (me-1+n)%n
	sig, err := shmem.Alloc[uint64](3)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	ctx, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", ctx.Destroy()) }()
	for k := 0; k < n; k++ {
		r := (me + k) % n
		if k%2 == 0 {
			t.OK("SignalUpdate add", shmem.SignalUpdate(sig, 0, 1, shmem.SignalAdd, r))
		} else {
			t.OK("SignalUpdateCtx add", shmem.SignalUpdateCtx(ctx, sig, 0, 1, shmem.SignalAdd, r))
		}
	}
	t.OK("Ctx.Quiet", ctx.Quiet())
	got, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, uint64(n))
	t.OK("SignalWaitUntil", err)
	Eq(t, "signal after every PE's SignalUpdate add", got, uint64(n))
	const rounds = 50
	for r := 1; r <= rounds; r++ {
		t.OK("SignalUpdate set", shmem.SignalUpdate(sig, 1, uint64(me*1000+r), shmem.SignalSet, next))
		got, err := shmem.SignalWaitUntil(sig, 1, shmem.CmpEQ, uint64(prev*1000+r))
		t.OK("SignalWaitUntil", err)
		Eq(t, fmt.Sprintf("round %d: signal set by PE %d", r, prev), got, uint64(prev*1000+r))
		// acknowledge, so the sender does not overwrite an unseen value
		t.OK("SignalUpdate ack", shmem.SignalUpdate(sig, 2, uint64(r), shmem.SignalSet, prev))
		_, err = shmem.SignalWaitUntil(sig, 2, shmem.CmpEQ, uint64(r))
		t.OK("SignalWaitUntil ack", err)
	}
	t.Is("SignalUpdate bad op", shmem.SignalUpdate(sig, 0, 1, shmem.SignalOp(5), next), shmem.ErrInvalidArgument, pe(t), "op = 5")
	t.Is("SignalUpdate pe", shmem.SignalUpdate(sig, 0, 1, shmem.SignalAdd, n), shmem.ErrPEOutOfRange, pe(t))
	t.Must("BarrierAll", shmem.BarrierAll())
}

// putSignalNBI: a ring of PutSignalNBI (1 MiB of float64, SignalSet with
// the round): src is kept until Quiet; the receiver that sees the signal
// sees the data. Then every PE sends a segment to every PE with
// PutSignalNBICtx and SignalAdd; each waits for n and checks every segment.
func putSignalNBI(t *T) {
	me, n := t.me, t.n
	next, prev := (me+1)%n, (me-1+n)%n
	const words = 128 << 10
	rounds := 6
	if n > 4 {
		rounds = 3
	}
	buf, err := shmem.Alloc[float64](words)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", buf.Free()) }()
	sig, err := shmem.Alloc[uint64](3)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", sig.Free()) }()
	src := make([]float64, words)
	for r := 1; r <= rounds; r++ {
		for i := range src {
			src[i] = float64(me*1_000_000 + r*10_000 + i%9973)
		}
		t.OK("PutSignalNBI", shmem.PutSignalNBI(buf, 0, src, sig, 0, uint64(r), shmem.SignalSet, next))
		t.OK("Quiet", shmem.Quiet()) // src reusable from here
		clear(src)
		got, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpGE, uint64(r))
		t.OK("SignalWaitUntil", err)
		Eq(t, fmt.Sprintf("round %d: signal", r), got, uint64(r))
		loc := buf.Local()
		bad := 0
		for i := 0; i < words; i++ {
			if want := float64(prev*1_000_000 + r*10_000 + i%9973); loc[i] != want {
				if bad == 0 {
					t.Errorf("round %d: payload[%d] = %v after the signal, want %v", r, i, loc[i], want)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("round %d: %d of %d payload words stale when the signal was seen", r, bad, words)
		}
		t.OK("SignalUpdate ack", shmem.SignalUpdate(sig, 1, uint64(r), shmem.SignalSet, prev))
		_, err = shmem.SignalWaitUntil(sig, 1, shmem.CmpGE, uint64(r))
		t.OK("SignalWaitUntil ack", err)
	}
	t.Must("BarrierAll", shmem.BarrierAll())

	ctx, err := shmem.NewCtx()
	t.Must("NewCtx", err)
	defer func() { t.OK("Ctx.Destroy", ctx.Destroy()) }()
	seg := words / n
	keep := make([][]float64, n)
	for k := 0; k < n; k++ {
		r := (me + k) % n
		keep[r] = vals[float64](me, r, 0, seg)
		t.OK("PutSignalNBICtx", shmem.PutSignalNBICtx(ctx, buf, me*seg, keep[r], sig, 2, 1, shmem.SignalAdd, r))
	}
	got, err := shmem.SignalWaitUntil(sig, 2, shmem.CmpEQ, uint64(n))
	t.OK("SignalWaitUntil", err)
	Eq(t, "signal after every PE's PutSignalNBICtx add", got, uint64(n))
	for s := 0; s < n; s++ {
		EqSlice(t, fmt.Sprintf("segment from PE %d", s), buf.Local()[s*seg:(s+1)*seg], vals[float64](s, me, 0, seg))
	}
	t.OK("Ctx.Quiet", ctx.Quiet())
	t.Must("BarrierAll", shmem.BarrierAll())
}
