package shmem_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// TestWaitUntilDrivesOFIProgress: over ofi (tcp;ofi_rxm, manual progress)
// a word set through the provider lands only when this process calls into
// it. A 1-PE job's atomic set to itself goes through the provider; the
// WaitUntil spinning on the word drives the endpoint itself (the progress
// thread stays off meanwhile: its deferrals count up) and returns, handing
// the endpoint back to the progress thread.
func TestWaitUntilDrivesOFIProgress(t *testing.T) {
	t.Setenv("GOSHMEM_TRANSPORT", "ofi")
	start(t, shmem.WithTimeout(20*time.Second))
	flag := alloc[uint64](t, 1)
	d0, _, _, ok := shmem.OFIProgressStats()
	require.True(t, ok, "GOSHMEM_TRANSPORT=ofi")

	set := make(chan error, 1)
	go func() {
		// Set the flag once the wait below holds the endpoint (spins on
		// it) and the progress thread has stayed off it at least once, or
		// after a bound: the assertions then say what went wrong. (On a
		// loaded machine the progress thread may not run at all during a
		// short claim: waiting for its deferral keeps the test from racing
		// the scheduler.)
		deferred := func() bool { d, _, _, _ := shmem.OFIProgressStats(); return d > d0 }
		for i := 0; i < 5000 && !(shmem.OFISpinning() && deferred()); i++ {
			time.Sleep(time.Millisecond)
		}
		set <- shmem.AtomicSet(flag, 0, 7, 0)
	}()
	require.NoError(t, shmem.WaitUntil(flag, 0, shmem.CmpEQ, 7))
	require.NoError(t, <-set)
	d1, r1, _, _ := shmem.OFIProgressStats()
	assert.Greater(t, d1, d0, "the waiting thread drove the endpoint (the progress thread stayed off)")
	assert.False(t, shmem.OFISpinning(), "WaitUntil released its claim when it returned")
	// The wait released its claim: the progress thread drives the endpoint
	// again while this PE is away from goshmem: its rounds count up.
	for i := 0; ; i++ {
		_, r2, _, _ := shmem.OFIProgressStats()
		if r2-r1 >= 5 {
			break
		}
		require.Less(t, i, 10000, "the progress thread never took the endpoint back (%d rounds)", r2-r1)
		time.Sleep(time.Millisecond)
	}

	// The barrier's wait (WaitGE) drives it too; Quiet completes the set.
	require.NoError(t, shmem.AtomicSet(flag, 0, 9, 0))
	require.NoError(t, shmem.Quiet())
	assert.Equal(t, uint64(9), flag.Local()[0])
	require.NoError(t, shmem.BarrierAll())
	assert.False(t, shmem.OFISpinning(), "the barrier's wait released its claim")
	usable(t)
}
