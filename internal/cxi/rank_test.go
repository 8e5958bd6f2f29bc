package cxi

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/errs"
)

func TestMain(m *testing.M) {
	os.Setenv("FI_SOCKETS_PE_WAITTIME", "0")
	os.Exit(m.Run())
}

// withRanks runs fn on n in-process ranks (each its own endpoint, region
// and monitor), then closes them after a bootstrap barrier.
func withRanks(t *testing.T, n int, cfg Config, fn func(r *Rank, b bootstrap.Bootstrap) error) []Stats {
	t.Helper()
	stats := make([]Stats, n)
	err := local.Run(n, func(b bootstrap.Bootstrap) error {
		r, err := NewRank(b.Rank(), n, b.Allgather, cfg)
		if err != nil {
			return err
		}
		defer r.Close()
		if err := r.Start(); err != nil {
			return err
		}
		if err := fn(r, b); err != nil {
			return err
		}
		stats[b.Rank()] = r.Stats()
		if err := r.Err(); err != nil {
			return err
		}
		return b.Barrier() // nobody's region goes away while a peer writes
	})
	require.NoError(t, err)
	return stats
}

// barrierLoop checks the barrier property: after barrier i every rank has
// arrived at i (arrive[q] >= i for all q).
func barrierLoop(iters int, arrive []atomic.Int64) func(r *Rank, b bootstrap.Bootstrap) error {
	return func(r *Rank, _ bootstrap.Bootstrap) error {
		for i := 1; i <= iters; i++ {
			arrive[r.PE()].Store(int64(i))
			if err := r.Barrier(); err != nil {
				return errors.Wrapf(err, "barrier %d", i)
			}
			for q := range arrive {
				if got := arrive[q].Load(); got < int64(i) {
					return errors.Newf("PE %d passed barrier %d while PE %d had only arrived at %d", r.PE(), i, q, got)
				}
			}
		}
		return nil
	}
}

// settledBarrierLoop is barrierLoop, then a wait (up to 10 s) until the
// monitor has retired the instances of at least iters-2 barriers: it
// retires them after the barriers they serve returned, so counts read at
// once can lag the barriers (a fresh-clone CI run read 97 against 98).
func settledBarrierLoop(n, iters int, arrive []atomic.Int64) func(r *Rank, b bootstrap.Bootstrap) error {
	loop := barrierLoop(iters, arrive)
	return func(r *Rank, b bootstrap.Bootstrap) error {
		if err := loop(r, b); err != nil {
			return err
		}
		for end := time.Now().Add(10 * time.Second); n > 1 && time.Now().Before(end); time.Sleep(time.Millisecond) {
			if st := r.Stats(); st.Retired+st.Fallbacks >= uint64(iters-2) {
				break
			}
		}
		return nil
	}
}

func TestBarrierDeferredWork(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("P=%d", n), func(t *testing.T) {
			arrive := make([]atomic.Int64, n)
			iters := 100
			if n > 2 {
				iters = 40 // sockets' progress threads share 2 cores here
			}
			stats := withRanks(t, n, Config{Engine: EngineFabric, Provider: "sockets", Timeout: 20 * time.Second},
				settledBarrierLoop(n, iters, arrive))
			r := Rounds(n)
			for pe, st := range stats {
				assert.True(t, st.Deferred, "sockets runs FI_QUEUE_WORK")
				assert.Equal(t, "fabric:sockets", st.Engine)
				assert.LessOrEqual(t, st.BarrierMaxArmed, 2*r, "PE %d: at most 2R records armed", pe)
				assert.LessOrEqual(t, st.MaxArmed, Slingshot11.DWQEntries)
				assert.Zero(t, st.CounterResets, "PE %d: %d instances fit below CounterMax: re-arms raise thresholds, no fi_cntr_set", pe, iters)
				if n > 1 {
					assert.Equal(t, 2*r, st.BarrierMaxArmed, "PE %d: both slots armed (stage-ahead)", pe)
					assert.GreaterOrEqual(t, st.Forwarded, st.Retired, "PE %d: each retired instance was triggered through its counter", pe)
					assert.GreaterOrEqual(t, st.Retired+st.Fallbacks, uint64(iters-2), "PE %d", pe)
				}
			}
		})
	}
}

