// Package ofi is the inter-node host transport: the symmetric heap is
// registered with libfabric at Init (keys and addresses exchanged through
// the bootstrap's Allgather) and every put, get and atomic is an RMA or
// atomic operation on one RDM endpoint (provider chosen by
// GOSHMEM_OFI_PROVIDER; tcp;ofi_rxm by default).
//
// Completion model (Ref: OpenSHMEM 1.6 §9.8.2; fi_cq(3)): every operation
// posted for a quiet.Queue is counted there with Issue before it is posted,
// and carries an integer context naming its slot in an operation table. When
// its completion entry is read (by whoever drives progress: a quiet's
// progress callback, a blocking call, or the progress thread) the slot is
// retired and the queue's Complete (or Fail, for an error entry) is called.
// Writes and non-fetching atomics are posted with FI_DELIVERY_COMPLETE, so a
// completion means the data is at the target, not merely sent: tcp;ofi_rxm
// otherwise completes a write as soon as it left this process.
//
// Buffers: C never keeps a Go pointer. Data of at most the provider's
// inject size is posted with FI_INJECT (copied before the call returns);
// larger puts are copied into a registered staging arena and segmented into
// chunks (no larger than the provider's max message size); gets read into
// the arena and are copied out when they complete.
//
// Contexts: the PE's primary endpoint is the one peers target (its address
// is exchanged at Init) and carries the operations of queues made with its
// Progress as callback. Each queue made by NewQueue (one per shmem Ctx, the
// default context's included) gets an endpoint and a
// completion queue of its own in the same domain, bound to the same address
// vector: its traffic runs on its own connections (tcp: its own sockets), so
// a context's small put is not queued behind another context's bulk
// transfer, and its completions are read from its own queue. Ctx.Quiet
// waits on that queue only; the PE-wide Quiet on all of them.
//
// Address (Ref: fi_getinfo(3) src_addr): fi_getinfo lists one entry per
// address of each interface for tcp and sockets, in an order that may put
// an IPv6 link-local address first, which a peer on another host cannot
// reach. The endpoint binds the entry fabric.Pick chooses: on
// Config.Iface (GOSHMEM_OFI_IFACE) when set, else an IPv4 address off
// loopback first; loopback only when every peer is on this node; never an
// IPv6 link-local one without a scope id (nor with one across nodes).
// libfabric's own FI_TCP_IFACE / FI_SOCKETS_IFACE still narrow the list
// before the choice.
//
// Fence (Ref: fi_msg(3) FI_FENCE; OpenSHMEM 1.6 §9.8.1): where the provider
// offers FI_FENCE in its capabilities, Fence only marks the endpoint and
// the next write or atomic posted there carries FI_FENCE (the provider
// holds it until everything posted before it completed, delivery-complete
// here); otherwise Fence waits until the queue's earlier operations are
// delivered.
//
// Progress (Ref: fi_domain(3) FI_PROGRESS_MANUAL): software providers move
// data only when the process calls into libfabric, at the target too: a
// put to this PE lands, and the initiator's delivery-complete quiet
// returns, only once this process has read the message off its socket and
// sent the acknowledgement. The peers' operations arrive at the primary
// endpoint; this PE's own operations go out on the endpoint of their
// context (NewQueue: shmem gives the default context one too), whose
// acknowledgements the waiting quiet reads itself. Two kinds of thread
// drive the primary endpoint:
//   - a C progress thread (fabric.Endpoint.StartProgress), blocked in
//     fi_cq_sread, so incoming RMA lands while the application computes,
//     quiets its own operations or waits without spinning;
//   - shmem's wait loops (WaitUntil, the barrier's waits), which wait for
//     data from the peers: while they spin they poll the primary endpoint
//     themselves (SpinProgress) and claim it, so the progress thread stays
//     off it until the wait returns or backs off to sleeping (EndSpin).
//     Otherwise every arriving message would wake the progress thread, the
//     sender paying a cross-CPU wake-up and this CPU (mpirun binds each
//     process to one) a context switch and contention for the provider's
//     lock with the spinning thread.
//
// Polling yields to the Go scheduler every schedEvery polls so that sysmon
// stays asleep (see there).
package ofi

import (
	"encoding/binary"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
)

// Config is what the runtime gives New.
type Config struct {
	// Provider is the libfabric provider ("tcp;ofi_rxm", "shm", "sockets").
	Provider string
	// Iface is the network interface whose address the peers reach this
	// PE by (GOSHMEM_OFI_IFACE; "": auto, see fabric.Pick).
	Iface string
	// OneNode says every PE runs on this host, so a loopback address
	// reaches them all. Without it the transport judges from Local: a PE
	// not mapped here is on another node, and then loopback and IPv6
	// link-local addresses are never bound.
	OneNode  bool
	Me, NPEs int
	// Region is this PE's symmetric region (mmap'd, not the Go heap).
	Region    unsafe.Pointer
	RegionLen uint64
	// Local are load/store bases per PE (nil where not mapped), for Ptr.
	Local []unsafe.Pointer
	// Allgather is the bootstrap's, used once to exchange addresses and keys.
	Allgather func([]byte) ([]byte, error)
	// Timeout bounds a blocking wait inside the transport (0 = none).
	Timeout time.Duration
	// Reach marks the PEs this transport carries (nil: all); Init checks
	// that each of them answers.
	Reach []bool
	// ConnectTimeout bounds that check (0: Timeout, or 20 s without one).
	ConnectTimeout time.Duration
	// Check, when set, is consulted on the slow path of every wait inside
	// the transport (the runtime's liveness check of node peers): its
	// error ends the wait.
	Check func() error
	// MaxMsgSize, when not 0, lowers the largest message posted below the
	// provider's max_msg_size (an internal knob: tests force segmentation).
	MaxMsgSize uint64

	// mangle, in tests, edits the address record exchanged for pe.
	mangle func(pe int, rec []byte)
}

const (
	maxOps     = 4096      // operations in flight per PE
	slotSize   = 64        // per-operation scratch: AMO operands and results, small gets
	chunkSize  = 256 << 10 // staging chunk: the largest segment of a put or get
	numChunks  = 64        // 16 MiB of staging
	addrMax    = 96        // bytes of endpoint address in the exchange
	recordSize = 8 + 8 + 8 + addrMax
	// eagainLimit bounds how long a post may be answered -FI_EAGAIN
	// (driving progress between tries) before it fails naming the peer,
	// when GOSHMEM_TIMEOUT is not set.
	eagainLimit = 60 * time.Second
)

