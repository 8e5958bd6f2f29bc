package shmem

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/cxi"
	"github.com/goshmem/goshmem/internal/errs"
)

// The CXI triggered path (DESIGN §7) as part of the runtime: with WithCXI,
// Init opens this PE's cxi.Rank over the job's bootstrap (the endpoint
// names and memory keys travel in one allgather), maps its shared region
// into the GPU (cuMemHostRegister, DEVICEMAP) when the PE has one, points
// the device state's cxi_state at it, so every module loaded with
// LoadModule (before or after) can call goshmemx_cxi_barrier /
// _am_send / _am_poll, and starts the monitor. Finalize stops and closes it.

type cxiRT struct {
	rank   *cxi.Rank
	mapped unsafe.Pointer // host address registered with the GPU, nil if none
	dev    uint64         // its device address
}

// WithCXI turns on the CXI GPU-triggered path at Init (every PE must pass
// it). Empty cfg.Engine / cfg.Provider come from GOSHMEM_CXI_ENGINE /
// GOSHMEM_CXI_PROVIDER; a zero cfg.Timeout takes GOSHMEM_TIMEOUT. Without a
// Slingshot NIC the GPU's trigger is forwarded by the host monitor
// (emulation; see cxi.Rank.Emulated).
func WithCXI(cfg cxi.Config) Option {
	return func(c *config) { c.cxi = &cfg }
}

// CXI returns this PE's rank of the triggered path: the Go API (Barrier,
// AMSend, AMPoll, Dispatch), the monitor's Stats and the emulation label.
// ErrNotSupported when Init was not given WithCXI.
func CXI() (*cxi.Rank, error) {
	r, err := rt("CXI")
	if err != nil {
		return nil, err
	}
	if r.cxi == nil {
		return nil, errs.Hint(errs.ErrNotSupported, "pass shmem.WithCXI(cxi.Config{...}) to Init on every PE",
			r.me, "CXI", "the CXI triggered path was not requested at Init")
	}
	return r.cxi.rank, nil
}

// CXIDeviceState is the device address of this PE's goshmemi_cxi_state_t
// (what the device state's cxi_state holds), 0 without a GPU or CXI.
func CXIDeviceState() uint64 {
	r := current.Load()
	if r == nil || r.cxi == nil {
		return 0
	}
	return r.cxi.dev
}

// openCXI runs at the end of Init on every PE (collective when requested).
func (r *runtime) openCXI(cfg *cxi.Config) error {
	if cfg == nil {
		return nil
	}
	c := *cfg
	if c.Engine == "" {
		c.Engine = r.settings.String("GOSHMEM_CXI_ENGINE")
	}
	if c.Provider == "" {
		c.Provider = r.settings.String("GOSHMEM_CXI_PROVIDER")
	}
	if c.Timeout == 0 {
		c.Timeout = r.policy.Timeout
	}
	rank, err := cxi.NewRank(r.me, r.npes, r.boot.Allgather, c)
	if err != nil {
		return errors.Wrap(err, "goshmem: Init: CXI triggered path")
	}
	x := &cxiRT{rank: rank}
	r.cxi = x
	if r.gpu != nil {
		base, n := rank.Region()
		d, err := r.gpu.MapHost(base, n)
		if err != nil {
			return errors.Wrapf(err, "goshmem: PE %d: Init: CXI: mapping the %d B trigger region into the GPU", r.me, n)
		}
		x.mapped, x.dev = base, uint64(d)
		if err := r.gpu.SetCXIState(x.dev); err != nil {
			return errors.Wrapf(err, "goshmem: PE %d: Init: CXI: device state", r.me)
		}
	}
	if err := rank.Start(); err != nil {
		return errors.Wrapf(err, "goshmem: PE %d: Init: CXI: arming the first instances", r.me)
	}
	if r.settings.Bool("GOSHMEM_INFO") {
		where := "host only (no GPU)"
		if x.dev != 0 {
			where = fmt.Sprintf("GPU cxi_state %#x", x.dev)
		}
		fmt.Fprintf(os.Stderr, "goshmem: info: PE %d: cxi %s, %s; %s\n", r.me, rank.Engine(), where, rank.Emulated())
	}
	return nil
}

// stopCXI stops the monitor (no more writes from this PE); called by
// Finalize after the last barrier, before the bootstrap barrier that
// precedes closeCXI on every PE.
func (r *runtime) stopCXI() {
	if r.cxi != nil {
		r.cxi.rank.Stop()
	}
}

// closeCXI releases the rank (and its GPU mapping).
func (r *runtime) closeCXI() {
	x := r.cxi
	if x == nil {
		return
	}
	r.cxi = nil
	if r.gpu != nil {
		_ = r.gpu.SetCXIState(0)
		if x.mapped != nil {
			_ = r.gpu.UnmapHost(x.mapped)
		}
	}
	x.rank.Close()
}
