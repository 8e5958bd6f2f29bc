package verbs

import (
	"os"
	"testing"
	"unsafe"

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

// Open without an mlx5 device (CI, the dev machine) fails with
// ErrNotSupported naming what was missing, with the hint; on a ConnectX
// host it opens and closes.
func TestOpenWithoutDevice(t *testing.T) {
	c, err := Open("", 1, 0)
	if ents, _ := os.ReadDir("/sys/class/infiniband"); hasMLX5(ents) {
		require.NoError(t, err, "an mlx5 device is present: Open must open it")
		assert.NotEmpty(t, c.Name)
		assert.NoError(t, c.Close())
		return
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported), "error %v must match ErrNotSupported", err)
	assert.Contains(t, err.Error(), "verbs: no mlx5 device")
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_GPU_TRANSPORT=proxy")

	_, err = Open("mlx5_7", 1, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no mlx5 device named mlx5_7")
}

// The error of a failed verbs call names the call, the device, the
// arguments and errno; "cannot run here" errnos match ErrNotSupported.
func TestFailMessage(t *testing.T) {
	err := fail("ibv_create_cq", "mlx5_0", ", CQ of 64", 12) // ENOMEM
	assert.Equal(t, "verbs: ibv_create_cq(mlx5_0, CQ of 64): cannot allocate memory", err.Error())
	assert.False(t, errors.Is(err, errs.ErrNotSupported))
	err = fail("ibv_reg_dmabuf_mr", "mlx5_1", "", 95) // EOPNOTSUPP
	assert.True(t, errors.Is(err, errs.ErrNotSupported))
	assert.Contains(t, err.Error(), "ibv_reg_dmabuf_mr(mlx5_1): operation not supported")
}

// Ring is the CPU-assisted doorbell store: 8 bytes, in one piece, at the
// register's address (here a word of memory standing in for the UAR).
func TestRingStoresTheDoorbell(t *testing.T) {
	words := make([]uint64, 3)
	Ring(uintptr(unsafe.Pointer(&words[1])), 0x0102030405060708)
	assert.Equal(t, []uint64{0, 0x0102030405060708, 0}, words)
}
