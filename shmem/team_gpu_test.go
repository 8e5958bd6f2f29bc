package shmem_test

import (
	"os"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/testutil"
	"github.com/goshmem/goshmem/shmem"
)

const teamGPUCaseEnv = "GOSHMEM_TEST_TEAM_GPU"

// TestTeamDestroyDeviceRowFake: after Team.Destroy the team's row of the
// device team table is unused again, so a kernel that still names the
// team's device id traps ("team not initialized, or this PE is not a
// member") instead of running a barrier over the destroyed team's members
// on a slot the next team may own. On the fake CUDA driver, in a process
// of its own.
func TestTeamDestroyDeviceRowFake(t *testing.T) {
	runFakeGPUCase(t, teamGPUCaseEnv, "TestTeamDestroyDeviceRowFakeCase")
}

func TestTeamDestroyDeviceRowFakeCase(t *testing.T) {
	inFakeGPUCase(t, teamGPUCaseEnv, "TestTeamDestroyDeviceRowFake")
	testutil.FakeLib(t)
	start(t)
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	id := tm.DeviceID()
	require.GreaterOrEqual(t, id, 2, "a split team's device id is its slot")
	require.NoError(t, shmem.DeviceBarrier(id), "a barrier on a live team")
	require.NoError(t, tm.Destroy())
	assert.Equal(t, -1, tm.DeviceID())
	err = shmem.DeviceBarrier(id)
	if assert.Error(t, err, "a device barrier on destroyed team %d ran over the stale row", id) {
		assert.Contains(t, err.Error(), "team not initialized, or this PE is not a member")
	}
}

const callerCtxCaseEnv = "GOSHMEM_TEST_CALLER_CTX"

// TestCallerContextKeptFake: a context another library made current on the
// thread that calls goshmem (device 1) stays current there across Init
// (WithDevice(0): goshmem uses another GPU), AllocDevice, Put and Get on a
// GPU array, a stream call, a team split that publishes the team to the
// GPU, its Destroy, and Finalize. On the fake CUDA driver, in a process
// of its own.
func TestCallerContextKeptFake(t *testing.T) {
	runFakeGPUCase(t, callerCtxCaseEnv, "TestCallerContextKeptFakeCase", "FAKECUDA_DEVICES=2")
}

func TestCallerContextKeptFakeCase(t *testing.T) {
	inFakeGPUCase(t, callerCtxCaseEnv, "TestCallerContextKeptFake")
	testutil.FakeLib(t)
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	require.NoError(t, cuda.LoadLibrary(os.Getenv("GOSHMEM_LIBCUDA")))
	mine, err := cuda.Device(1).RetainPrimary()
	require.NoError(t, err)
	defer func() { _ = mine.Release() }()
	require.NoError(t, mine.SetCurrent())
	kept := func(when string) {
		ok, err := mine.IsCurrent()
		require.NoError(t, err)
		assert.True(t, ok, "the caller's context is no longer current on its thread after %s", when)
		require.NoError(t, mine.SetCurrent()) // as it was, for the next step
	}
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap), shmem.WithDevice(0)))
	kept("Init")
	a, err := shmem.AllocDevice[uint64](16)
	require.NoError(t, err)
	kept("AllocDevice")
	require.NoError(t, shmem.Put(a, 0, []uint64{7, 8}, 0))
	kept("Put to a GPU array")
	got := make([]uint64, 2)
	require.NoError(t, shmem.Get(got, a, 0, 0))
	assert.Equal(t, []uint64{7, 8}, got)
	kept("Get from a GPU array")
	s, err := shmem.NewStream()
	require.NoError(t, err)
	require.NoError(t, shmem.BarrierAllOnStream(s))
	require.NoError(t, s.Synchronize())
	require.NoError(t, s.Destroy())
	kept("BarrierAllOnStream")
	require.NoError(t, a.Free())
	kept("Free")
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)
	require.GreaterOrEqual(t, tm.DeviceID(), 0)
	kept("TeamSplitStrided")
	require.NoError(t, tm.Destroy())
	kept("Team.Destroy")
	require.NoError(t, shmem.Finalize())
	kept("Finalize")
}
