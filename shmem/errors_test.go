package shmem_test

import (
	stderrors "errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// hints is every hint attached to err, joined.
func hints(err error) string { return strings.Join(errors.GetAllHints(err), "\n") }

// TestBadInput: every bad argument returns its sentinel (under both the
// standard and the errors package's errors.Is) with a message naming the
// argument and the valid range, and leaves the runtime usable.
func TestBadInput(t *testing.T) {
	start(t)
	a := alloc[int32](t, 4)
	f := alloc[float64](t, 2)
	sig := alloc[uint64](t, 1)
	freed := alloc[int32](t, 4)
	require.NoError(t, freed.Free())
	var zero shmem.Array[int32]
	destroyed, err := shmem.NewCtx()
	require.NoError(t, err)
	require.NoError(t, destroyed.Destroy())
	buf := make([]int32, 4)

	tests := []struct {
		name     string
		call     func() error
		sentinel error
		also     error    // a second sentinel it must match, or nil
		contains []string // substrings of the message
		hint     string   // substring of the hints, or ""
	}{
		// PE out of range
		{"Put pe 1", func() error { return shmem.Put(a, 0, []int32{1}, 1) }, shmem.ErrPEOutOfRange, nil,
			[]string{"PE 0: Put", "pe = 1", "[0, 1)"}, ""},
		{"Put pe -1", func() error { return shmem.Put(a, 0, []int32{1}, -1) }, shmem.ErrPEOutOfRange, nil, []string{"pe = -1", "[0, 1)"}, ""},
		{"Get pe 7", func() error { return shmem.Get(buf, a, 0, 7) }, shmem.ErrPEOutOfRange, nil, []string{"Get", "[0, 1)"}, ""},
		{"P pe 2", func() error { return shmem.P(a, 0, 1, 2) }, shmem.ErrPEOutOfRange, nil, []string{"[0, 1)"}, ""},
		{"G pe 2", func() error { _, err := shmem.G(a, 0, 2); return err }, shmem.ErrPEOutOfRange, nil, []string{"[0, 1)"}, ""},
		{"PutNBI pe 1", func() error { return shmem.PutNBI(a, 0, buf, 1) }, shmem.ErrPEOutOfRange, nil, []string{"[0, 1)"}, ""},
		{"GetNBI pe 1", func() error { return shmem.GetNBI(buf, a, 0, 1) }, shmem.ErrPEOutOfRange, nil, []string{"[0, 1)"}, ""},
		{"AtomicFetchAdd pe 1", func() error { _, err := shmem.AtomicFetchAdd(a, 0, 1, 1); return err }, shmem.ErrPEOutOfRange, nil, []string{"AtomicFetchAdd", "[0, 1)"}, ""},
		{"PutSignal pe 1", func() error { return shmem.PutSignal(a, 0, buf, sig, 0, 1, shmem.SignalSet, 1) }, shmem.ErrPEOutOfRange, nil, []string{"[0, 1)"}, ""},
		{"Broadcast root 1", func() error { return shmem.Broadcast(shmem.TeamWorld, a, a, 1, 1) }, shmem.ErrPEOutOfRange, nil, []string{"root = 1", "[0, 1)"}, ""},
		// bounds
		{"Put past the end", func() error { return shmem.Put(a, 2, []int32{1, 2, 3}, 0) }, shmem.ErrOutOfBounds, nil,
			[]string{"index 2, length 3", "[2, 5)", "[0, 4)"}, ""},
		{"Put negative index", func() error { return shmem.Put(a, -1, []int32{1}, 0) }, shmem.ErrOutOfBounds, nil, []string{"index -1"}, ""},
		{"Get range past MaxInt", func() error { _, err := shmem.G(a, math.MaxInt, 0); return err }, shmem.ErrOutOfBounds, nil,
			[]string{"elements [9223372036854775807, 9223372036854775808)"}, ""},
		{"SignalFetch past the end", func() error { _, err := shmem.SignalFetch(sig, 9); return err }, shmem.ErrOutOfBounds, nil,
			[]string{"PE 0: SignalFetch", "index 9"}, ""},
		{"Get too long", func() error { return shmem.Get(make([]int32, 5), a, 0, 0) }, shmem.ErrOutOfBounds, nil, []string{"[0, 5)", "[0, 4)"}, ""},
		{"P at len", func() error { return shmem.P(a, 4, 1, 0) }, shmem.ErrOutOfBounds, nil, []string{"index 4"}, ""},
		{"G at len", func() error { _, err := shmem.G(a, 4, 0); return err }, shmem.ErrOutOfBounds, nil, []string{"index 4"}, ""},
		{"Atomic at len", func() error { return shmem.AtomicInc(a, 4, 0) }, shmem.ErrOutOfBounds, nil, []string{"index 4"}, ""},
		{"WaitUntil at len", func() error { return shmem.WaitUntil(a, 9, shmem.CmpEQ, 0) }, shmem.ErrOutOfBounds, nil, []string{"index 9"}, ""},
		{"TestCmp negative", func() error { _, err := shmem.TestCmp(a, -1, shmem.CmpEQ, 0); return err }, shmem.ErrOutOfBounds, nil, nil, ""},
		{"PutSignal signal index", func() error { return shmem.PutSignal(a, 0, buf, sig, 1, 1, shmem.SignalSet, 0) }, shmem.ErrOutOfBounds, nil, []string{"PutSignal (signal)"}, ""},
		{"Broadcast n too big", func() error { return shmem.Broadcast(shmem.TeamWorld, a, a, 5, 0) }, shmem.ErrOutOfBounds, nil, []string{"needs 5 elements, has 4"}, ""},
		{"FCollect n too big", func() error { return shmem.FCollect(shmem.TeamWorld, a, a, 5) }, shmem.ErrOutOfBounds, nil, nil, ""},
		{"AllToAll n too big", func() error { return shmem.AllToAll(shmem.TeamWorld, a, a, 5) }, shmem.ErrOutOfBounds, nil, nil, ""},
		{"Reduce n too big", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, 5) }, shmem.ErrOutOfBounds, nil, nil, ""},
		// types and operators
		{"Reduce xor float64", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.OpXor, f, f, 2) },
			shmem.ErrInvalidArgument, nil, []string{"bitwise", "float64"}, "OpSum"},
		{"Reduce bad op", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.Op(42), a, a, 1) },
			shmem.ErrInvalidArgument, nil, []string{"op = 42"}, ""},
		{"Reduce negative n", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, -1) },
			shmem.ErrInvalidArgument, nil, []string{"n must be >= 0"}, ""},
		{"WaitUntil bad cmp", func() error { return shmem.WaitUntil(a, 0, shmem.Cmp(17), 0) }, shmem.ErrInvalidArgument, nil, []string{"cmp = 17"}, ""},
		{"TestCmp bad cmp", func() error { _, err := shmem.TestCmp(a, 0, shmem.Cmp(-1), 0); return err }, shmem.ErrInvalidArgument, nil, nil, ""},
		{"PutSignal bad op", func() error { return shmem.PutSignal(a, 0, buf, sig, 0, 1, shmem.SignalOp(1), 0) }, shmem.ErrInvalidArgument, nil, []string{"op = 1"}, ""},
		{"PutSignal zero op", func() error { return shmem.PutSignal(a, 0, buf, sig, 0, 1, shmem.SignalOp(0), 0) }, shmem.ErrInvalidArgument, nil, []string{"op = 0"}, ""},
		// heap
		{"Alloc(-1)", func() error { _, err := shmem.Alloc[int32](-1); return err }, shmem.ErrInvalidArgument, nil, []string{"n = -1", "int32", "[0, "}, ""},
		{"Alloc beyond the heap", func() error { _, err := shmem.Alloc[float64](testHeap/8 + 1); return err },
			shmem.ErrHeapExhausted, nil, []string{"more than the whole heap"}, "GOSHMEM_SYMMETRIC_SIZE"},
		{"Alloc huge n", func() error { _, err := shmem.Alloc[int64](1 << 62); return err }, shmem.ErrHeapExhausted, nil, nil, "GOSHMEM_SYMMETRIC_SIZE"},
		{"Free twice", func() error { return freed.Free() }, shmem.ErrInvalidArgument, nil, []string{"already freed"}, "free each array once"},
		{"Put after Free", func() error { return shmem.Put(freed, 0, []int32{1}, 0) }, shmem.ErrInvalidArgument, nil, []string{"use after Free"}, "do not use an array after Free"},
		{"Get after Free", func() error { return shmem.Get(buf, freed, 0, 0) }, shmem.ErrInvalidArgument, nil, []string{"use after Free"}, ""},
		{"Atomic after Free", func() error { return shmem.AtomicInc(freed, 0, 0) }, shmem.ErrInvalidArgument, nil, []string{"use after Free"}, ""},
		{"Reduce after Free", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, freed, 1) }, shmem.ErrInvalidArgument, nil, []string{"(src)", "use after Free"}, ""},
		{"Put to zero Array", func() error { return shmem.Put(zero, 0, []int32{1}, 0) }, shmem.ErrOutOfBounds, nil, []string{"zero Array"}, ""},
		{"AllocDevice", func() error { _, err := shmem.AllocDevice[float32](16); return err }, shmem.ErrNotSupported, nil, []string{"no GPU symmetric heap"}, "shmem.Alloc"},
		// contexts and teams
		{"destroyed ctx", func() error { return shmem.PutCtx(destroyed, a, 0, []int32{1}, 0) }, shmem.ErrInvalidArgument, nil, []string{"was destroyed"}, ""},
		{"destroyed ctx Quiet", func() error { return destroyed.Quiet() }, shmem.ErrInvalidArgument, nil, nil, ""},
		{"Destroy twice", func() error { return destroyed.Destroy() }, shmem.ErrInvalidArgument, nil, nil, ""},
		{"Destroy default ctx", func() error { var c *shmem.Ctx; return c.Destroy() }, shmem.ErrInvalidArgument, nil, []string{"default context"}, ""},
		{"Destroy TeamWorld", func() error { return shmem.TeamWorld.Destroy() }, shmem.ErrInvalidArgument, nil, []string{"TeamWorld cannot be destroyed"}, ""},
		{"TeamInvalid Barrier", func() error { return shmem.TeamInvalid.Barrier() }, shmem.ErrInvalidArgument, nil, []string{"not valid on this PE"}, ""},
		{"Split size 0", func() error { _, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 0); return err }, shmem.ErrInvalidArgument, nil, []string{"size >= 1"}, ""},
		{"Split past the end", func() error { _, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 2); return err }, shmem.ErrInvalidArgument, nil, []string{"[0, 1)"}, ""},
		{"Split of TeamInvalid", func() error { _, err := shmem.TeamSplitStrided(shmem.TeamInvalid, 0, 1, 1); return err }, shmem.ErrInvalidArgument, nil, nil, ""},
		{"Init twice", func() error { return shmem.Init() }, shmem.ErrInvalidArgument, nil, []string{"already initialized"}, "call Finalize"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.Error(t, err)
			require.ErrorIs(t, err, tc.sentinel, "standard errors.Is: %v", err)
			assert.True(t, errors.Is(err, tc.sentinel), "errors package Is")
			if tc.also != nil {
				assert.ErrorIs(t, err, tc.also)
				assert.True(t, errors.Is(err, tc.also))
			}
			for _, s := range tc.contains {
				assert.Contains(t, err.Error(), s)
			}
			if tc.hint != "" {
				assert.Contains(t, hints(err), tc.hint)
			}
			// Other sentinels must not match.
			for _, s := range []error{shmem.ErrNotInitialized, shmem.ErrTimeout, shmem.ErrNotSymmetric} {
				assert.False(t, stderrors.Is(err, s), "unexpectedly matches %v", s)
			}
			usable(t)
		})
	}
	assert.Equal(t, []int32{0, 0, 0, 0}, a.Local(), "no bad call wrote into the array")
	assert.Nil(t, freed.Local())
}