// Monitor lag: every re-arm is delayed past the next trigger, so instances
// find their slot unarmed and the host fallback completes them with the
// same writes to the same flags.
func TestFallbackUnderMonitorLag(t *testing.T) {
	const n, iters = 3, 12
	arrive := make([]atomic.Int64, n)
	stats := withRanks(t, n, Config{Engine: EngineFabric, Provider: "sockets", RearmLag: 200 * time.Millisecond,
		ReadySpins: 1, Timeout: 20 * time.Second}, barrierLoop(iters, arrive))
	for pe, st := range stats {
		assert.Greater(t, st.Fallbacks, uint64(0), "PE %d: lag forces the fallback", pe)
		assert.Greater(t, st.FallbackWrites, uint64(0), "PE %d", pe)
		assert.Greater(t, st.ReadyStalls, uint64(0), "PE %d: triggers saw unarmed slots", pe)
		assert.LessOrEqual(t, st.BarrierMaxArmed, 2*Rounds(n))
	}
}

// A DWQ budget of R records lets only one slot be armed at a time: re-arms
// wait (back-pressure), the other instances fall back, nothing overflows.
func TestBudgetBackPressure(t *testing.T) {
	const n, iters = 4, 15
	arrive := make([]atomic.Int64, n)
	b := Budget{DWQEntries: Rounds(n), CounterMax: 2047, CountersPerOp: 2}
	stats := withRanks(t, n, Config{Engine: EngineFabric, Provider: "sockets", Budget: b, Timeout: 20 * time.Second},
		barrierLoop(iters, arrive))
	for pe, st := range stats {
		assert.LessOrEqual(t, st.MaxArmed, b.DWQEntries, "PE %d: never above the budget", pe)
		assert.Greater(t, st.BudgetDeferrals, uint64(0), "PE %d", pe)
	}
}

// Re-arms raise the thresholds instead of resetting the counters; once the
// next instance's thresholds would pass CounterMax the slot resets both
// counters (fi_cntr_set) and starts again from 0. CounterMax 3 with R = 1:
// per slot the instances run at thresholds 1, 2, 3, then a reset.
func TestRaisedThresholdsAndReset(t *testing.T) {
	const n, iters = 2, 40
	arrive := make([]atomic.Int64, n)
	b := Budget{DWQEntries: 256, CounterMax: 3, CountersPerOp: 2}
	stats := withRanks(t, n, Config{Engine: EngineFabric, Provider: "sockets", Budget: b, Timeout: 20 * time.Second},
		settledBarrierLoop(n, iters, arrive))
	for pe, st := range stats {
		require.GreaterOrEqual(t, st.Retired+st.Fallbacks, uint64(iters-2), "PE %d", pe)
		require.Greater(t, st.Retired, uint64(iters/2), "PE %d: most instances ran as deferred work", pe)
		// Per slot, arms 3k+1 (k >= 1) reset: about a third of all arms.
		assert.InDelta(t, float64(st.Arms-2)/3, float64(st.CounterResets), 2, "PE %d: %d arms, %d resets", pe, st.Arms, st.CounterResets)
	}
}

func TestBudgetInvalid(t *testing.T) {
	_, err := NewRank(0, 4, nil, Config{Budget: Budget{DWQEntries: 8, CounterMax: 1, CountersPerOp: 2}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrInvalidArgument))
	assert.Contains(t, err.Error(), "CounterMax")
	_, err = NewRank(5, 4, nil, Config{})
	assert.True(t, errors.Is(err, errs.ErrPEOutOfRange))
	_, err = NewRank(0, 2, nil, Config{AM: true, Budget: Budget{DWQEntries: 8, CounterMax: 1, CountersPerOp: 2}})
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "active message")
}

// A stopped monitor ends every wait with ErrTimeout through the
// GPU-visible stop flag; a missing peer ends it at the deadline.
func TestStoppedMonitorTimesOut(t *testing.T) {
	// No deadline (Timeout 0): only the stop can end this barrier, which
	// PE 1 never enters. The stop comes while PE 0 waits, or before it
	// enters; either way the wait must end, saying why.
	withRanks(t, 2, Config{Engine: EngineFabric, Provider: "sockets"}, func(r *Rank, b bootstrap.Bootstrap) error {
		if r.PE() == 1 {
			return nil // never enters the barrier
		}
		go func() { time.Sleep(30 * time.Millisecond); r.Stop() }()
		err := r.Barrier()
		if !errors.Is(err, errs.ErrTimeout) {
			return errors.Newf("want ErrTimeout from a stopped monitor, got %v", err)
		}
		if !strings.Contains(err.Error(), "monitor stopped while waiting") {
			return errors.Newf("the wait ended for another reason than the stop: %v", err)
		}
		return nil
	})
	withRanks(t, 2, Config{Engine: EngineFabric, Provider: "sockets", Timeout: 50 * time.Millisecond}, func(r *Rank, b bootstrap.Bootstrap) error {
		if r.PE() == 1 {
			return nil
		}
		err := r.Barrier()
		if !errors.Is(err, errs.ErrTimeout) {
			return errors.Newf("want ErrTimeout at the deadline, got %v", err)
		}
		return nil
	})
}

