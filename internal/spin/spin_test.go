package spin

import (
	"context"
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

// clock is a fake time source for until: every reading advances it by
// step, so a test decides how much time each look at the clock takes and
// checks which look ends a wait, never how long the wait took.
type clock struct {
	t    time.Time
	step time.Duration
}

func (c *clock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestUntil(t *testing.T) {
	quick := Policy{Spins: 8, Yields: 4, MaxSleep: time.Microsecond}
	tests := []struct {
		name      string
		policy    Policy
		step      time.Duration // the fake clock's advance per reading
		doneAfter int32         // done() turns true on this call (0 = never)
		check     func(calls *atomic.Int32) func() error
		wantOK    bool
		wantErr   bool
		minCalls  int32
		maxCalls  int32
		// minElapsed: the fake time that passed before the wait ended
		minElapsed time.Duration
	}{
		{name: "done at once", policy: quick, doneAfter: 1, wantOK: true, minCalls: 1, maxCalls: 1},
		{name: "done at once, zero policy", policy: Policy{}, doneAfter: 1, wantOK: true, minCalls: 1, maxCalls: 1},
		{name: "done while spinning", policy: quick, doneAfter: 5, wantOK: true, minCalls: 5, maxCalls: 5},
		{name: "done while yielding", policy: quick, doneAfter: 11, wantOK: true, minCalls: 11, maxCalls: 11},
		{name: "done while sleeping", policy: quick, doneAfter: 40, wantOK: true, minCalls: 40, maxCalls: 40},
		{
			name: "times out once the clock passes the timeout", step: time.Millisecond,
			policy: Policy{Spins: 8, Yields: 4, MaxSleep: time.Microsecond, Timeout: 20 * time.Millisecond},
			wantOK: false, minElapsed: 20 * time.Millisecond,
		},
		{
			name: "a clock that does not pass the timeout never ends the wait", step: 0,
			policy:    Policy{Spins: 8, Yields: 4, MaxSleep: time.Microsecond, Timeout: time.Nanosecond},
			doneAfter: 500, wantOK: true, minCalls: 500, maxCalls: 500,
		},
		{
			name: "done on the last look at the deadline", step: 100 * time.Microsecond,
			policy:    Policy{Spins: 1, Timeout: time.Millisecond, MaxSleep: time.Microsecond},
			doneAfter: -1, wantOK: true, minElapsed: time.Millisecond,
		},
		{
			name: "check error ends the wait", policy: quick, step: 400 * time.Microsecond,
			check: func(calls *atomic.Int32) func() error {
				return func() error {
					if calls.Add(1) == 3 {
						return errors.New("peer died")
					}
					return nil
				}
			},
			wantErr: true, minElapsed: 3 * time.Millisecond,
		},
		{
			name: "check nil keeps waiting", policy: quick, doneAfter: 200, step: time.Millisecond,
			check:  func(calls *atomic.Int32) func() error { return func() error { calls.Add(1); return nil } },
			wantOK: true, minCalls: 200, maxCalls: 200,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0), step: tc.step}
			t0 := c.t
			var calls, checks atomic.Int32
			done := func() bool {
				n := calls.Add(1)
				if tc.doneAfter == -1 {
					// True only once the deadline has passed: the final look.
					return c.t.Sub(t0) > tc.policy.Timeout
				}
				return tc.doneAfter > 0 && n >= tc.doneAfter
			}
			var check func() error
			if tc.check != nil {
				check = tc.check(&checks)
			}
			ok, err := tc.policy.until(c.now, done, check)
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
			assert.GreaterOrEqual(t, c.t.Sub(t0), tc.minElapsed, "the wait ended before the clock said so")
		})
	}
}