// TestHeapExhaustedByFragments: allocations that each fit but not together.
func TestHeapExhaustedByFragments(t *testing.T) {
	start(t)
	var held []shmem.Array[byte]
	var err error
	for {
		var a shmem.Array[byte]
		a, err = shmem.Alloc[byte](1 << 20)
		if err != nil {
			break
		}
		held = append(held, a)
		require.Less(t, len(held), 16, "an 8 MiB heap cannot hold 16 MiB")
	}
	require.ErrorIs(t, err, shmem.ErrHeapExhausted)
	assert.Contains(t, hints(err), "GOSHMEM_SYMMETRIC_SIZE")
	assert.NotEmpty(t, held)
	for _, a := range held {
		require.NoError(t, a.Free())
	}
	usable(t)
	// All of it is back.
	again, err := shmem.Alloc[byte](len(held) << 20)
	require.NoError(t, err)
	require.NoError(t, again.Free())
}

func TestUseAfterFreeDebug(t *testing.T) {
	start(t, shmem.WithDebug(true))
	a := alloc[uint32](t, 16)
	for i := range a.Local() {
		a.Local()[i] = uint32(i)
	}
	retained := a.Local()
	require.NoError(t, a.Free())
	assert.Nil(t, a.Local(), "Local of a freed array is nil")
	for i, v := range retained {
		require.Equal(t, uint32(0xdbdbdbdb), v, "a retained slice reads poison at %d", i)
	}
	err := shmem.Put(a, 0, []uint32{1}, 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "use after Free")
	_, err = shmem.G(a, 0, 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	// The quarantine keeps the freed block from being handed out again, so
	// the stale slice still reads poison after a new allocation.
	b := alloc[uint32](t, 16)
	assert.NotEqual(t, &retained[0], &b.Local()[0], "freed memory is quarantined")
	assert.Equal(t, uint32(0xdbdbdbdb), retained[0])
	require.NoError(t, b.Free())
	usable(t)
}

func TestWaitUntilTimeout(t *testing.T) {
	start(t, shmem.WithTimeout(100*time.Millisecond))
	a := alloc[int64](t, 4)
	a.Local()[3] = 2
	err := shmem.WaitUntil(a, 3, shmem.CmpEQ, 7)
	require.ErrorIs(t, err, shmem.ErrTimeout)
	msg := err.Error()
	for _, s := range []string{"WaitUntil", "a[3] == 7", "int64", "value is still 2", "GOSHMEM_TIMEOUT=100ms"} {
		assert.Contains(t, msg, s)
	}
	_, err = shmem.SignalWaitUntil(alloc[uint64](t, 1), 0, shmem.CmpGE, 1)
	require.ErrorIs(t, err, shmem.ErrTimeout)
	usable(t)
}

// TestArrayFromEarlierInit: arrays die with their Init.
func TestArrayFromEarlierInit(t *testing.T) {
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
	old := alloc[int32](t, 4)
	oldCtx, err := shmem.NewCtx()
	require.NoError(t, err)
	require.NoError(t, shmem.Finalize())
	assert.Nil(t, old.Local(), "after Finalize")

	start(t)
	assert.Nil(t, old.Local(), "an array of an earlier Init")
	err = shmem.Put(old, 0, []int32{1}, 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "earlier Init")
	require.ErrorIs(t, old.Free(), shmem.ErrInvalidArgument)
	err = oldCtx.Quiet()
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "earlier Init")
	usable(t)
}

