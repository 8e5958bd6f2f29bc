package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTeams: the team slots (GOSHMEM_MAX_TEAMS) on shm under mpirun, at 2
// and 4 PEs.
//   - many: spmd -mode teams-many with the default settings: 1,086 teams
//     (1,088 slots less the world and the node team) alive at once on every
//     PE, a sync on each, Reduce on the first, a middle and the last with
//     values checked, the split past the last slot refused on every PE
//     naming GOSHMEM_MAX_TEAMS, every other team destroyed and made again.
//   - small: the same with GOSHMEM_MAX_TEAMS=8, where the slots run out
//     after 6 splits.
//   - suite: the suite's team checks with GOSHMEM_MAX_TEAMS=64, where
//     coll/team-churn fills every slot and the churns make more teams than
//     there are slots.
//
// The mismatch of GOSHMEM_MAX_TEAMS across PEs and a value out of range
// are cases of TestInitSettingDiffers and TestInitLocalFailure.
func TestTeams(t *testing.T) {
	needMPI(t)
	for _, np := range []int{2, 4} {
		for _, c := range []struct {
			name  string
			env   []string
			teams int
		}{
			{"many", nil, 1086},
			{"small", []string{"GOSHMEM_MAX_TEAMS=8"}, 6},
		} {
			t.Run(fmt.Sprintf("%s/np%d", c.name, np), func(t *testing.T) {
				r := job(t, np, 3*time.Minute, c.env, "-mode", "teams-many")
				t.Logf("np %d %v: exit %d after %v", np, c.env, r.code, r.wall.Round(time.Millisecond))
				require.Equal(t, 0, r.code, "output:\n%s", r.out)
				for pe := 0; pe < np; pe++ {
					assert.Contains(t, r.out, fmt.Sprintf("teams-many: PE %d: ok: %d teams alive at once", pe, c.teams))
				}
			})
		}
		t.Run(fmt.Sprintf("suite/np%d", np), func(t *testing.T) {
			suite(t, np, []string{"GOSHMEM_MAX_TEAMS=64"}, "-run", "^(coll/team|teams16/)")
		})
	}
}