// remote reports whether some PE this transport reaches is on another
// node (see OneNode).
func (c *Config) remote() bool {
	if c.OneNode {
		return false
	}
	for pe := 0; pe < c.NPEs; pe++ {
		if pe == c.Me || (c.Reach != nil && !c.Reach[pe]) {
			continue
		}
		if pe >= len(c.Local) || c.Local[pe] == nil {
			return true
		}
	}
	return false
}

// op is one slot of the operation table.
type op struct {
	q     *quiet.Queue // nil: a blocking operation (the caller waits on done)
	pe    int
	chunk int32  // staging chunk, or -1
	dst   []byte // a non-blocking get: copy the staging bytes here on completion
	src   unsafe.Pointer
	what  string
	done  atomic.Bool
	err   error
}

// endpoint is one libfabric endpoint and its completion queue: the PE's
// primary one, or a context's own.
type endpoint struct {
	t  *Transport
	ep *fabric.Endpoint
	// fence: the next write or atomic posted here carries FI_FENCE.
	fence   atomic.Bool
	progMu  sync.Mutex
	progBuf [64]fabric.Completion
	polls   uint32 // under progMu
}

// schedEvery: progress yields to the Go scheduler once every schedEvery
// polls (a fraction of a millisecond of polling). A goroutine that spins in cgo
// calls without ever passing through the scheduler is force-preempted by
// sysmon every 10 ms; a forced preemption of a goroutine in a cgo call
// takes its P, and any P taken (with GOMAXPROCS=1 also a cgo call that
// merely spans two sysmon ticks) puts sysmon back to waking every 20 us
// for the next millisecond or more, on the one CPU the process is bound
// to, where each wake-up preempts the polling thread: yielding first keeps
// sysmon asleep (its effect on put + quiet: docs/ofi.md). runtime.Gosched
// with nothing else to run costs well under a microsecond.
const schedEvery = 64

// progress drives e's provider and retires the operations its completion
// queue reports.
func (e *endpoint) progress() { e.poll(false) }

// poll is progress; claim: the caller spins waiting for data from the peers
// (fabric.Endpoint.PollClaim).
func (e *endpoint) poll(claim bool) {
	if !e.progMu.TryLock() {
		goruntime.Gosched()
		return
	}
	var n int
	if claim {
		n = e.ep.PollClaim(e.progBuf[:])
	} else {
		n = e.ep.Poll(e.progBuf[:])
	}
	for i := range e.progBuf[:n] {
		c := &e.progBuf[i]
		e.t.retire(fabric.Ctx(c), fabric.Failed(c))
	}
	e.polls++
	yield := e.polls%schedEvery == 0
	e.progMu.Unlock()
	if yield {
		goruntime.Gosched()
	}
}

// fenceFlag returns FlagFence, once, after a Fence marked e.
func (e *endpoint) fenceFlag() uint64 {
	if e.fence.Load() && e.fence.Swap(false) {
		return fabric.FlagFence
	}
	return 0
}

// unfence puts back a fence whose operation was not posted.
func (e *endpoint) unfence(flags uint64) {
	if flags&fabric.FlagFence != 0 {
		e.fence.Store(true)
	}
}

// Transport is the ofi transport of one PE.
type Transport struct {
	cfg   Config
	ep    *fabric.Endpoint // the primary endpoint's (main.ep)
	main  *endpoint
	ctxs  sync.Map // *quiet.Queue -> *endpoint: queues with an endpoint of their own
	nctx  atomic.Int32
	heap  *fabric.MR
	stage *fabric.MR
	arena []byte // mmap'd: slots then chunks

	addr  []uint64 // fi_addr per PE
	raddr []uint64 // remote address of each PE's region start (0 when offsets are relative)
	key   []uint64

	inject   uint64
	seg      uint64 // largest staged segment
	zseg     uint64 // largest zero-copy segment (the provider's max message size, capped)
	flags    uint64 // FI_DELIVERY_COMPLETE for writes and non-fetching atomics
	amo      [3][8][9]bool
	name     string
	manual   bool
	fenceRAW bool // reads must wait for earlier writes (provider lacks FI_ORDER_RAW)
	native   bool // the provider honours FI_FENCE
	ordered  bool // the provider places writes in order (FI_ORDER_WAW up to every size posted)
	names    [][]byte
	ownName  []byte

	mu     sync.Mutex // the op table and the chunk list
	ops    []op
	free   []uint32
	chunks []int32

	closed atomic.Bool
}

// New opens the provider, registers the region and exchanges addresses and
// keys with every PE over cfg.Allgather (collective: every PE calls it):
// Setup, one exchange, Connect, and one exchange of Connect's outcome, so
// a peer that cannot be reached fails New on every PE alike. The runtime
// calls Setup and Connect itself, inside its own exchanges.
func New(cfg Config) (*Transport, error) {
	t, rec, err := Setup(cfg)
	if err != nil {
		return nil, err
	}
	all, err := cfg.Allgather(rec)
	if err != nil {
		t.release()
		return nil, errs.Wrap(err, cfg.Me, "Init", "ofi: exchanging addresses and keys")
	}
	recs := make([][]byte, cfg.NPEs)
	for pe := range recs {
		recs[pe] = all[pe*recordSize : (pe+1)*recordSize]
	}
	cerr := t.Connect(recs)
	// [1 if failed][message]
	const outcomeLen = 256
	var out [outcomeLen]byte
	if cerr != nil {
		out[0] = 1
		copy(out[1:], cerr.Error())
	}
	outs, err := cfg.Allgather(out[:])
	if err == nil && cerr == nil {
		for pe := 0; pe < cfg.NPEs; pe++ {
			if o := outs[pe*outcomeLen : (pe+1)*outcomeLen]; o[0] == 1 {
				cerr = errors.WithHint(errs.New(errs.ErrTimeout, cfg.Me, "Init", "ofi: PE %d: %s", pe,
					strings.TrimRight(string(o[1:]), "\x00")), reachHint)
				break
			}
		}
	} else if cerr == nil {
		cerr = errs.Wrap(err, cfg.Me, "Init", "ofi: exchanging reachability")
	}
	if cerr != nil {
		t.release()
		return nil, cerr
	}
	return t, nil
}

