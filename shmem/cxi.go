package shmem

import (
	"github.com/goshmem/goshmem/cxi"
	"github.com/goshmem/goshmem/internal/errs"
)

// WithCXI turns on the CXI GPU-triggered path at Init (every PE must pass
// it): Init opens this PE's cxi.Rank over the job's bootstrap, maps its
// shared region into the GPU when the PE has one and points the device
// state's cxi_state at it, so every module loaded with LoadModule can call
// goshmemx_cxi_barrier / _am_send / _am_poll; Finalize stops and closes
// it. Empty cfg.Engine / cfg.Provider come from GOSHMEM_CXI_ENGINE /
// GOSHMEM_CXI_PROVIDER; a zero cfg.Timeout takes GOSHMEM_TIMEOUT. Without
// a Slingshot NIC the GPU's trigger is forwarded by the host monitor
// (emulation; see cxi.Rank.Emulated).
func WithCXI(cfg cxi.Config) Option {
	return func(c *config) { c.cxi = &cfg }
}

// CXI returns this PE's rank of the triggered path: the Go API (Barrier,
// AMSend, AMPoll, Dispatch), the monitor's Stats and the emulation label.
// ErrNotSupported when Init was not given WithCXI.
func CXI() (cxi.Rank, error) {
	r, err := enter("CXI")
	if err != nil {
		return nil, err
	}
	defer r.leave()
	rank, _ := r.c.CXI()
	if rank == nil {
		return nil, errs.Hint(errs.ErrNotSupported, "pass shmem.WithCXI(cxi.Config{...}) to Init on every PE",
			r.me, "CXI", "the CXI triggered path was not requested at Init")
	}
	return rank, nil
}

// CXIDeviceState is the device address of this PE's goshmemi_cxi_state_t
// (what the device state's cxi_state holds), 0 without a GPU or CXI.
func CXIDeviceState() uint64 {
	r := current.Load()
	if r == nil {
		return 0
	}
	_, dev := r.c.CXI()
	return dev
}
