package cxi

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
)

// Config configures one rank of the triggered path.
type Config struct {
	// Engine is auto, fabric or software (GOSHMEM_CXI_ENGINE); see the
	// package doc. auto and fabric need a provider with deferred work.
	Engine string
	// Provider is the libfabric provider ("" or auto: cxi where present,
	// else sockets; software: tcp;ofi_rxm).
	Provider string
	// Budget bounds the armed NIC state (zero value: Slingshot11).
	Budget Budget
	// AM adds one active-message channel per rank.
	AM bool
	// Timeout is the waiters' deadline per wait (0: none). A stopped
	// monitor ends every wait with ErrTimeout regardless.
	Timeout time.Duration
	// ReadySpins is how many polls a trigger waits for its slot's
	// readiness epoch before it leaves the instance to the host fallback
	// (0: 4096, as GOSHMEMX_CXI_READY_SPINS).
	ReadySpins int
	// RearmLag delays every re-arm after a retirement (fault injection:
	// monitor lag; the fallback then completes the instances).
	RearmLag time.Duration
	// Spin keeps the monitor polling without ever sleeping (benchmarks).
	Spin bool
}

// Stats are the monitor's counters (a consistent-enough snapshot).
type Stats struct {
	Engine          string
	Deferred        bool   // records run as libfabric deferred work
	Armed           int    // deferred records armed now
	MaxArmed        int    // most records ever armed at once
	BarrierMaxArmed int    // most barrier records armed at once (<= 2R)
	Arms            uint64 // instances armed
	Retired         uint64 // instances retired by bookkeeping
	Forwarded       uint64 // doorbells forwarded with fi_cntr_add (emulation of the CXI MMIO write)
	MMIOTriggers    uint64 // doorbells whose NIC counter the GPU advanced itself (real CXI MMIO)
	Fallbacks       uint64 // instances completed by host-issued writes
	FallbackWrites  uint64
	BudgetDeferrals uint64 // re-arms postponed because the DWQ budget was full
	Overruns        uint64 // triggers beyond what was armed (clamped: back-pressure)
	Credits         uint64 // active-message credits returned
	ReadyStalls     uint64 // triggers that found their slot not yet armed
	// MaxLoopGap is the longest time between two passes of the monitor
	// loop: the longest a trigger could wait for its forward, retirement
	// or re-arm (the monitor's stall).
	MaxLoopGap time.Duration
	// ArmTime is the monitor's time spent re-arming (counter resets, source
	// words, FI_QUEUE_WORK records, readiness epoch) over ArmOps records:
	// ArmTime/ArmOps is the re-arm cost per operation.
	ArmTime time.Duration
	ArmOps  uint64
}

// Rank is one PE's side of the triggered path: its endpoint, its shared
// region (goshmemi_cxi_state_t and the AM channels), and its monitor.
type Rank struct {
	pe, n, rounds int
	cfg           Config
	eng           engine
	link          *link
	mem           []byte
	base          unsafe.Pointer
	chans         []*channel

	armed      int
	barArmed   int
	stats      Stats
	mu         sync.Mutex // guards stats snapshots
	monErr     error
	stopCh     chan struct{}
	done       chan struct{}
	started    bool
	stopped    atomic.Bool
	resetPeaks atomic.Bool // the monitor restarts MaxLoopGap
	closeOnce  sync.Once
	amRecvNext []uint64 // Go API receive side
	creditBusy bool     // monitor: a credit write is in flight
	creditNext int      // monitor: next peer to look at for credits
}

// NewRank sets up rank pe of n: every rank calls it (allgather exchanges
// endpoint names and memory keys, like bootstrap.Allgather), then Start.
func NewRank(pe, n int, allgather func([]byte) ([]byte, error), cfg Config) (*Rank, error) {
	if n < 1 || pe < 0 || pe >= n {
		return nil, errs.New(errs.ErrPEOutOfRange, pe, "cxi: NewRank", "rank %d of %d: want 0 <= rank < n, n >= 1", pe, n)
	}
	if cfg.Budget == (Budget{}) {
		cfg.Budget = Slingshot11
	}
	if cfg.ReadySpins <= 0 {
		cfg.ReadySpins = 4096
	}
	r := &Rank{pe: pe, n: n, rounds: Rounds(n), cfg: cfg, stopCh: make(chan struct{}), done: make(chan struct{})}
	if r.rounds > MaxRounds {
		return nil, errs.New(errs.ErrInvalidArgument, pe, "cxi: NewRank", "%d ranks need %d rounds > %d", n, r.rounds, MaxRounds)
	}
	if err := cfg.Budget.check(pe, r.rounds); err != nil {
		return nil, err
	}
	size := regionSize(n, cfg.AM)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_SHARED)
	if err != nil {
		return nil, errors.Wrapf(err, "PE %d: cxi: mmap %d B", pe, size)
	}
	r.mem, r.base = mem, unsafe.Pointer(&mem[0])
	word32(r.base, offVersion).Store(StateVersion)
	word32(r.base, offSize).Store(StateSize)
	word32(r.base, offRank).Store(uint32(pe))
	word32(r.base, offNRanks).Store(uint32(n))
	word32(r.base, offRounds).Store(uint32(r.rounds))
	word(r.base, offTimeout).Store(uint64(cfg.Timeout))
	if cfg.AM {
		word(r.base, offAMOff).Store(StateSize)
		r.amRecvNext = make([]uint64, n)
	}
	if err := r.connect(allgather); err != nil {
		r.release()
		return nil, err
	}
	r.buildChannels()
	return r, nil
}

