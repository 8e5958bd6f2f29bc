package e2e

import (
	"os"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/cxi"
)

func TestMain(m *testing.M) {
	os.Setenv("FI_SOCKETS_PE_WAITTIME", "0")
	os.Exit(m.Run())
}

// The device header's barrier and active messages, run by C threads against
// real libfabric deferred work (sockets) and the Go monitor; the trigger
// forward is the emulation of the CXI MMIO write.
func TestHeaderOnDeferredWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		cfg  cxi.Config
	}{
		{"sockets/P=3", 3, cxi.Config{Engine: cxi.EngineFabric, Provider: "sockets", AM: true, Timeout: 20 * time.Second}},
		{"sockets/P=2/lag", 2, cxi.Config{Engine: cxi.EngineFabric, Provider: "sockets", AM: true, Timeout: 20 * time.Second,
			RearmLag: 200 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const iters, am = 30, 8
			a := newArrivals(tc.n)
			defer a.free()
			res := make([]result, tc.n)
			stats := make([]cxi.Stats, tc.n)
			err := local.Run(tc.n, func(b bootstrap.Bootstrap) error {
				r, err := cxi.NewRank(b.Rank(), tc.n, b.Allgather, tc.cfg)
				if err != nil {
					return err
				}
				defer r.Close()
				if err := r.Start(); err != nil {
					return err
				}
				res[b.Rank()] = run(r.State(), b.Rank(), tc.n, iters, am, a)
				stats[b.Rank()] = r.Stats()
				if res[b.Rank()].RC != 0 {
					return errors.Newf("PE %d: GOSHMEMX_CXI code %d", b.Rank(), res[b.Rank()].RC)
				}
				return b.Barrier()
			})
			require.NoError(t, err)
			for pe := range res {
				assert.Zero(t, res[pe].Violations, "PE %d: barrier property", pe)
				assert.Equal(t, uint64(am*tc.n), res[pe].AMGot, "PE %d: messages received", pe)
				assert.Zero(t, res[pe].AMBad, "PE %d: message contents and order", pe)
				assert.LessOrEqual(t, stats[pe].BarrierMaxArmed, 2*cxi.Rounds(tc.n))
				if tc.cfg.RearmLag > 0 {
					assert.Greater(t, stats[pe].Fallbacks, uint64(0), "PE %d: lag exercised the fallback", pe)
				} else {
					assert.Greater(t, stats[pe].Forwarded, uint64(0), "PE %d", pe)
				}
				t.Logf("PE %d: %d barriers mean %.1f us max %.1f us; %+v", pe, iters,
					float64(res[pe].TotalNS)/iters/1e3, float64(res[pe].MaxNS)/1e3, stats[pe])
			}
		})
	}
}
