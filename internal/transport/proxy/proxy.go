// Package proxy is the host side of goshmem's CPU-proxy remote path (a
// tuned CPU proxy, docs/proxy.md): GPU threads write 16-byte descriptors into rings
// in host-pinned memory (include/goshmem/proxy.h); workers here poll the
// rings, submit each request through a Backend (cuda copies and atomic
// kernels for the GPU heap on one node, a transport.Transport for host
// memory), and publish completion in stream order: the ring's completion
// counter in GPU memory, the consumer index and reply tickets in pinned
// memory.
//
// Rings are reserved per device context: context 0 (the default, used by
// every thread, multi-producer) gets Rings rings, every other context one
// ring of its own with the tuned single-producer protocol, so a latency-
// sensitive context never queues behind bulk traffic. Placement (the device
// relies on it, proxy.h): ring c-1 is context c's (c >= 1), the default
// context's rings follow. Workers own disjoint sets of rings and chain up to
// Batch requests per submission (one counter write for the chain). With one
// worker it serves every ring; with T >= 2 the last worker serves only the
// other contexts' reserved rings and the default context's j-th ring goes
// to worker j mod (T-1): a reserved context then shares neither a ring nor
// a worker with the default context's bulk traffic (a worker busy with bulk
// chains would hold the reserved ring's round trip behind them; the loaded
// rows of bench/proxy/run.sh measure it, docs/proxy.md).
//
// Faults: a request for an invalid PE, offset or op is rejected: the ring's
// counter gets DoneErr (the device's next quiet of that context traps with
// GOSHMEMI_ERR_PROXY_REJECTED) and Err reports the request. A worker that
// stops (backend failure, panic, Close) sets the status block's dead word:
// every device wait on the proxy then traps with GOSHMEMI_ERR_PROXY_DEAD,
// and with a timeout configured no device wait outlives it.
package proxy

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
)

// Ptr is a word both sides can reach: its host address and the device
// address the GPU (and the GPU's streams) use for it.
type Ptr struct {
	Host unsafe.Pointer
	Dev  uint64
}

// Add returns p advanced by n bytes (Host stays nil for memory the CPU
// cannot address).
func (p Ptr) Add(n uintptr) Ptr {
	if p.Host == nil {
		return Ptr{Dev: p.Dev + uint64(n)}
	}
	return Ptr{Host: unsafe.Add(p.Host, n), Dev: p.Dev + uint64(n)}
}

// Memory provides the proxy's memory: pinned host memory the GPU can
// address (rings, replies, consumer indices, status) and the device-side
// state (GPU memory on a GPU; host memory in host mode).
type Memory interface {
	// Pinned returns n zeroed bytes of host memory mapped for the GPU.
	Pinned(n int) (Ptr, error)
	// Device returns n zeroed bytes for the device-side state. Host is nil
	// when the CPU cannot load/store it (GPU memory).
	Device(n int) (Ptr, error)
	// Write copies b to the device address dev.
	Write(dev uint64, b []byte) error
	// Close frees everything.
	Close() error
}

// Backend submits the requests of one worker. Offsets are symmetric byte
// offsets, already validated. Operations are applied in submission order;
// WriteWord is ordered after every earlier operation (its results visible
// to whoever sees the word).
type Backend interface {
	Name() string
	// Put copies n bytes from this PE's heap at src to pe's heap at dst.
	Put(pe int, dst, src uint64, n int) error
	// PutAddr copies n bytes from a registered buffer of this PE (Register)
	// at address src (a device address of this process's GPU context; host
	// memory for HostBackend) to pe's heap at dst.
	PutAddr(pe int, dst, src uint64, n int) error
	// PutInline copies n (<= 8) bytes at data (pinned ring memory, unchanged
	// until a later WriteWord has executed) to pe's heap at dst.
	PutInline(pe int, dst uint64, data Ptr, n int) error
	// Get copies n bytes from pe's heap at src to this PE's heap at dst.
	Get(pe int, src, dst uint64, n int) error
	// GetAddr copies n bytes from pe's heap at src into a registered buffer
	// of this PE at address dst (as PutAddr's src).
	GetAddr(pe int, src, dst uint64, n int) error
	// GetReply copies n (<= 8) bytes from pe's heap at src to out.
	GetReply(pe int, src uint64, n int, out Ptr) error
	// Atomic applies op to the width-byte word at off on pe; when out.Dev
	// (or out.Host) is set, the old value is stored there as a u64.
	Atomic(pe int, off uint64, op transport.AMO, width int, v, cmp uint64, out Ptr) error
	// WriteWord stores v to p after everything submitted before it.
	WriteWord(p Ptr, v uint64) error
	// Flush submits what was queued (end of a chain).
	Flush() error
	// Close releases the backend (the worker has stopped).
	Close() error
}

