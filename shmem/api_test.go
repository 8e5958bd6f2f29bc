package shmem_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

func TestInitFinalize(t *testing.T) {
	assert.Equal(t, -1, shmem.MyPE(), "before Init")
	assert.Equal(t, -1, shmem.NPEs())
	for round := range 3 { // Init/Finalize repeat in one process for the 1-PE bootstrap
		require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)), "round %d", round)
		assert.Equal(t, 0, shmem.MyPE())
		assert.Equal(t, 1, shmem.NPEs())
		assert.True(t, shmem.TeamWorld.Valid())
		assert.Equal(t, 0, shmem.TeamWorld.MyPE())
		assert.Equal(t, 1, shmem.TeamWorld.NPEs())
		require.NoError(t, shmem.Finalize())
		assert.Equal(t, -1, shmem.MyPE(), "after Finalize")
		assert.False(t, shmem.TeamWorld.Valid())
	}
}

// rmaSelf puts, gets, p's and g's values of one element type to PE 0 (self),
// through the default context and a created one.
func rmaSelf[T shmem.Elem](t *testing.T, vals []T) {
	n := len(vals)
	a := alloc[T](t, n+2)
	ctx, err := shmem.NewCtx()
	require.NoError(t, err)
	defer func() { require.NoError(t, ctx.Destroy()) }()
	for _, c := range []*shmem.Ctx{nil, ctx} {
		clear(a.Local())
		require.NoError(t, shmem.PutCtx(c, a, 1, vals, 0))
		require.NoError(t, c.Quiet())
		assert.Equal(t, vals, a.Local()[1:n+1])
		var zero T
		assert.Equal(t, zero, a.Local()[0], "before dstIdx untouched")
		assert.Equal(t, zero, a.Local()[n+1], "after the end untouched")

		got := make([]T, n)
		require.NoError(t, shmem.GetCtx(c, got, a, 1, 0))
		assert.Equal(t, vals, got)

		clear(a.Local())
		require.NoError(t, shmem.PutNBICtx(c, a, 2, vals, 0))
		require.NoError(t, shmem.Quiet())
		got2 := make([]T, n)
		require.NoError(t, shmem.GetNBICtx(c, got2, a, 2, 0))
		require.NoError(t, c.Quiet())
		assert.Equal(t, vals, got2)

		for i, v := range vals {
			require.NoError(t, shmem.PCtx(c, a, i, v, 0))
			g, err := shmem.GCtx(c, a, i, 0)
			require.NoError(t, err)
			assert.Equal(t, v, g, "P then G of element %d", i)
		}
	}
	// The plain (default-context) spellings.
	clear(a.Local())
	require.NoError(t, shmem.Put(a, 0, vals, 0))
	got := make([]T, n)
	require.NoError(t, shmem.Get(got, a, 0, 0))
	assert.Equal(t, vals, got)
	require.NoError(t, shmem.PutNBI(a, 0, vals[:1], 0))
	require.NoError(t, shmem.GetNBI(got[:1], a, 0, 0))
	require.NoError(t, shmem.Quiet())
	require.NoError(t, shmem.P(a, n+1, vals[0], 0))
	g, err := shmem.G(a, n+1, 0)
	require.NoError(t, err)
	assert.Equal(t, vals[0], g)
	require.NoError(t, shmem.Put(a, 0, []T{}, 0), "an empty put is fine")
	require.NoError(t, a.Free())
}

