package verbs

import (
	"os"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// Without an mlx5 device (CI, the dev machine: ibv_get_device_list finds
// none) Probe fails with ErrNotSupported and a hint; with one (a ConnectX
// host: /sys/class/infiniband/mlx5_* exists) it must succeed.
func TestProbe(t *testing.T) {
	d, err := Probe()
	if ents, _ := os.ReadDir("/sys/class/infiniband"); hasMLX5(ents) {
		require.NoError(t, err, "an mlx5 device is present: Probe must open it")
		assert.NotEmpty(t, d.Name)
		assert.Positive(t, d.MaxQP)
		return
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported), "error %v must match ErrNotSupported", err)
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_IBGDA_NIC=soft")
}

func hasMLX5(ents []os.DirEntry) bool {
	for _, e := range ents {
		if len(e.Name()) >= 4 && e.Name()[:4] == "mlx5" {
			return true
		}
	}
	return false
}
