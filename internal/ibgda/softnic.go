package ibgda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// SoftNIC is an EMULATED mlx5 NIC for hosts without one (CI, this dev
// machine): one goroutine watches each QP's doorbell record, decodes the
// WQEs published in the SQ ring with DecodeWQE, performs RDMA writes, reads
// and atomics against registered memory regions in this process, and writes
// CQEs with the owner bit and wqe_counter a real NIC would write. It is not
// a performance model and not a wire protocol: "remote" memory is memory of
// this process registered under an rkey.
//
// Emulated behaviour (each a property of mlx5 RC send queues):
//   - the doorbell record (big-endian send counter, dbrec[SndDBR]) is the
//     source of truth for how far to fetch; the 8-byte doorbell page is read
//     only to check its QPN (bad doorbells are counted in Stats);
//   - selective completion: a CQE only for WQEs with CE = CQ_UPDATE, but
//     always one for an error;
//   - an error moves the QP to the error state: the failing WQE gets a
//     REQ_ERR CQE with its syndrome, every later WQE a WR_FLUSH_ERR CQE;
//   - atomics operate on 8-byte, 8-byte-aligned words: big-endian by
//     default (the IB wire order), or in host order after
//     SetAtomicHostEndian(true) (mlx5's host-endianness atomic mode, which
//     goshmem's device API needs); the operands in the WQE and the fetched
//     value written to the requester are big-endian in both modes;
//   - CQ overrun: the NIC waits for the consumer (CQ doorbell record) rather
//     than overwriting an unconsumed CQE.
//
// Never silent (SetTimeout, GOSHMEM_TIMEOUT): an operation on a Region that
// has not returned after the timeout (a GPU copy that cannot run, say) and a
// CQ that stays full that long (the GPU stopped polling) are recorded as the
// NIC's error (Err), naming the QP; Status reports every QP's indices, from
// the doorbell record the poster published to the CQ consumer index, for a
// caller that waited too long on a kernel.
//
// Memory passed to a SoftNIC (rings, records, regions) must not move: C or
// mmap memory, or Go memory kept alive and never resliced elsewhere.
type SoftNIC struct {
	mu   sync.Mutex
	mrs  map[uint32]MR
	qps  []*softQP
	stop chan struct{}
	done chan struct{}
	// stopped: Stop ran (a second Stop does nothing)
	stopped bool

	stats      Stats
	spin       bool
	hostEndian bool
	timeout    time.Duration

	errMu sync.Mutex
	err   error
	// busy is the operation in progress when a timeout is set (the
	// watchdog reads it), nil between operations.
	busy atomic.Pointer[inFlight]
}

// inFlight is what the NIC's goroutine is doing, for the watchdog.
type inFlight struct {
	q        *softQP
	what     string
	start    time.Time
	reported atomic.Bool
}

// Access flags of a memory region.
const (
	AccessLocalRead = 1 << iota
	AccessLocalWrite
	AccessRemoteRead
	AccessRemoteWrite
	AccessRemoteAtomic
	AccessAll = AccessLocalRead | AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic
)

// MR is a registered memory region: Mem's first byte is at virtual address
// Addr (the address WQEs name); or, for memory this process cannot load and
// store (a GPU heap), Region reached by copies, named by WQEs at
// [Base, Base+Size).
type MR struct {
	Key    uint32
	Mem    []byte
	Access int

	Region     Region
	Base, Size uint64

	// uses counts the WQE segments that named Key (KeyUses)
	uses *atomic.Uint64
}

// Region is memory the SoftNIC reaches through calls rather than loads and
// stores: the GPU heap of a PE through the cuda transport (copies and
// one-thread atomic kernels on a non-blocking stream). Offsets are from the
// region's Base. An error becomes an error CQE on the QP (syndrome
// SyndromeRemoteAccessErr, or SyndromeLocalProtErr on the local side).
type Region interface {
	ReadAt(dst []byte, off uint64) error
	WriteAt(src []byte, off uint64) error
	// Atomic8 applies an 8-byte compare-swap (cas) or fetch-add (!cas) to
	// the host-order word at off, atomically with respect to other
	// Atomic8 calls, and returns the old value.
	Atomic8(off uint64, cas bool, swapAdd, compare uint64) (uint64, error)
}