func TestRMASelf(t *testing.T) {
	start(t)
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"int8", func(t *testing.T) { rmaSelf(t, []int8{math.MinInt8, -1, 0, 1, math.MaxInt8}) }},
		{"int16", func(t *testing.T) { rmaSelf(t, []int16{math.MinInt16, -2, 7, math.MaxInt16}) }},
		{"int32", func(t *testing.T) { rmaSelf(t, []int32{math.MinInt32, -3, 0, math.MaxInt32}) }},
		{"int64", func(t *testing.T) { rmaSelf(t, []int64{math.MinInt64, -4, 1 << 40, math.MaxInt64}) }},
		{"uint8", func(t *testing.T) { rmaSelf(t, []uint8{0, 1, 0x80, 0xff, 0x7f}) }},
		{"uint16", func(t *testing.T) { rmaSelf(t, []uint16{0, 0xffff, 0x8001}) }},
		{"uint32", func(t *testing.T) { rmaSelf(t, []uint32{0, math.MaxUint32, 0xdeadbeef}) }},
		{"uint64", func(t *testing.T) { rmaSelf(t, []uint64{0, math.MaxUint64, 0x0123456789abcdef}) }},
		{"float32", func(t *testing.T) {
			rmaSelf(t, []float32{0, -1.5, math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1))})
		}},
		{"float64", func(t *testing.T) {
			rmaSelf(t, []float64{0, math.Pi, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1)})
		}},
		{"long", func(t *testing.T) {
			v := make([]int32, 10000)
			for i := range v {
				v[i] = int32(i * 7919)
			}
			rmaSelf(t, v)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// atomicsOf checks every integer atomic's old and new value on one type.
func atomicsOf[T interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}](t *testing.T) {
	a := alloc[T](t, 8)
	defer func() { require.NoError(t, a.Free()) }()
	x := a.Local()
	var maxV T = ^T(0) // -1 for signed, all ones for unsigned
	tests := []struct {
		name    string
		init    T
		run     func() (T, error) // returns the old value
		wantOld T
		wantNew T
	}{
		{"FetchAdd", 5, func() (T, error) { return shmem.AtomicFetchAdd(a, 3, 4, 0) }, 5, 9},
		{"FetchAdd wraps", maxV, func() (T, error) { return shmem.AtomicFetchAdd(a, 3, 2, 0) }, maxV, 1},
		{"Add", 5, func() (T, error) { return 5, shmem.AtomicAdd(a, 3, 10, 0) }, 5, 15},
		{"FetchInc", 41, func() (T, error) { return shmem.AtomicFetchInc(a, 3, 0) }, 41, 42},
		{"Inc", 0, func() (T, error) { return 0, shmem.AtomicInc(a, 3, 0) }, 0, 1},
		{"CompareSwap hit", 7, func() (T, error) { return shmem.AtomicCompareSwap(a, 3, 7, 9, 0) }, 7, 9},
		{"CompareSwap miss", 7, func() (T, error) { return shmem.AtomicCompareSwap(a, 3, 8, 9, 0) }, 7, 7},
		{"Swap", 3, func() (T, error) { return shmem.AtomicSwap(a, 3, 100, 0) }, 3, 100},
		{"Fetch", 77, func() (T, error) { return shmem.AtomicFetch(a, 3, 0) }, 77, 77},
		{"Set", 77, func() (T, error) { return 77, shmem.AtomicSet(a, 3, 12, 0) }, 77, 12},
		{"FetchAnd", 0x3c, func() (T, error) { return shmem.AtomicFetchAnd(a, 3, 0x0f, 0) }, 0x3c, 0x0c},
		{"FetchOr", 0x30, func() (T, error) { return shmem.AtomicFetchOr(a, 3, 0x0f, 0) }, 0x30, 0x3f},
		{"FetchXor", 0x3c, func() (T, error) { return shmem.AtomicFetchXor(a, 3, 0x0f, 0) }, 0x3c, 0x33},
		{"And", 0x3c, func() (T, error) { return 0x3c, shmem.AtomicAnd(a, 3, 0x0f, 0) }, 0x3c, 0x0c},
		{"Or", 0x30, func() (T, error) { return 0x30, shmem.AtomicOr(a, 3, 0x0f, 0) }, 0x30, 0x3f},
		{"Xor", 0x3c, func() (T, error) { return 0x3c, shmem.AtomicXor(a, 3, 0x0f, 0) }, 0x3c, 0x33},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range x {
				x[i] = maxV // neighbours: all ones
			}
			x[3] = tc.init
			old, err := tc.run()
			require.NoError(t, err)
			assert.Equal(t, tc.wantOld, old, "old value")
			assert.Equal(t, tc.wantNew, x[3], "new value")
			for i := range x {
				if i != 3 {
					assert.Equal(t, maxV, x[i], "neighbour %d untouched", i)
				}
			}
		})
	}
	// The Ctx spellings.
	ctx, err := shmem.NewCtx()
	require.NoError(t, err)
	x[0] = 1
	old, err := shmem.AtomicFetchAddCtx(ctx, a, 0, 2, 0)
	require.NoError(t, err)
	assert.Equal(t, T(1), old)
	require.NoError(t, shmem.AtomicAddCtx(ctx, a, 0, 2, 0))
	old, err = shmem.AtomicFetchIncCtx(ctx, a, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, T(5), old)
	require.NoError(t, shmem.AtomicIncCtx(ctx, a, 0, 0))
	old, err = shmem.AtomicCompareSwapCtx(ctx, a, 0, 7, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, T(7), old)
	old, err = shmem.AtomicSwapCtx(ctx, a, 0, 0x0f, 0)
	require.NoError(t, err)
	assert.Equal(t, T(1), old)
	require.NoError(t, shmem.AtomicSetCtx(ctx, a, 0, 0x0f, 0))
	old, err = shmem.AtomicFetchAndCtx(ctx, a, 0, 0x3, 0)
	require.NoError(t, err)
	assert.Equal(t, T(0x0f), old)
	old, err = shmem.AtomicFetchOrCtx(ctx, a, 0, 0x10, 0)
	require.NoError(t, err)
	assert.Equal(t, T(0x3), old)
	old, err = shmem.AtomicFetchXorCtx(ctx, a, 0, 0x1, 0)
	require.NoError(t, err)
	assert.Equal(t, T(0x13), old)
	old, err = shmem.AtomicFetchCtx(ctx, a, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, T(0x12), old)
	require.NoError(t, ctx.Quiet())
	require.NoError(t, ctx.Fence())
	require.NoError(t, ctx.Destroy())
}

