package shmem_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// stridedCase is one strided transfer: nb blocks of bs elements, block k
// at index symIdx + k*symStride of the symmetric array and k*localStride
// of the local slice (IPut/IBPut copy local to symmetric, IGet/IBGet back).
type stridedCase struct {
	name             string
	symIdx           int
	symStride        int
	localStride      int
	bs, nb           int
	symLen, localLen int
}

// stridedCases cover contiguous runs, gathers, covering spans, one
// operation per block (gaps over 512 bytes), runs longer than the 64 KiB
// staging buffer, stride 0, negative strides and overlapping blocks.
var stridedCases = []stridedCase{
	{"contiguous", 3, 1, 1, 1, 50, 60, 60},
	{"stride 2", 0, 2, 2, 1, 40, 80, 80},
	{"array stride 3, local stride 1", 1, 3, 1, 1, 30, 100, 40},
	{"array stride 1, local stride 4", 0, 1, 4, 1, 25, 30, 110},
	{"wide gaps", 5, 130, 140, 1, 9, 1200, 1300},
	{"stride 2 past the staging buffer", 1, 2, 2, 1, 20000, 40010, 40010},
	{"gather past the staging buffer", 0, 1, 3, 1, 12000, 12000, 36010},
	{"array stride 0", 4, 0, 1, 1, 7, 10, 10},
	{"local stride 0", 0, 2, 0, 1, 9, 20, 20},
	{"negative array stride", 29, -3, 2, 1, 10, 30, 30},
	{"one element", 7, 5, 9, 1, 1, 10, 10},
	{"blocks of 3", 2, 5, 4, 3, 6, 40, 40},
	{"blocks contiguous", 0, 4, 4, 4, 5, 20, 20},
	{"blocks gathered", 0, 3, 7, 3, 10, 30, 70},
	{"blocks overlap", 0, 2, 2, 3, 6, 20, 20},
	{"local blocks overlap, wide gaps", 0, 600, 1, 3, 4, 2000, 20},
	{"blocks stride 0", 1, 0, 0, 4, 3, 10, 10},
	{"blocks negative array stride", 20, -6, 5, 2, 4, 30, 30},
	{"blocks of 64 KiB", 1, 8300, 8200, 8192, 3, 30000, 30000},
	{"blocks over 64 KiB", 1, 9500, 9100, 9000, 3, 30000, 30000},
	{"empty", 0, 1, 1, 1, 0, 4, 4},
	{"empty blocks", 0, 1, 1, 0, 5, 4, 4},
}

// value is a distinct, type-representable element for index i of a source.
func value[T shmem.Elem](i int) T { return T(1 + i%97) }

// refCopy applies the transfer to dst in order k = 0, 1, ... (the result
// the calls promise where blocks overlap).
func refCopy[T shmem.Elem](dst []T, dIdx, dStride int, src []T, sIdx, sStride, bs, nb int) {
	for k := 0; k < nb; k++ {
		for j := 0; j < bs; j++ {
			dst[dIdx+k*dStride+j] = src[sIdx+k*sStride+j]
		}
	}
}

func stridedOf[T shmem.Elem](t *testing.T) {
	for _, tc := range stridedCases {
		blocks := tc.bs != 1 || tc.name == "empty blocks"
		t.Run(tc.name, func(t *testing.T) {
			sym := alloc[T](t, tc.symLen)
			defer func() { require.NoError(t, sym.Free()) }()
			local := make([]T, tc.localLen)
			for i := range local {
				local[i] = value[T](i)
			}
			// put: local -> symmetric
			clear(sym.Local())
			want := make([]T, tc.symLen)
			refCopy(want, tc.symIdx, tc.symStride, local, 0, tc.localStride, tc.bs, tc.nb)
			if blocks {
				require.NoError(t, shmem.IBPut(sym, tc.symIdx, tc.symStride, local, tc.localStride, tc.bs, tc.nb, 0))
			} else {
				require.NoError(t, shmem.IPut(sym, tc.symIdx, tc.symStride, local, tc.localStride, tc.nb, 0))
			}
			require.NoError(t, shmem.Quiet())
			assert.Equal(t, want, sym.Local(), "put")

			// get: symmetric -> local, on a context
			for i := range sym.Local() {
				sym.Local()[i] = value[T](3 * i)
			}
			got := make([]T, tc.localLen)
			want = make([]T, tc.localLen)
			refCopy(want, 0, tc.localStride, sym.Local(), tc.symIdx, tc.symStride, tc.bs, tc.nb)
			ctx, err := shmem.NewCtx()
			require.NoError(t, err)
			defer func() { require.NoError(t, ctx.Destroy()) }()
			if blocks {
				require.NoError(t, shmem.IBGetCtx(ctx, got, tc.localStride, sym, tc.symIdx, tc.symStride, tc.bs, tc.nb, 0))
			} else {
				require.NoError(t, shmem.IGetCtx(ctx, got, tc.localStride, sym, tc.symIdx, tc.symStride, tc.nb, 0))
			}
			assert.Equal(t, want, got, "get (complete on return)")
		})
	}
}

