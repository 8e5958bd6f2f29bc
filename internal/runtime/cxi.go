package runtime

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cxi"
	"github.com/goshmem/goshmem/internal/errs"
)

// cxiBackend is the CXI triggered path (shmem.WithCXI): this PE's
// cxi.Rank over the job's bootstrap (the endpoint names and memory keys
// travel in the phase's exchange), its shared region mapped into the GPU
// (cuMemHostRegister, DEVICEMAP) when the PE has one, the device state's
// cxi_state pointed at it, so every module loaded with LoadModule (before
// or after) can call goshmemx_cxi_barrier / _am_send / _am_poll, and the
// monitor started. Without a Slingshot NIC the GPU's trigger is forwarded
// by the host monitor (emulation; see cxi.Rank.Emulated).
type cxiBackend struct {
	r    *Runtime
	cfg  cxi.Config
	rank *cxi.Rank
}

// cxiRT is the connected path, for the API.
type cxiRT struct {
	rank   *cxi.Rank
	mapped unsafe.Pointer // host address registered with the GPU, nil if none
	dev    uint64         // its device address
}

func (b *cxiBackend) Name() string { return "CXI" }

func (b *cxiBackend) Setup() ([]byte, error) {
	r := b.r
	c := b.cfg
	if c.Engine == "" {
		c.Engine = r.Settings.String("GOSHMEM_CXI_ENGINE")
	}
	if c.Provider == "" {
		c.Provider = r.Settings.String("GOSHMEM_CXI_PROVIDER")
	}
	if c.Timeout == 0 {
		c.Timeout = r.Policy.Timeout
	}
	rank, rec, err := cxi.Prepare(r.Me, r.NPEs, c)
	if err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "CXI triggered path")
	}
	b.rank = rank
	return rec, nil
}

func (b *cxiBackend) Connect(_ int, recs [][]byte) ([]byte, bool, error) {
	r := b.r
	if err := b.rank.Connect(recs); err != nil {
		return nil, false, errs.Wrap(err, r.Me, "Init", "CXI triggered path")
	}
	x := &cxiRT{rank: b.rank}
	r.cxi = x
	if r.GPU != nil {
		base, n := b.rank.Region()
		d, err := r.GPU.MapHost(base, n)
		if err != nil {
			return nil, false, errs.Wrap(err, r.Me, "Init", "CXI: mapping the %d B trigger region into the GPU", n)
		}
		x.mapped, x.dev = base, uint64(d)
		if err := r.GPU.SetCXIState(x.dev); err != nil {
			return nil, false, errs.Wrap(err, r.Me, "Init", "CXI: device state")
		}
	}
	if err := b.rank.Start(); err != nil {
		return nil, false, errs.Wrap(err, r.Me, "Init", "CXI: arming the first instances")
	}
	return nil, true, nil
}

func (b *cxiBackend) Drain(string, time.Duration) error { return nil }
func (b *cxiBackend) Diagnose() string                  { return "" }

func (b *cxiBackend) Info() []string {
	x := b.r.cxi
	if x == nil {
		return nil
	}
	where := "host only (no GPU)"
	if x.dev != 0 {
		where = fmt.Sprintf("GPU cxi_state %#x", x.dev)
	}
	return []string{fmt.Sprintf("PE %d: cxi %s, %s; %s", b.r.Me, x.rank.Engine(), where, x.rank.Emulated())}
}

// Close releases the rank and its GPU mapping (before the GPU context its
// region is mapped into).
func (b *cxiBackend) Close() error {
	r := b.r
	x := r.cxi
	r.cxi = nil
	if x != nil && r.GPU != nil {
		_ = r.GPU.SetCXIState(0)
		if x.mapped != nil {
			_ = r.GPU.UnmapHost(x.mapped)
		}
	}
	if b.rank != nil {
		b.rank.Close()
		b.rank = nil
	}
	return nil
}

// StopCXI stops the CXI monitor (no more writes from this PE); Finalize
// calls it after its last barrier, before the bootstrap barrier that
// precedes Close on every PE.
func (r *Runtime) StopCXI() {
	if r.cxi != nil {
		r.cxi.rank.Stop()
	}
}

// CXI is this PE's rank of the triggered path and its device state
// address (0 without a GPU); nil when Init was not given WithCXI.
func (r *Runtime) CXI() (*cxi.Rank, uint64) {
	if r.cxi == nil {
		return nil, 0
	}
	return r.cxi.rank, r.cxi.dev
}
