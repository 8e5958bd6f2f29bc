package collectives

import (
	stderrors "errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
)

// paths runs a test over Comm signals and over Direct load/store words.
var paths = []struct {
	name   string
	direct bool
}{{"comm", false}, {"direct", true}}

func isNotSymmetric(t *testing.T, err error, pe int, msgAndArgs ...any) bool {
	t.Helper()
	// The standard library's errors.Is, as a user would call it.
	return assert.True(t, stderrors.Is(err, errs.ErrNotSymmetric), "PE %d: want ErrNotSymmetric, got %v (%s)", pe, err, fmt.Sprint(msgAndArgs...))
}

func TestKindWord(t *testing.T) {
	for _, e := range []uint64{0, 1, 255, 256, 1 << 20, 1<<56 - 2} {
		for k := KindNone; k < kindCount; k++ {
			v := psyncWord(e, k)
			assert.Equal(t, e, wordEpoch(v))
			assert.Equal(t, k, wordKind(v))
			assert.Equal(t, e, wordEpoch(v|flagMismatch), "the flag is not part of the epoch")
			assert.Equal(t, k, wordKind(v|flagMismatch), "the flag is not part of the kind")
			assert.GreaterOrEqual(t, v, e<<epochShift, "a wait for the epoch is satisfied by any kind")
			assert.Less(t, v|flagMismatch, (e+1)<<epochShift, "and not by an earlier epoch")
		}
	}
	for k := KindNone; k < kindCount; k++ {
		assert.NotContains(t, k.String(), "kind ", "kind %d has a name", k)
	}
	assert.Equal(t, "collective kind 99", Kind(99).String())
}

// TestKindsBackToBack: matched collectives of changing kinds, with random
// delays (so partners are often one sync ahead, their words already of the
// next kind), never report a mismatch.
func TestKindsBackToBack(t *testing.T) {
	const rounds = 300
	for _, p := range paths {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				w := newFakeWorld(n, testPolicy)
				w.direct = p.direct
				spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
					c := fc.comm()
					kinds := rand.New(rand.NewPCG(3, 3)) // the same sequence on every PE
					delay := rand.New(rand.NewPCG(uint64(fc.me), 5))
					for i := 0; i < rounds; i++ {
						k := Kind(1 + kinds.IntN(int(kindCount)-1))
						if delay.IntN(8) == 0 {
							time.Sleep(time.Duration(delay.IntN(100)) * time.Microsecond)
						}
						if err := world.SyncAs(c, k); err != nil {
							return errors.Wrapf(err, "sync %d (%v)", i+1, k)
						}
					}
					return nil
				})
			})
		}
	}
}

// TestManyEpochs: epochs far past the 8 bits of kind and flags (and near
// the top of the 56-bit range) still synchronize, and the words hold the
// epoch and the kind.
func TestManyEpochs(t *testing.T) {
	for _, p := range paths {
		for _, start := range []uint64{0, 250, 1 << 16, 1<<56 - 600} {
			for _, n := range []int{2, 3, 8} {
				t.Run(fmt.Sprintf("%s/from %d/%d", p.name, start, n), func(t *testing.T) {
					w := newFakeWorld(n, testPolicy)
					w.direct = p.direct
					arrived := make([]atomic.Uint64, n)
					spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
						c := fc.comm()
						world.epoch = start // the words are 0: below every epoch
						for i := uint64(1); i <= 520; i++ {
							arrived[fc.me].Store(i)
							k := KindBarrier
							if i%3 == 0 {
								k = KindReduce
							}
							if err := world.SyncAs(c, k); err != nil {
								return err
							}
							for pe := range arrived {
								if a := arrived[pe].Load(); a < i {
									return errors.Newf("PE %d left sync %d before PE %d arrived (at %d)", fc.me, start+i, pe, a)
								}
							}
						}
						assert.Equal(t, start+520, world.Epoch())
						// Round 0's word is the predecessor's, of the last sync or
						// already of the barrier below.
						v := atomic.LoadUint64(localWord(c, world.psyncOff(0)))
						assert.Contains(t, []uint64{psyncWord(start+520, KindBarrier), psyncWord(start+521, KindBarrier)}, v,
							"PE %d round-0 word", fc.me)
						return world.Barrier(c) // nobody leaves (and loses its region) early
					})
				})
			}
		}
	}
}