// TestStrided checks every strided call against a reference copy, on the
// shm transport (direct loads and stores) and on ofi (a 1-PE job's
// transfers to itself take the gather, covering-span and per-block paths).
func TestStrided(t *testing.T) {
	for _, tr := range []string{"shm", "ofi"} {
		t.Run(tr, func(t *testing.T) {
			if tr == "ofi" {
				t.Setenv("GOSHMEM_TRANSPORT", "ofi")
			}
			start(t, shmem.WithTimeout(20*time.Second))
			t.Run("int8", stridedOf[int8])
			t.Run("uint16", stridedOf[uint16])
			t.Run("int32", stridedOf[int32])
			t.Run("float32", stridedOf[float32])
			t.Run("int64", stridedOf[int64])
			t.Run("float64", stridedOf[float64])
			usable(t)
		})
	}
}

// TestStridedCtxForms: the Ctx forms put on their context, visible after
// Ctx.Quiet.
func TestStridedCtxForms(t *testing.T) {
	start(t)
	a := alloc[int64](t, 16)
	ctx, err := shmem.NewCtx()
	require.NoError(t, err)
	require.NoError(t, shmem.IPutCtx(ctx, a, 0, 2, []int64{1, 2, 3, 4}, 1, 4, 0))
	require.NoError(t, shmem.IBPutCtx(ctx, a, 9, 3, []int64{5, 6, 7, 8}, 2, 2, 2, 0))
	require.NoError(t, ctx.Quiet())
	assert.Equal(t, []int64{1, 0, 2, 0, 3, 0, 4, 0, 0, 5, 6, 0, 7, 8, 0, 0}, a.Local())
	got := make([]int64, 4)
	require.NoError(t, shmem.IGet(got, 1, a, 9, 3, 2, 0))
	assert.Equal(t, []int64{5, 7, 0, 0}, got)
	require.NoError(t, shmem.IBGet(got, 2, a, 0, 4, 1, 2, 0))
	assert.Equal(t, []int64{1, 7, 3, 0}, got)
	require.NoError(t, ctx.Destroy())
	require.NoError(t, a.Free())
}