const nameMax = 256

// connect opens the endpoint, registers the region and exchanges
// (endpoint name, key, base) records. The exchange runs on every rank even
// when this one failed locally (its record then says so), so a failure on
// one rank is an error on all of them, never a hang in the allgather.
func (r *Rank) connect(allgather func([]byte) ([]byte, error)) error {
	const (
		recStatus = 0
		recLen    = 2
		recName   = 4
		recKey    = recName + nameMax
		recBase   = recKey + 8
		recSize   = recBase + 8
	)
	rec := make([]byte, recSize)
	local := r.openLocal()
	if local == nil {
		name, err := r.link.ep.Name()
		switch {
		case err != nil:
			local = err
		case len(name) > nameMax:
			local = errors.Newf("PE %d: cxi: endpoint name of %d B > %d", r.pe, len(name), nameMax)
		default:
			rec[recStatus] = 1
			binary.LittleEndian.PutUint16(rec[recLen:], uint16(len(name)))
			copy(rec[recName:], name)
			binary.LittleEndian.PutUint64(rec[recKey:], r.link.mr.Key)
			if r.link.ep.Attr.MRMode&fabric.MRVirtAddr != 0 {
				binary.LittleEndian.PutUint64(rec[recBase:], uint64(uintptr(r.base)))
			}
		}
	}
	if allgather == nil {
		if local != nil {
			return local
		}
		if r.n != 1 {
			return errs.New(errs.ErrInvalidArgument, r.pe, "cxi: NewRank", "nil allgather for a job of %d ranks", r.n)
		}
		allgather = func(b []byte) ([]byte, error) { return b, nil }
	}
	all, err := allgather(rec)
	if err != nil {
		return errors.Wrapf(err, "PE %d: cxi: exchange endpoint names", r.pe)
	}
	if local != nil {
		return local
	}
	if len(all) != len(rec)*r.n {
		return errs.New(errs.ErrNotSymmetric, r.pe, "cxi: exchange", "got %d B, want %d x %d", len(all), r.n, len(rec))
	}
	l := r.link
	l.keys, l.rbase = make([]uint64, r.n), make([]uint64, r.n)
	l.addrs = make([]uint64, r.n)
	for p := 0; p < r.n; p++ {
		b := all[p*len(rec):]
		if b[recStatus] != 1 {
			return errs.Hint(errs.ErrNotSupported, "see that PE's own error for the cause", r.pe, "cxi: exchange",
				"PE %d could not open its CXI endpoint, so no PE uses the triggered path", p)
		}
		nl := int(binary.LittleEndian.Uint16(b[recLen:]))
		a, err := l.ep.InsertAddrs(b[recName:recName+nl], 1)
		if err != nil {
			return errors.Wrapf(err, "PE %d: cxi: address of rank %d", r.pe, p)
		}
		l.addrs[p] = a[0]
		l.keys[p] = binary.LittleEndian.Uint64(b[recKey:])
		l.rbase[p] = binary.LittleEndian.Uint64(b[recBase:])
	}
	return nil
}

// openLocal opens the endpoint and registers the region (no exchange).
func (r *Rank) openLocal() error {
	ep, kind, err := openEndpoint(r.pe, r.cfg.Engine, r.cfg.Provider)
	if err != nil {
		return err
	}
	l := &link{ep: ep, base: r.base, size: len(r.mem), pending: map[uint64]func(error){}, comps: make([]fabric.Completion, 64)}
	r.link = l
	if kind == EngineSoftware {
		r.eng = &softEngine{link: l}
	} else {
		r.eng = &fabricEngine{link: l}
	}
	l.mr, err = ep.Register(r.base, uint64(len(r.mem)), fabric.AccessRemote|fabric.AccessLocal, 0x6378)
	if err != nil {
		return errors.Wrapf(err, "PE %d: cxi: register the %d B region", r.pe, len(r.mem))
	}
	return nil
}

// Engine names the engine ("fabric:sockets", "software:tcp;ofi_rxm").
func (r *Rank) Engine() string { return r.eng.name() }

// Emulated is the label every report carries: the GPU's CXI counter MMIO
// write is emulated (forwarded with fi_cntr_add) unless the slots have
// real MMIO addresses, and the software engine emulates deferred work.
func (r *Rank) Emulated() string {
	switch {
	case !r.eng.deferred():
		return "emulation: software deferred-work engine (monitor posts the writes); trigger forwarded by the monitor"
	case word32(r.base, offFlags).Load()&flagMMIO == 0:
		return "emulation: GPU trigger forwarded by the monitor with fi_cntr_add; deferred work is real libfabric (" + r.eng.name() + ")"
	}
	return "real: CXI counter MMIO triggers and libfabric deferred work (" + r.eng.name() + ")"
}

