package runtime

import (
	stderrors "errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
)

// fake is a backend scripted per PE: Setup fails or declines on the PEs
// listed, Connect takes rounds[pe] rounds and checks that every round
// delivers every PE's record for that round.
type fake struct {
	me        int
	name      string
	failSetup map[int]error
	failConn  map[int]error
	rounds    map[int]int // Connect calls until done (default 1)
	got       [][][]byte  // records seen per round
	closed    bool
	agreed    bool
}

func (f *fake) Name() string { return f.name }
func (f *fake) Setup() ([]byte, error) {
	if err := f.failSetup[f.me]; err != nil {
		return nil, err
	}
	return []byte(fmt.Sprintf("%s/%d/0", f.name, f.me)), nil
}
func (f *fake) Connect(k int, recs [][]byte) ([]byte, bool, error) {
	f.got = append(f.got, recs)
	if err := f.failConn[f.me]; err != nil {
		return nil, false, err
	}
	n := f.rounds[f.me]
	if n == 0 {
		n = 1
	}
	if k+1 >= n {
		return nil, true, nil
	}
	return []byte(fmt.Sprintf("%s/%d/%d", f.name, f.me, k+1)), false, nil
}
func (f *fake) Drain(string, time.Duration) error { return nil }
func (f *fake) Diagnose() string                  { return "" }
func (f *fake) Info() []string                    { return nil }
func (f *fake) Close() error                      { f.closed = true; return nil }
func (f *fake) Agreed()                           { f.agreed = true }

// onPEs runs fn on n PEs of an in-process job (each with its Runtime on
// the job's bootstrap) and returns each PE's error.
func onPEs(t *testing.T, n int, fn func(r *Runtime) error) []error {
	t.Helper()
	boots, err := local.NewJob(n)
	require.NoError(t, err)
	errsOut := make([]error, n)
	var wg sync.WaitGroup
	for pe := 0; pe < n; pe++ {
		wg.Add(1)
		go func(b bootstrap.Bootstrap) {
			defer wg.Done()
			r := &Runtime{Boot: b, Me: b.Rank(), NPEs: b.Size(), Node: b.Node(), declined: map[string]error{}}
			errsOut[b.Rank()] = fn(r)
		}(boots[pe])
	}
	wg.Wait()
	return errsOut
}

// A Setup failure on one PE fails every PE's phase, naming that PE and
// its error (and its sentinel, under the standard errors.Is); the
// failing PE gets its own error back. Nobody is left in an exchange.
func TestPhaseLocalFailureFailsEveryPE(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			bad := n - 1
			var mu sync.Mutex
			var fakes []*fake
			got := onPEs(t, n, func(r *Runtime) error {
				ok := &fake{me: r.Me, name: "first"}
				f := &fake{me: r.Me, name: "second",
					failSetup: map[int]error{bad: errs.New(errs.ErrNotSupported, bad, "Init", "no such device")}}
				mu.Lock()
				fakes = append(fakes, ok, f)
				mu.Unlock()
				return r.runPhase("test phase", []Backend{ok, f})
			})
			for pe, err := range got {
				require.Error(t, err, "PE %d", pe)
				assert.True(t, stderrors.Is(err, errs.ErrNotSupported), "PE %d: %v", pe, err)
				assert.Contains(t, err.Error(), fmt.Sprintf("PE %d", bad))
				assert.Contains(t, err.Error(), "no such device")
				if pe != bad {
					assert.Contains(t, err.Error(), fmt.Sprintf("test phase failed on another PE: PE %d: Init: no such device (second)", bad))
				}
			}
			for _, f := range fakes {
				assert.True(t, f.closed, "%s on PE %d not closed", f.name, f.me)
				assert.False(t, f.agreed)
			}
		})
	}
}

// Connect failures on several PEs: every PE's error lists each of them.
func TestPhaseConnectFailures(t *testing.T) {
	got := onPEs(t, 4, func(r *Runtime) error {
		return r.runPhase("connect", []Backend{&fake{me: r.Me, name: "x", failConn: map[int]error{
			1: errs.New(errs.ErrTimeout, 1, "Init", "PE 2 does not answer"),
			3: errs.New(errs.ErrTimeout, 3, "Init", "PE 0 does not answer"),
		}}})
	})
	for pe, err := range got {
		require.Error(t, err)
		assert.True(t, stderrors.Is(err, errs.ErrTimeout), "PE %d: %v", pe, err)
		assert.Contains(t, err.Error(), "PE 1: Init: PE 2 does not answer (x)")
		assert.Contains(t, err.Error(), "PE 3: Init: PE 0 does not answer (x)")
	}
}