// TestMismatchOneDiffers: one PE calls another collective than the rest;
// every PE gets ErrNotSymmetric naming the other kind (the odd PE: every
// other PE's kind; the others: the odd PE), and the team is out of step.
func TestMismatchOneDiffers(t *testing.T) {
	for _, p := range paths {
		for _, n := range []int{2, 3, 4, 5, 8} {
			for odd := range n {
				t.Run(fmt.Sprintf("%s/%d/PE %d", p.name, n, odd), func(t *testing.T) {
					w := newFakeWorld(n, testPolicy)
					w.direct = p.direct
					errsOf := make([]error, n)
					spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
						c := fc.comm()
						for range 3 { // in step first
							if err := world.Barrier(c); err != nil {
								return err
							}
						}
						k := KindBroadcast
						if fc.me == odd {
							k = KindReduce
						}
						errsOf[fc.me] = world.SyncAs(c, k)
						next := world.Barrier(c)
						if isNotSymmetric(t, next, fc.me, "the call after the mismatch") {
							assert.Contains(t, next.Error(), fmt.Sprintf("PE %d: Barrier: team world is out of step since sync #4 (%v) failed", fc.me, k))
						}
						assert.Equal(t, errsOf[fc.me], world.Broken())
						return nil
					})
					others := make([]string, 0, n)
					for pe := range n {
						if pe != odd {
							others = append(others, fmt.Sprint(pe))
						}
					}
					for pe, err := range errsOf {
						if !isNotSymmetric(t, err, pe) {
							continue
						}
						msg := err.Error()
						if pe == odd {
							want := fmt.Sprintf("PE %d: Reduce: sync #4 of team world: PE %s called Broadcast here", pe, others[0])
							if len(others) > 1 {
								want = fmt.Sprintf("PE %d: Reduce: sync #4 of team world: PEs %s and %s called Broadcast here",
									pe, strings.Join(others[:len(others)-1], ", "), others[len(others)-1])
							}
							assert.Contains(t, msg, want)
						} else {
							assert.Contains(t, msg, fmt.Sprintf("PE %d: Broadcast: sync #4 of team world: PE %d called Reduce here", pe, odd))
						}
						assert.Contains(t, msg, "every PE must call the same collectives in the same order")
						assert.Contains(t, errors.GetAllHints(err), outOfStepHint)
					}
				})
			}
		}
	}
}

// TestMismatchThreeKinds: three kinds at once on 6 PEs; each PE names the
// two kinds that are not its own and who called them.
func TestMismatchThreeKinds(t *testing.T) {
	kindOf := []Kind{KindBarrier, KindBarrier, KindAlloc, KindBarrier, KindFree, KindAlloc}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			w := newFakeWorld(len(kindOf), testPolicy)
			w.direct = p.direct
			errsOf := make([]error, len(kindOf))
			spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				errsOf[fc.me] = world.SyncAs(fc.comm(), kindOf[fc.me])
				return nil
			})
			want := map[Kind]string{KindBarrier: "PEs 0, 1 and 3 called Barrier here", KindAlloc: "PEs 2 and 5 called Alloc here",
				KindFree: "PE 4 called Free here"}
			for pe, err := range errsOf {
				if !isNotSymmetric(t, err, pe) {
					continue
				}
				assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: %v: sync #1 of team world: ", pe, kindOf[pe]))
				for k, s := range want {
					if k == kindOf[pe] {
						assert.NotContains(t, err.Error(), s, "PE %d does not list its own kind", pe)
					} else {
						assert.Contains(t, err.Error(), s, "PE %d", pe)
					}
				}
			}
		})
	}
}

