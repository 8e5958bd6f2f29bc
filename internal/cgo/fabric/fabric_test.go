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
// (fi_cq_sread rounds of 1 ms); an application thread polling in a loop
// claims it (the progress thread stays off, taken out of its blocking read
// once); polls far apart (a wait that sleeps between looks) do not; with
// SetLinger(0) it never stays off.
func TestProgressHandOff(t *testing.T) {
	e, err := Open("tcp;ofi_rxm")
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.StartProgress())
	var buf [16]Completion
	const span = 60 * time.Millisecond

	d0, r0, _ := e.ProgressStats()
	time.Sleep(span)
	d1, r1, _ := e.ProgressStats()
	idle := r1 - r0
	assert.Equal(t, d0, d1, "nobody polls: the progress thread never stays off")
	assert.GreaterOrEqual(t, idle, uint64(5), "idle: it drives the provider (1 ms rounds; loose for loaded CI machines)")

	// A long linger keeps the claim across the poller's preemptions on a
	// loaded machine (the default is 1 ms).
	e.SetLinger(20 * time.Millisecond)
	end := time.Now().Add(span)
	polls := 0
	for time.Now().Before(end) {
		e.Poll(buf[:])
		polls++
	}
	d2, r2, k2 := e.ProgressStats()
	t.Logf("idle %v: %d rounds; %d polls in a loop for %v: %d rounds, %d deferrals, %d kicks", span, idle, polls, span, r2-r1, d2-d1, k2)
	assert.Greater(t, d2, d1, "polled in a loop: the progress thread stays off")
	assert.Less(t, (r2-r1)*2, idle, "and drives the provider far less than when idle")
	assert.GreaterOrEqual(t, k2, uint64(1), "the first loop poll took it out of fi_cq_sread")

	time.Sleep(25 * time.Millisecond) // past the linger time
	d3, r3, _ := e.ProgressStats()
	for i := 0; i < 20; i++ {
		time.Sleep(3 * time.Millisecond)
		e.Poll(buf[:])
	}
	d4, r4, _ := e.ProgressStats()
	assert.LessOrEqual(t, d4-d3, uint64(1), "polls 3 ms apart do not claim the endpoint")
	assert.GreaterOrEqual(t, r4-r3, uint64(5), "the progress thread kept driving it")

	e.SetLinger(0)
	time.Sleep(5 * time.Millisecond)
	d5, r5, _ := e.ProgressStats()
	for end := time.Now().Add(span); time.Now().Before(end); {
		e.Poll(buf[:])
	}
	d6, r6, _ := e.ProgressStats()
	assert.Equal(t, d5, d6, "linger 0: the progress thread never stays off")
	assert.GreaterOrEqual(t, r6-r5, uint64(5), "linger 0: it keeps driving the provider")
}