func TestStridedBadInput(t *testing.T) {
	start(t)
	a := alloc[int32](t, 10)
	buf := make([]int32, 8)
	var zero shmem.Array[int32]
	tests := []struct {
		name     string
		call     func() error
		sentinel error
		contains []string
	}{
		{"IPut pe", func() error { return shmem.IPut(a, 0, 1, buf, 1, 2, 1) }, shmem.ErrPEOutOfRange, []string{"PE 0: IPut", "pe = 1", "[0, 1)"}},
		{"IGet pe -1", func() error { return shmem.IGet(buf, 1, a, 0, 1, 2, -1) }, shmem.ErrPEOutOfRange, []string{"IGet", "pe = -1"}},
		{"IPut negative n", func() error { return shmem.IPut(a, 0, 1, buf, 1, -1, 0) }, shmem.ErrInvalidArgument, []string{"n = -1", ">= 0"}},
		{"IBPut negative blockSize", func() error { return shmem.IBPut(a, 0, 1, buf, 1, -2, 1, 0) }, shmem.ErrInvalidArgument, []string{"blockSize = -2"}},
		{"IBGet negative nBlocks", func() error { return shmem.IBGet(buf, 1, a, 0, 1, 1, -3, 0) }, shmem.ErrInvalidArgument, []string{"nBlocks = -3"}},
		{"IPut dst stride past the end", func() error { return shmem.IPut(a, 1, 3, buf, 1, 4, 0) }, shmem.ErrOutOfBounds,
			[]string{"PE 0: IPut", "dstIdx = 1, dstStride = 3, n = 4", "dst indices 1..10 on PE 0", "[0, 10)"}},
		{"IPut src stride past the end", func() error { return shmem.IPut(a, 0, 1, buf, 3, 4, 0) }, shmem.ErrOutOfBounds,
			[]string{"srcStride = 3, n = 4", "src indices 0..9", "src's [0, 8)"}},
		{"IGet negative src index", func() error { return shmem.IGet(buf, 1, a, 2, -1, 4, 0) }, shmem.ErrOutOfBounds, []string{"src indices -1..2"}},
		{"IGet dst too short", func() error { return shmem.IGet(buf[:3], 2, a, 0, 1, 3, 0) }, shmem.ErrOutOfBounds, []string{"dstStride = 2", "dst indices 0..4", "dst's [0, 3)"}},
		{"IGet negative dst stride", func() error { return shmem.IGet(buf, -1, a, 0, 1, 2, 0) }, shmem.ErrOutOfBounds, []string{"dst indices -1..0"}},
		{"IBPut last block past the end", func() error { return shmem.IBPut(a, 0, 4, buf, 2, 3, 3, 0) }, shmem.ErrOutOfBounds,
			[]string{"dstIdx = 0, dstStride = 4, blockSize = 3, nBlocks = 3", "dst indices 0..10"}},
		{"IBGet block longer than the array", func() error { return shmem.IBGet(make([]int32, 20), 11, a, 0, 0, 11, 1, 0) }, shmem.ErrOutOfBounds, []string{"src indices 0..10"}},
		{"IPut stride overflows int", func() error { return shmem.IPut(a, 0, math.MaxInt, buf, 1, 3, 0) }, shmem.ErrOutOfBounds,
			[]string{"dst indices 0..18446744073709551614"}},
		{"IPut stride MinInt", func() error { return shmem.IPut(a, 9, math.MinInt, buf, 1, 2, 0) }, shmem.ErrOutOfBounds,
			[]string{"dst indices -9223372036854775799..9"}},
		{"IBGet huge blocks", func() error { return shmem.IBGet(buf, 1, a, 5, math.MaxInt, math.MaxInt, 2, 0) }, shmem.ErrOutOfBounds,
			[]string{"src indices 5..18446744073709551618"}},
		{"IPut index past the end with n = 0", func() error { return shmem.IPut(a, 11, 1, buf, 1, 0, 0) }, shmem.ErrOutOfBounds, []string{"dstIdx = 11", "[0, 10]"}},
		{"IPut zero Array", func() error { return shmem.IPut(zero, 0, 1, buf, 1, 1, 0) }, shmem.ErrOutOfBounds, []string{"outside the array's [0, 0)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range a.Local() {
				a.Local()[i] = 7
			}
			for i := range buf {
				buf[i] = 9
			}
			err := tc.call()
			require.ErrorIs(t, err, tc.sentinel)
			for _, s := range tc.contains {
				assert.Contains(t, err.Error(), s)
			}
			for i, v := range a.Local() {
				require.Equal(t, int32(7), v, "array element %d changed by a failed call", i)
			}
			for i, v := range buf {
				require.Equal(t, int32(9), v, "local element %d changed by a failed call", i)
			}
		})
	}
	// n = 0 moves nothing and needs no valid strides.
	require.NoError(t, shmem.IPut(a, 10, -5, nil, -7, 0, 0))
	require.NoError(t, shmem.IBGet(nil, 0, a, 0, 0, 0, 100, 0))
	require.NoError(t, a.Free())
	usable(t)
}