func TestAtomics(t *testing.T) {
	start(t)
	t.Run("int8", atomicsOf[int8])
	t.Run("int16", atomicsOf[int16])
	t.Run("int32", atomicsOf[int32])
	t.Run("int64", atomicsOf[int64])
	t.Run("uint8", atomicsOf[uint8])
	t.Run("uint16", atomicsOf[uint16])
	t.Run("uint32", atomicsOf[uint32])
	t.Run("uint64", atomicsOf[uint64])
}

func TestAtomicsFloat(t *testing.T) {
	start(t)
	a := alloc[float64](t, 2)
	require.NoError(t, shmem.AtomicSet(a, 1, 2.5, 0))
	v, err := shmem.AtomicFetch(a, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, 2.5, v)
	old, err := shmem.AtomicSwap(a, 1, -0.25, 0)
	require.NoError(t, err)
	assert.Equal(t, 2.5, old)
	assert.Equal(t, -0.25, a.Local()[1])
	f := alloc[float32](t, 1)
	old32, err := shmem.AtomicSwap(f, 0, 1.5, 0)
	require.NoError(t, err)
	assert.Equal(t, float32(0), old32)
	assert.Equal(t, float32(1.5), f.Local()[0])
}

// TestAtomicsConcurrent: goroutines of one PE hammer neighbouring narrow
// elements; counts are exact.
func TestAtomicsConcurrent(t *testing.T) {
	start(t)
	a := alloc[uint8](t, 8)
	b := alloc[int64](t, 1)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				assert.NoError(t, shmem.AtomicInc(a, i, 0))
				assert.NoError(t, shmem.AtomicAdd(b, 0, 1, 0))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, []uint8{250, 250, 250, 250, 0, 0, 0, 0}, a.Local())
	v, err := shmem.AtomicFetch(b, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), v)
}

func TestWaitAndTest(t *testing.T) {
	start(t)
	a := alloc[int32](t, 4)
	a.Local()[2] = 5
	tests := []struct {
		cmp  shmem.Cmp
		v    int32
		want bool
	}{
		{shmem.CmpEQ, 5, true}, {shmem.CmpEQ, 4, false},
		{shmem.CmpNE, 4, true}, {shmem.CmpNE, 5, false},
		{shmem.CmpGT, 4, true}, {shmem.CmpGT, 5, false},
		{shmem.CmpGE, 5, true}, {shmem.CmpGE, 6, false},
		{shmem.CmpLT, 6, true}, {shmem.CmpLT, 5, false},
		{shmem.CmpLE, 5, true}, {shmem.CmpLE, 4, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v %d", tc.cmp, tc.v), func(t *testing.T) {
			ok, err := shmem.TestCmp(a, 2, tc.cmp, tc.v)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ok)
			if tc.want {
				require.NoError(t, shmem.WaitUntil(a, 2, tc.cmp, tc.v), "already true")
			}
		})
	}
	assert.Equal(t, "Cmp(9)", shmem.Cmp(9).String())

	// Narrow and negative values: the 1-byte load goes through its word.
	b := alloc[int8](t, 7)
	b.Local()[5] = -3
	ok, err := shmem.TestCmp(b, 5, shmem.CmpLT, -2)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = shmem.TestCmp(b, 4, shmem.CmpEQ, 0)
	require.NoError(t, err)
	assert.True(t, ok)
}