// Setup opens the provider and registers the region and the staging
// arena: local work only. It returns this PE's record for the exchange
// (memory key, region address, endpoint address) that Connect consumes.
func Setup(cfg Config) (*Transport, []byte, error) {
	ep, err := fabric.OpenSelect(cfg.Provider, fabric.Select{Iface: cfg.Iface, Remote: cfg.remote()})
	if err != nil {
		switch {
		case errors.Is(err, fabric.ErrNoProvider):
			// The sentinel in the chain (stdlib errors.Is finds it too),
			// the provider list as the hint.
			return nil, nil, errors.WithHint(errs.New(errs.ErrNotSupported, cfg.Me, "Init", "ofi: %v", err), errors.FlattenHints(err))
		case cfg.Iface != "" && errors.Is(err, errs.ErrInvalidArgument):
			return nil, nil, errors.WithHint(errs.Wrap(err, cfg.Me, "Init", "ofi: GOSHMEM_OFI_IFACE=%s", cfg.Iface),
				"set GOSHMEM_OFI_IFACE to the interface the other nodes reach this host by, or leave it empty (auto)")
		case errors.Is(err, errs.ErrNotSupported):
			return nil, nil, errors.WithHint(errs.Wrap(err, cfg.Me, "Init", "ofi: choosing an address (GOSHMEM_OFI_IFACE not set)"),
				"set GOSHMEM_OFI_IFACE to the interface the other nodes reach this host by")
		}
		return nil, nil, errs.Wrap(err, cfg.Me, "Init", "ofi")
	}
	t := &Transport{cfg: cfg, ep: ep}
	t.main = &endpoint{t: t, ep: ep}
	ok := false
	defer func() {
		if !ok {
			t.release()
		}
	}()
	a := ep.Attr
	t.name = fmt.Sprintf("ofi (%s on %s)", a.Provider, a.Domain)
	if a.Source.IsValid() {
		t.name = fmt.Sprintf("ofi (%s on %s, %s)", a.Provider, a.Domain, a.Source)
	}
	maxMsg := a.MaxMsgSize
	if maxMsg == 0 {
		maxMsg = ^uint64(0) // not reported: no limit below goshmem's own
	}
	if cfg.MaxMsgSize != 0 && (maxMsg == 0 || cfg.MaxMsgSize < maxMsg) {
		maxMsg = cfg.MaxMsgSize
	}
	// Every message is at most maxMsg bytes (Ref: fi_endpoint(3)
	// max_msg_size): larger puts and gets are segmented.
	t.seg = min(chunkSize, maxMsg)
	t.zseg = min(64<<20, maxMsg)
	t.inject = min(a.InjectSize, slotSize, maxMsg)
	t.flags = fabric.FlagDelivery
	t.manual = a.DataProgress == fabric.ProgressManual
	t.fenceRAW = a.MsgOrder&fabric.OrderRAW == 0
	t.native = a.Fence()
	// Every write and atomic goshmem posts is at most zseg bytes: when the
	// provider keeps write-after-write data order up to that size, writes
	// of one queue (one endpoint) land in the order posted and Fence has
	// nothing to do.
	t.ordered = a.MsgOrder&fabric.OrderWAW != 0 && a.MaxOrderWAWSize >= t.zseg
	if a.MRKeySize > 8 {
		return nil, nil, errs.New(errs.ErrNotSupported, cfg.Me, "Init", "ofi: provider %s needs %d-byte memory keys; goshmem exchanges 8", a.Provider, a.MRKeySize)
	}

	// Staging arena: mmap'd so it never lives on the Go heap.
	t.arena, err = unix.Mmap(-1, 0, maxOps*slotSize+numChunks*chunkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, errs.Wrap(err, cfg.Me, "Init", "ofi: staging arena")
	}
	if t.stage, err = ep.Register(unsafe.Pointer(&t.arena[0]), uint64(len(t.arena)), fabric.AccessLocal, 2); err != nil {
		return nil, nil, errs.Wrap(err, cfg.Me, "Init", "ofi: registering the staging arena")
	}
	if t.heap, err = ep.Register(cfg.Region, cfg.RegionLen, fabric.AccessRemote|fabric.AccessLocal, 1); err != nil {
		return nil, nil, errors.WithHint(errs.Wrap(err, cfg.Me, "Init", "ofi: registering the symmetric heap (%d bytes)", cfg.RegionLen),
			"lower GOSHMEM_SYMMETRIC_SIZE or raise the locked-memory limit (ulimit -l)")
	}
	t.ops = make([]op, maxOps)
	t.free = make([]uint32, 0, maxOps)
	for i := maxOps - 1; i >= 0; i-- {
		t.free = append(t.free, uint32(i))
	}
	for c := numChunks - 1; c >= 0; c-- {
		t.chunks = append(t.chunks, int32(c))
	}
	t.probeAtomics()

	// Exchange: [key][region address][address length][address].
	name, err := ep.Name()
	if err != nil {
		return nil, nil, errs.Wrap(err, cfg.Me, "Init", "ofi")
	}
	if len(name) > addrMax {
		return nil, nil, errs.New(errs.ErrNotSupported, cfg.Me, "Init", "ofi: %s endpoint address is %d bytes; at most %d are exchanged", a.Provider, len(name), addrMax)
	}
	var rec [recordSize]byte
	binary.LittleEndian.PutUint64(rec[0:], t.heap.Key)
	binary.LittleEndian.PutUint64(rec[8:], uint64(uintptr(cfg.Region)))
	binary.LittleEndian.PutUint64(rec[16:], uint64(len(name)))
	copy(rec[24:], name)
	if cfg.mangle != nil {
		cfg.mangle(cfg.Me, rec[:])
	}
	t.ownName = name
	ok = true
	return t, rec[:], nil
}