// Config configures a Proxy.
type Config struct {
	Me, NPEs int
	// HeapSize is the symmetric heap size of every PE at the start
	// (offsets beyond are rejected); SetHeapSize raises it.
	HeapSize uint64
	// Reachable reports whether the backends reach pe's heap (nil: all).
	Reachable func(pe int) bool
	Workers   int    // T: worker threads
	Rings     int    // R: rings of the default context
	Contexts  int    // device contexts (the default one included)
	Slots     int    // descriptors per ring (a power of two)
	Batch     int    // B: requests chained per submission
	Mode      string // "tuned" or "baseline"
	// Timeout bounds every device wait on the proxy (0: none).
	Timeout time.Duration
	// CPUs are the cores to pin workers to, in order (nil: no pinning).
	CPUs []int
	// Idle is how long a worker spins without work before it starts to
	// sleep between polls (0: 1 ms).
	Idle time.Duration
}

// Proxy is one PE's rings and workers.
type Proxy struct {
	cfg     Config
	mem     Memory
	state   Ptr
	status  Ptr
	rings   []*ring
	workers []*worker
	ctxRing [][]int

	stop    atomic.Bool
	wg      sync.WaitGroup
	errMu   sync.Mutex
	rejects []error // first rejection per ring, in order seen
	dead    atomic.Pointer[error]
	closers []func() error // OnClose, run after the workers stopped
	// drainReq numbers the Drain calls (workers answer in worker.drained)
	drainReq atomic.Uint64
	// heapSize is every PE's usable heap (Config.HeapSize, then
	// SetHeapSize): requests past it are rejected
	heapSize atomic.Uint64
	// the registered buffers (Register): the device's table (GPU memory)
	// and the workers' copy; regMu serializes Register and Unregister
	regsDev Ptr
	regMu   sync.Mutex
	regN    int // slots [0, regN) may be in use (the table's n)
	regs    [MaxRegs]regSlot
}

// regSlot is a registered buffer as the workers see it: size 0 is a free
// slot.
type regSlot struct{ base, size atomic.Uint64 }

type ring struct {
	idx     int
	ctx     int
	worker  int
	mode    uint32
	log2    uint
	slots   Ptr
	replies Ptr
	tail    Ptr // consumer index (pinned; written for baseline rings only)
	done    Ptr // completion counter (device state)
	cursor  uint64
	errBit  uint64
	rejects uint64
	drainTo uint64        // Drain: serve up to this ticket (the first empty slot when the request came)
	served  atomic.Uint64 // cursor at the end of the last chain (for State, read by any goroutine)
}

// end returns the first ticket from the cursor on whose slot holds no
// posted request (what a Drain must see served).
func (r *ring) end() uint64 { return r.endFrom(r.cursor) }

// endFrom is end from ticket t on.
func (r *ring) endFrom(t uint64) uint64 {
	for i := uint64(0); i < 1<<r.log2; i++ {
		pw0, pw1, _ := r.slot(t)
		w0 := atomic.LoadUint64(pw0)
		if w0&1 != expectedPhase(t, r.log2) {
			break
		}
		t += uint64(Decode(w0, atomic.LoadUint64(pw1)).Slots())
	}
	return t
}

// Normalize fills defaults and validates cfg; errors name the setting.
func (c *Config) Normalize() error {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Rings == 0 {
		c.Rings = 4
	}
	if c.Contexts == 0 {
		c.Contexts = 8
	}
	if c.Slots == 0 {
		c.Slots = 1024
	}
	if c.Batch == 0 {
		c.Batch = min(16, c.Slots)
	}
	if c.Mode == "" {
		c.Mode = "tuned"
	}
	if c.Idle == 0 {
		c.Idle = time.Millisecond
	}
	bad := func(format string, args ...any) error {
		return errs.Hint(errs.ErrInvalidArgument, "see GOSHMEM_PROXY_* in GOSHMEM_INFO=1's settings", c.Me, "Init", format, args...)
	}
	switch {
	case c.Workers < 1 || c.Workers > MaxRings:
		return bad("GOSHMEM_PROXY_WORKERS=%d; must be in [1, %d]", c.Workers, MaxRings)
	case c.Contexts < 1 || c.Contexts > MaxCtx:
		return bad("GOSHMEM_PROXY_CONTEXTS=%d; must be in [1, %d]", c.Contexts, MaxCtx)
	case c.Rings < 1 || c.Rings+c.Contexts-1 > MaxRings:
		return bad("GOSHMEM_PROXY_RINGS=%d with %d contexts; rings + contexts - 1 must be in [1, %d]", c.Rings, c.Contexts, MaxRings)
	case c.Slots < 4 || c.Slots > 1<<20 || c.Slots&(c.Slots-1) != 0:
		return bad("GOSHMEM_PROXY_SLOTS=%d; must be a power of two in [4, %d]", c.Slots, 1<<20)
	case c.Batch < 1 || c.Batch > c.Slots:
		return bad("GOSHMEM_PROXY_BATCH=%d; must be in [1, GOSHMEM_PROXY_SLOTS=%d]", c.Batch, c.Slots)
	case c.Mode != "tuned" && c.Mode != "baseline":
		return bad("GOSHMEM_PROXY_MODE=%q; want tuned or baseline", c.Mode)
	case c.NPEs < 1 || c.NPEs > 1024 || c.Me < 0 || c.Me >= c.NPEs:
		return bad("PE %d of %d: the proxy addresses at most 1024 PEs", c.Me, c.NPEs)
	case c.HeapSize == 0 || c.HeapSize > offMask:
		return bad("heap size %d bytes; the proxy's descriptors address heaps of 1 to %d bytes", c.HeapSize, uint64(offMask))
	}
	return nil
}