func (m MR) addr() uint64 {
	if m.Region != nil {
		return m.Base
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(m.Mem))))
}

func (m MR) size() uint64 {
	if m.Region != nil {
		return m.Size
	}
	return uint64(len(m.Mem))
}

// span is a resolved [addr, addr+n) of one MR: bytes, or a Region range.
type span struct {
	b   []byte
	r   Region
	off uint64
	n   uint64
}

func (s span) read(dst []byte) error {
	if s.r == nil {
		copy(dst, s.b)
		return nil
	}
	return s.r.ReadAt(dst[:s.n], s.off)
}

func (s span) write(src []byte) error {
	if s.r == nil {
		copy(s.b, src)
		return nil
	}
	return s.r.WriteAt(src[:s.n], s.off)
}

// QPConfig describes one QP's memory, as the device sees it
// (goshmemi_ibgda_qp_t).
type QPConfig struct {
	Name    string // for messages, e.g. "ctx 1 -> PE 3" (optional)
	QPN     uint32
	SQ      SQ
	DBRec   []byte // 8 bytes: [RcvDBR], [SndDBR] big-endian 32-bit counters
	DB      []byte // 8 bytes: the UAR doorbell word (may be nil)
	CQ      []byte // CQEs * 64 bytes
	CQEs    uint32 // power of 2
	CQDBRec []byte // >= 4 bytes: consumer index, big-endian, 24 bits
	// DoorbellDriven makes the NIC execute only what the doorbell word DB
	// announces, as a NIC behind the CPU-assisted Ringer (the UAR stand-in
	// the Ringer writes): DB must carry the producer-counter form
	// (DoorbellForCounter: the index is the next free WQEBB). The NIC
	// executes up to that index, never past the doorbell record; a doorbell
	// that moves backwards (rung out of order), points past the record
	// (rung before the WQEs were published) or names another QP is recorded
	// as the NIC's error (Err) and counted in Stats.BadDoorbells, and
	// ignored. Without it (the default) the doorbell record alone says how
	// far to fetch, as for GPU-rung doorbells, whose index is the last
	// WQE's start.
	DoorbellDriven bool
}

// Stats counts what the SoftNIC did. InlineWrites counts RDMA writes whose
// payload was inline in the WQE (no local key, no read of the poster's
// memory).
type Stats struct {
	WQEs, CQEs, ErrCQEs, Doorbells, BadDoorbells, InlineWrites atomic.Uint64
}

type softQP struct {
	cfg    QPConfig
	head   uint64 // WQEBBs consumed
	cqPI   uint64 // CQEs produced
	err    bool
	lastDB uint64
	rung   uint16 // DoorbellDriven: the producer counter the last accepted doorbell announced
	// copies of head, cqPI and err for Status (other goroutines)
	pubHead, pubCQEs atomic.Uint64
	pubErr           atomic.Bool
}

func (q *softQP) name() string {
	if q.cfg.Name == "" {
		return fmt.Sprintf("QP %#x", q.cfg.QPN)
	}
	return fmt.Sprintf("QP %#x (%s)", q.cfg.QPN, q.cfg.Name)
}

// NewSoftNIC returns a stopped SoftNIC with no regions and no QPs.
func NewSoftNIC() *SoftNIC { return &SoftNIC{mrs: map[uint32]MR{}} }

// Stats returns the NIC's counters.
func (n *SoftNIC) Stats() *Stats { return &n.stats }