// TestAllocVersusBarrier: a heap collective (an exchange of kind Alloc, as
// shmem.Alloc runs it) on one PE and a barrier on the other: both return
// ErrNotSymmetric naming both calls, and both teams are out of step after.
func TestAllocVersusBarrier(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			w := newFakeWorld(2, testPolicy)
			w.direct = p.direct
			errsOf := make([]error, 2)
			spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				c := fc.comm()
				if err := world.Barrier(c); err != nil {
					return err
				}
				if fc.me == 0 {
					_, errsOf[0] = world.ExchangeAs(c, KindAlloc, []byte("alloc 64 bytes"))
				} else {
					errsOf[1] = world.Barrier(c)
				}
				_, err := world.ExchangeAs(c, KindAlloc, []byte("the next Alloc"))
				isNotSymmetric(t, err, fc.me, "the next call")
				return nil
			})
			if isNotSymmetric(t, errsOf[0], 0) {
				assert.Contains(t, errsOf[0].Error(), "PE 0: Alloc: sync #2 of team world: PE 1 called Barrier here")
			}
			if isNotSymmetric(t, errsOf[1], 1) {
				assert.Contains(t, errsOf[1].Error(), "PE 1: Barrier: sync #2 of team world: PE 0 called Alloc here")
			}
		})
	}
}

// TestTimeoutThenOutOfStep: PE 0's barrier times out (PE 1 is late); PE 1
// then completes that barrier on its side. The next barrier must not pass
// silently with the two PEs one barrier apart: PE 0's fails at once as out
// of step, PE 1's times out naming PE 0, and PE 1 is out of step too.
func TestTimeoutThenOutOfStep(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			w := newFakeWorld(2, testPolicy)
			w.direct = p.direct
			short := testPolicy
			short.Timeout = 20 * time.Millisecond
			first := make(chan struct{})
			var errs0, errs1 [3]error
			spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				fc.policy = &short
				c := fc.comm()
				if fc.me == 0 {
					errs0[0] = world.Barrier(c)
					close(first)
					errs0[1] = world.Barrier(c)
					errs0[2] = world.Barrier(c)
					return nil
				}
				<-first
				errs1[0] = world.Barrier(c) // PE 0's signal of barrier 1 is there
				errs1[1] = world.Barrier(c) // PE 0 never signals barrier 2
				errs1[2] = world.Barrier(c)
				return nil
			})
			require.ErrorIs(t, errs0[0], errs.ErrTimeout)
			assert.Contains(t, errs0[0].Error(), "PE 0: Barrier: PE 1 has not arrived at sync #1 of team world")
			for i := 1; i < 3; i++ {
				if isNotSymmetric(t, errs0[i], 0, "barrier ", i+1) {
					assert.Contains(t, errs0[i].Error(), "PE 0: Barrier: team world is out of step since sync #1 (Barrier) failed: PE 0: Barrier: PE 1 has not arrived")
				}
			}
			require.NoError(t, errs1[0], "PE 1 arrived late at barrier 1 and found PE 0's signal")
			require.ErrorIs(t, errs1[1], errs.ErrTimeout)
			assert.Contains(t, errs1[1].Error(), "PE 1: Barrier: PE 0 has not arrived at sync #2 of team world")
			if isNotSymmetric(t, errs1[2], 1) {
				assert.Contains(t, errs1[2].Error(), "team world is out of step since sync #2 (Barrier) failed")
			}
		})
	}
}

// TestMissing: when a sync times out, its error names every member that has
// not arrived, not only the partner of the round it waited in.
func TestMissing(t *testing.T) {
	// Direct only: the members that did arrive are still storing their
	// later rounds' words while the timed-out PEs read round 0's, and the
	// fake's Get is a plain copy (a race the race detector would flag; the
	// runtime reads such words with Direct loads or an 8-byte get).
	const n = 8
	absent := map[int]bool{1: true, 4: true, 5: true}
	w := newFakeWorld(n, testPolicy)
	w.direct = true
	w.policy.Timeout = 30 * time.Millisecond
	errsOf := make([]error, n)
	missing := make([][]int, n)
	spmdIn(t, w, func(fc *fakeComm, world *Team, b bootstrap.Bootstrap) error {
		c := fc.comm()
		if !absent[fc.me] {
			errsOf[fc.me] = world.Sync(c)
			missing[fc.me], _ = world.Missing(c, 1)
		}
		return b.Barrier() // every region stays until all have read
	})
	for pe, err := range errsOf {
		if absent[pe] {
			continue
		}
		if assert.ErrorIs(t, err, errs.ErrTimeout, "PE %d", pe) {
			assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: Sync: PEs 1, 4 and 5 have not arrived at sync #1 of team world", pe))
		}
		assert.Equal(t, []int{1, 4, 5}, missing[pe], "PE %d", pe)
	}
}