// State is the address of this rank's goshmemi_cxi_state_t: put it in the
// device state's cxi_state (after mapping the region into the GPU with
// Region) or, in host mode, in a goshmemi_device_state_t of a C thread.
func (r *Rank) State() unsafe.Pointer { return r.base }

// Region is the shared memory (host-pinned on the GPU machine by the caller
// with cuMemHostRegister; never moved, never on the Go heap).
func (r *Rank) Region() (unsafe.Pointer, int) { return r.base, len(r.mem) }

// PE and NPEs are this rank and the job size.
func (r *Rank) PE() int   { return r.pe }
func (r *Rank) NPEs() int { return r.n }

// Start arms the first instances and starts the monitor goroutine.
func (r *Rank) Start() error {
	if r.started {
		return nil
	}
	r.started = true
	for _, c := range r.chans {
		for s := range c.slots {
			if _, err := r.step(c, s, time.Now()); err != nil {
				return err
			}
		}
	}
	go r.monitor()
	return nil
}

// Stop stops the monitor and raises the GPU-visible stop flag: every
// waiter (kernel or Go) returns ErrTimeout / GOSHMEMX_CXI_ETIMEDOUT.
func (r *Rank) Stop() {
	if r.stopped.CompareAndSwap(false, true) {
		close(r.stopCh)
		if r.started {
			<-r.done
		}
		word(r.base, offStop).Store(1)
	}
}

// Err is the first asynchronous error the monitor hit (nil: none).
func (r *Rank) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.monErr
}

// Stats returns the monitor's counters.
func (r *Rank) Stats() Stats {
	r.mu.Lock()
	s := r.stats
	r.mu.Unlock()
	s.Engine = r.eng.name()
	s.Deferred = r.eng.deferred()
	s.ReadyStalls = word(r.base, offReadyStal).Load()
	return s
}

// ResetStats zeroes the monitor's counters and restarts its peaks
// (MaxArmed and BarrierMaxArmed from what is armed now, MaxLoopGap from
// the next loop pass): benchmarks call it after their warm-up.
func (r *Rank) ResetStats() {
	r.mu.Lock()
	r.stats = Stats{Armed: r.armed, MaxArmed: r.armed, BarrierMaxArmed: r.barArmed}
	r.mu.Unlock()
	word(r.base, offReadyStal).Store(0)
	r.resetPeaks.Store(true)
}

// Close stops the monitor and releases everything. Call it on every rank
// after the last barrier (a peer may still be writing until then).
func (r *Rank) Close() {
	r.closeOnce.Do(func() {
		r.Stop()
		r.release()
	})
}

func (r *Rank) release() {
	for _, c := range r.chans {
		for i := range c.slots {
			if c.slots[i].trig != nil {
				c.slots[i].trig.Close()
				c.slots[i].comp.Close()
			}
		}
	}
	if r.link != nil {
		if r.link.mr != nil {
			r.link.mr.Close()
		}
		r.link.ep.Close()
	}
	if r.eng != nil {
		r.eng.close()
	}
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

func (r *Rank) fail(err error) {
	r.mu.Lock()
	if r.monErr == nil {
		r.monErr = err
		word(r.base, offError).CompareAndSwap(0, 1)
	}
	r.mu.Unlock()
}

// monitor is the host monitor loop (GICC §4.4, §5.2): progress, doorbell
// forwarding, retirement, re-arm, fallback, credits.
func (r *Rank) monitor() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(r.done)
	idle := 0
	last := time.Now()
	var maxGap time.Duration
	for iter := 0; ; iter++ {
		select {
		case <-r.stopCh:
			return
		default:
		}
		now := time.Now()
		if r.resetPeaks.CompareAndSwap(true, false) {
			maxGap = 0
		} else if gap := now.Sub(last); gap > maxGap && iter > 1 {
			maxGap = gap
			r.mu.Lock()
			r.stats.MaxLoopGap = maxGap
			r.mu.Unlock()
		}
		last = now
		word(r.base, offHeartbeat).Add(1)
		r.eng.progress()
		busy := false
		for _, c := range r.chans {
			for s := range c.slots {
				did, err := r.step(c, s, now)
				if err != nil {
					r.fail(err)
				}
				busy = busy || did
			}
		}
		if r.cfg.AM && r.credits() {
			busy = true
		}
		if busy {
			idle = 0
			continue
		}
		idle++
		switch {
		case r.cfg.Spin || idle < 256:
		case idle < 2048:
			runtime.Gosched()
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}

func (r *Rank) String() string { return fmt.Sprintf("cxi rank %d/%d (%s)", r.pe, r.n, r.eng.name()) }
