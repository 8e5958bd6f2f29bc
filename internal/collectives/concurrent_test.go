package collectives

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
)

// Collectives on different teams from different goroutines of each PE, in
// different orders on different PEs (OpenSHMEM 1.6 §9.2
// SHMEM_THREAD_MULTIPLE). Every team here has the same members as the
// world, the case where state shared across teams would show at once.

// teamWork runs rounds of an exchange, a reduce and a broadcast on tm
// (under its lock), in data area k of the symmetric region, checking every
// value.
func teamWork(c Comm, tm *Team, k, rounds int) error {
	const n = 4
	src, dst := uint64(srcOff+k*4096), uint64(dstOff+k*4096)
	for it := range rounds {
		tm.Lock()
		err := func() error {
			tag := uint64(k*1000000 + it*1000)
			var in [8]byte
			putU64(in[:], tag+uint64(tm.Me))
			all, err := tm.Exchange(c, in[:])
			if err != nil {
				return err
			}
			for j, b := range all {
				if got := getU64(b); got != tag+uint64(j) {
					return fmt.Errorf("%v round %d: exchange from member %d: got %d, want %d", tm, it, j, got, tag+uint64(j))
				}
			}
			s := asT[int64](c.Local(src, n*8))
			for i := range s {
				s[i] = int64(tag) + int64(tm.Me*10+i)
			}
			if err := Reduce[int64](c, tm, OpSum, dst, src, n); err != nil {
				return err
			}
			d := asT[int64](c.Local(dst, n*8))
			for i := range d {
				want := int64(tm.Size)*int64(tag) + int64(10*tm.Size*(tm.Size-1)/2+tm.Size*i)
				if d[i] != want {
					return fmt.Errorf("%v round %d: reduce [%d]: got %d, want %d", tm, it, i, d[i], want)
				}
			}
			root := it % tm.Size
			if err := Broadcast(c, tm, dst, src, n*8, root); err != nil {
				return err
			}
			for i := range d {
				if want := int64(tag) + int64(root*10+i); d[i] != want {
					return fmt.Errorf("%v round %d: broadcast from %d [%d]: got %d, want %d", tm, it, root, i, d[i], want)
				}
			}
			return tm.Barrier(c)
		}()
		tm.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// slotSet records the psync slots of the live teams of one PE, to find
// two at once on one slot.
type slotSet struct {
	mu   sync.Mutex
	live map[int]string
}

func (s *slotSet) add(tm *Team, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, ok := s.live[tm.Slot()]; ok {
		return fmt.Errorf("%s got psync slot %d, which %s holds", name, tm.Slot(), other)
	}
	s.live[tm.Slot()] = name
	return nil
}

func (s *slotSet) remove(slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, slot)
}

func TestConcurrentTeams(t *testing.T) {
	for _, direct := range []bool{false, true} {
		for _, n := range []int{2, 3, 5} {
			t.Run(fmt.Sprintf("direct=%v/%d PEs", direct, n), func(t *testing.T) {
				w := newFakeWorld(n, testPolicy)
				w.direct = direct
				spmdIn(t, w, func(fc *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
					c := fc.comm()
					slots := &slotSet{live: map[int]string{0: "world"}}
					var teams []*Team
					for i := range 3 {
						tm, err := Split(c, world, world, 0, 1, n)
						if err != nil {
							return err
						}
						if err := slots.add(tm, fmt.Sprintf("team %d", i)); err != nil {
							return err
						}
						teams = append(teams, tm)
					}
					errc := make(chan error, len(teams))
					for i, tm := range teams {
						go func() {
							// Neighbouring PEs start the teams in
							// different orders: with collectives
							// serialized across teams, each would hold
							// the PE while waiting for the other.
							if (fc.me+i)%2 == 1 {
								time.Sleep(2 * time.Millisecond)
							}
							if err := teamWork(c, tm, i, 30); err != nil {
								errc <- err
								return
							}
							// Splits of the teams at once, each sub-team
							// used, then destroyed.
							for it := range 6 {
								tm.Lock()
								sub, err := Split(c, world, tm, 0, 1, n)
								tm.Unlock()
								if err != nil {
									errc <- errors.Wrapf(err, "split %d of team %d", it, i)
									return
								}
								if err := slots.add(sub, fmt.Sprintf("split %d of team %d", it, i)); err != nil {
									errc <- err
									return
								}
								if err := teamWork(c, sub, i, 3); err != nil {
									errc <- err
									return
								}
								slot := sub.Slot()
								sub.Lock()
								err = sub.Destroy(c, world)
								sub.Unlock()
								slots.remove(slot)
								if err != nil {
									errc <- err
									return
								}
							}
							errc <- nil
						}()
					}
					var all []error
					for range teams {
						if err := <-errc; err != nil {
							all = append(all, err)
						}
					}
					if err := errors.Join(all...); err != nil {
						return err
					}
					for _, tm := range teams {
						if err := tm.Destroy(c, world); err != nil {
							return err
						}
					}
					if got := freeSlots(world); !slices.Equal(got, slotRange(1, testTeams)) {
						return fmt.Errorf("free slots %v after every team was destroyed, want 1..%d", got, testTeams-1)
					}
					return world.Barrier(c)
				})
			})
		}
	}
}

// TestTakeSlotsRotation: the lowest free slots, or from the rot-th set bit
// on, wrapping, across bitmap words.
func TestTakeSlotsRotation(t *testing.T) {
	free := []uint64{1<<3 | 1<<63, 0, 1 << 1} // slots 3, 63, 129
	for _, tc := range []struct {
		n, rot int
		want   []int
	}{
		{1, 0, []int{3}},
		{2, 0, []int{3, 63}},
		{3, 0, []int{3, 63, 129}},
		{1, 1, []int{63}},
		{2, 2, []int{129, 3}},
		{3, 4, []int{63, 129, 3}},
	} {
		got, err := takeSlots(0, "test", free, 3, 150, tc.n, tc.rot)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "n %d rot %d", tc.n, tc.rot)
	}
	_, err := takeSlots(0, "test", free, 3, 150, 4, 0)
	assert.Error(t, err)
}

func TestSlotTableClaims(t *testing.T) {
	s := newSlotTable(70) // two words, the second partly used
	avail := func() []uint64 { a, _ := s.available(); return a }
	all := []uint64{^uint64(0) &^ 1, 1<<6 - 1}
	a, n := s.available()
	assert.Equal(t, all, a)
	assert.Equal(t, 69, n)
	require.True(t, s.claim([]int{1, 65}))
	assert.False(t, s.claim([]int{2, 65}), "slot 65 is pending")
	assert.False(t, s.claim([]int{70}), "no slot 70")
	assert.Equal(t, []uint64{all[0] &^ 2, all[1] &^ 2}, avail())
	s.settle([]int{1, 65}, false)
	assert.Equal(t, all, avail(), "a failed claim gives the slots back")
	require.True(t, s.claim([]int{2, 69}))
	s.settle([]int{2, 69}, true)
	assert.Equal(t, []uint64{all[0] &^ 4, all[1] &^ (1 << 5)}, avail())
	s.release(69)
	s.release(2)
	assert.Equal(t, all, avail())
}