// nbiAtomicsOf: every NBI fetching atomic stores the old value through
// fetch, valid after Quiet (goshmem stores it at once), and changes the word.
func nbiAtomicsOf[T shmem.Integer](t *testing.T) {
	a := alloc[T](t, 4)
	defer func() { require.NoError(t, a.Free()) }()
	ctx, err := shmem.NewCtx()
	require.NoError(t, err)
	defer func() { require.NoError(t, ctx.Destroy()) }()
	x := a.Local()
	var fetch T
	tests := []struct {
		name    string
		init    T
		run     func() error
		quiet   func() error
		wantOld T
		wantNew T
	}{
		{"FetchNBI", 5, func() error { return shmem.AtomicFetchNBI(&fetch, a, 2, 0) }, shmem.Quiet, 5, 5},
		{"FetchNBICtx", 6, func() error { return shmem.AtomicFetchNBICtx(ctx, &fetch, a, 2, 0) }, ctx.Quiet, 6, 6},
		{"FetchAddNBI", 5, func() error { return shmem.AtomicFetchAddNBI(&fetch, a, 2, 3, 0) }, shmem.Quiet, 5, 8},
		{"FetchAddNBICtx", 5, func() error { return shmem.AtomicFetchAddNBICtx(ctx, &fetch, a, 2, 4, 0) }, ctx.Quiet, 5, 9},
		{"FetchIncNBI", 41, func() error { return shmem.AtomicFetchIncNBI(&fetch, a, 2, 0) }, shmem.BarrierAll, 41, 42},
		{"FetchIncNBICtx", 1, func() error { return shmem.AtomicFetchIncNBICtx(ctx, &fetch, a, 2, 0) }, ctx.Quiet, 1, 2},
		{"SwapNBI", 3, func() error { return shmem.AtomicSwapNBI(&fetch, a, 2, 100, 0) }, shmem.Quiet, 3, 100},
		{"SwapNBICtx", 4, func() error { return shmem.AtomicSwapNBICtx(ctx, &fetch, a, 2, 101, 0) }, ctx.Quiet, 4, 101},
		{"CompareSwapNBI hit", 7, func() error { return shmem.AtomicCompareSwapNBI(&fetch, a, 2, 7, 9, 0) }, shmem.Quiet, 7, 9},
		{"CompareSwapNBI miss", 7, func() error { return shmem.AtomicCompareSwapNBI(&fetch, a, 2, 8, 9, 0) }, shmem.Quiet, 7, 7},
		{"CompareSwapNBICtx", 7, func() error { return shmem.AtomicCompareSwapNBICtx(ctx, &fetch, a, 2, 7, 10, 0) }, ctx.Quiet, 7, 10},
		{"FetchAndNBI", 0x3c, func() error { return shmem.AtomicFetchAndNBI(&fetch, a, 2, 0x0f, 0) }, shmem.Quiet, 0x3c, 0x0c},
		{"FetchAndNBICtx", 0x3c, func() error { return shmem.AtomicFetchAndNBICtx(ctx, &fetch, a, 2, 0x30, 0) }, ctx.Quiet, 0x3c, 0x30},
		{"FetchOrNBI", 0x30, func() error { return shmem.AtomicFetchOrNBI(&fetch, a, 2, 0x0f, 0) }, shmem.Quiet, 0x30, 0x3f},
		{"FetchOrNBICtx", 0x30, func() error { return shmem.AtomicFetchOrNBICtx(ctx, &fetch, a, 2, 0x01, 0) }, ctx.Quiet, 0x30, 0x31},
		{"FetchXorNBI", 0x3c, func() error { return shmem.AtomicFetchXorNBI(&fetch, a, 2, 0x0f, 0) }, shmem.Quiet, 0x3c, 0x33},
		{"FetchXorNBICtx", 0x3c, func() error { return shmem.AtomicFetchXorNBICtx(ctx, &fetch, a, 2, 0x3c, 0) }, ctx.Quiet, 0x3c, 0},
		{"AndCtx", 0x3c, func() error { fetch = 0x3c; return shmem.AtomicAndCtx(ctx, a, 2, 0x0f, 0) }, ctx.Quiet, 0x3c, 0x0c},
		{"OrCtx", 0x30, func() error { fetch = 0x30; return shmem.AtomicOrCtx(ctx, a, 2, 0x0f, 0) }, ctx.Quiet, 0x30, 0x3f},
		{"XorCtx", 0x3c, func() error { fetch = 0x3c; return shmem.AtomicXorCtx(ctx, a, 2, 0x0f, 0) }, ctx.Quiet, 0x3c, 0x33},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range x {
				x[i] = ^T(0)
			}
			x[2] = tc.init
			fetch = 0x55
			require.NoError(t, tc.run())
			require.NoError(t, tc.quiet())
			assert.Equal(t, tc.wantOld, fetch, "fetched old value")
			assert.Equal(t, tc.wantNew, x[2], "new value")
			assert.Equal(t, []T{^T(0), ^T(0), ^T(0)}, []T{x[0], x[1], x[3]}, "neighbours untouched")
		})
	}
}