// RegisterMR makes mem reachable under key (as an lkey and an rkey, per access).
func (n *SoftNIC) RegisterMR(key uint32, mem []byte, access int) error {
	if len(mem) == 0 {
		return errors.New("ibgda: empty memory region")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.mrs[key]; ok {
		return fmt.Errorf("ibgda: key %#x already registered", key)
	}
	n.mrs[key] = MR{Key: key, Mem: mem, Access: access, uses: new(atomic.Uint64)}
	return nil
}

// RegisterRegion makes [base, base+size), reached through r, available
// under key (as an lkey and an rkey, per access).
func (n *SoftNIC) RegisterRegion(key uint32, base, size uint64, r Region, access int) error {
	if size == 0 || r == nil {
		return errors.New("ibgda: empty region")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.mrs[key]; ok {
		return fmt.Errorf("ibgda: key %#x already registered", key)
	}
	n.mrs[key] = MR{Key: key, Access: access, Region: r, Base: base, Size: size, uses: new(atomic.Uint64)}
	return nil
}

// DeregisterMR removes the region under key (ibv_dereg_mr): a WQE that
// names the key afterwards fails with a protection or access error, as on
// a NIC. The caller makes sure no WQE that names it is still unexecuted.
func (n *SoftNIC) DeregisterMR(key uint32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.mrs[key]; !ok {
		return fmt.Errorf("ibgda: key %#x is not registered", key)
	}
	delete(n.mrs, key)
	return nil
}

// KeyUses is how many WQE segments named key, as a local key (the data
// or a fetched value) or a remote key, since it was registered; 0 for a
// key not registered now.
func (n *SoftNIC) KeyUses(key uint32) uint64 {
	n.mu.Lock()
	m, ok := n.mrs[key]
	n.mu.Unlock()
	if !ok {
		return 0
	}
	return m.uses.Load()
}

// AddQP attaches a QP; call before Start.
func (n *SoftNIC) AddQP(c QPConfig) error {
	if err := c.SQ.valid(); err != nil {
		return err
	}
	if c.CQEs == 0 || c.CQEs&(c.CQEs-1) != 0 || uint64(len(c.CQ)) != uint64(c.CQEs)*CQESize {
		return fmt.Errorf("ibgda: CQ of %d bytes for %d CQEs", len(c.CQ), c.CQEs)
	}
	if c.DoorbellDriven && c.DB == nil {
		return fmt.Errorf("ibgda: QP %#x is doorbell-driven but has no doorbell word", c.QPN)
	}
	if len(c.DBRec) < 8 || len(c.CQDBRec) < 4 || (c.DB != nil && len(c.DB) < 8) {
		return errors.New("ibgda: doorbell record (8 B), CQ doorbell record (4 B) or doorbell (8 B) too short")
	}
	for _, p := range [][]byte{c.DBRec, c.CQDBRec, c.DB, c.CQ} {
		if p != nil && uintptr(unsafe.Pointer(unsafe.SliceData(p)))%8 != 0 {
			return errors.New("ibgda: doorbell records, doorbell and CQ must be 8-byte aligned")
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		return errors.New("ibgda: AddQP after Start")
	}
	q := &softQP{cfg: c}
	if c.DB != nil {
		q.lastDB = loadU64(c.DB)
	}
	n.qps = append(n.qps, q)
	return nil
}

// SetBusyPoll makes the NIC's goroutine poll without ever sleeping (it
// keeps its OS thread and a core busy): for latency measurements, where the
// default idle back-off (a 20 us sleep after 64 idle sweeps) would be
// measured too. Call before Start.
func (n *SoftNIC) SetBusyPoll(on bool) {
	n.mu.Lock()
	n.spin = on
	n.mu.Unlock()
}

// SetAtomicHostEndian selects how atomics read and write their 8-byte
// target word: in host order (on) or big-endian (off, the default). On is
// mlx5's "requester endianness mode" host endianness (HCA cap
// atomic_req_8B_endianness_mode), which mlx5_core configures when the
// device supports it and which goshmem's IBGDA backend requires, so that a
// signal word written by an RDMA write of host-order bytes (SIGNAL_SET) and
// one updated by a fetch-add (SIGNAL_ADD) are the same host-order word.
// WQE operands and fetched values stay big-endian either way. Call before
// Start.
// Ref: Linux commit f91e6d8941bf ("net/mlx5_core: Add setting ATOMIC endian mode").
func (n *SoftNIC) SetAtomicHostEndian(on bool) {
	n.mu.Lock()
	n.hostEndian = on
	n.mu.Unlock()
}

// SetTimeout bounds how long one operation (a Region copy or atomic) and a
// wait for CQ space may take before the NIC records an error naming the QP
// (Err); 0, the default, never. The NIC keeps waiting either way: it cannot
// abandon a half-done operation. Call before Start.
func (n *SoftNIC) SetTimeout(d time.Duration) {
	n.mu.Lock()
	n.timeout = d
	n.mu.Unlock()
}

// Err returns the first problem the NIC recorded (see SetTimeout), or nil.
func (n *SoftNIC) Err() error {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	return n.err
}

func (n *SoftNIC) fail(err error) {
	n.errMu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.errMu.Unlock()
}

// QPStatus is one QP as the NIC sees it (Status).
type QPStatus struct {
	QPN  uint32
	Name string
	// Published is the doorbell record's send counter (WQEBBs the poster
	// published, mod 2^16); Doorbell the doorbell word last written.
	Published uint16
	Doorbell  uint64
	Executed  uint64 // WQEBBs the NIC consumed
	CQEs      uint64 // CQEs written
	Consumed  uint32 // the CQ doorbell record: CQEs the poster consumed (24 bits)
	Error     bool   // the QP is in the error state
	Busy      string // the operation in progress on this QP for longer than a millisecond, if any
}

// Idle reports whether nothing was ever published on the QP.
func (s QPStatus) Idle() bool { return s.Published == 0 && s.Executed == 0 && s.Doorbell == 0 }

func (s QPStatus) String() string {
	name := fmt.Sprintf("QP %#x", s.QPN)
	if s.Name != "" {
		name += " (" + s.Name + ")"
	}
	msg := fmt.Sprintf("%s: doorbell record %d, doorbell word %#x, NIC executed %d WQEBBs (mod 2^16: %d), wrote %d CQEs, poster consumed %d",
		name, s.Published, s.Doorbell, s.Executed, uint16(s.Executed), s.CQEs, s.Consumed)
	switch {
	case s.Error:
		msg += "; QP in error"
	case s.Busy != "":
		msg += "; busy: " + s.Busy
	case s.Idle():
		msg += "; the NIC has seen nothing posted"
	}
	return msg
}

// Status returns every QP's state, in AddQP order. Safe while the NIC runs.
func (n *SoftNIC) Status() []QPStatus {
	n.mu.Lock()
	qps := n.qps
	n.mu.Unlock()
	cur := n.busy.Load()
	out := make([]QPStatus, 0, len(qps))
	for _, q := range qps {
		c := &q.cfg
		st := QPStatus{
			QPN: c.QPN, Name: c.Name, Published: uint16(loadBE32(c.DBRec[4*SndDBR:])),
			Executed: q.pubHead.Load(), CQEs: q.pubCQEs.Load(), Consumed: loadBE32(c.CQDBRec) & 0xffffff,
			Error: q.pubErr.Load(),
		}
		if c.DB != nil {
			st.Doorbell = loadU64(c.DB)
		}
		if cur != nil && cur.q == q {
			if d := time.Since(cur.start); d > time.Millisecond {
				st.Busy = fmt.Sprintf("%s, for %v", cur.what, d.Round(time.Millisecond))
			}
		}
		out = append(out, st)
	}
	return out
}

// ErrNotDrained: Drain's timeout passed with WQEs still unexecuted.
var ErrNotDrained = errors.New("ibgda: soft NIC (EMULATION): WQEs still unexecuted")

// Drain waits until the NIC has executed every WQE the doorbell records
// announce (each QP's executed count has reached its record, mod 2^16;
// QPs in error are skipped: the NIC flushes them), so writes, reads and
// atomics posted before the call have landed. It returns the NIC's error if
// it failed, and an error naming the QPs still behind after timeout (0:
// no limit).
func (n *SoftNIC) Drain(timeout time.Duration) error {
	start := time.Now()
	behind := func(st QPStatus) bool { return !st.Error && uint16(st.Executed) != st.Published }
	for polls := 0; ; polls++ {
		sts := n.Status()
		i := 0
		for i < len(sts) && !behind(sts[i]) {
			i++
		}
		if i == len(sts) {
			return nil
		}
		if err := n.Err(); err != nil {
			return err
		}
		if timeout > 0 && time.Since(start) > timeout {
			var names []string // described only now, not on every poll
			for _, st := range sts[i:] {
				if behind(st) {
					names = append(names, st.String())
				}
			}
			return fmt.Errorf("%w after %v: %s", ErrNotDrained, timeout, names)
		}
		if polls < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// Start runs the NIC's goroutine (and, with a timeout, its watchdog).
func (n *SoftNIC) Start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		return
	}
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go n.run()
	if n.timeout > 0 {
		go n.watch(n.stop, n.timeout)
	}
}

// Stop ends the goroutine and waits for it. Calling it again (or before
// Start) does nothing.
func (n *SoftNIC) Stop() {
	n.mu.Lock()
	stop, done := n.stop, n.done
	already := n.stopped
	n.stopped = true
	n.mu.Unlock()
	if stop == nil || already {
		return
	}
	close(stop)
	<-done
}

// watch records an error for an operation that has run longer than the
// timeout (once per operation); the NIC's goroutine itself may be the one
// blocked, so this is a goroutine of its own.
func (n *SoftNIC) watch(stop chan struct{}, timeout time.Duration) {
	tick := min(max(timeout/4, time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		cur := n.busy.Load()
		if cur == nil || time.Since(cur.start) <= timeout || cur.reported.Swap(true) {
			continue
		}
		n.fail(fmt.Errorf("ibgda: soft NIC: %s: %s has not finished after %v (the NIC is stuck: nothing later on any QP executes)",
			cur.q.name(), cur.what, timeout))
	}
}

// track marks the start of an operation for the watchdog (timeout set
// only); untrack its end.
func (n *SoftNIC) track(q *softQP, what func() string) {
	if n.timeout > 0 {
		n.busy.Store(&inFlight{q: q, what: what(), start: time.Now()})
	}
}

func (n *SoftNIC) untrack() {
	if n.timeout > 0 {
		n.busy.Store(nil)
	}
}

func (n *SoftNIC) run() {
	defer close(n.done)
	n.mu.Lock()
	spin := n.spin
	n.mu.Unlock()
	if spin {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	idle := 0
	for {
		select {
		case <-n.stop:
			return
		default:
		}
		work := false
		for _, q := range n.qps {
			if n.progress(q) {
				work = true
			}
		}
		if work {
			idle = 0
			continue
		}
		// Back off when idle so the "GPU threads" get the cores.
		idle++
		if spin {
			continue
		}
		if idle < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// Word access to device-written records: aligned 32/64-bit atomics; values
// in the records are big-endian, and the hosts goshmem runs on are
// little-endian (TestLittleEndianHost checks it).
func loadBE32(p []byte) uint32 {
	return bits.ReverseBytes32(atomic.LoadUint32((*uint32)(unsafe.Pointer(&p[0]))))
}

func loadU64(p []byte) uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&p[0]))) }

// progress consumes every WQE published on q; reports whether it did any.
func (n *SoftNIC) progress(q *softQP) bool {
	c := &q.cfg
	if c.DoorbellDriven {
		return n.progressRung(q)
	}
	pi := uint16(loadBE32(c.DBRec[4*SndDBR:]))
	if pi == uint16(q.head) {
		return false
	}
	if c.DB != nil {
		if db := loadU64(c.DB); db != q.lastDB {
			q.lastDB = db
			n.stats.Doorbells.Add(1)
			// The doorbell carries ctrl's first 8 B: qpn_ds is bytes 4..7.
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], db)
			if binary.BigEndian.Uint32(b[4:])>>8 != c.QPN {
				n.stats.BadDoorbells.Add(1)
			}
		}
	}
	n.execUpTo(q, pi)
	return true
}

// progressRung is progress for a DoorbellDriven QP: a new doorbell word
// (loaded before the record, so a doorbell rung after a record store is
// checked against at least that record) moves the target.
func (n *SoftNIC) progressRung(q *softQP) bool {
	c := &q.cfg
	if db := loadU64(c.DB); db != q.lastDB {
		q.lastDB = db
		n.stats.Doorbells.Add(1)
		pi := uint16(loadBE32(c.DBRec[4*SndDBR:]))
		idx, qpn := decodeDoorbell(db)
		head := uint16(q.head)
		var bad string
		switch {
		case qpn != c.QPN:
			bad = fmt.Sprintf("doorbell %#x names QPN %#x", db, qpn)
		case uint16(idx-head) <= uint16(pi-head):
			q.rung = idx
		case uint16(head-idx) <= uint16(c.SQ.WQEBBs):
			bad = fmt.Sprintf("doorbell went backwards to WQEBB %d after the NIC was rung up to %d (rung out of order)", idx, head)
		default:
			bad = fmt.Sprintf("doorbell announces WQEBB %d beyond the doorbell record %d (rung before the WQEs were published)", idx, pi)
		}
		if bad != "" {
			n.stats.BadDoorbells.Add(1)
			n.fail(fmt.Errorf("ibgda: soft NIC: %s: %s", q.name(), bad))
		}
	}
	if q.rung == uint16(q.head) {
		return false
	}
	n.execUpTo(q, q.rung)
	return true
}

// execUpTo executes q's WQEs from its head up to WQEBB index pi.
func (n *SoftNIC) execUpTo(q *softQP, pi uint16) {
	c := &q.cfg
	for pi != uint16(q.head) {
		idx := uint16(q.head)
		avail := uint32(uint16(pi - idx))
		nbb := dsToWQEBB(uint32(c.SQ.CtrlDS(idx)))
		nbb = max(1, min(nbb, avail))
		if q.err {
			n.complete(q, CQE{Opcode: CQEReqErr, WQECounter: idx, QPN: c.QPN, Syndrome: SyndromeWRFlushErr,
				WQEOpcode: c.SQ.seg(idx, 0)[3]})
			q.head += uint64(nbb)
			q.pubHead.Store(q.head)
			continue
		}
		w, err := DecodeWQE(c.SQ, idx, avail)
		var synd uint8
		var bytes uint32
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				panic(err) // ring geometry was validated by AddQP
			}
			synd = de.Syndrome
		} else if w.QPN != c.QPN {
			synd = SyndromeLocalQPOpErr
		} else {
			nbb = w.WQEBBs()
			n.track(q, func() string { return describe(&w, idx) })
			bytes, synd = n.execute(&w)
			n.untrack()
		}
		n.stats.WQEs.Add(1)
		if synd != 0 {
			q.err = true
			q.pubErr.Store(true)
			n.complete(q, CQE{Opcode: CQEReqErr, WQECounter: idx, QPN: c.QPN, Syndrome: synd,
				WQEOpcode: c.SQ.seg(idx, 0)[3]})
		} else if w.Signaled() {
			n.complete(q, CQE{Opcode: CQEReq, WQECounter: idx, QPN: c.QPN, WQEOpcode: w.Opcode, ByteCnt: bytes})
		}
		q.head += uint64(nbb)
		q.pubHead.Store(q.head)
	}
}