// Triggers beyond what is armed are clamped and reported, never forwarded.
func TestTriggerOverrun(t *testing.T) {
	withRanks(t, 1, Config{Engine: EngineFabric, Provider: "sockets", AM: true}, func(r *Rank, _ bootstrap.Bootstrap) error {
		so := amSlotOff(0, 0)
		for word(r.base, so+slotArmed).Load() != 1 {
			time.Sleep(time.Millisecond)
		}
		r.ring(so, 0, 7) // an AM instance has one trigger
		deadline := time.Now().Add(5 * time.Second)
		for r.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		st := r.Stats()
		if st.Overruns == 0 || r.Err() == nil || !errors.Is(r.Err(), errs.ErrInvalidArgument) {
			return errors.Newf("overrun not reported: %+v, err %v", st, r.Err())
		}
		r.mu.Lock()
		r.monErr = nil // checked: do not fail withRanks
		r.mu.Unlock()
		return nil
	})
}

func amExchange(iters int) func(r *Rank, b bootstrap.Bootstrap) error {
	return func(r *Rank, b bootstrap.Bootstrap) error {
		n := r.NPEs()
		next := make([]uint64, n)
		got := 0
		handlers := map[uint32]Handler{
			7: func(m Msg) {
				if len(m.Args) != 3 || m.Args[0] != uint64(m.SrcPE) || m.Args[1] != next[m.SrcPE] || m.Args[2] != uint64(r.PE()) || m.Flags != 0x5 {
					panic(fmt.Sprintf("PE %d: bad message %+v (want seq %d)", r.PE(), m, next[m.SrcPE]))
				}
				next[m.SrcPE]++
				got++
			},
		}
		sent := make([]int, n)
		deadline := time.Now().Add(30 * time.Second)
		for got < iters*n || sentAll(sent, iters) < n {
			for p := 0; p < n; p++ {
				if sent[p] < iters {
					po := amPeerOff(p)
					// Non-blocking here: send only when a credit is there, so
					// every rank keeps draining (both directions make progress).
					if k := word(r.base, po+amSent).Load(); k < Slots || word(r.base, po+amCredit).Load() >= k-1 {
						if err := r.AMSend(p, 7, 0x5, uint64(r.PE()), uint64(sent[p]), uint64(p)); err != nil {
							return err
						}
						sent[p]++
					}
				}
			}
			if _, err := r.Dispatch(handlers); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return errors.Newf("PE %d: AM exchange stuck: got %d of %d, sent %v", r.PE(), got, iters*n, sent)
			}
		}
		return nil
	}
}

func sentAll(sent []int, iters int) int {
	k := 0
	for _, s := range sent {
		if s >= iters {
			k++
		}
	}
	return k
}

func TestActiveMessages(t *testing.T) {
	stats := withRanks(t, 3, Config{Engine: EngineFabric, Provider: "sockets", AM: true, Timeout: 20 * time.Second}, amExchange(20))
	for pe, st := range stats {
		assert.Greater(t, st.Credits, uint64(0), "PE %d returned credits", pe)
		assert.Greater(t, st.Forwarded+st.FallbackWrites, uint64(0), "PE %d", pe)
	}
}

// The software engine: same protocol, counters and queue in the monitor,
// ordinary RMA on a provider without deferred work.
func TestSoftwareEngine(t *testing.T) {
	arrive := make([]atomic.Int64, 3)
	stats := withRanks(t, 3, Config{Engine: EngineSoftware, Provider: "tcp;ofi_rxm", AM: true, Timeout: 20 * time.Second},
		func(r *Rank, b bootstrap.Bootstrap) error {
			if err := barrierLoop(12, arrive)(r, b); err != nil {
				return err
			}
			return amExchange(6)(r, b)
		})
	for _, st := range stats {
		assert.False(t, st.Deferred)
		assert.Equal(t, "software:tcp;ofi_rxm", st.Engine)
		assert.LessOrEqual(t, st.BarrierMaxArmed, 2*Rounds(3))
	}
}