// TestNotInitialized: every entry point, before Init and after Finalize.
func TestNotInitialized(t *testing.T) {
	// Handles made by a live runtime, to be used after it is gone.
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
	a := alloc[int32](t, 4)
	sig := alloc[uint64](t, 1)
	ctx, err := shmem.NewCtx()
	require.NoError(t, err)
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	require.NoError(t, shmem.Finalize())

	live := entryPoints(a, sig, ctx, tm)
	// Before Init a program holds only zero handles.
	var za shmem.Array[int32]
	var zsig shmem.Array[uint64]
	zero := entryPoints(za, zsig, nil, shmem.TeamWorld)
	for _, phase := range []struct {
		name  string
		calls []entryPoint
	}{{"after Finalize", live}, {"before Init", zero}} {
		for _, tc := range phase.calls {
			t.Run(phase.name+"/"+tc.name, func(t *testing.T) {
				err := tc.call()
				require.ErrorIs(t, err, shmem.ErrNotInitialized)
				assert.Contains(t, err.Error(), "not initialized")
				assert.Contains(t, hints(err), "Init")
			})
		}
	}
	assert.Equal(t, -1, shmem.MyPE())
	assert.Equal(t, -1, shmem.NPEs())
	assert.Nil(t, a.Local())
	assert.False(t, shmem.TeamWorld.Valid())
	assert.Equal(t, -1, shmem.TeamWorld.MyPE())
	assert.Equal(t, -1, shmem.TeamWorld.NPEs())
	assert.Equal(t, -1, shmem.TeamWorld.TranslatePE(0, shmem.TeamWorld))
}