// Connect takes every PE's Setup record (recs[pe]), inserts the
// addresses, starts progress and checks that this PE reaches every PE it
// carries (probe). It makes no collective call; on error the caller
// releases the transport (Close).
func (t *Transport) Connect(recs [][]byte) error {
	cfg, ep, a := t.cfg, t.ep, t.ep.Attr
	if len(recs) != cfg.NPEs {
		return errs.New(errs.ErrInvalidArgument, cfg.Me, "Init", "ofi: %d records for %d PEs", len(recs), cfg.NPEs)
	}
	name := t.ownName
	t.key = make([]uint64, cfg.NPEs)
	t.raddr = make([]uint64, cfg.NPEs)
	addrs := make([]byte, 0, cfg.NPEs*len(name))
	for pe := 0; pe < cfg.NPEs; pe++ {
		r := recs[pe]
		if len(r) != recordSize {
			return errs.New(errs.ErrNotSymmetric, cfg.Me, "Init", "ofi: PE %d sent a %d-byte address record, want %d", pe, len(r), recordSize)
		}
		t.key[pe] = binary.LittleEndian.Uint64(r[0:])
		if a.MRMode&fabric.MRVirtAddr != 0 {
			t.raddr[pe] = binary.LittleEndian.Uint64(r[8:])
		}
		if n := binary.LittleEndian.Uint64(r[16:]); n != uint64(len(name)) {
			return errs.New(errs.ErrNotSymmetric, cfg.Me, "Init", "ofi: PE %d's endpoint address is %d bytes, this PE's %d: every PE must use the same provider (GOSHMEM_OFI_PROVIDER)", pe, n, len(name))
		}
		addrs = append(addrs, r[24:24+len(name)]...)
		t.names = append(t.names, r[24:24+len(name)])
	}
	var err error
	if t.addr, err = ep.InsertAddrs(addrs, cfg.NPEs); err != nil {
		return errs.Wrap(err, cfg.Me, "Init", "ofi")
	}
	if err := ep.StartProgress(); err != nil {
		return errs.Wrap(err, cfg.Me, "Init", "ofi")
	}
	return t.probe()
}

// probeAtomics records which (kind, op, width) the provider implements
// (Ref: fi_atomic(3) fi_query_atomic). Missing ones are emulated (atomic).
func (t *Transport) probeAtomics() {
	if !t.ep.Attr.Atomic {
		return
	}
	for kind := 0; kind < 3; kind++ {
		for _, w := range []int{1, 2, 4, 8} {
			for _, o := range []transport.AMO{transport.AMOFetch, transport.AMOSet, transport.AMOSwap, transport.AMOCompareSwap,
				transport.AMOAdd, transport.AMOAnd, transport.AMOOr, transport.AMOXor} {
				k, fop := amoOp(o)
				if k != kind {
					continue
				}
				t.amo[kind][o][w] = t.ep.QueryAtomic(kind, dtype(w), fop)
			}
		}
	}
	// AMOSet is also posted non-fetching.
	for _, w := range []int{1, 2, 4, 8} {
		t.amo[fabric.KindAtomic][transport.AMOSet][w] = t.ep.QueryAtomic(fabric.KindAtomic, dtype(w), fabric.OpWrite)
	}
}

func dtype(w int) int {
	switch w {
	case 1:
		return fabric.Uint8
	case 2:
		return fabric.Uint16
	case 4:
		return fabric.Uint32
	}
	return fabric.Uint64
}

// amoOp maps a goshmem AMO to the fetching libfabric call that returns the
// old value.
func amoOp(o transport.AMO) (kind, fop int) {
	switch o {
	case transport.AMOFetch:
		return fabric.KindFetch, fabric.OpRead
	case transport.AMOSet, transport.AMOSwap:
		return fabric.KindFetch, fabric.OpWrite
	case transport.AMOCompareSwap:
		return fabric.KindCompare, fabric.OpCswap
	case transport.AMOAdd:
		return fabric.KindFetch, fabric.OpSum
	case transport.AMOAnd:
		return fabric.KindFetch, fabric.OpBand
	case transport.AMOOr:
		return fabric.KindFetch, fabric.OpBor
	}
	return fabric.KindFetch, fabric.OpBxor
}

// Name implements transport.Transport.
func (t *Transport) Name() string { return t.name }

// Provider is the opened provider's name.
func (t *Transport) Provider() string { return t.ep.Attr.Provider }

// ProgressStats reports the progress thread's rounds spent staying off the
// primary endpoint (a spinning wait claimed it), its rounds driving the
// provider, and the claims that took it out of a blocking read
// (fabric.Endpoint.ProgressStats).
func (t *Transport) ProgressStats() (defers, rounds, kicks uint64) { return t.ep.ProgressStats() }

// SpinProgress is Progress from a wait loop that spins waiting for data
// from the peers (shmem's WaitUntil, the barrier's waits): the calling
// thread claims the primary endpoint, where the peers' operations arrive,
// and the progress thread stays off it until EndSpin (see the package
// comment).
func (t *Transport) SpinProgress() { t.main.poll(true) }

// EndSpin ends the claim of SpinProgress: the wait returned or stops
// spinning (it sleeps between looks from now on). The progress thread is
// woken and drives the primary endpoint again, so what the peers send
// while this PE computes lands at once.
func (t *Transport) EndSpin() { t.ep.Release() }

// Spinning reports whether a SpinProgress claim is held (no EndSpin since).
func (t *Transport) Spinning() bool { return t.ep.Claimed() }

// Progress drives the primary endpoint and retires its completed
// operations; it is the progress callback of every queue that carries ofi
// operations on the primary endpoint (queues from NewQueue drive their own).
func (t *Transport) Progress() { t.main.progress() }

// epFor is the endpoint that carries q's operations.
func (t *Transport) epFor(q *quiet.Queue) *endpoint {
	if q != nil && t.nctx.Load() > 0 {
		if e, ok := t.ctxs.Load(q); ok {
			return e.(*endpoint)
		}
	}
	return t.main
}

// NewQueue returns the queue of a new context, with an endpoint and a
// completion queue of its own (see the package comment). Where the
// provider binds registrations to one endpoint (FI_MR_ENDPOINT) the
// context shares the primary endpoint and still counts its own
// completions. Release it with CloseQueue once it is quiet.
func (t *Transport) NewQueue(name string) (*quiet.Queue, error) {
	if t.ep.Attr.MREndpoint() {
		return quiet.NewQueue(name, t.Progress), nil
	}
	cep, err := t.ep.OpenCtx()
	if err != nil {
		return nil, errs.Wrap(err, t.cfg.Me, "CtxCreate", "ofi: %s: opening its endpoint", name)
	}
	e := &endpoint{t: t, ep: cep}
	q := quiet.NewQueue(name+" (own ofi endpoint)", e.progress)
	t.ctxs.Store(q, e)
	t.nctx.Add(1)
	return q, nil
}

// OwnEndpoint reports whether q has an endpoint of its own.
func (t *Transport) OwnEndpoint(q *quiet.Queue) bool { return t.epFor(q) != t.main }

// CloseQueue releases the endpoint of a queue from NewQueue; the caller
// has quieted it.
func (t *Transport) CloseQueue(q *quiet.Queue) {
	v, ok := t.ctxs.LoadAndDelete(q)
	if !ok {
		return
	}
	t.nctx.Add(-1)
	e := v.(*endpoint)
	e.progMu.Lock()
	e.ep.Close()
	e.progMu.Unlock()
}

