package ofi

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
)

// pollLoop calls poll in a loop on a goroutine of its own (as a wait loop
// does) until the returned function is called.
func pollLoop(poll func()) (stop func()) {
	var done atomic.Bool
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for !done.Load() {
			poll()
		}
	}()
	return func() { done.Store(true); <-ended }
}

// TestWaiterDrivesProgress: with tcp;ofi_rxm (manual progress) a put is
// delivered, and its delivery-complete quiet returns, only when the target
// calls into the provider. With the target's progress thread stopped, a
// thread of the target polling in a loop (what shmem's wait loops do) is
// enough; without it the quiet cannot complete.
func TestWaiterDrivesProgress(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a, b := trs[0], trs[1]
	b.ep.StopProgress()
	q := quiet.NewQueue("ctx", a.Progress)
	s := quiet.NewScope("PE-wide")
	s.Add(q)
	short := spin.Policy{Spins: 64, Yields: 64, MaxSleep: 50 * time.Microsecond, Timeout: 300 * time.Millisecond}

	require.NoError(t, a.Put(q, 1, 64, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	err := s.Quiet(short, nil)
	require.Error(t, err, "nobody drives PE 1's provider: the put cannot be delivery-complete")
	assert.ErrorIs(t, err, errs.ErrTimeout)

	stop := pollLoop(b.Progress)
	defer stop()
	require.NoError(t, s.Quiet(a.testPolicy3s(), nil), "PE 1 polling in a loop lands the put")
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, regions[1][64:72])
	for i := byte(0); i < 50; i++ {
		require.NoError(t, a.Put(q, 1, 64, []byte{i}))
		require.NoError(t, s.Quiet(a.testPolicy3s(), nil))
		require.Equal(t, i, regions[1][64])
	}
}

// TestProgressTakeover: while a thread of PE 1 spins in a wait
// (SpinProgress) its progress thread stays off the endpoint and the
// spinning thread lands PE 0's puts; once the wait ends (EndSpin) the
// progress thread drives the endpoint again at once, and PE 0's puts keep
// completing although PE 1's application never calls in again. A wait
// that never ends its claim (its thread preempted) is covered by the
// linger time.
func TestProgressTakeover(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a, b := trs[0], trs[1]
	qa, err := a.NewQueue("ctx")
	require.NoError(t, err)
	s := quiet.NewScope("PE-wide")
	s.Add(qa)
	// The policy's timeout is a guard against a hang, not a measurement.
	putQuiet := func(first, last byte) {
		for i := first; i <= last; i++ {
			require.NoError(t, a.Put(qa, 1, 128, []byte{i}))
			require.NoError(t, s.Quiet(a.testPolicy(), nil))
		}
		assert.Equal(t, last, regions[1][128])
	}
	// eventually waits for cond, failing after a guard that only a hang
	// reaches.
	eventually := func(cond func() bool, msg string) {
		require.Eventually(t, cond, 30*time.Second, 100*time.Microsecond, msg)
	}

	d0, _, _ := b.ProgressStats()
	stop := pollLoop(b.SpinProgress)
	putQuiet(1, 20)
	eventually(func() bool { d, _, _ := b.ProgressStats(); return d > d0 },
		"PE 1's progress thread stayed off (deferred) while its wait spun")
	stop()
	b.EndSpin()

	// No thread of PE 1 calls in any more, so only its progress thread can
	// land these puts (TestWaiterDrivesProgress: otherwise their quiet
	// cannot complete): their completing is the takeover.
	putQuiet(21, 40)
	assert.False(t, b.Spinning())

	// Claimed and never released: the claim lapses after the linger time,
	// and the progress thread lands the put although the claim stands.
	b.ep.SetLinger(20 * time.Millisecond)
	b.SpinProgress()
	putQuiet(41, 41)
	assert.True(t, b.Spinning(), "the claim was never released")
	b.EndSpin()
}