// TestMissingComm: Missing over Comm.Get (no Direct words), and for an
// epoch this PE has not reached itself.
func TestMissingComm(t *testing.T) {
	w := newFakeWorld(3, testPolicy)
	spmdIn(t, w, func(c *fakeComm, world *Team, b bootstrap.Bootstrap) error {
		if err := world.Barrier(c); err != nil {
			return err
		}
		got, err := world.Missing(c, 1)
		assert.NoError(t, err)
		assert.Empty(t, got, "PE %d: everybody arrived at sync 1", c.me)
		got, err = world.Missing(c, 2)
		assert.NoError(t, err)
		assert.Equal(t, []int{0, 1, 2}, got, "PE %d: nobody at sync 2", c.me)
		return b.Barrier()
	})
}

// TestAbortBetweenSyncs: a transport error between a collective's syncs
// puts the team out of step on the PE that saw it.
func TestAbortBetweenSyncs(t *testing.T) {
	boom := errors.New("put failed")
	putFailure(t, boom, func(c *fakeComm, world *Team) error {
		err := FCollect(c, world, dstOff, srcOff, large)
		if c.me != 0 {
			return err
		}
		require.ErrorIs(t, err, boom)
		assert.Equal(t, boom, world.Broken())
		for name, err := range map[string]error{
			"Barrier":   world.Barrier(c),
			"Sync":      world.Sync(c),
			"Reduce":    Reduce[int32](c, world, OpSum, dstOff, srcOff, 4),
			"Broadcast": Broadcast(c, world, dstOff, srcOff, 8, 0),
		} {
			if isNotSymmetric(t, err, 0, name) {
				assert.Contains(t, err.Error(), fmt.Sprintf("PE 0: %s: team world is out of step since FCollect after sync #1 failed: put failed", name))
			}
		}
		_, err = world.Exchange(c, []byte{1})
		isNotSymmetric(t, err, 0, "Exchange")
		_, err = Split(c, world, world, 0, 1, 1)
		isNotSymmetric(t, err, 0, "Split")
		assert.Equal(t, uint64(1), world.Epoch(), "no sync ran on the broken team")
		return nil
	})
}

// TestFail: the runtime can put a team out of step from outside.
func TestFail(t *testing.T) {
	w := newFakeWorld(1, testPolicy)
	c := &fakeComm{w: w, me: 0}
	world := World(c, w.ly)
	require.NoError(t, world.Barrier(c))
	assert.NoError(t, world.Broken())
	gone := errors.New("PE 3 exited")
	world.Fail(gone)
	world.Fail(errors.New("a second cause is not kept"))
	assert.Equal(t, gone, world.Broken())
	err := world.Barrier(c)
	if isNotSymmetric(t, err, 0) {
		assert.Contains(t, err.Error(), "PE 0: Barrier: team world is out of step since sync #1 failed: PE 3 exited")
	}
}

// TestDestroyMismatch: Destroy on one member and a barrier on the other is
// a mismatch; the destroying member keeps the slot (a stale signal could
// still land in it).
func TestDestroyMismatch(t *testing.T) {
	spmd(t, 2, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		tm, err := Split(c, world, world, 0, 1, 2)
		if err != nil {
			return err
		}
		if c.me == 0 {
			err = tm.Destroy(c, world)
			assert.Equal(t, 1, tm.Slot(), "slot kept")
			assert.NotContains(t, freeSlots(world), 1, "slot 1 still taken")
		} else {
			err = tm.Barrier(c)
		}
		if isNotSymmetric(t, err, c.me) {
			other := map[int]string{0: "PE 1 called Barrier here", 1: "PE 0 called Team.Destroy here"}[c.me]
			assert.Contains(t, err.Error(), other)
			assert.Contains(t, err.Error(), "of team{start 0, stride 1, size 2}")
		}
		isNotSymmetric(t, tm.Destroy(c, world), c.me, "Destroy of a team out of step")
		return world.Barrier(c) // the world is not affected
	})
}
