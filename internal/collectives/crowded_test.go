package collectives

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goshmem/goshmem/internal/bootstrap"
)

// crowdedComm is a directComm on a node with more than two PEs per core.
type crowdedComm struct{ directComm }

func (crowdedComm) Crowded() bool { return true }

// TestCrowdedSyncs: on a crowded node the direct syncs make
// no inline polls (every wait goes to WaitGE) and still agree, flat (4
// members) and by dissemination (2 and 17); a one-sync data collective
// still computes its result.
func TestCrowdedSyncs(t *testing.T) {
	for _, n := range []int{2, 4, 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := newFakeWorld(n, testPolicy)
			w.direct = true
			spmdIn(t, w, func(fc *fakeComm, world *Team, b bootstrap.Bootstrap) error {
				c := crowdedComm{directComm{fc}}
				for range 20 {
					if err := world.Barrier(c); err != nil {
						return err
					}
				}
				assert.Equal(t, 0, world.polls, "PE %d", fc.me)
				putU64(c.Local(srcOff, 8), uint64(fc.me+1))
				if err := Reduce[int64](c, world, OpSum, dstOff, srcOff, 1); err != nil {
					return err
				}
				assert.Equal(t, uint64(n*(n+1)/2), getU64(c.Local(dstOff, 8)), "PE %d", fc.me)
				return b.Barrier()
			})
		})
	}
	// Without the hint the syncs poll inline first.
	spmdPath(t, 2, true, func(c Comm, fc *fakeComm, world *Team) error {
		err := world.Barrier(c)
		assert.Equal(t, directPolls, world.polls)
		return err
	})
}