// Backends whose PEs need different numbers of rounds: every round
// carries every PE's record, and all end together, with Agreed called.
func TestPhaseRounds(t *testing.T) {
	var mu sync.Mutex
	var fakes []*fake
	got := onPEs(t, 3, func(r *Runtime) error {
		f := &fake{me: r.Me, name: "r", rounds: map[int]int{0: 1, 1: 3, 2: 2}}
		mu.Lock()
		fakes = append(fakes, f)
		mu.Unlock()
		return r.runPhase("rounds", []Backend{f})
	})
	for _, err := range got {
		require.NoError(t, err)
	}
	for _, f := range fakes {
		assert.True(t, f.agreed)
		want := map[int]int{0: 1, 1: 3, 2: 2}[f.me]
		require.Len(t, f.got, want, "PE %d", f.me)
		for k, recs := range f.got {
			for pe, rec := range recs {
				// A PE that is done sends an empty record in later rounds.
				done := map[int]int{0: 1, 1: 3, 2: 2}[pe] <= k
				if done {
					assert.Empty(t, rec, "round %d PE %d", k, pe)
				} else {
					assert.Equal(t, fmt.Sprintf("r/%d/%d", pe, k), string(rec), "round %d", k)
				}
			}
		}
	}
}

// A decline on one PE turns the backend off on every PE, with the
// declining PE's reason, and Init goes on.
func TestPhaseDecline(t *testing.T) {
	var mu sync.Mutex
	rts := map[int]*Runtime{}
	got := onPEs(t, 3, func(r *Runtime) error {
		mu.Lock()
		rts[r.Me] = r
		mu.Unlock()
		return r.runPhase("gpu", []Backend{&fake{me: r.Me, name: "GPU heap",
			failSetup: map[int]error{1: Decline(errs.New(errs.ErrNotSupported, 1, "Init", "no GPU"))}}})
	})
	for pe, err := range got {
		require.NoError(t, err)
		reason := rts[pe].declined["GPU heap"]
		require.Error(t, reason, "PE %d", pe)
		assert.True(t, stderrors.Is(reason, errs.ErrNotSupported))
		assert.Contains(t, reason.Error(), "no GPU")
		assert.Empty(t, rts[pe].backends)
	}
}

