package spin

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFor(t *testing.T) {
	tests := []struct {
		name             string
		pes, cpus        int
		wantSpins, wantY int
	}{
		{"one PE per core", 2, 2, 1 << 16, 1 << 12},
		{"fewer PEs than cores", 1, 16, 1 << 16, 1 << 12},
		{"oversubscribed", 8, 2, 64, 256},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := For(tc.pes, tc.cpus, 3*time.Second)
			assert.Equal(t, tc.wantSpins, p.Spins)
			assert.Equal(t, tc.wantY, p.Yields)
			assert.Equal(t, 50*time.Microsecond, p.MaxSleep)
			assert.Equal(t, 3*time.Second, p.Timeout)
		})
	}
}

func TestUntil(t *testing.T) {
	quick := Policy{Spins: 8, Yields: 4, MaxSleep: 100 * time.Microsecond}
	tests := []struct {
		name      string
		policy    Policy
		doneAfter int32 // done() turns true on this call (0 = never)
		check     func(calls *atomic.Int32) func() error
		wantOK    bool
		wantErr   bool
		minCalls  int32
		maxCalls  int32
		minTime   time.Duration
		maxTime   time.Duration
	}{
		{name: "done at once", policy: quick, doneAfter: 1, wantOK: true, minCalls: 1, maxCalls: 1},
		{name: "done at once, zero policy", policy: Policy{}, doneAfter: 1, wantOK: true, minCalls: 1, maxCalls: 1},
		{name: "done while spinning", policy: quick, doneAfter: 5, wantOK: true, minCalls: 5, maxCalls: 5},
		{name: "done while yielding", policy: quick, doneAfter: 11, wantOK: true, minCalls: 11, maxCalls: 11},
		{name: "done while sleeping", policy: quick, doneAfter: 40, wantOK: true, minCalls: 40, maxCalls: 40},
		{
			name: "times out", policy: Policy{Spins: 8, Yields: 4, MaxSleep: 100 * time.Microsecond, Timeout: 20 * time.Millisecond},
			wantOK: false, minTime: 20 * time.Millisecond, maxTime: 2 * time.Second,
		},
		{
			name: "done on the last look at the deadline", policy: Policy{Spins: 1, Timeout: time.Millisecond, MaxSleep: 2 * time.Millisecond},
			doneAfter: -1, wantOK: true,
		},
		{
			name: "check error ends the wait", policy: quick,
			check: func(calls *atomic.Int32) func() error {
				return func() error {
					if calls.Add(1) == 3 {
						return errors.New("peer died")
					}
					return nil
				}
			},
			wantErr: true, minTime: 2 * time.Millisecond, maxTime: 2 * time.Second,
		},
		{
			name: "check nil keeps waiting", policy: quick, doneAfter: 200,
			check:  func(calls *atomic.Int32) func() error { return func() error { calls.Add(1); return nil } },
			wantOK: true, minCalls: 200, maxCalls: 200,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls, checks atomic.Int32
			var deadline time.Time
			done := func() bool {
				n := calls.Add(1)
				if tc.doneAfter == -1 {
					// True only once the deadline has passed: the final look.
					if deadline.IsZero() {
						deadline = time.Now().Add(tc.policy.Timeout)
					}
					return time.Now().After(deadline)
				}
				return tc.doneAfter > 0 && n >= tc.doneAfter
			}
			var check func() error
			if tc.check != nil {
				check = tc.check(&checks)
			}
			start := time.Now()
			ok, err := tc.policy.Until(done, check)
			el := time.Since(start)
			if tc.wantErr {
				require.Error(t, err)
				assert.EqualError(t, err, "peer died")
				assert.False(t, ok)
				assert.Equal(t, int32(3), checks.Load())
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.wantOK, ok)
			}
			if tc.minCalls > 0 {
				assert.GreaterOrEqual(t, calls.Load(), tc.minCalls)
			}
			if tc.maxCalls > 0 {
				assert.LessOrEqual(t, calls.Load(), tc.maxCalls)
			}
			assert.GreaterOrEqual(t, el, tc.minTime)
			if tc.maxTime > 0 {
				assert.Less(t, el, tc.maxTime)
			}
		})
	}
}

// TestUntilChecksRarely: check is rate-limited to about once a millisecond,
// so a wait of ~50 ms calls it at most ~50 times however often done runs.
func TestUntilChecksRarely(t *testing.T) {
	var checks, polls atomic.Int32
	p := Policy{Spins: 1, Yields: 0, MaxSleep: 10 * time.Microsecond, Timeout: 50 * time.Millisecond}
	ok, err := p.Until(func() bool { polls.Add(1); return false }, func() error { checks.Add(1); return nil })
	require.NoError(t, err)
	assert.False(t, ok)
	assert.LessOrEqual(t, checks.Load(), int32(55))
	assert.Positive(t, checks.Load())
	assert.Greater(t, polls.Load(), checks.Load(), "done is polled more often than check")
}

// TestUntilOtherGoroutine: the usual use, a flag set by another goroutine.
func TestUntilOtherGoroutine(t *testing.T) {
	var flag atomic.Bool
	go func() {
		time.Sleep(5 * time.Millisecond)
		flag.Store(true)
	}()
	p := For(8, 2, time.Second)
	ok, err := p.Until(flag.Load, nil)
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestYield(t *testing.T) {
	for range 100 {
		Yield()
	}
}

// TestUntilDeadlineWhileSpinning: a slow done (an ofi poll and a yield per
// look) still ends at the timeout, not after all the spins.
func TestUntilDeadlineWhileSpinning(t *testing.T) {
	p := Policy{Spins: 1 << 16, Yields: 16, MaxSleep: 50 * time.Microsecond, Timeout: 30 * time.Millisecond}
	t0 := time.Now()
	ok, err := p.Until(func() bool { time.Sleep(100 * time.Microsecond); return false }, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Less(t, time.Since(t0), 2*time.Second, "65536 spins of >= 100 us would take >= 6.5 s")
}
