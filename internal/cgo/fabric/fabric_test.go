package fabric

import (
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	assert.Contains(t, Providers(), "tcp", "fi_getinfo offers tcp on every Linux host")
	e, err := Open("tcp;ofi_rxm")
	require.NoError(t, err, "libfabric with tcp;ofi_rxm is installed (libfabric1): it must open")
	defer e.Close()
	assert.Equal(t, "tcp;ofi_rxm", e.Attr.Provider)
	assert.True(t, e.Attr.Atomic, "ofi_rxm implements atomics")
	name, err := e.Name()
	require.NoError(t, err)
	assert.NotEmpty(t, name)
	assert.True(t, e.QueryAtomic(KindFetch, Uint64, OpSum))

	_, err = Open("bogus")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoProvider))
	assert.Contains(t, errors.FlattenHints(err), "tcp")
}

// TestProgressHandOff: the progress thread drives an idle endpoint
// (fi_cq_sread rounds) and keeps doing so under plain polls; a thread
// polling with claims keeps it off (taken out of its blocking read once);
// after Release it drives the endpoint again; a claim not released lapses
// after the linger time; with SetLinger(0) claims are ignored. Each step
// waits for the counters to show what happened (a guard, reached only if
// it never does, fails the test), never for a span of time.
func TestProgressHandOff(t *testing.T) {
	e, err := Open("tcp;ofi_rxm")
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.StartProgress())
	var buf [16]Completion
	const guard = 30 * time.Second
	stats := func() (uint64, uint64) { d, r, _ := e.ProgressStats(); return d, r }
	// pollUntil polls (poll may be nil) until cond holds; false at the guard.
	pollUntil := func(poll func([]Completion) int, cond func() bool) bool {
		for end := time.Now().Add(guard); time.Now().Before(end); {
			if cond() {
				return true
			}
			if poll != nil {
				poll(buf[:])
			} else {
				time.Sleep(100 * time.Microsecond)
			}
		}
		return cond()
	}
	roundsPast := func(r0 uint64) func() bool {
		return func() bool { _, r := stats(); return r >= r0+5 }
	}

	d0, r0 := stats()
	require.True(t, pollUntil(nil, roundsPast(r0)), "idle: it drives the provider")
	d1, r1 := stats()
	assert.Equal(t, d0, d1, "nobody claims: the progress thread never stays off")

	require.True(t, pollUntil(e.Poll, roundsPast(r1)), "plain polls: it keeps driving the provider")
	d2, _ := stats()
	assert.Equal(t, d1, d2, "plain polls do not claim the endpoint")

	// A long linger keeps the claim across the poller's preemptions on a
	// loaded machine (the default is 1 ms).
	e.SetLinger(500 * time.Millisecond)
	require.True(t, pollUntil(e.PollClaim, func() bool { d, _ := stats(); return d > d2 }), "claimed: the progress thread stays off")
	_, r3a := stats()
	for range 10000 {
		e.PollClaim(buf[:])
	}
	d3, r3, k3 := e.ProgressStats()
	t.Logf("claiming polls: %d rounds, %d deferrals, %d kicks", r3-r3a, d3-d2, k3)
	assert.LessOrEqual(t, r3-r3a, uint64(5), "claimed: it does not drive the provider")
	assert.GreaterOrEqual(t, k3, uint64(1), "the first claim took it out of fi_cq_sread")

	assert.True(t, e.Claimed())
	e.Release()
	assert.False(t, e.Claimed())
	require.True(t, pollUntil(nil, roundsPast(r3)), "released: it drives the endpoint again")
	_, r4 := stats()

	e.SetLinger(5 * time.Millisecond)
	e.PollClaim(buf[:]) // never released
	require.True(t, pollUntil(nil, roundsPast(r4)), "an unreleased claim lapses after the linger time")
	assert.True(t, e.Claimed(), "the lapsed claim still counts as held")

	e.SetLinger(0)
	d6, r6 := stats()
	require.True(t, pollUntil(e.PollClaim, roundsPast(r6)), "linger 0: it keeps driving the provider")
	d7, _ := stats()
	assert.Equal(t, d6, d7, "linger 0: claims are ignored")
	e.Release()
}