// A provider without deferred work is refused with a clear error unless
// the software engine is chosen explicitly.
func TestProviderWithoutDeferredWork(t *testing.T) {
	_, err := NewRank(0, 1, func(b []byte) ([]byte, error) { return b, nil }, Config{Engine: EngineFabric, Provider: "tcp;ofi_rxm"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported), "%v", err)
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_CXI_ENGINE=software")
	_, err = NewRank(0, 1, nil, Config{Engine: "bogus"})
	assert.True(t, errors.Is(err, errs.ErrInvalidArgument))
}

// The monitor allocates nothing per instance (records prebuilt, no
// closures, no per-record bookkeeping on the heap): a GC cycle it
// triggered would stop it. Whole-process mallocs over 300 barriers of
// two in-process ranks (their Go API barrier loops included) stay far
// below one per barrier.
func TestMonitorAllocatesNothingPerBarrier(t *testing.T) {
	const n, iters = 2, 300
	var before, after runtime.MemStats
	withRanks(t, n, Config{Engine: EngineFabric, Provider: "sockets", Timeout: 20 * time.Second},
		func(r *Rank, b bootstrap.Bootstrap) error {
			for i := 0; i < 50; i++ { // warm-up: first arms, connections
				if err := r.Barrier(); err != nil {
					return err
				}
			}
			if err := b.Barrier(); err != nil {
				return err
			}
			if r.PE() == 0 {
				runtime.ReadMemStats(&before)
			}
			if err := b.Barrier(); err != nil {
				return err
			}
			for i := 0; i < iters; i++ {
				if err := r.Barrier(); err != nil {
					return err
				}
			}
			if err := b.Barrier(); err != nil {
				return err
			}
			if r.PE() == 0 {
				runtime.ReadMemStats(&after)
			}
			return b.Barrier()
		})
	per := float64(after.Mallocs-before.Mallocs) / iters
	t.Logf("%.3f mallocs per barrier (whole process, %d ranks)", per, n)
	assert.Less(t, per, 0.5, "the monitor or the barrier allocates per instance (the old monitor: >= 1 per record and rank)")
}

// The monitor's exported stall and re-arm accounting is consistent: every
// loop gap is in the histogram, the longest is split into work and idle,
// the provider's share of a re-arm is within the re-arm, context switches
// of the monitor thread are read from /proc.
func TestMonitorStallStats(t *testing.T) {
	const n, iters = 2, 60
	arrive := make([]atomic.Int64, n)
	stats := withRanks(t, n, Config{Engine: EngineFabric, Provider: "sockets", Timeout: 20 * time.Second}, barrierLoop(iters, arrive))
	for pe, st := range stats {
		var gaps uint64
		for _, g := range st.Gaps {
			gaps += g
		}
		require.Positive(t, st.Passes, "PE %d", pe)
		assert.InDelta(t, float64(st.Passes), float64(gaps), 2, "PE %d: one gap per pass", pe)
		assert.Positive(t, st.MaxLoopGap, "PE %d", pe)
		assert.LessOrEqual(t, st.MaxGapWork, st.MaxLoopGap, "PE %d", pe)
		assert.Contains(t, []string{"spin", "yield", "sleep"}, st.MaxGapAction, "PE %d", pe)
		assert.GreaterOrEqual(t, st.MonitorInvCtxSw, int64(0), "PE %d: /proc/self/task/<tid>/status", pe)
		assert.GreaterOrEqual(t, st.MonitorVolCtxSw, int64(0), "PE %d", pe)
		require.Positive(t, st.ArmOps, "PE %d: every 8th arm is timed", pe)
		assert.Positive(t, st.ArmProviderTime, "PE %d", pe)
		assert.LessOrEqual(t, st.ArmProviderTime, st.ArmTime, "PE %d: the provider's calls are part of the re-arm", pe)
		assert.Positive(t, st.ArmMedian, "PE %d", pe)
		assert.Positive(t, st.FwdToRetireN, "PE %d", pe)
	}
}

func TestCtxSw(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := int64(unix.Gettid())
	v0, i0 := ctxSw(tid)
	require.GreaterOrEqual(t, v0, int64(0))
	require.GreaterOrEqual(t, i0, int64(0))
	ts := unix.NsecToTimespec(int64(time.Millisecond))
	unix.Nanosleep(&ts, nil)
	v1, _ := ctxSw(tid)
	assert.Greater(t, v1, v0, "a sleep is a voluntary switch")
	v, i := ctxSw(-1)
	assert.Equal(t, int64(-1), v)
	assert.Equal(t, int64(-1), i)
}