// TestWaitUntilWoken: another goroutine of the PE makes the condition true.
func TestWaitUntilWoken(t *testing.T) {
	start(t, shmem.WithTimeout(10*time.Second))
	flag := alloc[uint16](t, 3)
	data := alloc[float64](t, 4)
	go func() {
		time.Sleep(10 * time.Millisecond)
		assert.NoError(t, shmem.Put(data, 0, []float64{1, 2, 3, 4}, 0))
		assert.NoError(t, shmem.Fence())
		assert.NoError(t, shmem.P(flag, 1, 9, 0))
	}()
	require.NoError(t, shmem.WaitUntil(flag, 1, shmem.CmpGE, 9))
	assert.Equal(t, []float64{1, 2, 3, 4}, data.Local(), "data fenced before the flag is visible")
}

func TestPutSignal(t *testing.T) {
	start(t)
	data := alloc[int16](t, 5)
	sig := alloc[uint64](t, 2)
	require.NoError(t, shmem.PutSignal(data, 1, []int16{-1, 2, -3}, sig, 1, 10, shmem.SignalSet, 0))
	assert.Equal(t, []int16{0, -1, 2, -3, 0}, data.Local())
	v, err := shmem.SignalWaitUntil(sig, 1, shmem.CmpEQ, 10)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), v)
	ctx, err := shmem.NewCtx()
	require.NoError(t, err)
	require.NoError(t, shmem.PutSignalCtx(ctx, data, 4, []int16{7}, sig, 1, 5, shmem.SignalAdd, 0))
	require.NoError(t, ctx.Destroy())
	assert.Equal(t, int16(7), data.Local()[4])
	v, err = shmem.SignalFetch(sig, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(15), v)
	v, err = shmem.SignalWaitUntil(sig, 1, shmem.CmpGT, 11)
	require.NoError(t, err)
	assert.Equal(t, uint64(15), v, "the value that satisfied the wait")
	assert.Equal(t, uint64(0), sig.Local()[0], "neighbour signal untouched")
}

func TestCtx(t *testing.T) {
	start(t)
	a := alloc[int64](t, 2)
	var ctxs []*shmem.Ctx
	for range 4 {
		c, err := shmem.NewCtx()
		require.NoError(t, err)
		ctxs = append(ctxs, c)
	}
	for i, c := range ctxs {
		require.NoError(t, shmem.PCtx(c, a, 0, int64(i), 0))
		require.NoError(t, c.Fence())
		require.NoError(t, c.Quiet())
	}
	require.NoError(t, shmem.Quiet())
	require.NoError(t, shmem.Fence())
	assert.Equal(t, int64(3), a.Local()[0])
	for _, c := range ctxs {
		require.NoError(t, c.Destroy())
	}
	require.NoError(t, shmem.Quiet(), "PE-wide quiet after contexts are destroyed")
	// A nil *Ctx is the default context everywhere.
	var dflt *shmem.Ctx
	require.NoError(t, dflt.Quiet())
	require.NoError(t, dflt.Fence())
}

func TestAllocZeroedAligned(t *testing.T) {
	start(t)
	var arrays []shmem.Array[uint8]
	for _, n := range []int{1, 3, 63, 64, 65, 1000, 4096, 100000} {
		a := alloc[uint8](t, n)
		p := uintptr(unsafe.Pointer(&a.Local()[0]))
		assert.Zero(t, p%64, "Alloc(%d) is 64-byte aligned", n)
		for i := range a.Local() {
			a.Local()[i] = 0xff
		}
		arrays = append(arrays, a)
	}
	// Free everything and allocate again over the same (dirty) memory.
	for _, a := range arrays {
		require.NoError(t, a.Free())
	}
	for _, n := range []int{100000, 4096, 1000, 65} {
		a := alloc[uint8](t, n)
		for i, b := range a.Local() {
			if b != 0 {
				require.Failf(t, "not zeroed", "Alloc(%d): byte %d is %#x", n, i, b)
			}
		}
		assert.Zero(t, uintptr(unsafe.Pointer(&a.Local()[0]))%64)
		require.NoError(t, a.Free())
	}
	var zero shmem.Array[int32]
	assert.Equal(t, 0, zero.Len())
	assert.Nil(t, zero.Local())
}

