package cxi

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
)

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
	st         Stats         // monitor-owned counters
	stats      Stats         // published snapshot (mu)
	mu         sync.Mutex    // guards stats and monErr
	statReq    atomic.Uint64 // Stats/ResetStats requests: odd bit 0 = reset
	statAck    atomic.Uint64 // last request the monitor served
	gc0        gcSample      // at the last ResetStats (monitor-owned)
	tid        atomic.Int64  // the monitor thread's Linux tid
	resetGap   bool          // monitor: restart the gap measurement
	armHist    logHist       // monitor: timed arms, ns per record
	provHist   logHist       // monitor: of which in the provider's calls
	ctx0       [2]int64      // monitor: its context switches at the last reset
	monErr     error
	stopCh     chan struct{}
	done       chan struct{}
	started    bool
	stopped    atomic.Bool
	closeOnce  sync.Once
	amRecvNext []uint64 // Go API receive side
	creditBusy bool     // monitor: a credit write is in flight
	creditNext int      // monitor: next peer to look at for credits
}

// NewRank sets up rank pe of n: every rank calls it (allgather exchanges
// endpoint names and memory keys, like bootstrap.Allgather), then Start.
// It is Prepare, the exchange and Connect; a failure on one rank is an
// error on every rank (the exchange runs even when Prepare failed).
func NewRank(pe, n int, allgather func([]byte) ([]byte, error), cfg Config) (*Rank, error) {
	r, rec, local := Prepare(pe, n, cfg)
	if local != nil {
		rec = make([]byte, RecordSize)
	}
	if allgather == nil {
		if local != nil {
			return nil, local
		}
		if n != 1 {
			r.release()
			return nil, errs.New(errs.ErrInvalidArgument, pe, "cxi: NewRank", "nil allgather for a job of %d ranks", n)
		}
		allgather = func(b []byte) ([]byte, error) { return b, nil }
	}
	all, err := allgather(rec)
	if err != nil {
		if r != nil {
			r.release()
		}
		return nil, errs.Wrap(err, pe, "cxi: exchange", "endpoint names")
	}
	if local != nil {
		return nil, local
	}
	if len(all) != RecordSize*n {
		r.release()
		return nil, errs.New(errs.ErrNotSymmetric, pe, "cxi: exchange", "got %d B, want %d x %d", len(all), n, RecordSize)
	}
	recs := make([][]byte, n)
	for p := range recs {
		recs[p] = all[p*RecordSize : (p+1)*RecordSize]
	}
	if err := r.Connect(recs); err != nil {
		r.release()
		return nil, err
	}
	return r, nil
}

// Prepare is rank pe of n's local setup (region, endpoint, registration)
// with no exchange: it returns the rank and its record (RecordSize bytes)
// for the exchange whose result Connect takes. On error nothing is left.
func Prepare(pe, n int, cfg Config) (*Rank, []byte, error) {
	if n < 1 || pe < 0 || pe >= n {
		return nil, nil, errs.New(errs.ErrPEOutOfRange, pe, "cxi: NewRank", "rank %d of %d: want 0 <= rank < n, n >= 1", pe, n)
	}
	if cfg.Budget == (Budget{}) {
		cfg.Budget = Slingshot11
	}
	if cfg.ReadySpins <= 0 {
		cfg.ReadySpins = 4096
	}
	r := &Rank{pe: pe, n: n, rounds: Rounds(n), cfg: cfg, stopCh: make(chan struct{}), done: make(chan struct{})}
	if r.rounds > MaxRounds {
		return nil, nil, errs.New(errs.ErrInvalidArgument, pe, "cxi: NewRank", "%d ranks need %d rounds > %d", n, r.rounds, MaxRounds)
	}
	if err := checkBudget(cfg.Budget, pe, r.rounds, cfg.AM); err != nil {
		return nil, nil, err
	}
	size := regionSize(n, cfg.AM)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_SHARED)
	if err != nil {
		return nil, nil, errs.Wrap(err, pe, "cxi: NewRank", "mmap %d B", size)
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
	rec, err := r.record()
	if err != nil {
		r.release()
		return nil, nil, err
	}
	return r, rec, nil
}

const nameMax = 256

