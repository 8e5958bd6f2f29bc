package verbs

import (
	"os"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// Debian 12's rdma-core (44) has dma-buf umems; HaveUmemDmabuf must see
// them in the loaded libmlx5, and must say no for an older release.
func TestHaveUmemDmabuf(t *testing.T) {
	if err := load(); err != nil {
		requireRDMACore(t, "rdma-core's libraries do not load (%v)", err)
	}
	assert.True(t, HaveUmemDmabuf(), "libmlx5 of rdma-core >= 43 takes MLX5DV_UMEM_MASK_DMABUF")
	for name, want := range map[string]int{
		"/usr/lib/x86_64-linux-gnu/libmlx5.so.1.24.44.0": 44,
		"libmlx5.so.1.22.42.0":                           42,
		"libmlx5.so.1":                                   -1,
		"libmlx5.so.1.25.58mlnx":                         -1,
		"libmlx5-rdmav34.so":                             -1,
	} {
		assert.Equal(t, want, releaseOf(name), name)
	}
}

// GPUQueuesUsable takes the devx path only when every piece is there and
// otherwise names the first missing one, as ErrNotSupported with the hint.
func TestGPUQueuesUsable(t *testing.T) {
	ok := Caps{Device: "mlx5_0", HeaderDma: true, DevX: true, UAR: true, GPUChecked: true, GPUDmabuf: true}
	require.NoError(t, GPUQueuesUsable(ok))
	unchecked := ok
	unchecked.GPUChecked, unchecked.GPUDmabuf = false, false
	require.NoError(t, GPUQueuesUsable(unchecked), "the GPU's part not asked yet: not a refusal")

	devxErr := fail("mlx5dv_open_device", "mlx5_0", ", MLX5DV_CONTEXT_FLAGS_DEVX", 95)
	for _, tc := range []struct {
		name string
		edit func(*Caps)
		want string
	}{
		{"old rdma-core", func(k *Caps) { k.HeaderDma = false }, "the loaded libmlx5 lacks dma-buf umems (mlx5dv_devx_umem_reg_ex with MLX5DV_UMEM_MASK_DMABUF"},
		{"devx refused", func(k *Caps) { k.DevX, k.DevXErr = false, devxErr },
			"no devx context: verbs: mlx5dv_open_device(mlx5_0, MLX5DV_CONTEXT_FLAGS_DEVX): operation not supported"},
		{"devx not asked", func(k *Caps) { k.DevX = false }, "the context was not opened for devx"},
		{"no UAR", func(k *Caps) { k.UAR, k.UARErr = false, errors.New("uar gone") }, "no devx UAR for the queues' doorbells: uar gone"},
		{"no EQ", func(k *Caps) { k.EQNErr = errors.New("eq gone") }, "no event queue for the CQs: eq gone"},
		{"GPU without dma-buf", func(k *Caps) { k.GPUDmabuf = false }, "the GPU does not export dma-bufs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := ok
			tc.edit(&k)
			err := GPUQueuesUsable(k)
			require.Error(t, err)
			assert.True(t, errors.Is(err, errs.ErrNotSupported), "%v must match ErrNotSupported", err)
			assert.Contains(t, err.Error(), "verbs: GPU-resident queues on mlx5_0: "+tc.want)
			assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_IBGDA_QUEUES=host")
		})
	}
	// the first missing piece is named, not a later one
	k := ok
	k.HeaderDma, k.DevX = false, false
	assert.Contains(t, GPUQueuesUsable(k).Error(), "lacks dma-buf umems")
}

// OpenDevX without a device fails like Open (nothing of devx is reached).
func TestOpenDevXWithoutDevice(t *testing.T) {
	if ents, _ := os.ReadDir("/sys/class/infiniband"); hasMLX5(ents) {
		c, err := OpenDevX("", 1, 0)
		require.NoError(t, err, "an mlx5 device is present: OpenDevX must open it (devx or not)")
		if !c.DevX {
			assert.Error(t, c.DevXErr, "a refused devx context says why")
		}
		assert.NoError(t, c.Close())
		return
	}
	_, err := OpenDevX("", 1, 0)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported))
	assert.Contains(t, err.Error(), "verbs: no mlx5 device")
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_IBGDA_NIC=soft")
}

// A devx context refuses umems when it was not opened for devx, before any
// rdma-core call.
func TestRegDmabufUmemNeedsDevX(t *testing.T) {
	c := &Context{Name: "mlx5_9"}
	_, err := c.RegDmabufUmem(3, 0, 65536)
	require.ErrorIs(t, err, errs.ErrNotSupported)
	assert.Contains(t, err.Error(), "mlx5dv_devx_umem_reg_ex(mlx5_9): the context was not opened for devx")
	_, err = c.CreateDevXQP(DevXQPSpec{SQWQEBBs: 256, CQEs: 64})
	require.ErrorIs(t, err, errs.ErrNotSupported, "CreateDevXQP checks the capabilities first")
}