func TestNBIAtomics(t *testing.T) {
	for _, tr := range []string{"shm", "ofi"} {
		t.Run(tr, func(t *testing.T) {
			if tr == "ofi" {
				t.Setenv("GOSHMEM_TRANSPORT", "ofi")
			}
			start(t, shmem.WithTimeout(20*time.Second))
			t.Run("int8", nbiAtomicsOf[int8])
			t.Run("uint16", nbiAtomicsOf[uint16])
			t.Run("int32", nbiAtomicsOf[int32])
			t.Run("uint32", nbiAtomicsOf[uint32])
			t.Run("int64", nbiAtomicsOf[int64])
			t.Run("uint64", nbiAtomicsOf[uint64])
			// The extended AMOs take floating point.
			f := alloc[float64](t, 1)
			f.Local()[0] = 1.5
			var old float64
			require.NoError(t, shmem.AtomicSwapNBI(&old, f, 0, 2.5, 0))
			require.NoError(t, shmem.AtomicFetchNBI(&old, f, 0, 0))
			require.NoError(t, shmem.Quiet())
			assert.Equal(t, 2.5, old)
			require.NoError(t, f.Free())
			usable(t)
		})
	}
}

func TestNBIAtomicsBadInput(t *testing.T) {
	start(t)
	a := alloc[int64](t, 2)
	var fetch int64 = 17
	tests := []struct {
		name     string
		call     func() error
		sentinel error
		contains []string
	}{
		{"nil fetch", func() error { return shmem.AtomicFetchAddNBI(nil, a, 0, 1, 0) }, shmem.ErrInvalidArgument, []string{"PE 0: AtomicFetchAddNBI", "fetch is nil"}},
		{"nil fetch Ctx", func() error { return shmem.AtomicCompareSwapNBICtx(nil, nil, a, 0, 0, 1, 0) }, shmem.ErrInvalidArgument, []string{"fetch is nil"}},
		{"pe", func() error { return shmem.AtomicFetchNBI(&fetch, a, 0, 3) }, shmem.ErrPEOutOfRange, []string{"AtomicFetchNBI", "pe = 3", "[0, 1)"}},
		{"index", func() error { return shmem.AtomicSwapNBI(&fetch, a, 2, 5, 0) }, shmem.ErrOutOfBounds, []string{"AtomicSwapNBI", "index 2"}},
		{"index Ctx", func() error { return shmem.AtomicFetchXorNBICtx(nil, &fetch, a, -1, 5, 0) }, shmem.ErrOutOfBounds, []string{"index -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, tc.sentinel)
			for _, s := range tc.contains {
				assert.Contains(t, err.Error(), s)
			}
			assert.Equal(t, int64(17), fetch, "fetch untouched by a failed call")
			assert.Equal(t, []int64{0, 0}, a.Local())
		})
	}
	require.NoError(t, a.Free())
	usable(t)
}

func TestSignalUpdateAndPutSignalNBI(t *testing.T) {
	for _, tr := range []string{"shm", "ofi"} {
		t.Run(tr, func(t *testing.T) {
			if tr == "ofi" {
				t.Setenv("GOSHMEM_TRANSPORT", "ofi")
			}
			start(t, shmem.WithTimeout(20*time.Second))
			sig := alloc[uint64](t, 2)
			data := alloc[int32](t, 8)
			require.NoError(t, shmem.SignalUpdate(sig, 1, 5, shmem.SignalSet, 0))
			require.NoError(t, shmem.SignalUpdate(sig, 1, 3, shmem.SignalAdd, 0))
			ctx, err := shmem.NewCtx()
			require.NoError(t, err)
			require.NoError(t, shmem.SignalUpdateCtx(ctx, sig, 1, 2, shmem.SignalAdd, 0))
			require.NoError(t, ctx.Quiet())
			v, err := shmem.SignalWaitUntil(sig, 1, shmem.CmpEQ, 10)
			require.NoError(t, err)
			assert.Equal(t, uint64(10), v)

			src := []int32{1, 2, 3}
			require.NoError(t, shmem.PutSignalNBI(data, 2, src, sig, 0, 1, shmem.SignalAdd, 0))
			require.NoError(t, shmem.PutSignalNBICtx(ctx, data, 5, src[:2], sig, 0, 1, shmem.SignalAdd, 0))
			require.NoError(t, shmem.Quiet())
			_, err = shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, 2)
			require.NoError(t, err)
			assert.Equal(t, []int32{0, 0, 1, 2, 3, 1, 2, 0}, data.Local())

			err = shmem.SignalUpdate(sig, 0, 1, shmem.SignalOp(7), 0)
			require.ErrorIs(t, err, shmem.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "op = 7")
			err = shmem.PutSignalNBI(data, 0, src, sig, 0, 1, shmem.SignalOp(-1), 0)
			require.ErrorIs(t, err, shmem.ErrInvalidArgument)
			err = shmem.SignalUpdate(sig, 2, 1, shmem.SignalSet, 0)
			require.ErrorIs(t, err, shmem.ErrOutOfBounds)
			assert.Contains(t, err.Error(), "SignalUpdate")
			err = shmem.SignalUpdateCtx(ctx, sig, 0, 1, shmem.SignalSet, 4)
			require.ErrorIs(t, err, shmem.ErrPEOutOfRange)
			err = shmem.PutSignalNBI(data, 6, src, sig, 0, 1, shmem.SignalSet, 0)
			require.ErrorIs(t, err, shmem.ErrOutOfBounds)
			err = shmem.PutSignalNBI(data, 0, src, sig, 2, 1, shmem.SignalSet, 0)
			require.ErrorIs(t, err, shmem.ErrOutOfBounds)
			assert.Contains(t, err.Error(), "PutSignalNBI (signal)")
			assert.Equal(t, []uint64{2, 10}, sig.Local(), "failed calls change no signal")
			require.NoError(t, ctx.Destroy())
			require.NoError(t, sig.Free())
			require.NoError(t, data.Free())
			usable(t)
		})
	}
}