// describe names a WQE for messages.
func describe(w *WQE, idx uint16) string {
	var op string
	switch w.Opcode {
	case OpcodeNOP:
		return fmt.Sprintf("NOP (wqe %d)", idx)
	case OpcodeRDMAWrite:
		op = "RDMA write"
	case OpcodeRDMARead:
		op = "RDMA read"
	case OpcodeAtomicCS:
		op = "atomic compare-swap"
	case OpcodeAtomicFA:
		op = "atomic fetch-add"
	default:
		op = fmt.Sprintf("opcode %#x", w.Opcode)
	}
	n := uint64(len(w.Inline))
	for _, d := range w.SGEs {
		n += d.Len()
	}
	return fmt.Sprintf("%s (wqe %d) of %d bytes, rkey %#x raddr %#x", op, idx, n, w.RKey, w.RAddr)
}

// complete writes one CQE: body first, then the last 4 bytes (wqe_counter,
// signature, op_own with the lap's owner bit) in one store, so a poller that
// sees the new owner bit sees the whole entry.
func (n *SoftNIC) complete(q *softQP, e CQE) {
	c := &q.cfg
	var full time.Time // when the CQ was first seen full (timeout set)
	reported := false
	for { // CQ full: wait for the consumer's doorbell record
		ci := loadBE32(c.CQDBRec) & 0xffffff
		if (uint32(q.cqPI)-ci)&0xffffff < c.CQEs {
			break
		}
		if n.timeout > 0 && !reported {
			if full.IsZero() {
				full = time.Now()
			} else if time.Since(full) > n.timeout {
				n.fail(fmt.Errorf("ibgda: soft NIC: %s: its CQ (%d entries) stayed full for %v: the poster consumed %d CQEs of %d written and stopped polling",
					q.name(), c.CQEs, n.timeout, ci, q.cqPI))
				reported = true
			}
		}
		select {
		case <-n.stop:
			return
		default:
			runtime.Gosched()
		}
	}
	e.Owner = uint8(q.cqPI/uint64(c.CQEs)) & 1
	var b [CQESize]byte
	EncodeCQE(b[:], e)
	slot := c.CQ[(q.cqPI&uint64(c.CQEs-1))*CQESize:][:CQESize]
	copy(slot[:60], b[:60])
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&slot[60])), binary.LittleEndian.Uint32(b[60:]))
	q.cqPI++
	q.pubCQEs.Store(q.cqPI)
	n.stats.CQEs.Add(1)
	if e.IsError() {
		n.stats.ErrCQEs.Add(1)
	}
}