// retire completes the operation whose context is c (id+1).
func (t *Transport) retire(c uint64, cerr *fabric.CQError) {
	if c == 0 || c > maxOps {
		return
	}
	o := &t.ops[c-1]
	var err error
	if cerr != nil {
		err = errs.Wrap(cerr, t.cfg.Me, o.what, "ofi: to PE %d", o.pe)
		if lostPeer(cerr.Err) || (cerr.Err == fabric.Errno(unix.ECANCELED) && lostPeer(fabric.Errno(cerr.ProvErrno))) {
			// The peer will never answer: the same sentinel as a wait that
			// finds a node peer's process gone.
			err = errors.WithHint(errs.Mark(err, errs.ErrTimeout), fmt.Sprintf("PE %d's connection is gone: the process exited or its host is unreachable", o.pe))
		}
	}
	if o.q == nil {
		o.err = err
		o.done.Store(true) // the waiter releases the slot
		return
	}
	q := o.q
	if o.dst != nil && err == nil {
		copy(o.dst, unsafe.Slice((*byte)(o.src), len(o.dst)))
	}
	t.release1(c - 1)
	if err != nil {
		q.Fail(err)
	} else {
		q.Complete(1)
	}
}

// lostPeer reports whether a completion error means the connection to the
// peer is gone (libfabric's fi_errno values are the errno values; an
// operation the provider canceled carries the socket's errno as the
// provider errno, checked by the caller).
func lostPeer(e fabric.Errno) bool {
	switch unix.Errno(e) {
	case unix.ENOTCONN, unix.ECONNRESET, unix.EPIPE, unix.ECONNREFUSED, unix.ECONNABORTED, unix.EHOSTUNREACH, unix.ENETUNREACH:
		return true
	}
	return false
}

func (t *Transport) release1(id uint64) {
	o := &t.ops[id]
	t.mu.Lock()
	if o.chunk >= 0 {
		t.chunks = append(t.chunks, o.chunk)
	}
	*o = op{chunk: -1}
	t.free = append(t.free, uint32(id))
	t.mu.Unlock()
}

func (t *Transport) slot(id uint32) unsafe.Pointer {
	return unsafe.Pointer(&t.arena[int(id)*slotSize])
}

func (t *Transport) chunkPtr(c int32) unsafe.Pointer {
	return unsafe.Pointer(&t.arena[maxOps*slotSize+int(c)*chunkSize])
}

// alloc takes an op slot (and a staging chunk when wantChunk), driving
// progress while none is free.
func (t *Transport) alloc(e *endpoint, q *quiet.Queue, pe int, what string, wantChunk bool) (uint32, error) {
	start := time.Time{}
	for i := 0; ; i++ {
		t.mu.Lock()
		if len(t.free) > 0 && (!wantChunk || len(t.chunks) > 0) {
			id := t.free[len(t.free)-1]
			t.free = t.free[:len(t.free)-1]
			o := &t.ops[id]
			o.q, o.pe, o.what, o.chunk = q, pe, what, -1
			if wantChunk {
				o.chunk = t.chunks[len(t.chunks)-1]
				t.chunks = t.chunks[:len(t.chunks)-1]
			}
			t.mu.Unlock()
			return id, nil
		}
		t.mu.Unlock()
		// Slots are shared: completions that free them may wait on any
		// endpoint's queue.
		t.ctxs.Range(func(_, v any) bool {
			v.(*endpoint).progress()
			return true
		})
		if err := t.backoff(e, i, &start, pe, what+": waiting for a free operation slot"); err != nil {
			return 0, err
		}
	}
}