// TestUntilChecksRarely: check is rate-limited to once per millisecond of
// the clock, however often done runs.
func TestUntilChecksRarely(t *testing.T) {
	var checks, polls atomic.Int32
	c := &clock{t: time.Unix(1000, 0), step: 100 * time.Microsecond}
	var at []time.Time
	p := Policy{Spins: 1, Yields: 0, MaxSleep: time.Microsecond, Timeout: 50 * time.Millisecond}
	ok, err := p.until(c.now, func() bool { polls.Add(1); return false }, func() error {
		checks.Add(1)
		at = append(at, c.t)
		return nil
	})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.LessOrEqual(t, checks.Load(), int32(50), "at most one check per millisecond of 50")
	assert.Positive(t, checks.Load())
	assert.Greater(t, polls.Load(), checks.Load(), "done is polled more often than check")
	for i := 1; i < len(at); i++ {
		assert.Greater(t, at[i].Sub(at[i-1]), time.Millisecond, "checks %d and %d", i-1, i)
	}
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
// look, here 100 us of the clock each) still ends at the timeout, after a
// few hundred looks, not after all 65536 spins.
func TestUntilDeadlineWhileSpinning(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	p := Policy{Spins: 1 << 16, Yields: 16, MaxSleep: 50 * time.Microsecond, Timeout: 30 * time.Millisecond}
	var looks int
	ok, err := p.until(c.now, func() bool { looks++; c.t = c.t.Add(100 * time.Microsecond); return false }, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	// 30 ms of 100 us looks is 300; the clock is read every 256 spins.
	assert.LessOrEqual(t, looks, 300+256+1, "the deadline is checked while spinning")
}

// TestUntilStops checks that a stopped Halt or a done Ctx ends a wait with
// their error, in the spin phase and in the sleep phase, and that a wait
// whose condition holds still succeeds.
func TestUntilStops(t *testing.T) {
	stopErr := errors.New("stopped")
	for _, spins := range []int{1 << 20, 0} {
		t.Run("halt", func(t *testing.T) {
			var h Halt
			var calls atomic.Int32
			p := Policy{Spins: spins, Yields: 4, MaxSleep: time.Microsecond, Halt: &h}
			ok, err := p.Until(func() bool {
				if calls.Add(1) == 100 {
					h.Stop(stopErr)
				}
				return false
			}, nil)
			assert.False(t, ok)
			require.ErrorIs(t, err, stopErr)
			assert.Equal(t, int32(100), calls.Load())
			h.Clear()
			require.NoError(t, h.Err())
			ok, err = p.Until(func() bool { return true }, nil)
			assert.True(t, ok)
			assert.NoError(t, err)
		})
		t.Run("ctx", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var calls atomic.Int32
			p := Policy{Spins: spins, Yields: 4, MaxSleep: time.Microsecond, Ctx: ctx}
			ok, err := p.Until(func() bool {
				if calls.Add(1) == 100 {
					cancel()
				}
				return false
			}, nil)
			assert.False(t, ok)
			require.ErrorIs(t, err, context.Canceled)
			// The context is polled every ctxLooks looks of the spin phase.
			assert.LessOrEqual(t, calls.Load(), int32(100+ctxLooks))
		})
	}
	t.Run("halted but done", func(t *testing.T) {
		var h Halt
		h.Stop(stopErr)
		h.Stop(errors.New("second"))
		require.ErrorIs(t, h.Err(), stopErr)
		ok, err := Policy{Halt: &h}.Until(func() bool { return true }, nil)
		assert.True(t, ok)
		assert.NoError(t, err)
	})
}

// TestUntilNoAlloc checks that a policy with a context that is never
// done allocates nothing while it waits.
func TestUntilNoAlloc(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var h Halt
	p := Policy{Spins: 1000, Yields: 0, MaxSleep: time.Microsecond, Halt: &h, Ctx: ctx}
	_ = ctx.Done()
	n := 0
	allocs := testing.AllocsPerRun(10, func() {
		n = 0
		_, _ = p.Until(func() bool { n++; return n == 900 }, nil)
	})
	assert.Zero(t, allocs)
}