type entryPoint struct {
	name string
	call func() error
}

// entryPoints is every shmem entry point that returns an error, called on
// the given handles.
func entryPoints(a shmem.Array[int32], sig shmem.Array[uint64], ctx *shmem.Ctx, tm shmem.Team) []entryPoint {
	buf := make([]int32, 1)
	return []entryPoint{
		{"Finalize", shmem.Finalize},
		{"Alloc", func() error { _, err := shmem.Alloc[int32](1); return err }},
		{"AllocDevice", func() error { _, err := shmem.AllocDevice[int32](1); return err }},
		{"Free", a.Free},
		{"Put", func() error { return shmem.Put(a, 0, buf, 0) }},
		{"PutCtx", func() error { return shmem.PutCtx(ctx, a, 0, buf, 0) }},
		{"PutNBI", func() error { return shmem.PutNBI(a, 0, buf, 0) }},
		{"PutNBICtx", func() error { return shmem.PutNBICtx(ctx, a, 0, buf, 0) }},
		{"Get", func() error { return shmem.Get(buf, a, 0, 0) }},
		{"GetCtx", func() error { return shmem.GetCtx(ctx, buf, a, 0, 0) }},
		{"GetNBI", func() error { return shmem.GetNBI(buf, a, 0, 0) }},
		{"GetNBICtx", func() error { return shmem.GetNBICtx(ctx, buf, a, 0, 0) }},
		{"P", func() error { return shmem.P(a, 0, 1, 0) }},
		{"PCtx", func() error { return shmem.PCtx(ctx, a, 0, 1, 0) }},
		{"G", func() error { _, err := shmem.G(a, 0, 0); return err }},
		{"GCtx", func() error { _, err := shmem.GCtx(ctx, a, 0, 0); return err }},
		{"AtomicFetchAdd", func() error { _, err := shmem.AtomicFetchAdd(a, 0, 1, 0); return err }},
		{"AtomicFetchAddCtx", func() error { _, err := shmem.AtomicFetchAddCtx(ctx, a, 0, 1, 0); return err }},
		{"AtomicAdd", func() error { return shmem.AtomicAdd(a, 0, 1, 0) }},
		{"AtomicAddCtx", func() error { return shmem.AtomicAddCtx(ctx, a, 0, 1, 0) }},
		{"AtomicFetchInc", func() error { _, err := shmem.AtomicFetchInc(a, 0, 0); return err }},
		{"AtomicFetchIncCtx", func() error { _, err := shmem.AtomicFetchIncCtx(ctx, a, 0, 0); return err }},
		{"AtomicInc", func() error { return shmem.AtomicInc(a, 0, 0) }},
		{"AtomicIncCtx", func() error { return shmem.AtomicIncCtx(ctx, a, 0, 0) }},
		{"AtomicCompareSwap", func() error { _, err := shmem.AtomicCompareSwap(a, 0, 0, 1, 0); return err }},
		{"AtomicCompareSwapCtx", func() error { _, err := shmem.AtomicCompareSwapCtx(ctx, a, 0, 0, 1, 0); return err }},
		{"AtomicSwap", func() error { _, err := shmem.AtomicSwap(a, 0, 1, 0); return err }},
		{"AtomicSwapCtx", func() error { _, err := shmem.AtomicSwapCtx(ctx, a, 0, 1, 0); return err }},
		{"AtomicFetch", func() error { _, err := shmem.AtomicFetch(a, 0, 0); return err }},
		{"AtomicFetchCtx", func() error { _, err := shmem.AtomicFetchCtx(ctx, a, 0, 0); return err }},
		{"AtomicSet", func() error { return shmem.AtomicSet(a, 0, 1, 0) }},
		{"AtomicSetCtx", func() error { return shmem.AtomicSetCtx(ctx, a, 0, 1, 0) }},
		{"AtomicFetchAnd", func() error { _, err := shmem.AtomicFetchAnd(a, 0, 1, 0); return err }},
		{"AtomicFetchAndCtx", func() error { _, err := shmem.AtomicFetchAndCtx(ctx, a, 0, 1, 0); return err }},
		{"AtomicFetchOr", func() error { _, err := shmem.AtomicFetchOr(a, 0, 1, 0); return err }},
		{"AtomicFetchOrCtx", func() error { _, err := shmem.AtomicFetchOrCtx(ctx, a, 0, 1, 0); return err }},
		{"AtomicFetchXor", func() error { _, err := shmem.AtomicFetchXor(a, 0, 1, 0); return err }},
		{"AtomicFetchXorCtx", func() error { _, err := shmem.AtomicFetchXorCtx(ctx, a, 0, 1, 0); return err }},
		{"AtomicAnd", func() error { return shmem.AtomicAnd(a, 0, 1, 0) }},
		{"AtomicOr", func() error { return shmem.AtomicOr(a, 0, 1, 0) }},
		{"AtomicXor", func() error { return shmem.AtomicXor(a, 0, 1, 0) }},
		{"WaitUntil", func() error { return shmem.WaitUntil(a, 0, shmem.CmpEQ, 0) }},
		{"TestCmp", func() error { _, err := shmem.TestCmp(a, 0, shmem.CmpEQ, 0); return err }},
		{"PutSignal", func() error { return shmem.PutSignal(a, 0, buf, sig, 0, 1, shmem.SignalSet, 0) }},
		{"PutSignalCtx", func() error { return shmem.PutSignalCtx(ctx, a, 0, buf, sig, 0, 1, shmem.SignalAdd, 0) }},
		{"SignalWaitUntil", func() error { _, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, 0); return err }},
		{"SignalFetch", func() error { _, err := shmem.SignalFetch(sig, 0); return err }},
		{"Quiet", shmem.Quiet},
		{"Fence", shmem.Fence},
		{"NewCtx", func() error { _, err := shmem.NewCtx(); return err }},
		{"Ctx.Quiet", ctx.Quiet},
		{"Ctx.Fence", ctx.Fence},
		{"Ctx.Destroy", ctx.Destroy},
		{"nil Ctx.Quiet", func() error { var c *shmem.Ctx; return c.Quiet() }},
		{"BarrierAll", shmem.BarrierAll},
		{"SyncAll", shmem.SyncAll},
		{"Team.Barrier", shmem.TeamWorld.Barrier},
		{"Team.Sync", shmem.TeamWorld.Sync},
		{"Team.Destroy", tm.Destroy},
		{"TeamSplitStrided", func() error { _, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1); return err }},
		{"Broadcast", func() error { return shmem.Broadcast(shmem.TeamWorld, a, a, 1, 0) }},
		{"Reduce", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, a, 1) }},
		{"FCollect", func() error { return shmem.FCollect(shmem.TeamWorld, a, a, 1) }},
		{"AllToAll", func() error { return shmem.AllToAll(shmem.TeamWorld, a, a, 1) }},
	}
}