// backoff drives progress and, past the first spins, yields or sleeps; it
// fails once the configured timeout has passed. The sleep asks for 20 us;
// Go on Linux rounds a sleep below a millisecond up to about one (its
// netpoller waits in whole milliseconds); the progress thread meanwhile
// parks the completions it reads for the next poll.
func (t *Transport) backoff(e *endpoint, i int, start *time.Time, pe int, what string) error {
	e.progress()
	switch {
	case i < 64:
	case i < 1024:
		goruntime.Gosched()
	default:
		if start.IsZero() {
			*start = time.Now()
		} else if t.cfg.Timeout > 0 && time.Since(*start) > t.cfg.Timeout {
			return errs.New(errs.ErrTimeout, t.cfg.Me, what, "PE %d did not answer within GOSHMEM_TIMEOUT=%v", pe, t.cfg.Timeout)
		}
		if err := t.check(i); err != nil {
			return errs.Wrap(err, t.cfg.Me, what, "ofi: to PE %d", pe)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

// post runs a posting call, retrying -FI_EAGAIN with progress between
// tries, bounded (Ref: fi_rma(3) "-FI_EAGAIN"; see retry).
func (t *Transport) post(e *endpoint, pe int, what string, call func() error) error {
	var start time.Time
	for i := 0; ; i++ {
		err := call()
		if err == nil {
			return nil
		}
		if err := t.retry(e, err, i, &start, pe, what); err != nil {
			return err
		}
	}
}

// Put implements transport.Transport: src is copied (FI_INJECT or staging)
// before Put returns; completion at the target is counted on q.
func (t *Transport) Put(q *quiet.Queue, pe int, off uint64, src []byte) error {
	if dst := t.self(q, pe, off, len(src)); dst != nil {
		copy(dst, src)
		return nil
	}
	e := t.epFor(q)
	for len(src) > 0 {
		n := uint64(len(src))
		if n <= t.inject {
			id, err := t.alloc(e, q, pe, "put", false)
			if err != nil {
				return err
			}
			q.Issue(1)
			if err := t.postWrite(e, pe, "put", unsafe.Pointer(unsafe.SliceData(src)), n, nil, off, id, t.flags|fabric.FlagInject); err != nil {
				t.release1(uint64(id))
				q.Complete(1)
				return err
			}
			return nil
		}
		if n > t.seg {
			n = t.seg
		}
		id, err := t.alloc(e, q, pe, "put", true)
		if err != nil {
			return err
		}
		buf := t.chunkPtr(t.ops[id].chunk)
		copy(unsafe.Slice((*byte)(buf), n), src[:n])
		q.Issue(1)
		if err := t.postWrite(e, pe, "put", buf, n, t.stage.Desc, off, id, t.flags); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return err
		}
		src = src[n:]
		off += n
	}
	return nil
}

// PutNBI implements transport.Transport. A source inside this PE's
// symmetric region (registered) is written from where it lies, without a
// copy: it may be reused only after quiet, which PutNBI's contract says
// anyway. Other sources are copied, as in Put.
func (t *Transport) PutNBI(q *quiet.Queue, pe int, off uint64, src []byte) error {
	base := uintptr(t.cfg.Region)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	if pe == t.cfg.Me || uint64(len(src)) <= t.inject || p < base || p+uintptr(len(src)) > base+uintptr(t.cfg.RegionLen) {
		return t.Put(q, pe, off, src)
	}
	e := t.epFor(q)
	// Region memory is mmap'd, not Go memory: the provider may keep it.
	buf := unsafe.Pointer(&t.regionBytes()[p-base])
	for n := uint64(len(src)); n > 0; {
		seg := min(n, t.zseg)
		id, err := t.alloc(e, q, pe, "put_nbi", false)
		if err != nil {
			return err
		}
		q.Issue(1)
		if err := t.postWrite(e, pe, "put_nbi", buf, seg, t.heap.Desc, off, id, t.flags); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return err
		}
		buf = unsafe.Add(buf, seg)
		off += seg
		n -= seg
	}
	return nil
}

func (t *Transport) regionBytes() []byte {
	return unsafe.Slice((*byte)(t.cfg.Region), t.cfg.RegionLen)
}

// postWrite posts one write on e, retrying -FI_EAGAIN (bounded, driving
// progress); it carries FI_FENCE when a Fence marked e.
func (t *Transport) postWrite(e *endpoint, pe int, what string, buf unsafe.Pointer, n uint64, desc unsafe.Pointer, off uint64, id uint32, flags uint64) error {
	flags |= e.fenceFlag()
	var start time.Time
	for i := 0; ; i++ {
		err := e.ep.Write(buf, n, desc, t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1, flags)
		if err == nil {
			return nil
		}
		if err := t.retry(e, err, i, &start, pe, what); err != nil {
			e.unfence(flags)
			return err
		}
	}
}

// retry decides after a failed post: -FI_EAGAIN drives progress and tries
// again; anything else fails. The retries are bounded in time: past the
// first spins each waits 20 us, and after GOSHMEM_TIMEOUT (eagainLimit
// without one) of -FI_EAGAIN the post fails naming the peer: a provider
// that keeps refusing is reconnecting to a peer that is gone, or the peer
// stopped draining its endpoint (Ref: fi_rma(3)).
func (t *Transport) retry(e *endpoint, err error, i int, start *time.Time, pe int, what string) error {
	if !errors.Is(err, fabric.EAGAIN) {
		return errs.Wrap(err, t.cfg.Me, what, "ofi: to PE %d", pe)
	}
	e.progress()
	switch {
	case i < 64:
	case i < 1024:
		goruntime.Gosched()
	default:
		limit := t.cfg.Timeout
		if limit == 0 {
			limit = eagainLimit
		}
		if start.IsZero() {
			*start = time.Now()
		} else if el := time.Since(*start); el > limit {
			return errs.Hint(errs.ErrTimeout, "check that PE "+strconv.Itoa(pe)+" is alive and reachable",
				t.cfg.Me, what, "ofi: to PE %d: the provider answered -FI_EAGAIN for %v (%d tries); the peer is gone or not draining its endpoint", pe, el.Round(time.Millisecond), i)
		}
		if err := t.check(i); err != nil {
			return errs.Wrap(err, t.cfg.Me, what, "ofi: to PE %d", pe)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

// Get implements transport.Transport: it returns once dst holds the data.
func (t *Transport) Get(q *quiet.Queue, dst []byte, pe int, off uint64) error {
	if src := t.self(q, pe, off, len(dst)); src != nil {
		copy(dst, src)
		return nil
	}
	if err := t.readAfterWrite(q, pe); err != nil {
		return err
	}
	e := t.epFor(q)
	for len(dst) > 0 {
		n := uint64(len(dst))
		if n > t.seg {
			n = t.seg
		}
		small := n <= slotSize
		id, err := t.alloc(e, nil, pe, "get", !small)
		if err != nil {
			return err
		}
		buf := t.slot(id)
		if !small {
			buf = t.chunkPtr(t.ops[id].chunk)
		}
		if err := t.post(e, pe, "get", func() error {
			return e.ep.Read(buf, n, t.stage.Desc, t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1)
		}); err != nil {
			t.release1(uint64(id))
			return err
		}
		if err := t.wait(e, id, pe, "get"); err != nil {
			return err
		}
		copy(dst[:n], unsafe.Slice((*byte)(buf), n))
		t.release1(uint64(id))
		dst = dst[n:]
		off += n
	}
	return nil
}

// GetNBI implements transport.Transport: dst is filled by the completion,
// before q's count says so.
func (t *Transport) GetNBI(q *quiet.Queue, dst []byte, pe int, off uint64) error {
	if src := t.self(q, pe, off, len(dst)); src != nil {
		copy(dst, src)
		return nil
	}
	if err := t.readAfterWrite(q, pe); err != nil {
		return err
	}
	e := t.epFor(q)
	for len(dst) > 0 {
		n := uint64(len(dst))
		if n > t.seg {
			n = t.seg
		}
		id, err := t.alloc(e, q, pe, "get_nbi", true)
		if err != nil {
			return err
		}
		o := &t.ops[id]
		buf := t.chunkPtr(o.chunk)
		o.dst, o.src = dst[:n], buf
		q.Issue(1)
		if err := t.post(e, pe, "get_nbi", func() error {
			return e.ep.Read(buf, n, t.stage.Desc, t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1)
		}); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return err
		}
		dst = dst[n:]
		off += n
	}
	return nil
}

// self returns this PE's own region at off when pe is this PE: puts and
// gets to oneself are memory copies, visible at once (as on shm), after the
// queue's earlier operations (which may target the same bytes) completed.
// Atomics to oneself still go through the provider, so they stay atomic
// with respect to the peers' (the provider applies those).
func (t *Transport) self(q *quiet.Queue, pe int, off uint64, n int) []byte {
	if pe != t.cfg.Me || n == 0 {
		return nil
	}
	if q != nil && q.Pending() > 0 {
		if err := t.drain(q); err != nil {
			return nil // the provider path reports the failure
		}
	}
	return unsafe.Slice((*byte)(unsafe.Add(t.cfg.Region, off)), n)
}

// readAfterWrite makes a read see this queue's earlier writes when the
// provider does not order reads after writes (FI_ORDER_RAW).
func (t *Transport) readAfterWrite(q *quiet.Queue, pe int) error {
	if !t.fenceRAW || q == nil {
		return nil
	}
	return t.drain(q)
}

// wait drives progress until the blocking operation id completes, and
// returns its error (the caller releases the slot).
func (t *Transport) wait(e *endpoint, id uint32, pe int, what string) error {
	o := &t.ops[id]
	var start time.Time
	for i := 0; !o.done.Load(); i++ {
		if err := t.backoff(e, i, &start, pe, what); err != nil {
			return err // the slot stays taken: the operation may still complete
		}
	}
	if o.err != nil {
		err := o.err
		t.release1(uint64(id))
		return err
	}
	return nil
}

// Atomic implements transport.Transport. AMOSet is posted without a result
// and counted on q (completion = delivered); the others wait for the old
// value. Operations the provider lacks are emulated with compare-and-swap
// on the same word (or, for 1- and 2-byte fields, on the aligned 4-byte
// word that holds them), so they stay atomic with respect to the native ones.
func (t *Transport) Atomic(q *quiet.Queue, o transport.AMO, width int, pe int, off uint64, v, cmp uint64) (uint64, error) {
	e := t.epFor(q)
	if o == transport.AMOSet && t.amo[fabric.KindAtomic][o][width] {
		id, err := t.alloc(e, q, pe, "atomic set", false)
		if err != nil {
			return 0, err
		}
		s := t.slot(id)
		*(*uint64)(s) = v
		q.Issue(1)
		flags := t.flags | e.fenceFlag()
		if err := t.post(e, pe, "atomic set", func() error {
			return e.ep.Atomic(fabric.KindAtomic, s, nil, nil, t.stage.Desc, dtype(width), fabric.OpWrite,
				t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1, flags)
		}); err != nil {
			e.unfence(flags)
			t.release1(uint64(id))
			q.Complete(1)
			return 0, err
		}
		return 0, nil
	}
	if err := t.readAfterWrite(q, pe); err != nil {
		return 0, err
	}
	kind, fop := amoOp(o)
	if t.amo[kind][o][width] {
		return t.fetchAtomic(e, kind, fop, width, pe, off, v, cmp, atomicWhat[o])
	}
	return t.emulate(e, o, width, pe, off, v, cmp)
}

// atomicWhat names each AMO for fetchAtomic's errors (constants: a fetching
// atomic allocates nothing).
var atomicWhat = [...]string{
	transport.AMOFetch: "atomic fetch", transport.AMOSet: "atomic set", transport.AMOSwap: "atomic swap",
	transport.AMOCompareSwap: "atomic compare_swap", transport.AMOAdd: "atomic fetch_add",
	transport.AMOAnd: "atomic fetch_and", transport.AMOOr: "atomic fetch_or", transport.AMOXor: "atomic fetch_xor",
}

// fetchAtomic posts a fetching atomic and waits for its result; what names
// it in errors ("atomic swap").
func (t *Transport) fetchAtomic(e *endpoint, kind, fop, width, pe int, off uint64, v, cmp uint64, what string) (uint64, error) {
	id, err := t.alloc(e, nil, pe, what, false)
	if err != nil {
		return 0, err
	}
	s := t.slot(id)
	operand, compare, result := s, unsafe.Add(s, 8), unsafe.Add(s, 16)
	*(*uint64)(operand), *(*uint64)(compare), *(*uint64)(result) = v, cmp, 0
	flags := e.fenceFlag()
	if err := t.post(e, pe, what, func() error {
		return e.ep.Atomic(kind, operand, compare, result, t.stage.Desc, dtype(width), fop,
			t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1, flags)
	}); err != nil {
		e.unfence(flags)
		t.release1(uint64(id))
		return 0, err
	}
	if err := t.wait(e, id, pe, what); err != nil {
		return 0, err
	}
	mask := ^uint64(0)
	if width < 8 {
		mask = 1<<(8*uint(width)) - 1
	}
	old := *(*uint64)(result) & mask
	t.release1(uint64(id))
	return old, nil
}

// emulate runs op as a compare-and-swap loop on the containing word of the
// widest width the provider can compare-and-swap (little-endian layout).
func (t *Transport) emulate(e *endpoint, o transport.AMO, width int, pe int, off uint64, v, cmp uint64) (uint64, error) {
	w := width
	if w < 4 {
		w = 4
	}
	if !t.amo[fabric.KindCompare][transport.AMOCompareSwap][w] {
		return 0, errs.Hint(errs.ErrNotSupported, "choose a provider with atomics (GOSHMEM_OFI_PROVIDER=tcp;ofi_rxm)",
			t.cfg.Me, "atomic "+o.String(), "ofi provider %s has no %d-byte compare-and-swap to PE %d", t.ep.Attr.Provider, w, pe)
	}
	word := off &^ uint64(w-1)
	shift := (off - word) * 8
	mask := ^uint64(0)
	if width < 8 {
		mask = (1<<(8*uint(width)) - 1)
	}
	v &= mask
	cmp &= mask
	cur, err := t.fetchAtomic(e, fabric.KindCompare, fabric.OpCswap, w, pe, word, 0, 0, "atomic compare_swap (emulation)")
	if err != nil {
		return 0, err
	}
	for {
		old := (cur >> shift) & mask
		nv, store := o.Apply(old, v, cmp)
		if !store {
			return old, nil
		}
		neww := (cur &^ (mask << shift)) | ((nv & mask) << shift)
		got, err := t.fetchAtomic(e, fabric.KindCompare, fabric.OpCswap, w, pe, word, neww, cur, "atomic compare_swap (emulation)")
		if err != nil {
			return 0, err
		}
		if got == cur {
			return old, nil
		}
		cur = got
	}
}

// Describe is the transport's line for GOSHMEM_INFO: how fence and
// contexts work on this provider, and the message limits.
func (t *Transport) Describe() string {
	fence := "waits for delivery (no FI_FENCE)"
	switch {
	case t.ordered:
		fence = "kept by the provider (FI_ORDER_WAW)"
	case t.native:
		fence = "FI_FENCE"
	}
	ctx := "own endpoint per context"
	if t.ep.Attr.MREndpoint() {
		ctx = "shared endpoint (FI_MR_ENDPOINT), own completion count"
	}
	prog := "auto"
	if t.manual {
		prog = "manual (progress thread)"
	}
	return fmt.Sprintf("%s: fence %s; contexts: %s; progress %s; inject %d B, segment %d B, max message %d B",
		t.name, fence, ctx, prog, t.inject, t.seg, t.zseg)
}

// check runs Config.Check every 64th slow-path round.
func (t *Transport) check(i int) error {
	if t.cfg.Check == nil || i%64 != 0 {
		return nil
	}
	return t.cfg.Check()
}

// NativeFence reports whether Fence uses the provider's FI_FENCE.
func (t *Transport) NativeFence() bool { return t.native && !t.ordered }

// OrderedWrites reports whether the provider keeps write order itself (Fence
// is free).
func (t *Transport) OrderedWrites() bool { return t.ordered }

// Fence implements transport.Transport: the writes and atomics q issued
// before it are delivered before any issued after it. Where the provider
// keeps write-after-write data order for every size goshmem posts
// (FI_ORDER_WAW in msg_order, max_order_waw_size; tcp;ofi_rxm does, for
// any size) the order is already kept and Fence does nothing. With FI_FENCE
// (NativeFence) it returns at once and the next operation posted on q's
// endpoint carries the flag: the provider defers it, and everything posted
// after it, until the earlier operations completed (delivery-complete).
// Without it, Fence waits for q's earlier operations (FI_DELIVERY_COMPLETE
// completions), the portable form: tcp;ofi_rxm reports msg_order WAW but
// says nothing of placement order across a write and an emulated atomic.
// Ref: OpenSHMEM 1.6 §9.8.1; fi_msg(3) FI_FENCE.
func (t *Transport) Fence(q *quiet.Queue) error {
	if q == nil || t.ordered || q.Pending() == 0 {
		return nil
	}
	if t.native {
		t.epFor(q).fence.Store(true)
		return nil
	}
	return t.drain(q)
}

// drain waits until every operation q issued before the call completed.
func (t *Transport) drain(q *quiet.Queue) error {
	issued, _ := q.Counts()
	e := t.epFor(q)
	var start time.Time
	for i := 0; ; i++ {
		if _, c := q.Counts(); c >= issued {
			return nil
		}
		if err := t.backoff(e, i, &start, -1, "fence"); err != nil {
			return err
		}
	}
}

// probe checks at Init that this PE reaches every PE the transport carries:
// one 8-byte read of each peer's region, all posted at once, bounded by
// ConnectTimeout. The caller exchanges the outcome, so a peer that cannot
// be reached fails Init on all PEs alike, naming it.
func (t *Transport) probe() error {
	limit := t.cfg.ConnectTimeout
	if limit == 0 {
		limit = t.cfg.Timeout
	}
	if limit == 0 {
		limit = 20 * time.Second
	}
	type read struct {
		pe int
		id uint32
	}
	var (
		reads []read
		bad   = -1
		fail  error
	)
	e := t.main
	deadline := time.Now().Add(limit)
	for pe := 0; pe < t.cfg.NPEs && fail == nil; pe++ {
		if pe == t.cfg.Me || (t.cfg.Reach != nil && !t.cfg.Reach[pe]) {
			continue
		}
		id, err := t.alloc(e, nil, pe, "Init: reachability read", false)
		for err == nil {
			// -FI_EAGAIN while the provider connects: retry until the bound.
			if err = e.ep.Read(t.slot(id), 8, t.stage.Desc, t.addr[pe], t.raddr[pe], t.key[pe], uint64(id)+1); err == nil {
				break
			}
			if !errors.Is(err, fabric.EAGAIN) {
				err = errs.Wrap(err, t.cfg.Me, "Init", "ofi: reading from PE %d at %s", pe, e.ep.AddrString(t.names[pe]))
				break
			}
			if time.Now().After(deadline) {
				err = errs.New(errs.ErrTimeout, t.cfg.Me, "Init", "ofi: PE %d at %s: the provider could not post a read within %v (-FI_EAGAIN)",
					pe, e.ep.AddrString(t.names[pe]), limit)
				break
			}
			e.progress()
			time.Sleep(20 * time.Microsecond)
			err = nil
		}
		if err != nil {
			t.release1(uint64(id))
		}
		if err != nil {
			bad, fail = pe, err
			break
		}
		reads = append(reads, read{pe, id})
	}
	for _, r := range reads {
		o := &t.ops[r.id]
		for !o.done.Load() && time.Now().Before(deadline) && fail == nil {
			e.progress()
			time.Sleep(20 * time.Microsecond)
		}
		if fail != nil {
			break // later reads keep their slots: Init fails, the transport closes
		}
		if !o.done.Load() {
			bad = r.pe
			fail = errs.New(errs.ErrTimeout, t.cfg.Me, "Init", "ofi: PE %d at %s did not answer a read within %v",
				r.pe, e.ep.AddrString(t.names[r.pe]), limit)
			break
		}
		if o.err != nil {
			bad, fail = r.pe, errs.Wrap(o.err, t.cfg.Me, "Init", "ofi: PE %d at %s", r.pe, e.ep.AddrString(t.names[r.pe]))
			break
		}
		t.release1(uint64(r.id))
	}
	if fail != nil {
		return errors.WithHint(errs.Wrap(fail, t.cfg.Me, "Init", "ofi: cannot reach PE %d", bad), reachHint)
	}
	return nil
}

const reachHint = "check that every PE's host is reachable from the others on the provider's interface (firewall, routes; GOSHMEM_OFI_IFACE selects the interface)"

// Ptr implements transport.Transport: a peer mapped on this node stays
// load/store reachable even when ofi carries its RMA.
func (t *Transport) Ptr(pe int, off uint64) unsafe.Pointer {
	if pe < 0 || pe >= len(t.cfg.Local) || t.cfg.Local[pe] == nil {
		return nil
	}
	return unsafe.Add(t.cfg.Local[pe], off)
}

// Close stops the progress thread and releases the endpoint, the
// registrations and the staging arena.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.release() // stops the progress thread first
	return nil
}

func (t *Transport) release() {
	t.ep.StopProgress() // before the registrations it may still use go
	t.ctxs.Range(func(k, _ any) bool {
		t.CloseQueue(k.(*quiet.Queue))
		return true
	})
	_ = t.heap.Close()
	_ = t.stage.Close()
	if t.ep != nil {
		t.ep.Close()
	}
	if t.arena != nil {
		_ = unix.Munmap(t.arena)
		t.arena = nil
	}
}
