package shmem_test

import (
	"errors"
	"testing"

	cerrors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// TestOutOfStep: once the world team is out of step, every collective on it
// fails at once with ErrNotSymmetric quoting the first failure, teams split
// before keep working, and Finalize still finalizes and reports it.
func TestOutOfStep(t *testing.T) {
	require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
	a := alloc[int64](t, 4)
	b := alloc[int64](t, 4)
	tm, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1)
	require.NoError(t, err)

	shmem.BreakWorld(errors.New("injected failure"))
	calls := map[string]func() error{
		"BarrierAll":        shmem.BarrierAll,
		"SyncAll":           shmem.SyncAll,
		"TeamWorld.Barrier": shmem.TeamWorld.Barrier,
		"TeamWorld.Sync":    shmem.TeamWorld.Sync,
		"Free":              a.Free,
		"Alloc":             func() error { _, err := shmem.Alloc[int32](8); return err },
		"TeamSplitStrided":  func() error { _, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, 1); return err },
		"Reduce":            func() error { return shmem.Reduce(shmem.TeamWorld, shmem.OpSum, a, b, 4) },
		"Broadcast":         func() error { return shmem.Broadcast(shmem.TeamWorld, a, b, 4, 0) },
		"FCollect":          func() error { return shmem.FCollect(shmem.TeamWorld, a, b, 4) },
		"AllToAll":          func() error { return shmem.AllToAll(shmem.TeamWorld, a, b, 4) },
		"Barrier again":     shmem.BarrierAll,
	}
	for name, call := range calls {
		err := call()
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, shmem.ErrNotSymmetric), "%s: %v", name, err)
		assert.Contains(t, err.Error(), "PE 0: ", name)
		assert.Contains(t, err.Error(), "team world is out of step since sync #", name)
		assert.Contains(t, err.Error(), "injected failure", name)
		assert.Contains(t, cerrors.FlattenHints(err), "Finalize", name)
	}
	assert.Equal(t, 4, a.Len(), "the failed Free freed nothing")
	assert.NotNil(t, a.Local())

	// A team split before has its own psync words and epochs.
	require.NoError(t, tm.Barrier())
	require.NoError(t, shmem.Reduce(tm, shmem.OpSum, a, b, 4))
	require.NoError(t, tm.Destroy())

	err = shmem.Finalize()
	assert.True(t, errors.Is(err, shmem.ErrNotSymmetric), "Finalize reports it: %v", err)
	assert.Contains(t, err.Error(), "injected failure")
	assert.Equal(t, -1, shmem.MyPE(), "finalized all the same")

	// A new Init starts in step.
	start(t)
	usable(t)
}