// lookup returns the span [addr, addr+size) of the region under key, or
// ok == false if the key is unknown, lacks access, or the range is outside it.
func (n *SoftNIC) lookup(key uint32, addr, size uint64, access int) (span, bool) {
	n.mu.Lock()
	m, ok := n.mrs[key]
	n.mu.Unlock()
	if !ok || m.Access&access != access {
		return span{}, false
	}
	if m.uses != nil {
		m.uses.Add(1)
	}
	base, msize := m.addr(), m.size()
	if addr < base || size > msize || addr-base > msize-size {
		return span{}, false
	}
	off := addr - base
	if m.Region != nil {
		return span{r: m.Region, off: off, n: size}, true
	}
	return span{b: m.Mem[off : off+size], n: size}, true
}

// execute performs w; returns the CQE byte count and a syndrome (0 = ok).
func (n *SoftNIC) execute(w *WQE) (uint32, uint8) {
	switch w.Opcode {
	case OpcodeNOP:
		return 0, 0
	case OpcodeRDMAWrite:
		src := w.Inline
		if src != nil {
			n.stats.InlineWrites.Add(1)
		} else {
			var total uint64
			for _, d := range w.SGEs {
				total += d.Len()
			}
			if total > maxSGELen {
				return 0, SyndromeLocalLengthErr
			}
			src = make([]byte, total)
			o := uint64(0)
			for _, d := range w.SGEs {
				b, ok := n.lookup(d.LKey, d.Addr, d.Len(), AccessLocalRead)
				if !ok || b.read(src[o:o+d.Len()]) != nil {
					return 0, SyndromeLocalProtErr
				}
				o += d.Len()
			}
		}
		dst, ok := n.lookup(w.RKey, w.RAddr, uint64(len(src)), AccessRemoteWrite)
		if !ok || dst.write(src) != nil {
			return 0, SyndromeRemoteAccessErr
		}
		return uint32(len(src)), 0
	case OpcodeRDMARead:
		var total uint64
		dsts := make([]span, 0, len(w.SGEs))
		for _, d := range w.SGEs {
			b, ok := n.lookup(d.LKey, d.Addr, d.Len(), AccessLocalWrite)
			if !ok {
				return 0, SyndromeLocalProtErr
			}
			dsts = append(dsts, b)
			total += d.Len()
		}
		src, ok := n.lookup(w.RKey, w.RAddr, total, AccessRemoteRead)
		if !ok {
			return 0, SyndromeRemoteAccessErr
		}
		buf := make([]byte, total)
		if src.read(buf) != nil {
			return 0, SyndromeRemoteAccessErr
		}
		for _, d := range dsts {
			if d.write(buf) != nil {
				return 0, SyndromeLocalProtErr
			}
			buf = buf[d.n:]
		}
		return uint32(total), 0
	default: // atomics (DecodeWQE admits only CS and FA here)
		res, ok := n.lookup(w.SGEs[0].LKey, w.SGEs[0].Addr, 8, AccessLocalWrite)
		if !ok {
			return 0, SyndromeLocalProtErr
		}
		if w.RAddr%8 != 0 {
			return 0, SyndromeRemoteInvalReqErr
		}
		t, ok := n.lookup(w.RKey, w.RAddr, 8, AccessRemoteAtomic)
		if !ok {
			return 0, SyndromeRemoteAccessErr
		}
		var old uint64
		if t.r != nil {
			// Region atomics are host-order only (goshmem's mode).
			if !n.hostEndian {
				return 0, SyndromeRemoteInvalReqErr
			}
			var err error
			if old, err = t.r.Atomic8(t.off, w.Opcode == OpcodeAtomicCS, w.SwapAdd, w.Compare); err != nil {
				return 0, SyndromeRemoteAccessErr
			}
		} else {
			old = n.atomicBytes(t.b, w)
		}
		var out [8]byte
		binary.BigEndian.PutUint64(out[:], old)
		if res.write(out[:]) != nil {
			return 0, SyndromeLocalProtErr
		}
		return 8, 0
	}
}

// atomicBytes applies w's atomic to the 8-byte word t (host order or
// big-endian, per SetAtomicHostEndian) and returns the old value.
func (n *SoftNIC) atomicBytes(t []byte, w *WQE) uint64 {
	p := (*uint64)(unsafe.Pointer(&t[0]))
	for {
		raw := atomic.LoadUint64(p)
		old := raw // host-order target word (little-endian hosts)
		if !n.hostEndian {
			old = bits.ReverseBytes64(raw) // big-endian target word
		}
		nv := old + w.SwapAdd
		if w.Opcode == OpcodeAtomicCS {
			if old != w.Compare {
				return old
			}
			nv = w.SwapAdd
		}
		if !n.hostEndian {
			nv = bits.ReverseBytes64(nv)
		}
		if atomic.CompareAndSwapUint64(p, raw, nv) {
			return old
		}
	}
}

func loadU32(p []byte) uint32     { return atomic.LoadUint32((*uint32)(unsafe.Pointer(&p[0]))) }
func storeU32(p []byte, v uint32) { atomic.StoreUint32((*uint32)(unsafe.Pointer(&p[0])), v) }
