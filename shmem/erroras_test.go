package shmem_test

import (
	"context"
	stderrors "errors"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// TestErrorAs: a failing call of every family returns an error that
// errors.As turns into a *shmem.Error naming this PE and the call, and
// that still matches its sentinel under both errors.Is implementations.
func TestErrorAs(t *testing.T) {
	start(t, shmem.WithTimeout(50*time.Millisecond))
	a := alloc[int32](t, 4)
	sig := alloc[uint64](t, 1)
	buf := make([]int32, 4)
	freed := alloc[int32](t, 1)
	require.NoError(t, freed.Free())
	destroyed, err := shmem.NewCtx()
	require.NoError(t, err)
	require.NoError(t, destroyed.Destroy())
	lock, err := shmem.NewLock()
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Free() })
	held, err := shmem.NewLock() // this PE holds it: a second Set times out
	require.NoError(t, err)
	require.NoError(t, held.Set())
	t.Cleanup(func() { _ = held.Clear(); _ = held.Free() })
	freedLock, err := shmem.NewLock()
	require.NoError(t, err)
	require.NoError(t, freedLock.Free())
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var kernel shmem.Kernel

	tests := []struct {
		family, op string
		call       func() error
		sentinel   error
	}{
		{"rma", "Put", func() error { return shmem.Put(a, 0, buf, 1) }, shmem.ErrPEOutOfRange},
		{"rma", "Get", func() error { return shmem.Get(buf, a, 1, 0) }, shmem.ErrOutOfBounds},
		{"rma", "PutNBI", func() error { return shmem.PutNBICtx(destroyed, a, 0, buf, 0) }, shmem.ErrInvalidArgument},
		{"rma", "IPut", func() error { return shmem.IPut(a, 0, 2, buf, 1, 3, 0) }, shmem.ErrOutOfBounds},
		{"amo", "AtomicFetchAdd", func() error { _, err := shmem.AtomicFetchAdd(a, 4, 1, 0); return err }, shmem.ErrOutOfBounds},
		{"amo", "AtomicCompareSwap", func() error { _, err := shmem.AtomicCompareSwap(freed, 0, 0, 1, 0); return err }, shmem.ErrInvalidArgument},
		{"wait", "WaitUntil", func() error { return shmem.WaitUntil(a, 0, shmem.CmpEQ, 7) }, shmem.ErrTimeout},
		{"wait", "WaitUntilAll", func() error { return shmem.WaitUntilAll(a, 0, 5, nil, shmem.CmpEQ, 0) }, shmem.ErrOutOfBounds},
		{"wait", "TestCmp", func() error { _, err := shmem.TestCmp(a, 0, shmem.Cmp(9), 0); return err }, shmem.ErrInvalidArgument},
		{"signal", "PutSignal", func() error { return shmem.PutSignal(a, 0, buf, sig, 0, 1, shmem.SignalOp(1), 0) }, shmem.ErrInvalidArgument},
		{"signal", "SignalFetch", func() error { _, err := shmem.SignalFetch(sig, 3); return err }, shmem.ErrOutOfBounds},
		{"signal", "SignalWaitUntil", func() error { _, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, 1); return err }, shmem.ErrTimeout},
		{"collectives", "Broadcast", func() error { return shmem.Broadcast(shmem.TeamWorld, a, a, 1, 1) }, shmem.ErrPEOutOfRange},
		{"collectives", "Reduce", func() error { return shmem.Reduce(shmem.TeamWorld, shmem.Op(42), a, a, 1) }, shmem.ErrInvalidArgument},
		{"collectives", "FCollect", func() error { return shmem.FCollect(shmem.TeamWorld, a, a, 5) }, shmem.ErrOutOfBounds},
		{"teams", "TeamSplitStrided", func() error { _, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 0); return err }, shmem.ErrInvalidArgument},
		{"teams", "Team.Destroy", func() error { return shmem.TeamWorld.Destroy() }, shmem.ErrInvalidArgument},
		{"ctx", "Ctx.Quiet", func() error { return destroyed.Quiet() }, shmem.ErrInvalidArgument},
		{"ctx", "Ctx.Destroy", func() error { return destroyed.Destroy() }, shmem.ErrInvalidArgument},
		{"lock", "Lock.Clear", func() error { return lock.Clear() }, shmem.ErrInvalidArgument},
		{"lock", "Lock.Set", func() error { return held.Set() }, shmem.ErrTimeout},
		{"lock", "Lock.Set", func() error { return held.SetContext(done) }, context.Canceled},
		{"lock", "Lock.Test", func() error { _, err := freedLock.Test(); return err }, shmem.ErrInvalidArgument},
		{"sync", "BarrierAll", func() error { return shmem.BarrierAllContext(done) }, context.Canceled},
		{"sync", "Team.Barrier", func() error { return shmem.TeamWorld.BarrierContext(done) }, context.Canceled},
		{"sync", "Team.Barrier", func() error { return shmem.TeamInvalid.Barrier() }, shmem.ErrInvalidArgument},
		{"sync", "Team.Sync", func() error { return shmem.TeamInvalid.Sync() }, shmem.ErrInvalidArgument},
		{"alloc", "Alloc", func() error { _, err := shmem.Alloc[int32](-1); return err }, shmem.ErrInvalidArgument},
		{"alloc", "AllocAligned", func() error { _, err := shmem.AllocAligned[int32](1, 3); return err }, shmem.ErrInvalidArgument},
		{"alloc", "Free", func() error { return freed.Free() }, shmem.ErrInvalidArgument},
		{"alloc", "Realloc", func() error { _, err := shmem.Realloc(a, -1); return err }, shmem.ErrInvalidArgument},
		{"gpu", "AllocDevice", func() error { _, err := shmem.AllocDevice[float32](4); return err }, shmem.ErrNotSupported},
		{"gpu", "DeviceInfo", func() error { _, err := shmem.DeviceInfo(); return err }, shmem.ErrNotSupported},
		{"gpu", "NewStream", func() error { _, err := shmem.NewStream(); return err }, shmem.ErrNotSupported},
		{"gpu", "LoadModule", func() error { _, err := shmem.LoadModule([]byte("x")); return err }, shmem.ErrNotSupported},
		{"gpu", "Synchronize", shmem.Synchronize, shmem.ErrNotSupported},
		{"gpu", "Stream.Synchronize", func() error { return (*shmem.Stream)(nil).Synchronize() }, shmem.ErrNotSupported},
		{"gpu", "Launch", func() error { return shmem.Launch(&kernel, shmem.LaunchConfig{}) }, shmem.ErrInvalidArgument},
		{"gpu", "LaunchCollective", func() error { return shmem.LaunchCollective(nil, shmem.LaunchConfig{}) }, shmem.ErrInvalidArgument},
		{"gpu", "PutOnStream", func() error { return shmem.PutOnStream(nil, a, 0, a, 0, 1, 0) }, shmem.ErrNotSupported},
		{"gpu", "QuietOnStream", func() error { return shmem.QuietOnStream(nil) }, shmem.ErrNotSupported},
		{"gpu", "BarrierAllOnStream", func() error { return shmem.BarrierAllOnStream(nil) }, shmem.ErrNotSupported},
		{"gpu", "Team.SyncOnStream", func() error { return shmem.TeamWorld.SyncOnStream(nil) }, shmem.ErrNotSupported},
		{"gpu", "ReduceOnStream", func() error { return shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, a, a, 1) }, shmem.ErrNotSupported},
		{"gpu", "BroadcastOnStream", func() error { return shmem.BroadcastOnStream(nil, shmem.TeamWorld, a, a, 1, 0) }, shmem.ErrNotSupported},
		{"gpu", "FCollectOnStream", func() error { return shmem.FCollectOnStream(nil, shmem.TeamWorld, a, a, 1) }, shmem.ErrNotSupported},
		{"lifecycle", "Init", func() error { return shmem.Init() }, shmem.ErrInvalidArgument},
	}
	checkOps(t, tests)
}