// TestInitBadConfig: a bad setting fails Init with its sentinel, leaves
// goshmem uninitialized and nothing mapped, and a good Init works after it.
func TestInitBadConfig(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		opts     []shmem.Option
		sentinel error
		contains string
		hint     string
	}{
		{"heap of 1 byte", nil, []shmem.Option{shmem.WithSymmetricSize(1)}, shmem.ErrInvalidArgument,
			"leaves no room for the user heap", "GOSHMEM_SYMMETRIC_SIZE"},
		{"heap of one page", nil, []shmem.Option{shmem.WithSymmetricSize(4096)}, shmem.ErrInvalidArgument,
			"leaves no room for the user heap", "GOSHMEM_SYMMETRIC_SIZE"},
		{"heap beyond /dev/shm", nil, []shmem.Option{shmem.WithSymmetricSize(1 << 50)}, shmem.ErrHeapExhausted,
			"symmetric heap of 1125899906842624 bytes", ""},
		{"bad size variable", map[string]string{"GOSHMEM_SYMMETRIC_SIZE": "lots"}, nil, shmem.ErrInvalidArgument,
			`GOSHMEM_SYMMETRIC_SIZE="lots"`, "bytes of symmetric heap"},
		{"bad timeout variable", map[string]string{"GOSHMEM_TIMEOUT": "inf"}, nil, shmem.ErrInvalidArgument,
			`GOSHMEM_TIMEOUT="inf"`, ""},
		{"unknown transport", map[string]string{"GOSHMEM_TRANSPORT": "rdma"}, nil, shmem.ErrNotSupported,
			`GOSHMEM_TRANSPORT="rdma"`, "GOSHMEM_TRANSPORT=auto"},
		{"unknown ofi provider", map[string]string{"GOSHMEM_TRANSPORT": "ofi", "GOSHMEM_OFI_PROVIDER": "bogus"}, nil, shmem.ErrNotSupported,
			`provider "bogus"`, "GOSHMEM_OFI_PROVIDER to one of: "},
		{"unknown bootstrap", map[string]string{"GOSHMEM_BOOTSTRAP": "pmix"}, nil, shmem.ErrInvalidArgument,
			`GOSHMEM_BOOTSTRAP="pmix"`, ""},
		// CI and the dev machine have no mlx5 device (ibv_get_device_list finds none).
		{"ibgda without an mlx5 device", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda"}, nil, shmem.ErrNotSupported,
			"GOSHMEM_GPU_TRANSPORT=ibgda", "GOSHMEM_IBGDA_NIC=soft"},
		{"ibgda mlx5 without an mlx5 device", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "mlx5"}, nil,
			shmem.ErrNotSupported, "PE 0: Init: GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=mlx5: verbs: no mlx5 device",
			"without one use GOSHMEM_GPU_TRANSPORT=proxy, or GOSHMEM_IBGDA_NIC=soft"},
		{"ibgda auto without an mlx5 device", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "auto"}, nil,
			shmem.ErrNotSupported, "PE 0: Init: GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=auto: verbs: no mlx5 device",
			"ConnectX (mlx5) NIC visible to rdma-core"},
		{"ibgda CPU-assisted doorbells without an mlx5 device",
			map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_DOORBELL": "cpu"}, nil,
			shmem.ErrNotSupported, "verbs: no mlx5 device", "GOSHMEM_IBGDA_NIC=soft"},
		{"unknown ibgda doorbell mode", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_DOORBELL": "host"}, nil,
			shmem.ErrInvalidArgument, `PE 0: Init: GOSHMEM_IBGDA_DOORBELL="host"; want gpu`, "gpu or cpu"},
		{"unknown ibgda doorbell mode with the soft NIC",
			map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "soft", "GOSHMEM_IBGDA_DOORBELL": "nic"}, nil,
			shmem.ErrInvalidArgument, `GOSHMEM_IBGDA_DOORBELL="nic"`, "gpu or cpu"},
		{"bad ibgda GID index", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_GID_INDEX": "-1"}, nil,
			shmem.ErrInvalidArgument, `GOSHMEM_IBGDA_GID_INDEX="-1"; want a GID table index in [0, 255]`, "show_gids"},
		{"unknown ibgda NIC", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "cx9"}, nil,
			shmem.ErrInvalidArgument, `GOSHMEM_IBGDA_NIC="cx9"`, "mlx5 or soft"},
		{"unknown ibgda queue placement", map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_QUEUES": "hbm"}, nil,
			shmem.ErrInvalidArgument, `PE 0: Init: GOSHMEM_IBGDA_QUEUES="hbm"; want host`, "host or gpu"},
		{"ibgda GPU queues with CPU-assisted doorbells",
			map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_QUEUES": "gpu", "GOSHMEM_IBGDA_DOORBELL": "cpu"}, nil,
			shmem.ErrInvalidArgument, "GOSHMEM_IBGDA_QUEUES=gpu with GOSHMEM_IBGDA_DOORBELL=cpu: the CPU-assisted ringer",
			"GOSHMEM_IBGDA_QUEUES=host with GOSHMEM_IBGDA_DOORBELL=cpu"},
		{"ibgda GPU queues with the soft NIC",
			map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "soft", "GOSHMEM_IBGDA_QUEUES": "gpu"}, nil,
			shmem.ErrInvalidArgument, "GOSHMEM_IBGDA_QUEUES=gpu with GOSHMEM_IBGDA_NIC=soft", "set it to host"},
		// Valid GPU-queue settings reach the device probe, which fails here.
		{"ibgda GPU queues without an mlx5 device",
			map[string]string{"GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "mlx5", "GOSHMEM_IBGDA_QUEUES": "gpu"}, nil,
			shmem.ErrNotSupported, "PE 0: Init: GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=mlx5: verbs: no mlx5 device",
			"GOSHMEM_IBGDA_NIC=soft"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			opts := append([]shmem.Option{shmem.WithSymmetricSize(testHeap)}, tc.opts...)
			err := shmem.Init(opts...)
			require.ErrorIs(t, err, tc.sentinel)
			assert.Contains(t, err.Error(), tc.contains)
			if tc.hint != "" {
				assert.Contains(t, hints(err), tc.hint)
			}
			assert.Equal(t, -1, shmem.MyPE(), "still uninitialized")
			for k := range tc.env {
				require.NoError(t, os.Unsetenv(k))
			}
			start(t)
			usable(t)
		})
	}
}

// TestDebugQuarantineReleasedWhenFull: with GOSHMEM_DEBUG's quarantine,
// allocating and freeing more than the heap in total must keep working (the
// quarantine is given back when the heap is full), while a freed Array is
// still refused through its handle.
func TestDebugQuarantineReleasedWhenFull(t *testing.T) {
	const heap = 8 << 20
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(heap), shmem.WithDebug(true)))
	t.Cleanup(func() { _ = shmem.Finalize() })
	var freed shmem.Array[byte]
	for i := 0; i < 12; i++ { // 12 x 2 MiB > the 8 MiB heap
		a, err := shmem.Alloc[byte](2 << 20)
		require.NoError(t, err, "allocation %d of 2 MiB in an 8 MiB debug heap", i)
		require.NoError(t, a.Free())
		freed = a
	}
	err := shmem.Put(freed, 0, []byte{1}, 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "use after Free")
}