// The exchanged record: status, name length, endpoint name, key, base.
const (
	recStatus = 0
	recLen    = 2
	recName   = 4
	recKey    = recName + nameMax
	recBase   = recKey + 8
	// RecordSize is the length of a rank's exchange record (Prepare).
	RecordSize = recBase + 8
)

// record opens the endpoint, registers the region and builds this rank's
// (endpoint name, key, base) record.
func (r *Rank) record() ([]byte, error) {
	if err := r.openLocal(); err != nil {
		return nil, err
	}
	name, err := r.link.ep.Name()
	if err != nil {
		return nil, err
	}
	if len(name) > nameMax {
		return nil, errs.New(errs.ErrNotSupported, r.pe, "cxi: exchange", "endpoint name of %d B > %d", len(name), nameMax)
	}
	rec := make([]byte, RecordSize)
	rec[recStatus] = 1
	binary.LittleEndian.PutUint16(rec[recLen:], uint16(len(name)))
	copy(rec[recName:], name)
	binary.LittleEndian.PutUint64(rec[recKey:], r.link.mr.Key)
	if r.link.ep.Attr.MRMode&fabric.MRVirtAddr != 0 {
		binary.LittleEndian.PutUint64(rec[recBase:], uint64(uintptr(r.base)))
	}
	return rec, nil
}