// New allocates the rings and the device-side state (not yet started).
func New(cfg Config, mem Memory) (*Proxy, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, mem: mem}
	p.heapSize.Store(cfg.HeapSize)
	var err error
	if p.state, err = mem.Device(StateSize); err != nil {
		return nil, errs.Wrap(err, cfg.Me, "Init", "proxy state")
	}
	if p.regsDev, err = mem.Device(regsSize); err != nil {
		return nil, errs.Wrap(err, cfg.Me, "Init", "proxy table of registered buffers")
	}
	if p.status, err = mem.Pinned(statusSize + 8*MaxRings); err != nil {
		return nil, errs.Wrap(err, cfg.Me, "Init", "proxy status block")
	}
	nr := cfg.Rings + cfg.Contexts - 1
	log2 := uint(0)
	for 1<<log2 < cfg.Slots {
		log2++
	}
	first := make([]uint8, cfg.Contexts)
	count := make([]uint8, cfg.Contexts)
	p.ctxRing = make([][]int, cfg.Contexts)
	confs := make([]ringConfig, nr)
	for i := 0; i < nr; i++ {
		// ring c-1 is context c's; the default context's rings follow
		ctx, worker := i+1, cfg.Workers-1
		if i >= cfg.Contexts-1 {
			ctx, worker = 0, 0
			if cfg.Workers > 1 {
				worker = (i - (cfg.Contexts - 1)) % (cfg.Workers - 1)
			}
		}
		r := &ring{idx: i, ctx: ctx, worker: worker, log2: log2}
		if r.slots, err = mem.Pinned(cfg.Slots * slotSize); err != nil {
			return nil, errs.Wrap(err, cfg.Me, "Init", "proxy ring %d (%d slots)", i, cfg.Slots)
		}
		// replies live in device memory: only the worker's stream (the
		// value and ticket) and the GPU (polls, ack) touch them
		if r.replies, err = mem.Device(cfg.Slots * replySize); err != nil {
			return nil, errs.Wrap(err, cfg.Me, "Init", "proxy ring %d replies", i)
		}
		r.tail = p.status.Add(uintptr(statusSize + 8*i))
		r.done = p.state.Add(uintptr(offRings + ringSize*i + ringOffDone))
		mode := ModeMPSC
		switch {
		case cfg.Mode == "baseline":
			mode = ModeBaseline
		case ctx > 0:
			mode = ModeSPSC
		}
		r.mode = mode
		confs[i] = ringConfig{slots: r.slots.Dev, replies: r.replies.Dev, tail: r.tail.Dev, log2: uint32(log2),
			mode: mode, ctx: uint32(ctx), worker: uint32(worker)}
		p.ctxRing[ctx] = append(p.ctxRing[ctx], i)
		p.rings = append(p.rings, r)
	}
	for c, rs := range p.ctxRing {
		first[c], count[c] = uint8(rs[0]), uint8(len(rs))
	}
	img := stateImage(p.status.Dev, uint64(cfg.Timeout.Nanoseconds()), p.regsDev.Dev, confs, first, count)
	if err := mem.Write(p.state.Dev, img); err != nil {
		return nil, errs.Wrap(err, cfg.Me, "Init", "writing the proxy state")
	}
	return p, nil
}

// StateAddr is the device address of the proxy state (device_state.proxy_state).
func (p *Proxy) StateAddr() uint64 { return p.state.Dev }

// Config returns the normalized configuration.
func (p *Proxy) Config() Config { return p.cfg }

// HeapSize is every PE's usable heap size, which requests must stay in.
func (p *Proxy) HeapSize() uint64 { return p.heapSize.Load() }

// SetHeapSize raises the usable heap size of every PE to n (the heap grew
// on every PE): requests up to n are accepted from now on. Descriptors
// carry 40-bit offsets, so n beyond 1 TiB is refused.
func (p *Proxy) SetHeapSize(n uint64) error {
	if n > offMask {
		return errs.Hint(errs.ErrNotSupported, "keep GOSHMEM_DEVICE_HEAP_MAX at most 1 TiB with the GPU proxy", p.cfg.Me, "AllocDevice",
			"the GPU heap cannot grow to %d bytes: the GPU proxy's descriptors address heaps of up to %d bytes", n, uint64(offMask))
	}
	if n > p.heapSize.Load() {
		p.heapSize.Store(n)
	}
	return nil
}

