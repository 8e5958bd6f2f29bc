package ofi

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/quiet"
)

// pollLoop calls tr.Progress in a loop on a goroutine of its own (as a
// wait loop does) until the returned function is called.
func pollLoop(tr *Transport) (stop func()) {
	var done atomic.Bool
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for !done.Load() {
			tr.Progress()
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

	stop := pollLoop(b)
	defer stop()
	require.NoError(t, s.Quiet(a.testPolicy3s(), nil), "PE 1 polling in a loop lands the put")
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, regions[1][64:72])
	for i := byte(0); i < 50; i++ {
		require.NoError(t, a.Put(q, 1, 64, []byte{i}))
		require.NoError(t, s.Quiet(a.testPolicy3s(), nil))
		require.Equal(t, i, regions[1][64])
	}
}

// TestProgressTakeover: while a thread of PE 1 polls in a loop its
// progress thread stays off the endpoint; once the polls stop, the progress
// thread takes over (within the linger time) and PE 0's puts to PE 1 keep
// completing although PE 1's application never calls in again.
func TestProgressTakeover(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a, b := trs[0], trs[1]
	q := quiet.NewQueue("ctx", a.Progress)
	s := quiet.NewScope("PE-wide")
	s.Add(q)

	d0, _, _ := b.ep.ProgressStats()
	stop := pollLoop(b)
	for i := byte(1); i <= 20; i++ {
		require.NoError(t, a.Put(q, 1, 128, []byte{i}))
		require.NoError(t, s.Quiet(a.testPolicy3s(), nil))
	}
	time.Sleep(10 * time.Millisecond)
	stop()
	d1, r1, _ := b.ep.ProgressStats()
	assert.Greater(t, d1, d0, "PE 1's progress thread stayed off while its application polled")
	assert.Equal(t, byte(20), regions[1][128])

	t0 := time.Now()
	for i := byte(21); i <= 40; i++ {
		require.NoError(t, a.Put(q, 1, 128, []byte{i}))
		require.NoError(t, s.Quiet(a.testPolicy3s(), nil))
	}
	el := time.Since(t0)
	_, r2, _ := b.ep.ProgressStats()
	assert.Equal(t, byte(40), regions[1][128])
	assert.Greater(t, r2, r1, "PE 1's progress thread took over")
	assert.Less(t, el, 2*time.Second, "20 puts with quiet once the progress thread took over")
	t.Logf("20 put+quiet served by the target's progress thread: %v", el)
}