// Connect takes every rank's record (recs[p], from Prepare), inserts the
// addresses and builds the channels; then Start. No collective call; on
// error the caller releases the rank (Close).
func (r *Rank) Connect(recs [][]byte) error {
	if len(recs) != r.n {
		return errs.New(errs.ErrNotSymmetric, r.pe, "cxi: exchange", "%d records for %d ranks", len(recs), r.n)
	}
	l := r.link
	l.keys, l.rbase = make([]uint64, r.n), make([]uint64, r.n)
	l.addrs = make([]uint64, r.n)
	for p, b := range recs {
		if len(b) != RecordSize || b[recStatus] != 1 {
			return errs.Hint(errs.ErrNotSupported, "see that PE's own error for the cause", r.pe, "cxi: exchange",
				"PE %d could not open its CXI endpoint, so no PE uses the triggered path", p)
		}
		nl := int(binary.LittleEndian.Uint16(b[recLen:]))
		a, err := l.ep.InsertAddrs(b[recName:recName+nl], 1)
		if err != nil {
			return errs.Wrap(err, r.pe, "cxi: exchange", "address of rank %d", p)
		}
		l.addrs[p] = a[0]
		l.keys[p] = binary.LittleEndian.Uint64(b[recKey:])
		l.rbase[p] = binary.LittleEndian.Uint64(b[recBase:])
	}
	r.buildChannels()
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
		return errs.Wrap(err, r.pe, "cxi: NewRank", "register the %d B region", len(r.mem))
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
		close(r.stopCh) // the monitor polls stopped; stopCh stays for select-based waiters
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

// Stats returns the monitor's counters: a snapshot the monitor publishes
// on request (at its next loop pass; the last published one when the
// monitor is stopped or does not answer within 100 ms).
func (r *Rank) Stats() Stats {
	r.request(false)
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
// the next loop pass, the GC and context-switch counts from now):
// benchmarks call it after their warm-up.
func (r *Rank) ResetStats() {
	word(r.base, offReadyStal).Store(0)
	r.request(true)
}

// request asks the monitor to publish (and with reset, first zero) its
// counters and waits for it; without a running monitor it does it here.
func (r *Rank) request(reset bool) {
	if !r.started || r.stopped.Load() {
		r.mu.Lock()
		if reset {
			r.st = r.freshStats()
			r.stats = r.st
		}
		r.mu.Unlock()
		return
	}
	var req uint64
	for {
		old := r.statReq.Load()
		req = (old | 1) + 1 // even: publish
		if reset {
			req = (old + 2) | 1 // odd: reset, then publish
		}
		if r.statReq.CompareAndSwap(old, req) {
			break
		}
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	for r.statAck.Load() < req && !r.stopped.Load() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

func (r *Rank) freshStats() Stats {
	r.gc0 = readGC()
	return Stats{Armed: r.armed, MaxArmed: r.armed, BarrierMaxArmed: r.barArmed}
}

// serve answers Stats/ResetStats requests (monitor thread).
func (r *Rank) serve() {
	req := r.statReq.Load()
	if req == r.statAck.Load() {
		return
	}
	r.mu.Lock()
	if req&1 == 1 {
		r.st = r.freshStats()
		r.armHist, r.provHist = logHist{}, logHist{}
		r.ctx0[0], r.ctx0[1] = ctxSw(r.tid.Load())
		r.resetGap = true
	}
	r.st.Armed = r.armed
	snap := r.st
	snap.ArmMedian, snap.ArmProviderMedian = r.armHist.median(), r.provHist.median()
	gc := readGC()
	snap.GCCycles = gc.cycles - r.gc0.cycles
	snap.GCMaxPause = gc.maxPauseSince(r.gc0)
	snap.MonitorVolCtxSw, snap.MonitorInvCtxSw = -1, -1
	if v, i := ctxSw(r.tid.Load()); v >= 0 && i >= 0 && r.ctx0[0] >= 0 && r.ctx0[1] >= 0 {
		snap.MonitorVolCtxSw, snap.MonitorInvCtxSw = v-r.ctx0[0], i-r.ctx0[1]
	}
	r.stats = snap
	r.mu.Unlock()
	r.statAck.Store(req)
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

// monitor is the host monitor loop: progress, doorbell
// forwarding, retirement, re-arm, fallback, credits. It runs on a locked
// OS thread and allocates nothing per instance. Idle policy (unless
// Config.Spin): spin 256 passes, then sched_yield per pass (the thread
// keeps its Go P and wakes at once), then, after 2 ms without work, a
// 50 us nanosleep per pass. Never time.Sleep: the Go runtime's timer wakes
// a short sleep far later than asked on a busy machine (docs/cxi.md), and
// a monitor that sleeps through a trigger stalls it that long.
func (r *Rank) monitor() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(r.done)
	r.tid.Store(int64(unix.Gettid()))
	r.ctx0[0], r.ctx0[1] = ctxSw(r.tid.Load()) // the baseline serve subtracts
	const (
		spinPasses = 256
		sleepAfter = 2 * time.Millisecond
		sleepFor   = 50 * time.Microsecond
	)
	sleep := unix.NsecToTimespec(int64(sleepFor))
	idle := 0
	var idleSince time.Time
	last, lastWork, lastAction := time.Now(), time.Duration(0), "spin"
	for iter := 0; ; iter++ {
		if r.stopped.Load() {
			return
		}
		now := time.Now()
		if r.resetGap {
			r.resetGap = false
		} else if iter > 0 {
			r.gap(now.Sub(last), lastWork, lastAction)
		}
		last = now
		r.serve()
		word(r.base, offHeartbeat).Add(1)
		// Provider progress (completions of host writes: fallback and
		// credits) when one is in flight, else every 64th pass (manual
		// progress providers, stray entries): deferred records report
		// through their counters, which step reads. An empty fi_cq_read
		// would be most of an idle pass's cost.
		if len(r.link.pending) > 0 || iter&63 == 0 {
			r.eng.progress()
		}
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
		lastWork = time.Since(now)
		r.st.Passes++
		if busy {
			idle, lastAction = 0, "spin"
			continue
		}
		if idle == 0 {
			idleSince = now
		}
		idle++
		switch {
		case r.cfg.Spin || idle < spinPasses:
			lastAction = "spin"
		case now.Sub(idleSince) < sleepAfter:
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			r.st.Yields++
			lastAction = "yield"
		default:
			unix.Nanosleep(&sleep, nil)
			r.st.Sleeps++
			lastAction = "sleep"
		}
	}
}

// gap books one loop gap (monitor thread).
func (r *Rank) gap(d, work time.Duration, action string) {
	st := &r.st
	b := 0
	for b < len(GapBounds) && d > GapBounds[b] {
		b++
	}
	st.Gaps[b]++
	if d > st.MaxLoopGap {
		st.MaxLoopGap, st.MaxGapWork, st.MaxGapAction = d, work, action
	}
}

func (r *Rank) String() string { return fmt.Sprintf("cxi rank %d/%d (%s)", r.pe, r.n, r.eng.name()) }