// Settings that differ on one PE: every PE fails with ErrNotSymmetric
// naming the setting, each value and the PEs that have it.
func TestSettingsMismatch(t *testing.T) {
	settingsFor := func(pe int) env.Settings {
		vals := map[string]string{"GOSHMEM_SYMMETRIC_SIZE": "8M"}
		if pe == 2 {
			vals["GOSHMEM_TRANSPORT"] = "ofi"
			vals["GOSHMEM_DEBUG"] = "1"
		}
		s, err := env.Read(func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
		require.NoError(t, err)
		return s
	}
	got := onPEs(t, 4, func(r *Runtime) error {
		r.Settings = settingsFor(r.Me)
		return r.agree(Config{})
	})
	for pe, err := range got {
		require.Error(t, err, "PE %d", pe)
		assert.True(t, stderrors.Is(err, errs.ErrNotSymmetric), "PE %d: %v", pe, err)
		msg := err.Error()
		assert.Contains(t, msg, `GOSHMEM_TRANSPORT: "auto" on PEs 0-1, 3, "ofi" on PE 2`)
		assert.Contains(t, msg, `GOSHMEM_DEBUG: "false" on PEs 0-1, 3, "true" on PE 2`)
	}

	// A local validation error on one PE fails all, naming it.
	got = onPEs(t, 2, func(r *Runtime) error {
		r.Settings = settingsFor(0)
		heap := uint64(8 << 20)
		if r.Me == 1 {
			heap = 4096
		}
		return r.agree(Config{HeapSize: heap})
	})
	for _, err := range got {
		require.Error(t, err)
		assert.True(t, stderrors.Is(err, errs.ErrInvalidArgument), "%v", err)
		assert.Contains(t, err.Error(), "PE 1")
		assert.Contains(t, err.Error(), "leaves no room for the user heap")
	}
}

// GOSHMEM_MAX_TEAMS: the default places 1,088 team slots after the user
// heap; a value in range sets the count; one that differs across PEs fails
// every PE naming the setting and both values; one out of range or not a
// number fails every PE naming the PE, the value and the range.
func TestMaxTeamsSetting(t *testing.T) {
	settings := func(teams string) env.Settings {
		vals := map[string]string{"GOSHMEM_SYMMETRIC_SIZE": "8M"}
		if teams != "" {
			vals["GOSHMEM_MAX_TEAMS"] = teams
		}
		s, err := env.Read(func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct {
		set  string
		want int
	}{{"", collectives.DefaultTeams}, {"2", 2}, {" 4096 ", 4096}, {"16384", 16384}} {
		var rts [2]*Runtime
		got := onPEs(t, 2, func(r *Runtime) error {
			r.Settings = settings(tc.set)
			rts[r.Me] = r
			return r.agree(Config{})
		})
		for pe, err := range got {
			require.NoError(t, err, "GOSHMEM_MAX_TEAMS=%q, PE %d", tc.set, pe)
			r := rts[pe]
			assert.Equal(t, collectives.Layout{Base: 8 << 20, MaxTeams: tc.want}, r.Teams, "GOSHMEM_MAX_TEAMS=%q", tc.set)
			assert.Equal(t, uint64(8<<20-HeapOff), r.HeapLen, "the team slots come after the user heap, not out of it")
			assert.Equal(t, uint64(8<<20)+uint64(tc.want)*collectives.SlotSize, r.RegionSize())
		}
	}

	got := onPEs(t, 3, func(r *Runtime) error {
		r.Settings = settings(map[int]string{0: "64", 1: "128", 2: "64"}[r.Me])
		return r.agree(Config{})
	})
	for pe, err := range got {
		require.Error(t, err, "PE %d", pe)
		assert.True(t, stderrors.Is(err, errs.ErrNotSymmetric), "PE %d: %v", pe, err)
		assert.Contains(t, err.Error(), `GOSHMEM_MAX_TEAMS: "64" on PEs 0, 2, "128" on PE 1`)
	}

	for _, bad := range []string{"1", "16385", "lots", "-3"} {
		got := onPEs(t, 2, func(r *Runtime) error {
			r.Settings = settings(map[int]string{0: "64", 1: bad}[r.Me])
			return r.agree(Config{})
		})
		for pe, err := range got {
			require.Error(t, err, "GOSHMEM_MAX_TEAMS=%q on PE 1: PE %d", bad, pe)
			assert.True(t, stderrors.Is(err, errs.ErrInvalidArgument), "PE %d: %v", pe, err)
			assert.Contains(t, err.Error(), fmt.Sprintf(`PE 1: Init: GOSHMEM_MAX_TEAMS=%q; must be a number of team slots in [2, 16384]`, bad))
		}
	}
}

func TestPEList(t *testing.T) {
	assert.Equal(t, "PE 3", peList([]int{3}))
	assert.Equal(t, "PEs 0-2, 4, 6-7", peList([]int{0, 1, 2, 4, 6, 7}))
}

// A record longer than the inline area takes the second allgather; both
// shapes deliver every PE's bytes.
func TestExchangeLong(t *testing.T) {
	got := onPEs(t, 3, func(r *Runtime) error {
		n := 10
		if r.Me == 1 {
			n = 3 * inlineBytes
		}
		mine := make([]byte, n)
		for i := range mine {
			mine[i] = byte(r.Me + i)
		}
		all, err := r.exchange("long", mine)
		if err != nil {
			return err
		}
		for pe, b := range all {
			want := 10
			if pe == 1 {
				want = 3 * inlineBytes
			}
			if len(b) != want || (want > 0 && b[want-1] != byte(pe+want-1)) {
				return fmt.Errorf("PE %d's record: %d bytes", pe, len(b))
			}
		}
		return nil
	})
	for _, err := range got {
		require.NoError(t, err)
	}
}