// TestRMA16NotInitialized: the new entry points before Init.
func TestRMA16NotInitialized(t *testing.T) {
	var a shmem.Array[int64]
	var sig shmem.Array[uint64]
	var fetch int64
	buf := make([]int64, 2)
	for name, call := range map[string]func() error{
		"IPut":                 func() error { return shmem.IPut(a, 0, 1, buf, 1, 1, 0) },
		"IGetCtx":              func() error { return shmem.IGetCtx(nil, buf, 1, a, 0, 1, 1, 0) },
		"IBPut":                func() error { return shmem.IBPut(a, 0, 1, buf, 1, 1, 1, 0) },
		"IBGet":                func() error { return shmem.IBGet(buf, 1, a, 0, 1, 1, 1, 0) },
		"AtomicFetchNBI":       func() error { return shmem.AtomicFetchNBI(&fetch, a, 0, 0) },
		"AtomicFetchAddNBI":    func() error { return shmem.AtomicFetchAddNBI(nil, a, 0, 1, 0) },
		"AtomicCompareSwapNBI": func() error { return shmem.AtomicCompareSwapNBI(&fetch, a, 0, 1, 2, 0) },
		"AtomicAndCtx":         func() error { return shmem.AtomicAndCtx(nil, a, 0, 1, 0) },
		"PutSignalNBI":         func() error { return shmem.PutSignalNBI(a, 0, buf, sig, 0, 1, shmem.SignalSet, 0) },
		"SignalUpdate":         func() error { return shmem.SignalUpdate(sig, 0, 1, shmem.SignalAdd, 0) },
	} {
		err := call()
		require.ErrorIs(t, err, shmem.ErrNotInitialized, name)
		assert.Contains(t, err.Error(), strings.TrimSuffix(name, "Ctx"), name)
	}
}

// TestStridedAllocatesNothing: the strided calls, the NBI atomics and the
// signal calls allocate nothing on shm (hot paths).
func TestStridedAllocatesNothing(t *testing.T) {
	start(t)
	a := alloc[int64](t, 4096)
	sig := alloc[uint64](t, 1)
	local := make([]int64, 4096)
	var fetch int64
	for name, call := range map[string]func() error{
		"IPut":              func() error { return shmem.IPut(a, 0, 2, local, 2, 2048, 0) },
		"IGet":              func() error { return shmem.IGet(local, 2, a, 1, 2, 2000, 0) },
		"IBPut":             func() error { return shmem.IBPut(a, 0, 8, local, 4, 4, 500, 0) },
		"IBGet":             func() error { return shmem.IBGet(local, 8, a, 0, 4, 4, 500, 0) },
		"AtomicFetchAddNBI": func() error { return shmem.AtomicFetchAddNBI(&fetch, a, 0, 1, 0) },
		"SignalUpdate":      func() error { return shmem.SignalUpdate(sig, 0, 1, shmem.SignalAdd, 0) },
		"PutSignalNBI":      func() error { return shmem.PutSignalNBI(a, 0, local[:64], sig, 0, 1, shmem.SignalAdd, 0) },
	} {
		var err error
		allocs := testing.AllocsPerRun(20, func() { err = call() })
		require.NoError(t, err, name)
		assert.Zero(t, allocs, "%s allocates", name)
	}
	require.NoError(t, sig.Free())
	require.NoError(t, a.Free())
}
