package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/ibgda"
)

// The device layout of a ConnectX QP: host queues (rdma-core's) go through
// their GPU mapping and carry the host-queue flag; GPU queues (devx, in the
// umem block) are device addresses already and carry no flag.
func TestMLX5RingsByPlacement(t *testing.T) {
	toDev := func(a uint64) uint64 { return a + 0x7000_0000_0000 }
	host := &verbs.QP{QPN: 0x11, SQWQEBB: 256, CQEs: 64, SQBuf: 0x1000, DBRec: 0x2000, CQBuf: 0x3000, CQDBRec: 0x4000}
	var d ibgda.QPDesc
	mlx5Rings(host, toDev, &d)
	assert.Equal(t, ibgda.QPDesc{QPN: 0x11, SQWQEBBs: 256, CQEs: 64, SQBuf: 0x7000_0000_1000, DBRec: 0x7000_0000_2000,
		CQBuf: 0x7000_0000_3000, CQDBRec: 0x7000_0000_4000}, d)

	gpu := &verbs.QP{GPU: true, QPN: 0x22, SQWQEBB: 256, CQEs: 64, SQBuf: 0x7f00_0001_0000, DBRec: 0x7f00_0001_f000,
		CQBuf: 0x7f00_0001_4000, CQDBRec: 0x7f00_0001_f020}
	d = ibgda.QPDesc{}
	mlx5Rings(gpu, toDev, &d)
	assert.Equal(t, ibgda.QPDesc{QPN: 0x22, SQWQEBBs: 256, CQEs: 64, SQBuf: 0x7f00_0001_0000, DBRec: 0x7f00_0001_f000,
		CQBuf: 0x7f00_0001_4000, CQDBRec: 0x7f00_0001_f020}, d)
	assert.Nil(t, gpu.Ranges(), "GPU queues have no host pages to map")
	assert.Nil(t, gpu.DBRecBytes(), "the CPU-assisted ringer cannot read a GPU doorbell record")

	assert.Equal(t, uint32(ibgda.StateHostQueues), mlx5StateFlags(false))
	assert.Equal(t, uint32(0), mlx5StateFlags(true))
}

// Without an open ConnectX the registration of GPU memory (the heap, a
// grown heap, a RegisterDevice buffer) fails with ErrNotSupported naming
// the NIC setting, what was to be registered, and the call.
func TestMLX5RegisterWithoutDevice(t *testing.T) {
	_, err := mlx5RegGPU(nil, nil, 3, "RegisterDevice", "the registered GPU buffer", 0x7f00_0000_1000, 4096)
	assert.ErrorIs(t, err, errs.ErrNotSupported)
	assert.ErrorContains(t, err, "PE 3: RegisterDevice: GOSHMEM_IBGDA_NIC=mlx5: no open mlx5 device to register the registered GPU buffer (4096 bytes at 0x7f0000001000)")
	m := &mlx5IBGDA{me: 2}
	_, _, err = m.regBuffer(0x7f00_0000_2000, 64, 0)
	assert.ErrorIs(t, err, errs.ErrNotSupported)
	assert.ErrorContains(t, err, "PE 2: RegisterDevice:")
}