func TestCollectivesOnePE(t *testing.T) {
	t.Setenv("GOSHMEM_MAX_TEAMS", "64") // fewer slots than the splits below make over time
	start(t)
	src := alloc[int32](t, 8)
	dst := alloc[int32](t, 8)
	copy(src.Local(), []int32{1, -2, 3, -4, 5, -6, 7, -8})
	require.NoError(t, shmem.BarrierAll())
	require.NoError(t, shmem.SyncAll())

	require.NoError(t, shmem.Broadcast(shmem.TeamWorld, dst, src, 5, 0))
	assert.Equal(t, []int32{1, -2, 3, -4, 5, 0, 0, 0}, dst.Local())

	for _, op := range []shmem.Op{shmem.OpSum, shmem.OpProd, shmem.OpMin, shmem.OpMax, shmem.OpAnd, shmem.OpOr, shmem.OpXor} {
		clear(dst.Local())
		require.NoError(t, shmem.Reduce(shmem.TeamWorld, op, dst, src, 8), op.String())
		assert.Equal(t, src.Local(), dst.Local(), "%v over one PE is the identity", op)
	}
	require.NoError(t, shmem.Reduce(shmem.TeamWorld, shmem.OpSum, src, src, 8), "in place")
	assert.Equal(t, []int32{1, -2, 3, -4, 5, -6, 7, -8}, src.Local())

	clear(dst.Local())
	require.NoError(t, shmem.FCollect(shmem.TeamWorld, dst, src, 3))
	assert.Equal(t, []int32{1, -2, 3, 0, 0, 0, 0, 0}, dst.Local())
	clear(dst.Local())
	require.NoError(t, shmem.AllToAll(shmem.TeamWorld, dst, src, 4))
	assert.Equal(t, []int32{1, -2, 3, -4, 0, 0, 0, 0}, dst.Local())

	fs, fd := alloc[float64](t, 3), alloc[float64](t, 3)
	copy(fs.Local(), []float64{0.5, -1, 2})
	require.NoError(t, shmem.Reduce(shmem.TeamWorld, shmem.OpMax, fd, fs, 3))
	assert.Equal(t, []float64{0.5, -1, 2}, fd.Local())

	// Teams of one.
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	require.True(t, tm.Valid())
	assert.Equal(t, 0, tm.MyPE())
	assert.Equal(t, 1, tm.NPEs())
	assert.Equal(t, 0, tm.TranslatePE(0, shmem.TeamWorld))
	assert.Equal(t, 0, shmem.TeamWorld.TranslatePE(0, tm))
	assert.Equal(t, -1, tm.TranslatePE(1, shmem.TeamWorld))
	require.NoError(t, tm.Sync())
	require.NoError(t, tm.Barrier())
	require.NoError(t, shmem.Reduce(tm, shmem.OpSum, dst, src, 2))
	require.NoError(t, tm.Destroy())
	assert.False(t, tm.Valid())
	assert.Equal(t, -1, tm.MyPE())
	assert.Equal(t, -1, tm.NPEs())
	assert.False(t, shmem.TeamInvalid.Valid())
	// Slots come back: more splits than GOSHMEM_MAX_TEAMS over time.
	for range 100 {
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
		require.NoError(t, err)
		require.NoError(t, tm.Barrier())
		require.NoError(t, tm.Destroy())
	}
}

// TestTeamQueriesConcurrent: team queries from one goroutine while another
// creates and destroys teams (race-detector clean).
func TestTeamQueriesConcurrent(t *testing.T) {
	start(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			assert.True(t, shmem.TeamWorld.Valid())
			assert.Equal(t, 1, shmem.TeamWorld.NPEs())
			assert.Equal(t, 0, shmem.TeamWorld.MyPE())
		}
	}()
	for range 50 {
		tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
		require.NoError(t, err)
		assert.True(t, tm.Valid())
		require.NoError(t, tm.Destroy())
	}
	close(stop)
	<-done
}

// TestCtxConcurrent: goroutines create, use and destroy contexts while
// another runs PE-wide quiets (race-detector clean).
func TestCtxConcurrent(t *testing.T) {
	start(t)
	a := alloc[int64](t, 4)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				c, err := shmem.NewCtx()
				if !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, shmem.AtomicAddCtx(c, a, g, 1, 0))
				assert.NoError(t, c.Quiet())
				assert.NoError(t, c.Destroy())
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			assert.NoError(t, shmem.Quiet())
		}
	}()
	wg.Wait()
	assert.Equal(t, []int64{50, 50, 50, 50}, a.Local())
}
