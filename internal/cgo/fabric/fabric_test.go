package fabric

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"
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
// (fi_cq_sread rounds of 1 ms) and keeps doing so under plain polls; a
// thread polling with claims keeps it off (taken out of its blocking read
// once); Release hands the endpoint back at once; a claim not released
// lapses after the linger time; with SetLinger(0) claims are ignored.
func TestProgressHandOff(t *testing.T) {
	e, err := Open("tcp;ofi_rxm")
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.StartProgress())
	var buf [16]Completion
	const span = 60 * time.Millisecond
	loop := func(poll func([]Completion) int) int {
		n := 0
		for end := time.Now().Add(span); time.Now().Before(end); n++ {
			poll(buf[:])
		}
		return n
	}
	stats := func() (uint64, uint64) { d, r, _ := e.ProgressStats(); return d, r }

	d0, r0 := stats()
	time.Sleep(span)
	d1, r1 := stats()
	idle := r1 - r0
	assert.Equal(t, d0, d1, "nobody claims: the progress thread never stays off")
	assert.GreaterOrEqual(t, idle, uint64(5), "idle: it drives the provider (1 ms rounds; loose for loaded CI machines)")

	loop(e.Poll)
	d2, r2 := stats()
	assert.Equal(t, d1, d2, "plain polls do not claim the endpoint")
	assert.GreaterOrEqual(t, r2-r1, uint64(5), "plain polls: it keeps driving the provider")

	// A long linger keeps the claim across the poller's preemptions on a
	// loaded machine (the default is 1 ms).
	e.SetLinger(500 * time.Millisecond)
	polls := loop(e.PollClaim)
	d3, r3, k3 := e.ProgressStats()
	t.Logf("idle %v: %d rounds; %d claiming polls in %v: %d rounds, %d deferrals, %d kicks", span, idle, polls, span, r3-r2, d3-d2, k3)
	assert.Greater(t, d3, d2, "claimed: the progress thread stays off")
	assert.LessOrEqual(t, r3-r2, uint64(5), "and does not drive the provider")
	assert.GreaterOrEqual(t, k3, uint64(1), "the first claim took it out of fi_cq_sread")

	assert.True(t, e.Claimed())
	e.Release()
	assert.False(t, e.Claimed())
	time.Sleep(span)
	_, r4 := stats()
	assert.GreaterOrEqual(t, r4-r3, uint64(5), "released (well before the 500 ms linger): it drives the endpoint again")

	e.SetLinger(5 * time.Millisecond)
	e.PollClaim(buf[:]) // never released
	time.Sleep(span)
	_, r5 := stats()
	assert.GreaterOrEqual(t, r5-r4, uint64(5), "an unreleased claim lapses after the linger time")

	e.SetLinger(0)
	d6, r6 := stats()
	loop(e.PollClaim)
	d7, r7 := stats()
	assert.Equal(t, d6, d7, "linger 0: claims are ignored")
	assert.GreaterOrEqual(t, r7-r6, uint64(5), "linger 0: it keeps driving the provider")
	e.Release()
}
