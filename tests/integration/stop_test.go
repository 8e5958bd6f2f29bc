package integration

// Contexts and Finalize (issue 38, items 1-3): a PE whose context
// (WithContext) is done while it is blocked leaves the job, and the other
// PEs' waits fail naming it; a barrier ended by its call's context leaves
// the world team out of step on every PE. Both on shm and over ofi.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transports are the modes every test here runs under.
var transports = map[string][]string{"shm": nil, "ofi": {"GOSHMEM_TRANSPORT=ofi"}}

// TestContextLeave: spmd -mode ctx-leave, PE 1 blocked in a wait, a
// barrier or a lock when its context is cancelled.
func TestContextLeave(t *testing.T) {
	needMPI(t)
	for tr, env := range transports {
		for _, wait := range []string{"wait", "barrier", "lock"} {
			for _, np := range []int{2, 4} {
				t.Run(fmt.Sprintf("%s/%s/np%d", tr, wait, np), func(t *testing.T) {
					// Every PE reports before any exits: PE 1 ends without
					// the bootstrap's finalize.
					e := append(append([]string(nil), env...), "SPMD_EXIT_SYNC="+t.TempDir())
					r := job(t, np, 60*time.Second, e, "-mode", "ctx-leave", "-fault-wait", wait)
					for pe := 0; pe < np; pe++ {
						assert.Contains(t, r.out, fmt.Sprintf("ctx-leave: PE %d: ok", pe), "output:\n%s", r.out)
					}
					assert.NotContains(t, r.out, "fatal error")
				})
			}
		}
	}
}

// TestContextOutOfStep: spmd -mode ctx-step, BarrierAllContext's deadline
// passes on every PE but PE 1, which arrives late.
func TestContextOutOfStep(t *testing.T) {
	needMPI(t)
	for tr, env := range transports {
		for _, np := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/np%d", tr, np), func(t *testing.T) {
				e := append(append([]string(nil), env...), "SPMD_EXIT_SYNC="+t.TempDir())
				r := job(t, np, 60*time.Second, e, "-mode", "ctx-step")
				for pe := 0; pe < np; pe++ {
					assert.Contains(t, r.out, fmt.Sprintf("ctx-step: PE %d: ok", pe), "output:\n%s", r.out)
				}
			})
		}
	}
}

// TestContextLeaveRace: ctx-leave with the spmd program built with -race
// (a PE's context done while it waits or queues for a lock, then its
// Finalize, while the other PE's wait fails naming it): every PE reports
// ok and the race detector reports nothing, at 2 PEs on shm.
func TestContextLeaveRace(t *testing.T) {
	needMPI(t)
	bin := filepath.Join(t.TempDir(), "spmd-race")
	out, err := exec.Command(goTool(), "build", "-race", "-o", bin, "./spmd").CombinedOutput()
	require.NoError(t, err, "go build -race ./spmd: %s", out)
	old := spmdBin
	spmdBin = bin
	t.Cleanup(func() { spmdBin = old })
	for _, wait := range []string{"wait", "lock"} {
		t.Run(wait, func(t *testing.T) {
			r := job(t, 2, 120*time.Second, []string{"SPMD_EXIT_SYNC=" + t.TempDir()}, "-mode", "ctx-leave", "-fault-wait", wait)
			for pe := 0; pe < 2; pe++ {
				assert.Contains(t, r.out, fmt.Sprintf("ctx-leave: PE %d: ok", pe), "output:\n%s", r.out)
			}
			assert.NotContains(t, r.out, "DATA RACE", "output:\n%s", r.out)
		})
	}
}
