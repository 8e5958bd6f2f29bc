package verbs

import (
	"os"
	"testing"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
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

// TestLoadSystemLibraries loads the installed rdma-core: every function
// abi.h lists resolves at the version it names, and the release is read
// from libmlx5's file name.
func TestLoadSystemLibraries(t *testing.T) {
	setLibraries("", "")
	t.Cleanup(func() { setLibraries("", "") })
	r, err := loaded()
	if err != nil {
		requireRDMACore(t, "rdma-core's libraries do not load: %v", err)
	}
	if r >= 0 {
		assert.GreaterOrEqual(t, r, minRelease, "a release that loads has every function")
	}
	t.Logf("libmlx5 of rdma-core release %d", r)
}

// A missing or too-old library fails every entry point with an error that
// names the setting that asked for rdma-core, the library and dlerror's
// text, matching ErrNotSupported, with the hint.
func TestLoadMissingLibrary(t *testing.T) {
	t.Cleanup(func() { setLibraries("", "") })
	type loadCase struct {
		name, ibverbs, mlx5 string
		want                string
	}
	cases := []loadCase{
		{"no libibverbs", "libgoshmem-no-such-ibverbs.so.1", "",
			`dlopen("libgoshmem-no-such-ibverbs.so.1") (the verbs library): libgoshmem-no-such-ibverbs.so.1: cannot open shared object file`},
		{"libibverbs too old", "libc.so.6", "",
			`"libc.so.6" is older than rdma-core 35: no ibv_get_device_list@IBVERBS_1.1: `},
	}
	if setLibraries("", ""); load() == nil {
		// with the real libibverbs: what libmlx5 lacks
		cases = append(cases,
			loadCase{"no libmlx5", "", "libgoshmem-no-such-mlx5.so.1",
				`dlopen("libgoshmem-no-such-mlx5.so.1") (the mlx5 provider; "libibverbs.so.1" loaded): libgoshmem-no-such-mlx5.so.1: cannot open shared object file`},
			loadCase{"libmlx5 too old", "", libIBVerbs,
				`"libibverbs.so.1" is older than rdma-core 35: no mlx5dv_is_supported@MLX5_1.8: `})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setLibraries(tc.ibverbs, tc.mlx5)
			_, perr := Probe()
			_, oerr := Open("", 1, 0)
			_, derr := OpenDevX("mlx5_0", 1, 0)
			for _, err := range []error{perr, oerr, derr} {
				require.Error(t, err)
				assert.True(t, errors.Is(err, errs.ErrNotSupported), "%v must match ErrNotSupported", err)
				assert.Contains(t, err.Error(), "goshmem: verbs: GOSHMEM_GPU_TRANSPORT=ibgda with GOSHMEM_IBGDA_NIC=mlx5 loads rdma-core at run time: ")
				assert.Contains(t, err.Error(), tc.want)
				assert.Contains(t, errors.FlattenHints(err), "libibverbs1 and ibverbs-providers")
				assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_GPU_TRANSPORT=proxy")
			}
			assert.Equal(t, perr.Error(), oerr.Error(), "one attempt, one error")
			assert.False(t, HaveUmemDmabuf())
		})
	}
}