// checkOps runs each call: its error is an *shmem.Error of PE 0 and the
// call's op under errors.As, and matches its sentinel under both
// errors.Is implementations, through the *Error too.
func checkOps(t *testing.T, tests []struct {
	family, op string
	call       func() error
	sentinel   error
}) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.family+"/"+tc.op, func(t *testing.T) {
			err := tc.call()
			require.Error(t, err)
			var e *shmem.Error
			require.True(t, stderrors.As(err, &e), "errors.As: %v", err)
			assert.Equal(t, 0, e.PE)
			assert.Equal(t, tc.op, e.Op, "%v", err)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.True(t, errors.Is(err, tc.sentinel), "errors package Is")
			assert.ErrorIs(t, e, tc.sentinel, "through the *Error itself")
		})
	}
}

// TestErrorAsOutOfStep: the collectives of a world team out of step fail
// in an internal step (the team's sync); errors.As still names the call,
// and the text is the step's.
func TestErrorAsOutOfStep(t *testing.T) {
	initFor(t)
	a := alloc[int32](t, 4)
	shmem.BreakWorld(stderrors.New("injected failure"))
	sentinel := shmem.ErrNotSymmetric
	checkOps(t, []struct {
		family, op string
		call       func() error
		sentinel   error
	}{
		{"sync", "BarrierAll", shmem.BarrierAll, sentinel},
		{"sync", "BarrierAll", func() error { return shmem.BarrierAllContext(context.Background()) }, sentinel},
		{"sync", "SyncAll", shmem.SyncAll, sentinel},
		{"sync", "Team.Barrier", shmem.TeamWorld.Barrier, sentinel},
		{"sync", "Team.Sync", shmem.TeamWorld.Sync, sentinel},
		{"alloc", "Alloc", func() error { _, err := shmem.Alloc[int32](8); return err }, sentinel},
		{"alloc", "Free", a.Free, sentinel},
		{"lock", "NewLock", func() error { _, err := shmem.NewLock(); return err }, sentinel},
	})
	err := shmem.BarrierAll()
	assert.Contains(t, err.Error(), "team world is out of step since sync #", "the step's text is kept")
	assert.ErrorIs(t, shmem.Finalize(), shmem.ErrNotSymmetric, "Finalize reports it")
}

// TestErrorAsNotInitialized: a call before Init or after Finalize names
// no PE (-1) and the call.
func TestErrorAsNotInitialized(t *testing.T) {
	var a shmem.Array[int64]
	for _, tc := range []struct {
		op   string
		call func() error
	}{
		{"Put", func() error { return shmem.Put(a, 0, nil, 0) }},
		{"BarrierAll", shmem.BarrierAll},
		{"Finalize", shmem.Finalize},
		{"Alloc", func() error { _, err := shmem.Alloc[int64](0); return err }},
	} {
		err := tc.call()
		var e *shmem.Error
		require.True(t, stderrors.As(err, &e), "errors.As: %v", err)
		assert.Equal(t, -1, e.PE, tc.op)
		assert.Equal(t, tc.op, e.Op)
		assert.ErrorIs(t, err, shmem.ErrNotInitialized)
	}
}