// Register enters [base, base+size), memory of this PE outside the heap
// (a buffer registered with shmem.RegisterDevice: device memory of this
// process's GPU context), in the table the device looks up: a put from it
// or a get into it then names its slot and the workers copy from or to it
// in place, as for the heap. It returns the slot for Unregister. The
// caller keeps registrations disjoint. Errors: size 0 or past 1 TiB (the
// descriptors' offsets), a full table.
func (p *Proxy) Register(base, size uint64) (int, error) {
	if size == 0 || size > regMaxBytes || base+size < base {
		return -1, errs.New(errs.ErrInvalidArgument, p.cfg.Me, "RegisterDevice",
			"[%#x, +%d bytes): the GPU proxy registers buffers of 1 to %d bytes", base, size, uint64(regMaxBytes))
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	slot := -1
	for i := range p.regs {
		if p.regs[i].size.Load() == 0 {
			slot = i
			break
		}
	}
	if slot < 0 {
		return -1, errs.Hint(errs.ErrNotSupported, "Free registered arrays that are no longer used", p.cfg.Me, "RegisterDevice",
			"the GPU proxy's table of registered buffers is full (%d buffers)", MaxRegs)
	}
	// the workers' copy first (the device cannot name the slot yet), then
	// the device's: base, then end, then the scan bound
	p.regs[slot].base.Store(base)
	p.regs[slot].size.Store(size)
	e := p.regsDev.Dev + regsOffReg + uint64(slot)*regSize
	if err := p.writeU64(e+regOffBase, base); err != nil {
		p.regs[slot].size.Store(0)
		return -1, err
	}
	if err := p.writeU64(e+regOffEnd, base+size); err != nil {
		p.regs[slot].size.Store(0)
		return -1, err
	}
	if slot >= p.regN {
		p.regN = slot + 1
		if err := p.writeU32(p.regsDev.Dev+regsOffN, uint32(p.regN)); err != nil {
			return -1, errors.Join(err, p.unregister(slot))
		}
	}
	return slot, nil
}

// Unregister removes the buffer of slot (Register). No request may name
// it any more (the caller's rule: no call using the buffer is in flight).
func (p *Proxy) Unregister(slot int) error {
	if slot < 0 || slot >= MaxRegs {
		return errs.New(errs.ErrInvalidArgument, p.cfg.Me, "Free", "registered-buffer slot %d not in [0, %d)", slot, MaxRegs)
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	if p.regs[slot].size.Load() == 0 {
		return errs.New(errs.ErrInvalidArgument, p.cfg.Me, "Free", "registered-buffer slot %d of the GPU proxy is free", slot)
	}
	return p.unregister(slot)
}

// unregister clears slot: the device's end first (no new lookup matches),
// then the workers' copy. Caller holds regMu.
func (p *Proxy) unregister(slot int) error {
	err := p.writeU64(p.regsDev.Dev+regsOffReg+uint64(slot)*regSize+regOffEnd, 0)
	p.regs[slot].size.Store(0)
	p.regs[slot].base.Store(0)
	return err
}

// Registered is how many buffers the table holds.
func (p *Proxy) Registered() int {
	n := 0
	for i := range p.regs {
		if p.regs[i].size.Load() != 0 {
			n++
		}
	}
	return n
}

func (p *Proxy) writeU64(dev, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return p.mem.Write(dev, b[:])
}

func (p *Proxy) writeU32(dev uint64, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return p.mem.Write(dev, b[:])
}

// regAddr is the address of the local side of a PUT or GET that names a
// registered buffer, or why it cannot be served.
func (p *Proxy) regAddr(d Desc) (uint64, string) {
	slot := d.Reg() - 1
	if slot < 0 || slot >= MaxRegs {
		return 0, fmt.Sprintf("registered-buffer slot %d not in [0, %d)", slot, MaxRegs)
	}
	size, base := p.regs[slot].size.Load(), p.regs[slot].base.Load()
	n := d.Size()
	switch {
	case size == 0:
		return 0, fmt.Sprintf("registered-buffer slot %d is free (the buffer was freed while a call using it was in flight?)", slot)
	case d.LOff() > size || n > size-d.LOff():
		return 0, fmt.Sprintf("local offset %#x + %d bytes is outside registered buffer %d (%d bytes at %#x)", d.LOff(), n, slot, size, base)
	}
	return base + d.LOff(), ""
}

// RingsOf returns the ring indices of device context ctx.
func (p *Proxy) RingsOf(ctx int) []int { return p.ctxRing[ctx] }

// Describe is the line GOSHMEM_INFO prints.
func (p *Proxy) Describe(backend string) string {
	c := p.cfg
	return fmt.Sprintf("proxy (%s protocol): %d workers, %d rings for the default context + 1 reserved ring for each of contexts 1..%d, %d slots, batch %d, backend %s, cpus %v",
		c.Mode, c.Workers, c.Rings, c.Contexts-1, c.Slots, c.Batch, backend, c.CPUs)
}

// Start starts the workers; newBackend makes one backend per worker (its
// stream). The workers make their backends one after the other, in worker
// order (the CUDA streams, and so the hardware queues the driver maps them
// to, come in the same order every run). It returns once every worker has
// its backend.
func (p *Proxy) Start(newBackend func(worker int) (Backend, error)) error {
	ready := make(chan error, p.cfg.Workers)
	var first error
	for i := 0; i < p.cfg.Workers; i++ {
		w := &worker{p: p, id: i}
		for _, r := range p.rings {
			if r.worker == i {
				w.rings = append(w.rings, r)
			}
		}
		if len(p.cfg.CPUs) > 0 {
			w.cpu = p.cfg.CPUs[i%len(p.cfg.CPUs)]
		} else {
			w.cpu = -1
		}
		p.workers = append(p.workers, w)
		p.wg.Add(1)
		go w.run(newBackend, ready)
		if first = <-ready; first != nil {
			break
		}
	}
	if first != nil {
		_ = p.Close()
	}
	return first
}

// Err returns the first rejected request or the reason a worker stopped
// (nil when neither happened). The error stays (device contexts that saw
// the rejection are unusable).
func (p *Proxy) Err() error {
	if d := p.dead.Load(); d != nil {
		return *d
	}
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if len(p.rejects) > 0 {
		return errors.Join(p.rejects...)
	}
	return nil
}

// Drain waits until every worker has served every request that was in its
// rings when Drain was called, chains completed (with the ofi backend: the
// target PEs applied them) and its backend's stream work executed: each
// worker notes, per ring, the first empty slot when it sees the request,
// and answers once its cursors are there (requests posted later, by a
// kernel still running on another stream, do not hold it up). The caller
// makes sure the requests it cares about are posted (their kernels ended).
// Fails with the proxy's error (a dead worker) or, past timeout (0: none),
// ErrTimeout.
func (p *Proxy) Drain(timeout time.Duration) error {
	req := p.drainReq.Add(1)
	start := time.Now()
	for _, w := range p.workers {
		pol := spin.Policy{Spins: 64, MaxSleep: 20 * time.Microsecond}
		if timeout > 0 {
			if pol.Timeout = timeout - time.Since(start); pol.Timeout <= 0 {
				pol.Timeout = time.Nanosecond // spent on earlier workers: one more look
			}
		}
		var dead error
		ok, _ := pol.Until(func() bool {
			if d := p.dead.Load(); d != nil {
				dead = *d
				return true
			}
			return w.drained.Load() >= req
		}, nil)
		if dead != nil {
			return dead
		}
		if !ok {
			return errs.New(errs.ErrTimeout, p.cfg.Me, "Synchronize",
				"proxy worker %d still serving requests after %v (GOSHMEM_TIMEOUT)", w.id, timeout)
		}
	}
	return nil
}

// servedDrain reports whether every ring of w is served up to its drainTo
// (tickets compare as counters: they never wrap).
func (w *worker) servedDrain() bool {
	for _, r := range w.rings {
		if r.cursor < r.drainTo {
			return false
		}
	}
	return true
}

// syncBackend waits for the work the worker's backend submitted to
// execute, where the backend has such a wait (a CUDA stream: Sync).
func (w *worker) syncBackend() error {
	if s, ok := w.be.(interface{ Sync() error }); ok {
		return errs.Wrap(s.Sync(), w.p.cfg.Me, "proxy", "worker %d: Drain", w.id)
	}
	return nil
}

// Close stops the workers (marking them dead for any device code still
// waiting) and frees the memory.
func (p *Proxy) Close() error {
	p.stop.Store(true)
	p.wg.Wait()
	p.setDead(-1, errs.New(nil, p.cfg.Me, "proxy", "closed"), deadClosed)
	var errList []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		errList = append(errList, p.closers[i]())
	}
	p.closers = nil
	return errors.Join(append(errList, p.mem.Close())...)
}

// OnClose adds f to what Close runs after the workers stopped (last added,
// first run): the ofi link's server, for instance.
func (p *Proxy) OnClose(f func() error) { p.closers = append(p.closers, f) }

// Fail marks the proxy dead for a part that is not a worker (the ofi
// server): device waits on it trap, Err returns err.
func (p *Proxy) Fail(err error) { p.setDead(-1, err, deadBackend) }

// dead-word values (the device prints them in error_info).
const (
	deadBackend = 1 // a backend call failed
	deadPanic   = 2
	deadClosed  = 3
	deadKilled  = 4 // tests: KillWorker
)

func (p *Proxy) setDead(worker int, err error, code uint64) {
	if p.dead.CompareAndSwap(nil, &err) {
		atomic.StoreUint64((*uint64)(unsafe.Add(p.status.Host, statusOffDeadInfo)), uint64(int64(worker)))
		atomic.StoreUint64((*uint64)(unsafe.Add(p.status.Host, statusOffDead)), code)
	}
}

// State says, for every ring, which worker serves it, the tickets it has
// served (submitted to the backend) and the first ticket with no request
// posted: what a stuck device wait was waiting for.
func (p *Proxy) State() string {
	var b strings.Builder
	b.WriteString("proxy rings (ring/context/worker: served, posted up to):")
	for _, r := range p.rings {
		sv := r.served.Load()
		fmt.Fprintf(&b, " %d/%d/%d: %d, %d;", r.idx, r.ctx, r.worker, sv, r.endFrom(sv))
	}
	return strings.TrimSuffix(b.String(), ";")
}

// KillWorker stops worker i as if it had failed (fault-injection for tests
// and for `goshmem-perf proxy`'s fault row).
func (p *Proxy) KillWorker(i int) { p.workers[i].kill.Store(true) }

func (p *Proxy) reject(r *ring, t uint64, d Desc, why string) {
	err := errs.New(errs.ErrInvalidArgument, p.cfg.Me, "proxy",
		"device request rejected by the proxy worker (ring %d, context %d, ticket %d): %s: %s", r.idx, r.ctx, t, d, why)
	p.errMu.Lock()
	if r.rejects == 0 {
		p.rejects = append(p.rejects, err)
		o := statusOffRingErr + 16*r.idx
		atomic.StoreUint64((*uint64)(unsafe.Add(p.status.Host, o+8)), t)
		atomic.StoreUint64((*uint64)(unsafe.Add(p.status.Host, o)), uint64(d.Op)|uint64(d.PE)<<8)
	}
	r.rejects++
	p.errMu.Unlock()
}

// rejectRemote records a request the target's proxy rejected (t: the
// ticket the worker was serving when it learned of it).
func (p *Proxy) rejectRemote(r *ring, t uint64, rj *RemoteRejection) {
	err := errs.Wrap(rj, p.cfg.Me, "proxy", "ring %d (context %d), found at ticket %d", r.idx, r.ctx, t)
	p.errMu.Lock()
	if r.rejects == 0 {
		p.rejects = append(p.rejects, err)
		o := statusOffRingErr + 16*r.idx
		atomic.StoreUint64((*uint64)(unsafe.Add(p.status.Host, o+8)), t)
		atomic.StoreUint64((*uint64)(unsafe.Add(p.status.Host, o)), uint64(rj.deviceOp())|uint64(rj.PE)<<8)
	}
	r.rejects++
	p.errMu.Unlock()
}

// validate checks a request against the job's PEs, heaps and ops.
func (p *Proxy) validate(d Desc) string {
	c := &p.cfg
	if d.PE >= c.NPEs {
		return fmt.Sprintf("PE %d out of range [0, %d)", d.PE, c.NPEs)
	}
	if c.Reachable != nil && !c.Reachable(d.PE) {
		return fmt.Sprintf("no transport of this proxy reaches PE %d's heap (another node's GPU heap needs an inter-node GPU transport)", d.PE)
	}
	n := d.Size()
	heap := p.heapSize.Load()
	switch d.Op {
	case OpPut, OpGet:
		if n == 0 || n > Chunk {
			return fmt.Sprintf("size %d out of range [1, %d]", n, Chunk)
		}
		if d.Reg() != 0 {
			if _, why := p.regAddr(d); why != "" {
				return why
			}
		} else if d.LOff() > heap || n > heap-d.LOff() {
			return fmt.Sprintf("local offset %#x + %d bytes is outside the heap (%d bytes)", d.LOff(), n, heap)
		}
	case OpPutInline, OpGetReply:
		if n == 0 || n > 8 {
			return fmt.Sprintf("inline size %d out of range [1, 8]", n)
		}
	case OpAMO:
		if d.Arg&0xc0 != 0 {
			return fmt.Sprintf("AMO arg %#x has unknown bits", d.Arg)
		}
		if d.ROff%n != 0 {
			return fmt.Sprintf("AMO offset %#x is not %d-byte aligned", d.ROff, n)
		}
	default:
		return fmt.Sprintf("unknown op %d", d.Op)
	}
	if d.ROff > heap || n > heap-d.ROff {
		return fmt.Sprintf("offset %#x + %d bytes is outside PE %d's heap (%d bytes)", d.ROff, n, d.PE, heap)
	}
	return ""
}

type worker struct {
	p     *Proxy
	id    int
	cpu   int
	rings []*ring
	be    Backend
	kill  atomic.Bool
	// draining: the last Drain request (Proxy.drainReq) this worker saw;
	// drained: the last it answered (every ring served to its drainTo,
	// the backend's stream work executed)
	draining uint64
	drained  atomic.Uint64
	// statistics, written by the worker only (read after it stopped)
	reqs, chains uint64
	submit       time.Duration // in drain, chains with requests: decode + backend calls
	// ops counts the requests served by kind (Ops; read at any time)
	ops [nOpKinds]atomic.Uint64
}

// The kinds of request Ops counts.
const (
	opPut = iota
	opPutReg
	opPutInline
	opGet
	opGetReg
	opGetReply
	opAMO
	nOpKinds
)

// OpCounts is how many requests of each kind the workers served: what a
// test checks to see which path the device took.
type OpCounts struct {
	Put       uint64 // PUT from the symmetric heap
	PutReg    uint64 // PUT from a registered buffer, in place
	PutInline uint64 // PUT_INLINE: payloads of up to 8 bytes in the descriptor
	Get       uint64 // GET into the symmetric heap
	GetReg    uint64 // GET into a registered buffer, in place
	GetReply  uint64 // GET_REPLY: up to 8 bytes through a reply slot
	AMO       uint64
}

// Ops counts the requests the workers served so far, by kind.
func (p *Proxy) Ops() OpCounts {
	var n [nOpKinds]uint64
	for _, w := range p.workers {
		for k := range n {
			n[k] += w.ops[k].Load()
		}
	}
	return OpCounts{Put: n[opPut], PutReg: n[opPutReg], PutInline: n[opPutInline], Get: n[opGet], GetReg: n[opGetReg],
		GetReply: n[opGetReply], AMO: n[opAMO]}
}

// Stats is one line per worker: requests served, chains (completion
// writes), mean requests per chain, and the time spent submitting them
// (decoding and backend calls: with the CUDA backend, mostly driver calls;
// a driver call that waits for room in the stream's queue shows here).
// Meaningful after Close.
func (p *Proxy) Stats() string {
	var b strings.Builder
	for _, w := range p.workers {
		per, us := 0.0, 0.0
		if w.chains > 0 {
			per = float64(w.reqs) / float64(w.chains)
			us = float64(w.submit.Microseconds()) / float64(w.chains)
		}
		fmt.Fprintf(&b, "proxy worker %d: %d requests in %d chains (%.1f per chain), %v submitting (%.1f us per chain)\n",
			w.id, w.reqs, w.chains, per, w.submit.Round(time.Microsecond), us)
		if t, ok := w.be.(interface{ Timings() string }); ok {
			if s := t.Timings(); s != "" {
				fmt.Fprintf(&b, "proxy worker %d: %s\n", w.id, s)
			}
		}
	}
	return b.String()
}

func (w *worker) run(newBackend func(int) (Backend, error), ready chan<- error) {
	defer w.p.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if w.cpu >= 0 {
		_ = pinThread(w.cpu) // best effort: a core list the OS refuses only costs latency
	}
	be, err := newBackend(w.id)
	if err != nil {
		ready <- errs.Wrap(err, w.p.cfg.Me, "proxy", "worker %d", w.id)
		return
	}
	w.be = be
	ready <- nil
	defer func() { _ = be.Close() }()
	defer func() {
		if v := recover(); v != nil {
			w.p.setDead(w.id, errs.New(nil, w.p.cfg.Me, "proxy", "worker %d panicked: %v", w.id, v), deadPanic)
		}
	}()
	idleSince := time.Time{}
	for !w.p.stop.Load() {
		if w.kill.Load() {
			w.p.setDead(w.id, errs.New(nil, w.p.cfg.Me, "proxy", "worker %d was stopped", w.id), deadKilled)
			return
		}
		n := 0
		if req := w.p.drainReq.Load(); req > w.draining {
			// a Drain: every request posted before it is in the rings now
			// (its caller saw the kernels end); serve up to there
			w.draining = req
			for _, r := range w.rings {
				r.drainTo = r.end()
			}
		}
		for _, r := range w.rings {
			k, err := w.drain(r)
			if err != nil {
				w.backendFailed(err)
				return
			}
			n += k
		}
		if w.draining > w.drained.Load() && w.servedDrain() {
			if err := w.syncBackend(); err != nil {
				w.backendFailed(err)
				return
			}
			w.drained.Store(w.draining)
		}
		if n > 0 {
			idleSince = time.Time{}
			continue
		}
		// Idle: spin for cfg.Idle, then sleep briefly between polls so an
		// idle PE does not hold a core (latency after idle: the sleep).
		now := time.Now()
		if idleSince.IsZero() {
			idleSince = now
		} else if now.Sub(idleSince) > w.p.cfg.Idle {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// backendFailed stops the proxy for a backend call that failed: the
// error, with the rings' state (what the device waits were waiting for).
func (w *worker) backendFailed(err error) {
	w.p.setDead(w.id, errs.Wrap(err, w.p.cfg.Me, "proxy", "worker %d: %s", w.id, w.p.State()), deadBackend)
}

func (r *ring) slot(t uint64) (w0, w1 *uint64, data Ptr) {
	o := uintptr(t&(1<<r.log2-1)) * slotSize
	s := r.slots.Add(o)
	return (*uint64)(s.Host), (*uint64)(unsafe.Add(s.Host, 8)), s.Add(8)
}

func (r *ring) reply(t uint64) Ptr { return r.replies.Add(uintptr(t&(1<<r.log2-1)) * replySize) }

// drain submits up to Batch valid requests of r, then their completion.
func (w *worker) drain(r *ring) (int, error) {
	p := w.p
	n := 0
	var t0 time.Time
	for n < p.cfg.Batch {
		t := r.cursor
		pw0, pw1, data := r.slot(t)
		w0 := atomic.LoadUint64(pw0)
		if w0&1 != expectedPhase(t, r.log2) {
			break
		}
		if n == 0 {
			t0 = time.Now()
		}
		d := Decode(w0, atomic.LoadUint64(pw1))
		var cmp uint64
		if d.Slots() == 2 { // the extension slot: {its lap's phase, cmp}, published before this one
			_, e1, _ := r.slot(t + 1)
			cmp = atomic.LoadUint64(e1)
		}
		if why := p.validate(d); why != "" {
			p.reject(r, t, d, why)
			r.errBit = DoneErr
			if d.WantsReply() {
				if err := w.writeWord(r, t, r.reply(t).Add(replyOffTicket), (t+1)|DoneErr); err != nil {
					return n, err
				}
			}
		} else if err := w.exec(r, t, d, data, cmp); err != nil {
			// the transport failed this request: reported like a rejection
			p.reject(r, t, d, err.Error())
			r.errBit = DoneErr
			if d.WantsReply() {
				if err := w.writeWord(r, t, r.reply(t).Add(replyOffTicket), (t+1)|DoneErr); err != nil {
					return n, err
				}
			}
		}
		r.cursor = t + d.Slots()
		n++
	}
	if n == 0 {
		return 0, nil
	}
	// completion, in stream order after the chain: the counter (GPU
	// memory; slots and inline payloads are free only now, and tuned and
	// MPSC producers wait for space on it, in L2), then for the baseline the
	// host-resident consumer index its producers read over PCIe
	if err := w.writeWord(r, r.cursor-1, r.done, r.cursor|r.errBit); err != nil {
		return n, err
	}
	if r.mode == ModeBaseline {
		if err := w.writeWord(r, r.cursor-1, r.tail, r.cursor); err != nil {
			return n, err
		}
	}
	r.served.Store(r.cursor)
	err := w.be.Flush()
	w.reqs += uint64(n)
	w.chains++
	w.submit += time.Since(t0)
	return n, err
}

func (w *worker) exec(r *ring, t uint64, d Desc, data Ptr, cmp uint64) error {
	be := w.be
	n := int(d.Size())
	switch d.Op {
	case OpPut:
		if d.Reg() != 0 {
			w.ops[opPutReg].Add(1)
			a, _ := w.p.regAddr(d) // validated
			return be.PutAddr(d.PE, d.ROff, a, n)
		}
		w.ops[opPut].Add(1)
		return be.Put(d.PE, d.ROff, d.LOff(), n)
	case OpPutInline:
		w.ops[opPutInline].Add(1)
		return be.PutInline(d.PE, d.ROff, data, n)
	case OpGet:
		if d.Reg() != 0 {
			w.ops[opGetReg].Add(1)
			a, _ := w.p.regAddr(d)
			return be.GetAddr(d.PE, d.ROff, a, n)
		}
		w.ops[opGet].Add(1)
		return be.Get(d.PE, d.ROff, d.LOff(), n)
	case OpGetReply:
		w.ops[opGetReply].Add(1)
		rp := r.reply(t)
		if err := be.GetReply(d.PE, d.ROff, n, rp.Add(replyOffValue)); err != nil {
			return err
		}
		return w.writeWord(r, t, rp.Add(replyOffTicket), t+1)
	case OpAMO:
		w.ops[opAMO].Add(1)
		var out Ptr
		rp := r.reply(t)
		if d.WantsReply() {
			out = rp.Add(replyOffValue)
		}
		if err := be.Atomic(d.PE, d.ROff, deviceAMO[d.Arg&7], n, d.W1, cmp, out); err != nil {
			return err
		}
		if d.WantsReply() {
			return w.writeWord(r, t, rp.Add(replyOffTicket), t+1)
		}
	}
	return nil
}

// writeWord is the backend's WriteWord for ring r (t: the ticket being
// served). A backend whose requests are applied by another PE (ofi) may
// find there that one was rejected (*RemoteRejection): it then writes
// nothing; the rejection is reported like the worker's own and the word is
// written with DoneErr (the chain failed).
func (w *worker) writeWord(r *ring, t uint64, p Ptr, v uint64) error {
	for {
		err := w.be.WriteWord(p, v)
		var rj *RemoteRejection
		if !errors.As(err, &rj) {
			return err
		}
		w.p.rejectRemote(r, t, rj)
		r.errBit = DoneErr
		v |= DoneErr
	}
}
